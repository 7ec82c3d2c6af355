/**
 * The WebSocket client of `switchboard space tail|send`: connects to `/meup`, authenticates
 * (`Authorization: Bearer` on the upgrade with a token; otherwise a join frame naming the
 * participant, which a gateway without authentication accepts from loopback), and resolves once the
 * gateway's `system/welcome` arrives. Refusals come back as `SpaceClientError` with what the
 * gateway said.
 */
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { isObject } from '../../protocol/jsonrpc/json-object.js';

export const DEFAULT_SPACE_URL = 'ws://127.0.0.1:8787/meup';

export type WireEnvelope = Record<string, unknown>;

/** Why the client could not join: the gateway refused (`refused`) or could not be reached. */
export class SpaceClientError extends Error {
  constructor(
    readonly kind: 'refused' | 'unreachable' | 'timeout',
    message: string,
  ) {
    super(message);
    this.name = 'SpaceClientError';
  }
}

/**
 * The `/meup` URL for `input`: a `ws(s)://` or `http(s)://` URL, with or without the path; a
 * bare `host:port` means `ws://host:port/meup`.
 */
export function spaceUrl(input: string | undefined): string {
  if (input === undefined || input.trim() === '') return DEFAULT_SPACE_URL;
  let text = input.trim();
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = `ws://${text}`;
  const url = new URL(text);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new Error(`expected a ws://, wss://, http:// or https:// URL, got ${input}`);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/meup';
  return url.toString();
}

export interface SpaceClientOptions {
  readonly url: string;
  readonly token?: string | undefined;
  readonly participant?: string | undefined;
  readonly timeoutMs: number;
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', () => resolve(''));
  });
}

export class SpaceClient {
  readonly welcome: WireEnvelope;
  readonly #ws: WebSocket;
  readonly #listeners = new Set<(envelope: WireEnvelope) => void>();
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>;

  private constructor(ws: WebSocket, welcome: WireEnvelope, backlog: readonly WireEnvelope[]) {
    this.#ws = ws;
    this.welcome = welcome;
    this.closed = new Promise((resolve) => {
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let value: unknown;
      try {
        value = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (isObject(value)) for (const listener of this.#listeners) listener(value);
    });
    queueMicrotask(() => {
      for (const envelope of backlog) for (const listener of this.#listeners) listener(envelope);
    });
  }

  /** Connects and joins; resolves with the client once welcomed. */
  static connect(options: SpaceClientOptions): Promise<SpaceClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(options.url, {
        ...(options.token === undefined ? {} : { headers: { Authorization: `Bearer ${options.token}` } }),
        handshakeTimeout: options.timeoutMs,
      });
      const backlog: WireEnvelope[] = [];
      let settled = false;
      const fail = (error: SpaceClientError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        ws.terminate();
        reject(error);
      };
      const timer = setTimeout(
        () =>
          fail(
            new SpaceClientError('timeout', `no welcome from ${options.url} within ${options.timeoutMs} ms`),
          ),
        options.timeoutMs,
      );
      ws.on('unexpected-response', (_req, res) => {
        void readBody(res).then((body) => {
          let message = body;
          try {
            const parsed = JSON.parse(body) as unknown;
            if (isObject(parsed) && typeof parsed.error === 'string') message = parsed.error;
          } catch {
            // Not JSON: show it as it is.
          }
          fail(new SpaceClientError('refused', `HTTP ${res.statusCode}: ${message.slice(0, 500)}`));
        });
      });
      ws.on('error', (err) =>
        fail(new SpaceClientError('unreachable', `cannot connect to ${options.url}: ${err.message}`)),
      );
      ws.on('open', () => {
        if (options.token === undefined) {
          ws.send(
            JSON.stringify({
              type: 'join',
              participantId: options.participant ?? 'local',
              protocol: 'meup/v0.2',
            }),
          );
        }
      });
      ws.on('close', (code, reason) => {
        fail(
          new SpaceClientError(
            'refused',
            `the gateway closed the connection (${code}${reason.length ? `: ${reason.toString()}` : ''})`,
          ),
        );
      });
      const onMessage = (data: WebSocket.RawData) => {
        let value: unknown;
        try {
          value = JSON.parse(data.toString());
        } catch {
          return;
        }
        if (!isObject(value)) return;
        if (value.kind === 'system/error' && !settled) {
          const payload = isObject(value.payload) ? value.payload : {};
          fail(new SpaceClientError('refused', `${String(payload.error)}: ${String(payload.message ?? '')}`));
          return;
        }
        if (value.kind === 'system/welcome' && !settled) {
          settled = true;
          clearTimeout(timer);
          ws.off('message', onMessage);
          ws.removeAllListeners('close');
          ws.removeAllListeners('error');
          ws.on('error', () => undefined);
          resolve(new SpaceClient(ws, value, backlog));
          return;
        }
        backlog.push(value);
      };
      ws.on('message', onMessage);
    });
  }

  /** The participant id the gateway welcomed this connection as. */
  get participant(): string {
    const payload = isObject(this.welcome.payload) ? this.welcome.payload : {};
    return isObject(payload.you) && typeof payload.you.id === 'string' ? payload.you.id : '';
  }

  /** The protocol string the gateway speaks to this connection. */
  get protocol(): string {
    return typeof this.welcome.protocol === 'string' ? this.welcome.protocol : 'meup/v0.2';
  }

  onEnvelope(listener: (envelope: WireEnvelope) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  sendText(text: string): void {
    this.#ws.send(text);
  }

  /**
   * Resolves once the gateway has handled everything sent before: it answers a ping only after
   * the frames before it, and refuses synchronously, so a refusal arrives before the pong.
   */
  barrier(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#ws.off('pong', onPong);
        resolve(false);
      }, timeoutMs);
      const onPong = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#ws.once('pong', onPong);
      this.#ws.ping();
    });
  }

  close(): void {
    this.#ws.close(1000, 'bye');
    setTimeout(() => this.#ws.terminate(), 1000).unref();
  }
}
