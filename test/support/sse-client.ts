/**
 * Raw Streamable HTTP for the `serve` integration tests: plain POST/GET/DELETE with undici (no MCP
 * SDK in between, so every status, header and SSE frame is what the gateway sent), and an SSE
 * reader built on the gateway's own incremental parser that lets a test wait for events one by
 * one and drop the connection mid-stream.
 */
import type { Readable } from 'node:stream';
import { request } from 'undici';
import { type SseEvent, SseParser } from '../../src/transports/http/sse/sse-parser.js';

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export type Headers = Record<string, string>;

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** The body parsed as JSON (throws with the text when it is not JSON). */
export function jsonOf<T = Record<string, unknown>>(response: RawResponse): T {
  try {
    return JSON.parse(response.text) as T;
  } catch {
    throw new Error(`not JSON (status ${response.status}): ${response.text.slice(0, 500)}`);
  }
}

/** One header as a string. */
export function headerOf(response: { headers: RawResponse['headers'] }, name: string): string | undefined {
  const value = response.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** Sends one request and reads the whole answer (do not use for SSE answers that stay open). */
export async function send(
  url: string,
  method: 'GET' | 'POST' | 'DELETE' | 'PUT',
  headers: Headers,
  body?: string | Readable,
): Promise<RawResponse> {
  const response = await request(url, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, text };
}

/** POSTs a JSON-RPC payload with `Content-Type: application/json` and an Accept listing both types. */
export function post(url: string, payload: unknown, headers: Headers = {}): Promise<RawResponse> {
  return send(
    url,
    'POST',
    { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
    typeof payload === 'string' ? payload : JSON.stringify(payload),
  );
}

/** The JSON-RPC messages of an SSE body read to its end (priming events, with empty data, skipped). */
export function sseMessages(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const parser = new SseParser({
    onEvent: (event) => {
      if (event.data.length > 0) out.push(JSON.parse(event.data) as Record<string, unknown>);
    },
  });
  parser.push(text);
  parser.end();
  return out;
}

/** The messages of a complete answer, whether it came as JSON (object or array) or as SSE. */
export function messagesOf(response: RawResponse): Record<string, unknown>[] {
  const type = headerOf(response, 'content-type') ?? '';
  if (type.startsWith('text/event-stream')) return sseMessages(response.text);
  const value = jsonOf<unknown>(response);
  return (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
}

/**
 * The one JSON-RPC response of a complete answer to a request, whether it came as JSON or as SSE:
 * the gateway answers with a stream when the answer takes longer than `server.streamAfter`, which
 * a loaded machine makes happen to any call. Throws naming the body when there is not exactly one.
 */
export function answerOf<T = Record<string, unknown>>(response: RawResponse): T {
  const answers = messagesOf(response).filter((m) => 'id' in m && ('result' in m || 'error' in m));
  if (answers.length !== 1)
    throw new Error(`${answers.length} answers (status ${response.status}): ${response.text.slice(0, 500)}`);
  return answers[0] as T;
}

export interface InitializedSession {
  readonly id: string;
  readonly version: string;
  /** Headers for later requests of this session (session id and protocol version). */
  readonly headers: Headers;
  readonly result: Record<string, unknown>;
}

/**
 * `initialize` (then `notifications/initialized`) on `url`, returning the session id the gateway
 * answered with. `headers` may carry a client-chosen `mcp-session-id`.
 */
export async function initialize(
  url: string,
  options: { version?: string; headers?: Headers; capabilities?: Record<string, unknown>; id?: number } = {},
): Promise<InitializedSession> {
  const version = options.version ?? '2025-11-25';
  const response = await post(
    url,
    {
      jsonrpc: '2.0',
      id: options.id ?? 1,
      method: 'initialize',
      params: {
        protocolVersion: version,
        capabilities: options.capabilities ?? {},
        clientInfo: { name: 'switchboard-raw-test', version: '0.0.0' },
      },
    },
    options.headers ?? {},
  );
  if (response.status !== 200) throw new Error(`initialize failed: ${response.status} ${response.text}`);
  const id = headerOf(response, 'mcp-session-id');
  if (id === undefined) throw new Error('initialize answered without Mcp-Session-Id');
  const [message] = messagesOf(response);
  const result = (message?.result ?? {}) as Record<string, unknown>;
  const headers: Headers = { 'mcp-session-id': id };
  if (version >= '2025-06-18') headers['mcp-protocol-version'] = version;
  // The caller's headers (credentials, say) go with `initialized` too, but are not returned.
  const initialized = await post(
    url,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { ...(options.headers ?? {}), ...headers },
  );
  if (initialized.status !== 202) throw new Error(`initialized got ${initialized.status}`);
  return { id, version, headers, result };
}

/** `GET /health` of a gateway: how many sessions it holds. */
export async function sessionCount(base: string): Promise<number> {
  const response = await send(`${base}/health`, 'GET', {});
  return jsonOf<{ sessions: number }>(response).sessions;
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** An SSE answer being read as it arrives. */
export interface SseStream {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  /** Every dispatched event so far, priming events (empty data) included, in order. */
  readonly events: SseEvent[];
  /** The `id:` of each event in `events` (`''` for an event sent without one). */
  readonly ids: string[];
  /** The last `retry:` seen. */
  readonly retry: number | undefined;
  /** Whether the server ended the stream (or the connection dropped). */
  readonly ended: boolean;
  /** Resolves when the stream ends. */
  readonly done: Promise<void>;
  /** Waits for an event (at or after index `from`) matching `predicate`, and returns it. */
  waitFor(
    predicate: (event: SseEvent, message: Record<string, unknown> | undefined) => boolean,
    timeoutMs?: number,
    from?: number,
  ): Promise<SseEvent>;
  /** The JSON-RPC messages among the events (priming events skipped). */
  messages(): Record<string, unknown>[];
  /** Drops the connection (a client that goes away). */
  abort(): void;
}

/**
 * Sends a request whose answer is an SSE stream and starts reading it. When the answer is not
 * `text/event-stream` the body is read whole and exposed as `text`, with no events.
 */
export async function openSse(
  url: string,
  method: 'GET' | 'POST',
  headers: Headers,
  body?: string,
): Promise<SseStream & { readonly text?: string }> {
  const controller = new AbortController();
  const response = await request(url, {
    method,
    headers: { accept: method === 'GET' ? 'text/event-stream' : ACCEPT_BOTH, ...headers },
    ...(body === undefined ? {} : { body }),
    signal: controller.signal,
    headersTimeout: 30_000,
    bodyTimeout: 0,
  });
  const type = headerOf({ headers: response.headers }, 'content-type') ?? '';
  const events: SseEvent[] = [];
  const ids: string[] = [];
  let retry: number | undefined;
  let ended = false;
  let wake: (() => void)[] = [];
  const notify = () => {
    const waiting = wake;
    wake = [];
    for (const w of waiting) w();
  };
  if (!type.startsWith('text/event-stream')) {
    const text = await response.body.text();
    return {
      status: response.statusCode,
      headers: response.headers,
      events,
      ids,
      retry,
      ended: true,
      done: Promise.resolve(),
      text,
      waitFor: () => Promise.reject(new Error(`not an SSE answer (${response.statusCode}): ${text}`)),
      messages: () => [],
      abort: () => {},
    };
  }
  // The id an event carries is the parser's last event id at dispatch only if the event set it:
  // track whether the raw frame had an `id:` line by comparing before and after.
  let previousId = '';
  const parser = new SseParser({
    onEvent: (event) => {
      ids.push(event.lastEventId !== previousId ? event.lastEventId : '');
      previousId = event.lastEventId;
      events.push(event);
      notify();
    },
    onRetry: (ms) => {
      retry = ms;
    },
  });
  const done = (async () => {
    try {
      for await (const chunk of response.body) parser.push(chunk as Uint8Array);
      parser.end();
    } catch {
      // aborted by the test, or the connection dropped
    } finally {
      ended = true;
      notify();
    }
  })();
  // A 2024-11-05 stream's `endpoint` event carries a URL, not a message.
  const parse = (event: SseEvent): Record<string, unknown> | undefined =>
    event.data.length > 0 && event.type !== 'endpoint'
      ? (JSON.parse(event.data) as Record<string, unknown>)
      : undefined;
  const stream = {
    status: response.statusCode,
    headers: response.headers,
    events,
    ids,
    get retry() {
      return retry;
    },
    get ended() {
      return ended;
    },
    done,
    async waitFor(
      predicate: (event: SseEvent, message: Record<string, unknown> | undefined) => boolean,
      timeoutMs = 15_000,
      from = 0,
    ): Promise<SseEvent> {
      const deadline = Date.now() + timeoutMs;
      for (let i = from; ; ) {
        for (; i < events.length; i++) {
          const event = events[i]!;
          if (predicate(event, parse(event))) return event;
        }
        if (ended) throw new Error(`stream ended without the awaited event; got ${JSON.stringify(events)}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`timed out waiting for an SSE event; got ${JSON.stringify(events)}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    messages(): Record<string, unknown>[] {
      return events
        .filter((e) => e.data.length > 0 && e.type !== 'endpoint')
        .map((e) => JSON.parse(e.data) as Record<string, unknown>);
    },
    abort(): void {
      controller.abort();
    },
  };
  return stream;
}

/** Shorthands for the JSON-RPC messages the tests look for. */
export function isProgress(message: Record<string, unknown> | undefined): boolean {
  return message?.method === 'notifications/progress';
}

export function progressValue(message: Record<string, unknown>): number {
  return (message.params as { progress: number }).progress;
}

export function isResponseTo(message: Record<string, unknown> | undefined, id: string | number): boolean {
  return message !== undefined && message.id === id && ('result' in message || 'error' in message);
}
