/**
 * One client session of the 2024-11-05 HTTP+SSE transport (served on `/sse` for old clients), and
 * its way out: the router's `DownstreamPort` over the session's one event stream. Every message
 * to the client (responses, progress, server requests, notifications) is an SSE `message` event
 * on that stream; the client's messages arrive by POST to the endpoint the stream named first.
 *
 * That revision has no event ids and no resumption: the stream is the session. When it closes (the
 * client left, or was cut for not reading), the endpoint ends the session, which cancels what was
 * in flight upstream. The stream is bounded like every other (`server.maxStreamBufferBytes`,
 * `slow-reader-cut.ts`): a client that stops reading is cut rather than buffered for.
 */
import type { ServerResponse } from 'node:http';
import type { SessionKey } from '../../../core/correlation-table.js';
import type { Delivery, DownstreamPort } from '../../../core/ports.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { idKey, type JsonRpcMessage, type RequestId } from '../../../protocol/jsonrpc/types.js';
import { formatEvent } from '../sse/sse-writer.js';
import { SlowReaderCut } from './slow-reader-cut.js';

export interface SseSessionOptions {
  readonly key: SessionKey;
  /** The id in the endpoint URL (`?sessionId=`), which the client's POSTs carry. */
  readonly mcpSessionId: string;
  readonly principal: string;
  /** `*` for the aggregated endpoint, else the upstream name. */
  readonly endpoint: string;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Unsent bytes the stream may hold before its client is cut. */
  readonly maxBufferedBytes: number;
  readonly now: () => number;
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

export class SseSession implements DownstreamPort {
  readonly key: SessionKey;
  readonly mcpSessionId: string;
  readonly principal: string;
  readonly endpoint: string;
  readonly createdAt: number;
  lastActivity: number;
  readonly #o: SseSessionOptions;
  readonly #cut: SlowReaderCut;
  /** Id keys of the client's requests waiting for their responses. */
  readonly #pending = new Set<string>();
  #res: ServerResponse | undefined;
  #closed = false;

  constructor(options: SseSessionOptions) {
    this.#o = options;
    this.key = options.key;
    this.mcpSessionId = options.mcpSessionId;
    this.principal = options.principal;
    this.endpoint = options.endpoint;
    this.createdAt = options.now();
    this.lastActivity = this.createdAt;
    this.#cut = new SlowReaderCut({
      maxBufferedBytes: options.maxBufferedBytes,
      metrics: options.metrics,
      logger: options.logger,
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whether requests of the session still wait for responses (`RegisteredSession`). */
  get busy(): boolean {
    return this.#pending.size > 0;
  }

  /** 1 while the event stream is open (`RegisteredSession`): a session with a stream is not idle. */
  get openStreams(): number {
    return this.#res && !this.#res.destroyed && !this.#res.writableEnded ? 1 : 0;
  }

  /** Whether a request with this id already waits for its response. */
  hasPending(id: RequestId): boolean {
    return this.#pending.has(idKey(id));
  }

  /** Registers requests about to go to the router, so that a repeated id is refused meanwhile. */
  await(ids: readonly RequestId[]): void {
    for (const id of ids) this.#pending.add(idKey(id));
  }

  /**
   * Opens the event stream: headers, then the `endpoint` event naming where to POST (MCP
   * 2024-11-05: the first event the client receives), in one write.
   */
  open(res: ServerResponse, postUrl: string): void {
    this.#res = res;
    res.writeHead(200, SSE_HEADERS);
    res.write(formatEvent({ event: 'endpoint', data: postUrl }));
  }

  send(json: string, _message: JsonRpcMessage, delivery: Delivery): void {
    if (delivery.kind === 'response') this.#pending.delete(idKey(delivery.request));
    this.write(json);
  }

  /** Writes one message to the client as a `message` event; cuts a client that does not read. */
  write(json: string): void {
    const res = this.#res;
    if (this.#closed || res === undefined || res.destroyed || res.writableEnded) {
      this.#o.metrics.inc('http_deliveries_dropped_total', { reason: 'sse-stream-gone' });
      return;
    }
    const event = formatEvent({ event: 'message', data: json });
    if (this.#cut.cutIfBehind(res, 'sse-2024', { session: this.key }, event)) return;
    res.write(event);
  }

  /** The client cancelled the request: no response will come for it. */
  dropped(request: RequestId): void {
    this.#pending.delete(idKey(request));
  }

  /** A keep-alive comment on the stream (the server-wide timer); a client behind is cut instead. */
  keepAlive(comment: string): void {
    const res = this.#res;
    if (res === undefined || res.destroyed || res.writableEnded) return;
    if (!this.#cut.cutIfBehind(res, 'sse-2024', { session: this.key })) res.write(comment);
  }

  /** Ends the stream (the session ends with it). Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending.clear();
    const res = this.#res;
    if (res && !res.writableEnded) res.end();
  }
}
