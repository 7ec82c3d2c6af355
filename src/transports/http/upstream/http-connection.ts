/**
 * The HTTP side of one upstream transport: keep-alive connections to the upstream's origin, one
 * abort switch for everything in flight, and abortable waits. Each transport owns one; `abort()`
 * ends every open request and stream at once, which is how `close()` and session expiry stop all
 * work without tracking each stream.
 */
import { setMaxListeners } from 'node:events';
import { type Dispatcher, Pool } from 'undici';

/** The longest delay `setTimeout` honours; longer ones would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** One HTTP request to the upstream's origin, with its own timeouts. */
export interface HttpCall {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Longest wait for the response headers (0: none). */
  readonly headersTimeoutMs: number;
  /** Longest silence while the body arrives (0: none). */
  readonly bodyTimeoutMs: number;
  /** Aborts this call only; `abort()` aborts every call. */
  readonly signal?: AbortSignal;
}

/** A keep-alive pool for the upstream's origin; one request at a time per connection (SSE answers are long). */
export function createUpstreamPool(url: URL, maxConnections?: number): Pool {
  return new Pool(url.origin, {
    pipelining: 1,
    ...(maxConnections === undefined ? {} : { connections: maxConnections }),
  });
}

/** The connections, abort switch and waits of one transport (see the file comment). */
export class HttpConnection {
  readonly origin: string;
  readonly #dispatcher: Dispatcher;
  readonly #owned: boolean;
  readonly #abort = new AbortController();
  #released: Promise<void> | undefined;

  /** Uses `dispatcher` when given (shared, never closed here), else a `Pool` of its own. */
  constructor(url: URL, dispatcher?: Dispatcher, maxConnections?: number) {
    this.origin = url.origin;
    this.#owned = dispatcher === undefined;
    this.#dispatcher = dispatcher ?? createUpstreamPool(url, maxConnections);
    // Every request in flight and every wait listens to this one signal.
    setMaxListeners(0, this.#abort.signal);
  }

  /** Whether `abort()` was called. */
  get aborted(): boolean {
    return this.#abort.signal.aborted;
  }

  /** Sends one request; rejects on network errors, timeouts and aborts (never on HTTP statuses). */
  request(call: HttpCall): Promise<Dispatcher.ResponseData> {
    return this.#dispatcher.request({
      origin: this.origin,
      path: call.path,
      method: call.method,
      headers: call.headers,
      body: call.body ?? null,
      signal: call.signal ?? this.#abort.signal,
      headersTimeout: call.headersTimeoutMs,
      bodyTimeout: call.bodyTimeoutMs,
    });
  }

  /**
   * Resolves after `ms` (at most about 24.8 days, the timer limit: a server's `retry` can be any
   * number), or at once when (or if) everything is aborted.
   */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const signal = this.#abort.signal;
      if (signal.aborted) {
        resolve();
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(ms, MAX_TIMER_MS));
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Aborts every request, stream and wait of this connection. */
  abort(): void {
    this.#abort.abort();
  }

  /** Aborts everything and closes the connections when they are this transport's own. Idempotent. */
  release(): Promise<void> {
    this.abort();
    this.#released ??= this.#owned ? this.#dispatcher.destroy().catch(() => {}) : Promise.resolve();
    return this.#released;
  }
}
