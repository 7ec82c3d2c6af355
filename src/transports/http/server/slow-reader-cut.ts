/**
 * What the HTTP server does with an SSE stream whose client has stopped reading: once the stream
 * holds `server.maxStreamBufferBytes` unsent (`StreamBound`), the next event is not queued behind
 * them; the connection is destroyed, counted (`http_slow_streams_cut_total{stream}`) and logged.
 *
 * The client loses nothing it could get back: a session-based stream's events are in the event
 * store before they are written (`HttpSession`), so the client reconnects with `Last-Event-ID`
 * and receives them; a 2026-07-28 call stream that is cut is a closed POST, which that era defines
 * as a cancellation of the call; a 2024-11-05 HTTP+SSE stream is its session, which ends with it
 * (that revision has no resumption). The last write of a stream is never refused (nothing follows it,
 * so it cannot grow the buffer further), which keeps an answer on a stream that is ending anyway.
 *
 * A single message larger than the bound goes to a reader that is not behind; it then fills the
 * stream past the bound by itself. A reader that is taking it is not slow, so until the stream is
 * back under the bound the message's own size is allowed on top of the bound: the next writes are
 * not refused while what is unsent stays under bound + that message. A stream therefore holds at
 * most the bound plus its largest message (itself bounded by the message limits), never more.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { StreamBound } from '../../stream-bound.js';

/**
 * The SSE streams the server writes: session GET streams, POST answers, 2026-07-28 calls and
 * listens, and the 2024-11-05 HTTP+SSE transport's one stream per session.
 */
export type SseStreamKind = 'get' | 'post' | 'modern-call' | 'listen' | 'sse-2024';

/** Where a cut stream belonged, for the log line. */
export interface CutStreamFields {
  /** The router's key of the session (never the client's `Mcp-Session-Id`). */
  readonly session: string;
  readonly stream?: string;
}

export class SlowReaderCut {
  readonly bound: StreamBound;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  /** Per stream: the size of a message over the bound written while it drains (see above). */
  readonly #oversized = new WeakMap<ServerResponse, number>();

  constructor(options: {
    readonly maxBufferedBytes: number;
    readonly metrics: Metrics;
    readonly logger: Logger;
  }) {
    this.bound = new StreamBound(options.maxBufferedBytes);
    this.#metrics = options.metrics;
    this.#logger = options.logger;
  }

  /**
   * Before a write to `res`: when its client is behind, destroys the connection (its `'close'`
   * follows, as for any disconnect), counts and logs it, and returns true; the caller then does
   * not write.
   */
  cutIfBehind(res: ServerResponse, kind: SseStreamKind, fields: CutStreamFields, next?: string): boolean {
    if (this.#withinAllowance(res) || !this.bound.isBehind(res)) {
      this.#allow(res, next);
      return false;
    }
    const unsent = this.bound.unsent(res);
    this.#metrics.inc('http_slow_streams_cut_total', { stream: kind });
    this.#logger.warn(
      { ...fields, kind, unsent, limit: this.bound.maxBufferedBytes },
      kind === 'modern-call'
        ? 'cutting a 2026-07-28 call stream whose client does not read (the call is cancelled)'
        : kind === 'listen'
          ? 'cutting a subscriptions/listen stream whose client does not read (it may listen again)'
          : kind === 'sse-2024'
            ? 'cutting a 2024-11-05 HTTP+SSE stream whose client does not read (its session ends)'
            : 'cutting an SSE stream whose client does not read; its events stay in the event store for Last-Event-ID',
    );
    res.destroy();
    return true;
  }

  /** Whether `res` is over the bound only by a large message it is still taking. */
  #withinAllowance(res: ServerResponse): boolean {
    const allowance = this.#oversized.get(res);
    if (allowance === undefined) return false;
    const unsent = this.bound.unsent(res);
    if (unsent < this.bound.maxBufferedBytes) {
      this.#oversized.delete(res);
      return false;
    }
    return unsent < this.bound.maxBufferedBytes + allowance;
  }

  /** Notes a message about to be written that is larger than the bound by itself. */
  #allow(res: ServerResponse, next: string | undefined): void {
    const max = this.bound.maxBufferedBytes;
    // A string's UTF-8 size is at most 3 bytes per UTF-16 unit: most writes are ruled out cheaply.
    if (next === undefined || next.length * 3 <= max) return;
    const bytes = Buffer.byteLength(next);
    if (bytes > max) this.#oversized.set(res, Math.max(bytes, this.#oversized.get(res) ?? 0));
  }
}
