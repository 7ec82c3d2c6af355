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
  cutIfBehind(res: ServerResponse, kind: SseStreamKind, fields: CutStreamFields): boolean {
    if (!this.bound.isBehind(res)) return false;
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
}
