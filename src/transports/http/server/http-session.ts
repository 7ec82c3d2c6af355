/**
 * One client session of the Streamable HTTP server (session-based revisions), and its way out:
 * it implements the router's `DownstreamPort` by putting each message on the right stream.
 *
 * - The response to a request goes to the POST that carried it: collected into one JSON body, or
 *   written to that POST's SSE stream, which ends once all of its responses are out. A POST in
 *   `hold` mode (`auto` for calls that may stream) waits for its first outgoing message: when that
 *   is its last response, the answer is one `application/json` write; when something else comes
 *   first (progress, a server request), or nothing within `holdMs`, it becomes an SSE stream
 *   (headers, priming event, then its events), resumable like any other.
 * - A message caused by a request (progress, sampling, elicitation...) goes to that request's SSE
 *   stream while it is open, else to the session's GET stream, else it is kept for resumption.
 *   Never to another session (seed 003).
 * - Anything else goes to the GET stream, or is kept for resumption.
 * - Every SSE event is first appended to the event store, so its id is resumable: a client that
 *   drops a stream (a disconnect is not a cancellation) gets the rest by GET with Last-Event-ID.
 * - Every stream is bounded (`maxBufferedBytes`, `slow-reader-cut.ts`): a client that stops reading
 *   is cut once that much is unsent, and resumes from the store like any client that dropped.
 * - A resumed stream catches up at the pace its client reads: the replay is written while the
 *   client keeps up, events that arrive meanwhile are read back from the store in order after it,
 *   and only then does the connection take live events again.
 */
import type { ServerResponse } from 'node:http';
import type { SessionKey } from '../../../core/correlation-table.js';
import type { Delivery, DownstreamPort } from '../../../core/ports.js';
import { type Logger, silentLogger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import {
  idKey,
  type JsonRpcMessage,
  type JsonRpcResponse,
  type RequestId,
} from '../../../protocol/jsonrpc/types.js';
import { DEFAULT_MAX_BUFFERED_BYTES } from '../../stream-bound.js';
import { type StreamIdSource, streamIdSource } from '../events/event-id.js';
import type { EventStore, StoredEvent } from '../events/event-store.js';
import { formatEvent, formatPrimingEvent } from '../sse/sse-writer.js';
import { eventsLostNotice } from './events-lost-notice.js';
import { SlowReaderCut } from './slow-reader-cut.js';

/**
 * How a POST is answered: one JSON body, an SSE stream from the start, or held until its first
 * outgoing message decides (see the module comment).
 */
export type ResponseMode = 'json' | 'sse' | 'hold';

/** How long a held POST waits for its first message before it becomes a stream, by default. */
export const DEFAULT_HOLD_MS = 100;

/** The requests of one POST waiting for their responses. */
export interface PostExchange {
  readonly streamId: string;
  /** `hold` turns into `json` or `sse` once decided. */
  mode: ResponseMode;
  readonly batch: boolean;
  /** Id keys of the requests still unanswered. */
  readonly pending: Set<string>;
  /** JSON mode: responses collected until all are in. */
  readonly responses: JsonRpcResponse[];
  /** The connection the responses go to; undefined once the client disconnected. */
  res: ServerResponse | undefined;
  done: boolean;
  /** Headers of the answer, kept while it is held. */
  headers: Record<string, string> | undefined;
  /** The timer that turns a held answer into a stream. */
  hold: NodeJS.Timeout | undefined;
}

export interface HttpSessionOptions {
  readonly key: SessionKey;
  readonly mcpSessionId: string;
  readonly principal: string;
  /** Which endpoint the session was opened on: `*` for the aggregate, else the upstream name. */
  readonly endpoint: string;
  /** Not registered: it ends with its single POST (lenient mode without a session id). */
  readonly ephemeral: boolean;
  readonly store: EventStore;
  readonly metrics: Metrics;
  /** The session's negotiated revision (decides priming events). */
  readonly revision: () => string;
  readonly retryMs: number;
  readonly now: () => number;
  /** How long a held POST waits before it becomes a stream. Default {@link DEFAULT_HOLD_MS}. */
  readonly holdMs?: number;
  /**
   * Open streams allowed in the session: a held POST that would exceed it when it becomes a
   * stream is answered as JSON instead. Default: no limit.
   */
  readonly maxStreams?: number;
  /**
   * Unsent bytes a stream may hold: a write that finds that much is not queued, the connection is
   * cut instead. Default {@link DEFAULT_MAX_BUFFERED_BYTES}.
   */
  readonly maxBufferedBytes?: number;
  /** Where cut streams are logged. Default: nowhere. */
  readonly logger?: Logger;
}

/** A resumed connection writing what it missed, at its client's pace (see `resume`). */
interface CatchUp {
  readonly streamId: string;
  /** Events still to write, from `next` on. */
  events: readonly StoredEvent[];
  next: number;
  /** The id of the last event written, from which the store is asked for more. */
  lastId: string;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

export class HttpSession implements DownstreamPort {
  readonly key: SessionKey;
  readonly mcpSessionId: string;
  readonly principal: string;
  readonly endpoint: string;
  readonly ephemeral: boolean;
  readonly createdAt: number;
  lastActivity: number;
  /** This session's stream ids: one random prefix, then a counter (see `streamIdSource`). */
  readonly #streamIds: StreamIdSource = streamIdSource();
  readonly getStreamId: string = this.#streamIds();
  readonly #o: HttpSessionOptions;
  /** Open standalone (GET) connections; messages go to the newest. */
  readonly #getStreams: ServerResponse[] = [];
  /** Exchanges by the id key of each request still pending in them. */
  readonly #byRequest = new Map<string, PostExchange>();
  /** SSE exchanges still pending, by stream id, for resumption. */
  readonly #byStream = new Map<string, PostExchange>();
  /** Resumed connections still writing what they missed; live events wait in the store meanwhile. */
  readonly #catchingUp = new Map<ServerResponse, CatchUp>();
  readonly #cut: SlowReaderCut;
  #closed = false;
  /** Called when the session's last exchange completes (ephemeral sessions end then). */
  onidle?: () => void;

  constructor(options: HttpSessionOptions) {
    this.#o = options;
    this.key = options.key;
    this.mcpSessionId = options.mcpSessionId;
    this.principal = options.principal;
    this.endpoint = options.endpoint;
    this.ephemeral = options.ephemeral;
    this.createdAt = options.now();
    this.lastActivity = this.createdAt;
    this.#cut = new SlowReaderCut({
      maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
      metrics: options.metrics,
      logger: options.logger ?? silentLogger,
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Open connections of this session (GET streams and POSTs still answering). */
  get openStreams(): number {
    let open = this.#getStreams.length;
    for (const exchange of this.#byStream.values()) if (exchange.res) open++;
    return open;
  }

  /** Whether requests of this session still wait for responses. */
  get busy(): boolean {
    return this.#byRequest.size > 0;
  }

  /** Whether a request with this id is already waiting in one of the session's POSTs. */
  hasPending(id: RequestId): boolean {
    return this.#byRequest.has(idKey(id));
  }

  /**
   * Registers the requests of a POST before they go to the router, so that answers produced at
   * once (errors, local answers) find their way out. For SSE the response headers are sent now;
   * a held POST starts its timer.
   */
  openExchange(
    res: ServerResponse,
    ids: readonly RequestId[],
    mode: ResponseMode,
    batch: boolean,
    headers: Record<string, string>,
  ): PostExchange {
    const exchange: PostExchange = {
      streamId: this.#streamIds(),
      mode,
      batch,
      pending: new Set(ids.map(idKey)),
      responses: [],
      res,
      done: false,
      headers: undefined,
      hold: undefined,
    };
    for (const key of exchange.pending) this.#byRequest.set(key, exchange);
    if (mode === 'sse') {
      this.#byStream.set(exchange.streamId, exchange);
      res.writeHead(200, { ...SSE_HEADERS, ...headers });
      // The headers go with the priming event, in one write; without one, on their own.
      if (!this.#prime(exchange.streamId, res)) res.flushHeaders();
    } else if (mode === 'hold') {
      exchange.headers = headers;
      exchange.hold = setTimeout(() => this.#stream(exchange), this.#o.holdMs ?? DEFAULT_HOLD_MS);
      exchange.hold.unref();
    }
    res.once('close', () => {
      if (exchange.res === res) exchange.res = undefined;
      if (exchange.mode === 'hold') this.#unhold(exchange);
      if (!exchange.done) this.#o.metrics.inc('http_streams_disconnected_total', { stream: 'post' });
    });
    return exchange;
  }

  /**
   * Turns a held POST into an SSE stream (headers, priming event, the responses collected so far
   * as events), or into a JSON answer when the session is at its stream limit. Only while the
   * client is there: a held POST whose client left is answered like a JSON one (nowhere).
   */
  #stream(exchange: PostExchange): void {
    if (exchange.mode !== 'hold') return;
    const res = exchange.res;
    if (res === undefined || res.writableEnded || res.destroyed) return;
    const headers = exchange.headers ?? {};
    this.#unhold(exchange);
    if (this.#o.maxStreams !== undefined && this.openStreams >= this.#o.maxStreams) {
      this.#o.metrics.inc('http_sse_downgraded_total', { reason: 'stream-limit' });
      exchange.mode = 'json';
      exchange.headers = headers;
      return;
    }
    exchange.mode = 'sse';
    this.#byStream.set(exchange.streamId, exchange);
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    if (!this.#prime(exchange.streamId, res)) res.flushHeaders();
    for (const response of exchange.responses.splice(0))
      this.#emit(exchange.streamId, res, JSON.stringify(response));
  }

  /** Stops holding: the timer goes; the exchange keeps its mode until decided. */
  #unhold(exchange: PostExchange): void {
    if (exchange.hold !== undefined) clearTimeout(exchange.hold);
    exchange.hold = undefined;
    exchange.headers = undefined;
  }

  /** Attaches a standalone GET stream (headers already decided by the caller). */
  openGetStream(res: ServerResponse, headers: Record<string, string>): void {
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    res.flushHeaders();
    this.#getStreams.push(res);
    res.once('close', () => {
      const i = this.#getStreams.indexOf(res);
      if (i >= 0) this.#getStreams.splice(i, 1);
      this.lastActivity = this.#o.now();
    });
    this.#prime(this.getStreamId, res);
  }

  /**
   * Resumes a stream after `Last-Event-ID`: the replayed events are written first, then the
   * connection continues that stream (the GET stream, or a POST stream whose requests are still
   * pending) or ends (a POST stream already complete). The replay goes at the client's pace: the
   * connection writes while its client keeps up and waits for it otherwise, and reads what the
   * stream got meanwhile back from the store, so a client that resumes after being cut for being
   * slow gets every event in order and is not cut again for the backlog it asked for.
   */
  resume(
    res: ServerResponse,
    streamId: string,
    events: readonly { id: string; data: string }[],
    headers: Record<string, string>,
    notice?: string,
  ): void {
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    if (notice !== undefined) res.write(formatEvent({ data: notice }));
    const replay = events.filter((event) => event.data.length > 0);
    if (streamId === this.getStreamId) {
      this.#getStreams.push(res);
      res.once('close', () => {
        const i = this.#getStreams.indexOf(res);
        if (i >= 0) this.#getStreams.splice(i, 1);
        this.#catchingUp.delete(res);
      });
    } else {
      const exchange = this.#byStream.get(streamId);
      if (exchange && !exchange.done) {
        exchange.res = res;
        res.once('close', () => {
          if (exchange.res === res) exchange.res = undefined;
          this.#catchingUp.delete(res);
        });
      }
    }
    if (replay.length === 0) {
      if (!this.#continues(streamId, res)) res.end();
      return;
    }
    this.#catchingUp.set(res, { streamId, events: replay, next: 0, lastId: replay[0]!.id });
    this.#pump(res);
  }

  /**
   * Writes what a resumed connection still has to catch up on, while its client is not behind;
   * when it is, goes on once the client has read. When the replay is out, asks the store for what
   * the stream got since, and once there is nothing more the connection is live (or ends, when its
   * stream is complete).
   */
  #pump(res: ServerResponse): void {
    const catchUp = this.#catchingUp.get(res);
    if (!catchUp) return;
    for (;;) {
      if (res.destroyed || res.writableEnded) {
        this.#catchingUp.delete(res);
        return;
      }
      if (this.#cut.bound.isBehind(res)) {
        this.#cut.bound.whenCaughtUp(res, () => this.#pump(res));
        return;
      }
      const event = catchUp.events[catchUp.next];
      if (event !== undefined) {
        catchUp.next++;
        catchUp.lastId = event.id;
        res.write(formatEvent({ id: event.id, data: event.data }));
        continue;
      }
      // Events that came for the stream during the replay, unless another connection now takes them.
      const more = this.#continues(catchUp.streamId, res)
        ? this.#o.store.replayAfter(this.key, catchUp.lastId, this.#o.now())
        : undefined;
      if (more?.ok && more.events.length > 0) {
        if (more.gap) res.write(formatEvent({ data: eventsLostNotice(catchUp.lastId) }));
        catchUp.events = more.events;
        catchUp.next = 0;
        continue;
      }
      this.#catchingUp.delete(res);
      if (!this.#continues(catchUp.streamId, res)) res.end();
      return;
    }
  }

  /** Whether `res` is the connection that takes `streamId`'s live events. */
  #continues(streamId: string, res: ServerResponse): boolean {
    if (streamId === this.getStreamId) return this.#newestGetStream() === res;
    return this.#byStream.get(streamId)?.res === res;
  }

  /** Whether `streamId` is one of this session's streams still able to receive events. */
  isLiveStream(streamId: string): boolean {
    return streamId === this.getStreamId || this.#byStream.has(streamId);
  }

  send(json: string, message: JsonRpcMessage, delivery: Delivery): void {
    if (this.#closed) {
      this.#o.metrics.inc('http_deliveries_dropped_total', { reason: 'session-closed' });
      return;
    }
    if (delivery.kind === 'response') {
      const key = idKey(delivery.request);
      const exchange = this.#byRequest.get(key);
      if (exchange) {
        this.#byRequest.delete(key);
        exchange.pending.delete(key);
        this.#respond(exchange, json, message as JsonRpcResponse);
        return;
      }
      // A response whose POST is gone from the map can only be kept for a resuming GET.
      this.#o.metrics.inc('http_responses_without_exchange_total');
      this.#emit(this.getStreamId, this.#newestGetStream(), json);
      return;
    }
    if (delivery.kind === 'related') {
      const exchange = this.#byRequest.get(idKey(delivery.request));
      // Something before the response: a held POST becomes a stream now.
      if (exchange?.mode === 'hold') this.#stream(exchange);
      if (exchange?.mode === 'sse') {
        if (exchange.res) {
          this.#emit(exchange.streamId, exchange.res, json);
          return;
        }
        const get = this.#newestGetStream();
        if (get) this.#emit(this.getStreamId, get, json);
        else this.#emit(exchange.streamId, undefined, json);
        return;
      }
    }
    this.#emit(this.getStreamId, this.#newestGetStream(), json);
  }

  /**
   * The client cancelled a request of one of its POSTs, so no response will come for it (the
   * router's `dropped`). Its POST stops waiting for it: with other answers still due it goes on;
   * with none, a batch is answered with what it has, an SSE stream ends, and a single request's
   * POST that had not started answering gets 202 and no body (MCP: a cancelled request has no
   * response; the client has usually abandoned that POST already).
   */
  dropped(request: RequestId): void {
    const key = idKey(request);
    const exchange = this.#byRequest.get(key);
    if (!exchange) return;
    this.#byRequest.delete(key);
    exchange.pending.delete(key);
    this.#o.metrics.inc('http_cancelled_requests_released_total');
    if (exchange.done || exchange.pending.size > 0) return;
    if (exchange.mode === 'sse' || exchange.responses.length > 0) {
      this.settle(exchange);
      return;
    }
    exchange.done = true;
    const headers = exchange.headers;
    if (exchange.mode === 'hold') this.#unhold(exchange);
    exchange.mode = 'json';
    const res = exchange.res;
    if (res && !res.headersSent) res.writeHead(202, headers ?? this.#sessionHeader());
    if (res && !res.writableEnded) res.end();
    this.#exchangeDone(exchange);
  }

  /**
   * Adds an answer that has no request id to wait for (an invalid element of a batch, answered with
   * `id: null` as JSON-RPC requires) to a POST's answer.
   */
  addToExchange(exchange: PostExchange, response: JsonRpcResponse): void {
    if (exchange.mode !== 'sse') exchange.responses.push(response);
    else this.#emit(exchange.streamId, exchange.res, JSON.stringify(response));
  }

  /**
   * Completes a POST whose every request is already answered: the transport answered them all
   * itself (a batch of refused requests), so no response from the router will come to do it.
   */
  settle(exchange: PostExchange): void {
    if (exchange.done || exchange.pending.size > 0) return;
    if (exchange.mode !== 'sse') {
      this.#writeJson(exchange, JSON.stringify(exchange.batch ? exchange.responses : exchange.responses[0]));
      return;
    }
    exchange.done = true;
    if (exchange.res && !exchange.res.writableEnded) exchange.res.end();
    this.#exchangeDone(exchange);
  }

  #respond(exchange: PostExchange, json: string, message: JsonRpcResponse): void {
    if (exchange.mode !== 'sse') {
      // JSON, or held: the answer is complete once every response is in, and goes in one write.
      exchange.responses.push(message);
      if (exchange.pending.size > 0) return;
      this.#writeJson(exchange, exchange.batch ? JSON.stringify(exchange.responses) : json);
      return;
    }
    const last = exchange.pending.size === 0;
    // The last event and the end of the stream go in one write.
    this.#emit(exchange.streamId, exchange.res, json, last);
    if (!last) return;
    exchange.done = true;
    // A connection still catching up ends once it has written what it missed (`#pump`).
    const res = exchange.res;
    if (res && !res.writableEnded && !this.#catchingUp.has(res)) res.end();
    this.#exchangeDone(exchange);
  }

  /** Writes a JSON (or held) POST's whole answer, `body`, and ends the exchange. */
  #writeJson(exchange: PostExchange, body: string): void {
    exchange.done = true;
    const headers = exchange.headers;
    if (exchange.mode === 'hold') this.#unhold(exchange);
    exchange.mode = 'json';
    const res = exchange.res;
    if (!res) {
      this.#o.metrics.inc('http_deliveries_dropped_total', { reason: 'json-client-gone' });
    } else {
      res.writeHead(200, { 'content-type': 'application/json', ...(headers ?? this.#sessionHeader()) });
      res.end(body);
    }
    this.#exchangeDone(exchange);
  }

  #exchangeDone(exchange: PostExchange): void {
    this.#byStream.delete(exchange.streamId);
    this.lastActivity = this.#o.now();
    if (this.#byRequest.size === 0) this.onidle?.();
  }

  /**
   * Stores an event (so that its id is resumable) and writes it, ending the stream when `end`. A
   * connection catching up reads it from the store in its turn; one whose client is behind is cut
   * (the event stays in the store for its resumption).
   */
  #emit(streamId: string, res: ServerResponse | undefined, json: string, end = false): void {
    const id = this.#o.store.append(this.key, streamId, json, this.#o.now());
    if (res && !res.writableEnded && !res.destroyed) {
      if (this.#catchingUp.has(res)) return;
      const event = formatEvent({ id, data: json });
      if (end) {
        res.end(event);
        return;
      }
      if (!this.#cutIfBehind(res, streamId, event)) {
        res.write(event);
        return;
      }
    }
    this.#o.metrics.inc('http_events_kept_for_resumption_total');
  }

  /** Cuts `res` when its client is behind (see `slow-reader-cut.ts`); says whether it did. */
  #cutIfBehind(res: ServerResponse, streamId: string, next?: string): boolean {
    return this.#cut.cutIfBehind(
      res,
      streamId === this.getStreamId ? 'get' : 'post',
      { session: this.key, stream: streamId },
      next,
    );
  }

  /** Writes the priming event of a new stream (2025-11-25 on); says whether it wrote one. */
  #prime(streamId: string, res: ServerResponse): boolean {
    const revision = this.#o.revision();
    if (revision < '2025-11-25') return false;
    const id = this.#o.store.prime(this.key, streamId, this.#o.now());
    res.write(formatPrimingEvent(id, this.#o.retryMs));
    return true;
  }

  #newestGetStream(): ServerResponse | undefined {
    for (let i = this.#getStreams.length - 1; i >= 0; i--) {
      const res = this.#getStreams[i]!;
      if (!res.writableEnded && !res.destroyed) return res;
    }
    return undefined;
  }

  #sessionHeader(): Record<string, string> {
    return this.ephemeral ? {} : { 'mcp-session-id': this.mcpSessionId };
  }

  /**
   * Writes a keep-alive comment on every open stream (called by one server-wide timer); a stream
   * whose client is behind is cut instead, and one catching up needs none.
   */
  keepAlive(comment: string): void {
    const open: [ServerResponse, string][] = this.#getStreams.map((res) => [res, this.getStreamId]);
    for (const exchange of this.#byStream.values())
      if (exchange.res) open.push([exchange.res, exchange.streamId]);
    for (const [res, streamId] of open) {
      if (res.writableEnded || res.destroyed || this.#catchingUp.has(res)) continue;
      if (!this.#cutIfBehind(res, streamId)) res.write(comment);
    }
  }

  /** Ends every connection and forgets the session's events. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const res of this.#getStreams.splice(0)) res.end();
    for (const exchange of this.#byStream.values()) exchange.res?.end();
    for (const exchange of new Set(this.#byRequest.values())) {
      if (exchange.mode === 'hold') this.#unhold(exchange);
      if (exchange.mode !== 'sse' && exchange.res && !exchange.res.headersSent) {
        exchange.res.writeHead(404, { 'content-type': 'application/json' });
        exchange.res.end(
          JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'session ended' } }),
        );
      }
    }
    this.#byStream.clear();
    this.#byRequest.clear();
    this.#o.store.dropSession(this.key);
  }
}
