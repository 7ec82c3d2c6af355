/**
 * A MEUP participant for integration tests: a real WebSocket (package `ws`) to `/meup` of a running
 * `switchboard serve`, that collects every envelope it receives and waits for the ones a test
 * expects. It joins with `Authorization: Bearer` (`token`), with a MEW join frame (`join`), or
 * with neither (then the test sends the first frame itself).
 */
import WebSocket from 'ws';

export type Wire = Record<string, unknown>;

export interface ParticipantOptions {
  /** Sent as `Authorization: Bearer` on the upgrade. */
  readonly token?: string;
  /** Sent as the first frame, e.g. `{type: 'join', participantId: 'alice'}`. */
  readonly join?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  /** Wait for `system/welcome` before resolving (default true). */
  readonly welcome?: boolean;
}

let counter = 0;

export class Participant {
  readonly received: Wire[] = [];
  readonly ws: WebSocket;
  readonly closed: Promise<{ code: number; reason: string }>;
  /** The protocol string used by `send` when the envelope gives none. */
  protocol = 'meup/v0.2';
  id = '';
  readonly #waiters = new Set<() => void>();

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.#waiters) wake();
      });
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let value: unknown;
      try {
        value = JSON.parse(data.toString());
      } catch {
        value = { unparsable: data.toString() };
      }
      this.received.push(value as Wire);
      for (const wake of this.#waiters) wake();
    });
  }

  /** Opens the WebSocket (and joins); rejects with the HTTP status when the upgrade is refused. */
  static async connect(url: string, options: ParticipantOptions = {}): Promise<Participant> {
    const ws = new WebSocket(url, {
      headers: {
        ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
        ...options.headers,
      },
    });
    // Listen before the socket opens: the welcome may arrive in the same tick as the 101.
    const participant = new Participant(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          reject(
            Object.assign(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString()}`), {
              status: res.statusCode,
              headers: res.headers,
              body: Buffer.concat(chunks).toString(),
            }),
          ),
        );
      });
      ws.once('error', reject);
    });
    if (options.join) {
      ws.send(JSON.stringify(options.join));
      if (typeof options.join.protocol === 'string') participant.protocol = options.join.protocol;
      else participant.protocol = 'mew/v0.4';
    }
    if (options.welcome !== false) {
      const welcome = await participant.next((e) => e.kind === 'system/welcome');
      participant.id = String((welcome.payload as { you: { id: string } }).you.id);
    }
    return participant;
  }

  /** The first envelope received (from the start) matching `predicate`, waiting for it. */
  next(predicate: (e: Wire) => boolean, timeoutMs = 10_000): Promise<Wire> {
    return this.#wait(() => this.received.find(predicate), timeoutMs, 'an expected envelope');
  }

  /** Waits until `count` envelopes match; resolves with all of them. */
  async all(predicate: (e: Wire) => boolean, count: number, timeoutMs = 10_000): Promise<Wire[]> {
    await this.#wait(
      () => (this.received.filter(predicate).length >= count ? true : undefined),
      timeoutMs,
      `${count} envelopes`,
    );
    return this.received.filter(predicate);
  }

  /** The replies correlated to `id`. */
  repliesTo(id: unknown): Wire[] {
    return this.received.filter((e) => Array.isArray(e.correlation_id) && e.correlation_id.includes(id));
  }

  /** Waits for the first reply correlated to `id` (of `kind` when given). */
  reply(id: unknown, kind?: string, timeoutMs?: number): Promise<Wire> {
    return this.next(
      (e) =>
        Array.isArray(e.correlation_id) &&
        e.correlation_id.includes(id) &&
        (kind === undefined || e.kind === kind),
      timeoutMs,
    );
  }

  /** Sends an envelope; absent fields get valid values from this participant. Returns it. */
  send(fields: Wire): Wire {
    const envelope: Wire = {
      protocol: this.protocol,
      id: `t${Date.now().toString(36)}${(++counter).toString(36)}`,
      ts: new Date().toISOString(),
      from: this.id,
      payload: {},
      ...fields,
    };
    for (const key of Object.keys(envelope)) if (envelope[key] === undefined) delete envelope[key];
    this.ws.send(JSON.stringify(envelope));
    return envelope;
  }

  sendRaw(data: string | Buffer, binary = false): void {
    this.ws.send(data, { binary });
  }

  /** Resolves once the gateway handled everything sent before (it answers the ping after them). */
  barrier(): Promise<void> {
    return new Promise((resolve) => {
      this.ws.once('pong', () => resolve());
      this.ws.ping();
    });
  }

  /** Received envelopes of `kind`. */
  ofKind(kind: string): Wire[] {
    return this.received.filter((e) => e.kind === kind);
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000);
    await Promise.race([this.closed, new Promise((r) => setTimeout(r, 2000))]);
  }

  #wait<T>(probe: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = probe();
        if (found !== undefined) {
          finish();
          resolve(found);
        } else if (this.ws.readyState === WebSocket.CLOSED) {
          finish();
          reject(
            new Error(
              `the connection closed while waiting for ${what}; received: ${JSON.stringify(this.received).slice(0, 2000)}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(
          new Error(
            `timed out waiting for ${what}; received: ${JSON.stringify(this.received).slice(0, 2000)}`,
          ),
        );
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
      };
      this.#waiters.add(check);
      check();
    });
  }
}

/** `ws://host:port/meup` of a running serve (its base is `http://host:port`). */
export function spaceUrlOf(base: string): string {
  return `${base.replace(/^http/, 'ws')}/meup`;
}
