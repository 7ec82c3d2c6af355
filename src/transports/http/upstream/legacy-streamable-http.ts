/**
 * The upstream client for MCP servers over Streamable HTTP with sessions: revisions 2025-03-26,
 * 2025-06-18 and 2025-11-25 (the spec's "legacy" era).
 *
 * - Every message is one POST (`Accept: application/json, text/event-stream`); a request's answer
 *   is JSON (one message or a batch) or an SSE stream of related messages ending with the response.
 *   Each message a POST stream carries is delivered with `relatedUpstreamId` = that request's id.
 * - The gateway's first request is its `initialize`: the transport watches it to learn the
 *   `Mcp-Session-Id` (sent on every later request) and the negotiated `protocolVersion` (sent as
 *   `MCP-Protocol-Version`). After `notifications/initialized` it opens the standalone GET stream.
 *   What is sent while the `initialize` POST awaits its status waits, and follows in order once
 *   the session id is known (a client may pipeline `initialize`, `notifications/initialized` and
 *   its first request; POSTed at once they would carry no session id and be refused); what
 *   follows the first `notifications/initialized` waits for its status in the same way, so that
 *   no request overtakes it on another connection.
 * - An SSE answer that ends before its response is resumed by GET with `Last-Event-ID` after the
 *   server's `retry` (priming events carry the cursor), a bounded number of times
 *   (`answer-stream.ts`); the GET stream is kept open until close (`standalone-stream.ts`).
 * - Messages leave as a 2025 client sends them: the 2026-07-28 envelope members of a modern client's
 *   `_meta` (and the gateway's own `switchboard.dev/` members) are taken out of the body.
 * - A request never hangs on a transport failure: a failed POST, a stream that cannot be resumed or
 *   an oversized answer produce an error response for its id.
 * - 404 to a request that carried the session id: the session is gone; `onclose` reports it and the
 *   supervisor re-initializes on a new transport.
 * - `onInitializeRejected` lets the owner fall back to the 2024-11-05 transport when the
 *   `initialize` POST gets 400, 404 or 405 (see `http-upstream.ts`); what waited behind the
 *   `initialize` goes with it, never written here and never dropped.
 */

import type { Dispatcher } from 'undici';
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../../core/ports.js';
import { type HttpTransportContext, safeHeaders } from '../../../envelope/message-context.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../../../protocol/jsonrpc/parse.js';
import {
  idKey,
  isRequest,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type RequestId,
} from '../../../protocol/jsonrpc/types.js';
import { legacyPeerRefusal } from '../../../protocol/mcp/legacy-peer-refusal.js';
import { cancelledRequestId } from '../../../protocol/mcp/progress.js';
import { toLegacyWire, type Wire } from '../../../protocol/mcp/reserved-meta.js';
import { type Flight, followAnswerStream } from './answer-stream.js';
import { describeNetworkError } from './describe-error.js';
import { HandshakeDeadline } from './handshake-deadline.js';
import { HttpConnection } from './http-connection.js';
import {
  type HttpUpstreamOptions,
  type ResolvedHttpUpstreamOptions,
  resolveHttpUpstreamOptions,
} from './http-upstream-options.js';
import { readJsonAnswer } from './json-answer.js';
import { configuredHeaders, isValidSessionId, POST_ACCEPT, STREAM_ACCEPT } from './request-headers.js';
import {
  declaredLengthOf,
  discardBody,
  headerValue,
  mediaTypeOf,
  type ResponseBody,
  type ResponseHeaders,
  readBodyText,
  readErrorDetail,
} from './response-body.js';
import { negotiatedVersion } from './response-watch.js';
import { runStandaloneStream } from './standalone-stream.js';
import type { StreamHost } from './stream-host.js';
import { tooLargeResponse } from './synthesized-response.js';
import { withTraceHeaders } from './trace-headers.js';
import { UpstreamOutlet } from './upstream-outlet.js';

/** The `initialize` POST was refused with a status that calls for the 2024-11-05 fallback. */
export interface InitializeRejection {
  readonly status: number;
  /** What the error body said, if anything. */
  readonly detail?: string;
  /** The refused `initialize`, to be sent again on the fallback transport. */
  readonly json: string;
  readonly message: JsonRpcRequest;
  /**
   * What was sent after the `initialize` while its POST was in flight, in order, as it was given
   * to `send` (never POSTed here): the fallback transport sends it after the `initialize`.
   */
  readonly following: readonly HeldMessage[];
}

/** A message given to `send` and not written yet. */
export interface HeldMessage {
  readonly json: string;
  readonly message: JsonRpcMessage;
}

/** The common options, plus the hook the fallback to 2024-11-05 hangs on. */
export interface LegacyStreamableHttpOptions extends HttpUpstreamOptions {
  /**
   * Called instead of failing the `initialize` when its POST gets 400, 404 or 405 (MCP's signal
   * for a 2024-11-05 server). The transport does nothing more with that request.
   */
  readonly onInitializeRejected?: (rejection: InitializeRejection) => void;
}

/** Statuses of the `initialize` POST that mean "try the 2024-11-05 HTTP+SSE transport". */
export const FALLBACK_STATUSES: ReadonlySet<number> = new Set([400, 404, 405]);

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** Streamable HTTP with sessions, 2025-03-26..2025-11-25 (see the file comment for the contract). */
export class LegacyStreamableHttpTransport implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  onerror?: (error: Error) => void;

  readonly #o: ResolvedHttpUpstreamOptions;
  readonly #onInitializeRejected: ((rejection: InitializeRejection) => void) | undefined;
  readonly #http: HttpConnection;
  readonly #path: string;
  readonly #base: Record<string, string>;
  readonly #context: HttpTransportContext;
  #postHeaders: Record<string, string>;
  #streamHeaders: Record<string, string>;
  #sessionHeaders: Record<string, string>;
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  /** The gateway's `initialize`, once seen going out; undefined again once its answer is in. */
  #initialize: JsonRpcRequest | undefined;
  #initializeSeen = false;
  /**
   * Messages sent while the handshake's POSTs await their status, in order. Behind the
   * `initialize` they would go without the session id (a stateful server refuses them) or, when
   * the server turns out to be 2024-11-05, to a URL that takes no POSTs; behind the first
   * `notifications/initialized`, on another connection, they could overtake it (a server that
   * checks the lifecycle refuses a request before it). Undefined when nothing waits.
   */
  #waiting: HeldMessage[] | undefined;
  /** The first `notifications/initialized`, while its POST awaits its status. */
  #initialized: JsonRpcMessage | undefined;
  #initializedSeen = false;
  #standaloneOpened = false;
  #streamCounter = 0;
  /** Requests whose POST is being handled, by id key. */
  readonly #flights = new Map<string, Flight>();
  readonly #out: UpstreamOutlet;
  readonly #host: StreamHost;
  /** Bounds the `initialize` and the first `notifications/initialized` (see `handshake-deadline.ts`). */
  readonly #handshake: HandshakeDeadline;
  #closing: Promise<void> | undefined;

  constructor(options: LegacyStreamableHttpOptions) {
    this.#o = resolveHttpUpstreamOptions(options);
    this.#onInitializeRejected = options.onInitializeRejected;
    this.#http = new HttpConnection(this.#o.url, options.dispatcher, options.maxConnections);
    this.#path = this.#o.url.pathname + this.#o.url.search;
    this.#base = configuredHeaders(options.headers);
    this.#context = { kind: 'http', method: 'POST', path: this.#path, headers: {} };
    this.#out = new UpstreamOutlet(this, {
      name: this.#o.name,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
      context: this.#context,
    });
    this.#host = {
      options: this.#o,
      http: this.#http,
      out: this.#out,
      get: (lastEventId) => this.#get(lastEventId),
      hasSession: () => this.#sessionId !== undefined,
      expired: () => this.#expired(),
      send: (json, message) => this.send(json, message),
      countOversized: (bytes) => this.#countOversized(bytes),
    };
    this.#handshake = new HandshakeDeadline(this.#o.handshakeTimeoutMs, (step) =>
      this.#handshakeExpired(step),
    );
    this.#sessionHeaders = this.#base;
    this.#postHeaders = {};
    this.#streamHeaders = {};
    this.#rebuildHeaders();
  }

  /** The era-specific kind, as the factory names it. */
  get kind(): 'streamable-http' {
    return 'streamable-http';
  }

  /** The upstream's session id, once its `initialize` answer set one. */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /** The negotiated protocol version, once the `initialize` response was read. */
  get protocolVersion(): string | undefined {
    return this.#protocolVersion;
  }

  /** Describes the link for the router (method and path of the endpoint). */
  get transportContext(): HttpTransportContext {
    return this.#context;
  }

  /** Nothing to connect before the first POST: HTTP connections open on demand. */
  start(): Promise<void> {
    return Promise.resolve();
  }

  /** A legacy server cannot resume a 2026-07-28 `requestState` (see `legacyPeerRefusal`). */
  refuse(request: JsonRpcRequest): JsonRpcErrorObject | undefined {
    return legacyPeerRefusal(request, this.#o.name);
  }

  /**
   * Writes one message. While the `initialize` POST awaits its status, anything else waits and
   * follows in order once it is known (with the session id the answer set), or is handed to the
   * fallback with the refused `initialize`; likewise behind the first `notifications/initialized`.
   * The wait lasts as long as that POST, at most `handshakeTimeoutMs` (then what waits fails and
   * the transport closes); the router's deadline and `close()` end it sooner.
   */
  send(routed: string, original: JsonRpcMessage): Wire | undefined {
    if (this.#out.closed) {
      this.#o.metrics.inc('upstream_write_errors_total', { upstream: this.#o.name });
      return undefined;
    }
    // What a 2025 client would send: a 2026-07-28 client's own envelope (or a gateway member) in the
    // body would contradict MCP-Protocol-Version, and a dual-era server refuses that mismatch.
    const { json, message } = toLegacyWire(routed, original);
    if (this.#waiting) this.#waiting.push({ json: routed, message: original });
    else this.#admit(json, message);
    return json === routed ? undefined : { json, message };
  }

  /** Writes a message nothing waits before; a handshake message makes what follows wait for it. */
  #admit(json: string, message: JsonRpcMessage): void {
    if (isRequest(message) && message.method === 'initialize' && !this.#initializeSeen) {
      this.#initializeSeen = true;
      this.#initialize = message;
      this.#waiting = [];
      this.#handshake.arm('initialize');
    } else if (
      'method' in message &&
      !('id' in message) &&
      message.method === 'notifications/initialized' &&
      !this.#initializedSeen
    ) {
      this.#initializedSeen = true;
      this.#initialized = message;
      this.#waiting = [];
      this.#handshake.arm('notifications/initialized');
    }
    this.#write(json, message);
  }

  /** POSTs a message already in its 2025 form. */
  #write(json: string, message: JsonRpcMessage): void {
    if ('method' in message && !('id' in message) && message.method === 'notifications/cancelled') {
      const cancelled = cancelledRequestId(message);
      const flight = cancelled === undefined ? undefined : this.#flights.get(idKey(cancelled));
      if (flight) flight.cancelled = true;
    }
    this.#post(json, message).catch((error: unknown) =>
      this.#out.report(`POST failed unexpectedly: ${String(error)}`),
    );
  }

  /**
   * A handshake POST has its status: what waited is written now, in order (up to the next
   * handshake message, behind which the rest waits again), unless it goes to the fallback
   * (`handOver`), which then owns it. Returns what waited.
   */
  #release(handOver = false): HeldMessage[] {
    const waiting = this.#waiting ?? [];
    this.#waiting = undefined;
    if (!handOver && !this.#out.closed)
      for (const [index, item] of waiting.entries()) {
        // `#admit` may have started a new wait (TypeScript cannot see it set the field).
        const again = this.#waiting as HeldMessage[] | undefined;
        if (again) {
          again.push(...waiting.slice(index));
          break;
        }
        const wire = toLegacyWire(item.json, item.message);
        this.#admit(wire.json, wire.message);
      }
    return waiting;
  }

  /** DELETEs the session (if any), stops every stream, then `onclose`. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  // ---------------------------------------------------------------- POST

  async #post(json: string, message: JsonRpcMessage): Promise<void> {
    const request = isRequest(message) ? message : undefined;
    if (request === undefined) {
      if (message !== this.#initialized) return this.#exchange(json, message, undefined, undefined);
      try {
        await this.#exchange(json, message, undefined, undefined);
      } finally {
        this.#handshake.settle('notifications/initialized');
        this.#initialized = undefined;
        this.#release();
      }
      return;
    }
    // Read before the exchange: learning the answer forgets which request was the `initialize`.
    const initialize = request === this.#initialize;
    // Registered before the first await, so a cancellation sent right after is seen.
    const key = idKey(request.id);
    const flight: Flight = { cancelled: false, answered: false };
    this.#flights.set(key, flight);
    try {
      await this.#exchange(json, message, request, flight);
    } finally {
      // Answered, failed or handed to the fallback: the `initialize` step is over either way.
      if (initialize) this.#handshake.settle('initialize');
      if (this.#flights.get(key) === flight) this.#flights.delete(key);
    }
  }

  async #exchange(
    json: string,
    message: JsonRpcMessage,
    request: JsonRpcRequest | undefined,
    flight: Flight | undefined,
  ): Promise<void> {
    const id = request?.id;
    const initialize = request !== undefined && request === this.#initialize;
    const carriedSession = this.#sessionId !== undefined;
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#http.request({
        method: 'POST',
        path: this.#path,
        headers: withTraceHeaders(this.#postHeaders, message),
        body: json,
        // The router owns request deadlines: a JSON-answering server may take long to reply.
        headersTimeoutMs: 0,
        bodyTimeoutMs: this.#o.streamIdleTimeoutMs,
      });
    } catch (error) {
      this.#out.fail(id, `POST to upstream ${this.#o.name} failed: ${describeNetworkError(error)}`);
      if (initialize) this.#release();
      return;
    }
    const { statusCode: status, headers, body } = response;
    if (status === 404 && carriedSession) {
      discardBody(body);
      this.#expired();
      return;
    }
    if (!isSuccess(status)) {
      const detail = await readErrorDetail(body);
      if (initialize && FALLBACK_STATUSES.has(status) && this.#onInitializeRejected && !this.#out.closed) {
        this.#initialize = undefined;
        this.#onInitializeRejected({
          status,
          json,
          message: request,
          following: this.#release(true),
          ...(detail === undefined ? {} : { detail }),
        });
        return;
      }
      this.#o.metrics.inc('upstream_http_errors_total', { upstream: this.#o.name, status: String(status) });
      this.#out.fail(
        id,
        `upstream ${this.#o.name} answered HTTP ${status}${detail ? `: ${detail}` : ''}`,
        status,
      );
      if (initialize) this.#release();
      return;
    }
    if (initialize) {
      const adopted = this.#adoptSession(headers, body, request.id);
      // What waited goes now, with the session id the answer set (or without one, to fail there).
      this.#release();
      if (!adopted) return;
    }
    if (request === undefined || flight === undefined) {
      discardBody(body);
      if (status !== 202) {
        // Tolerated (some servers answer 200), but counted: the spec says 202.
        this.#o.metrics.inc('upstream_http_unexpected_status_total', {
          upstream: this.#o.name,
          status: String(status),
        });
        this.#o.logger.debug(
          { upstream: this.#o.name, status },
          'a notification or response was accepted with a status other than 202',
        );
      }
      if ('method' in message && message.method === 'notifications/initialized') this.#openStandalone();
      return;
    }
    const type = mediaTypeOf(headers);
    if (type === 'text/event-stream') {
      await followAnswerStream(this.#host, body, {
        id: request.id,
        flight,
        streamId: `post-${++this.#streamCounter}`,
        ...(initialize ? { onResponse: (response: JsonObject) => this.#learn(response) } : {}),
      });
    } else if (type === 'application/json')
      await this.#readJson(body, request.id, initialize, status, headers);
    else {
      discardBody(body);
      const what =
        status === 202
          ? 'HTTP 202 without a response'
          : `HTTP ${status} with ${type ? `content type ${type}` : 'no content type'}`;
      this.#out.failMalformed(request.id, `upstream ${this.#o.name} answered a request with ${what}`, status);
    }
  }

  /** Takes the session id from the `initialize` answer; false when it is unusable (request failed). */
  #adoptSession(headers: ResponseHeaders, body: ResponseBody, id: RequestId): boolean {
    const sessionId = headerValue(headers, 'mcp-session-id');
    if (sessionId === undefined) return true;
    if (!isValidSessionId(sessionId)) {
      discardBody(body);
      this.#out.fail(id, `upstream ${this.#o.name} sent an invalid Mcp-Session-Id (not visible ASCII)`);
      return false;
    }
    this.#sessionId = sessionId;
    this.#rebuildHeaders();
    return true;
  }

  /** Reads the `initialize` response for the negotiated version (sent on every later request). */
  #learn(response: JsonObject): void {
    this.#initialize = undefined;
    const version = negotiatedVersion(response);
    if (version === undefined || version === this.#protocolVersion) return;
    this.#protocolVersion = version;
    this.#rebuildHeaders();
  }

  async #readJson(
    body: ResponseBody,
    id: RequestId,
    initialize: boolean,
    status: number,
    headers: ResponseHeaders,
  ): Promise<void> {
    const read = await readBodyText(body, this.#o.maxMessageBytes, declaredLengthOf(headers));
    if (read.kind === 'failed') {
      this.#out.fail(
        id,
        `the answer of upstream ${this.#o.name} broke off: ${describeNetworkError(read.error)}`,
        status,
      );
      return;
    }
    if (read.kind === 'oversized') {
      this.#countOversized(read.bytes);
      this.#out.deliver(tooLargeResponse(id, this.#o.name, read.bytes, this.#o.maxMessageBytes), {
        transport: this.#httpContext(status, headers),
        relatedUpstreamId: id,
      });
      return;
    }
    const answer = readJsonAnswer(read.text, id, {
      allowBatch: true,
      maxDepth: this.#o.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
    });
    const meta = { transport: this.#httpContext(status, headers), relatedUpstreamId: id };
    // Related messages first, in order; one nested too deep goes to the router all the same,
    // which refuses it by its own rules (a server request too deep is answered with an error).
    for (const related of answer.related) this.#out.deliver(related.text, meta);
    if (!answer.ok) {
      this.#o.metrics.inc('upstream_malformed_total', { upstream: this.#o.name });
      this.#out.failMalformed(
        id,
        `upstream ${this.#o.name} answered HTTP ${status} with ${answer.fault}`,
        status,
      );
      return;
    }
    if (initialize) this.#learn(answer.response.message);
    this.#out.deliver(answer.response.text, meta);
  }

  /** The context of a JSON answer; the session id is redacted (whoever holds it can use the session). */
  #httpContext(status: number, headers: ResponseHeaders): HttpTransportContext {
    const safe = safeHeaders(headers);
    if (safe['mcp-session-id'] !== undefined) safe['mcp-session-id'] = '[REDACTED]';
    return { kind: 'http', method: 'POST', path: this.#path, headers: safe, status };
  }

  // ---------------------------------------------------------------- streams

  #countOversized(bytes: number): void {
    this.#o.metrics.inc('oversized_messages_total', { side: 'upstream', upstream: this.#o.name });
    this.#o.logger.warn(
      { upstream: this.#o.name, bytes, limit: this.#o.maxMessageBytes },
      'upstream message too large; dropped',
    );
  }

  #openStandalone(): void {
    if (this.#standaloneOpened || !this.#o.standaloneStream || this.#out.closed) return;
    this.#standaloneOpened = true;
    runStandaloneStream(this.#host, this.#flights).catch((error: unknown) =>
      this.#out.report(`the GET stream failed unexpectedly: ${String(error)}`),
    );
  }

  #get(lastEventId: string): Promise<Dispatcher.ResponseData> {
    return this.#http.request({
      method: 'GET',
      path: this.#path,
      headers:
        lastEventId === '' ? this.#streamHeaders : { ...this.#streamHeaders, 'last-event-id': lastEventId },
      headersTimeoutMs: this.#o.streamIdleTimeoutMs,
      bodyTimeoutMs: this.#o.streamIdleTimeoutMs,
    });
  }

  // ---------------------------------------------------------------- delivery, failures, shutdown

  #rebuildHeaders(): void {
    const session: Record<string, string> = { ...this.#base };
    if (this.#sessionId !== undefined) session['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) session['mcp-protocol-version'] = this.#protocolVersion;
    this.#sessionHeaders = session;
    this.#postHeaders = { ...session, accept: POST_ACCEPT, 'content-type': 'application/json' };
    this.#streamHeaders = { ...session, accept: STREAM_ACCEPT };
  }

  /**
   * A handshake step outlived `handshakeTimeoutMs`: the server took the connection and is silent.
   * The `initialize` and what waits behind the handshake fail with `SB_UPSTREAM_UNAVAILABLE`
   * (never written), then the transport closes, which the supervisor treats as a dead upstream.
   */
  #handshakeExpired(step: string): void {
    if (this.#out.closed) return;
    const reason = `upstream ${this.#o.name} did not finish its handshake within ${this.#handshake.ms} ms (no answer to ${step})`;
    this.#o.metrics.inc('upstream_handshake_timeouts_total', { upstream: this.#o.name });
    this.#o.logger.warn({ upstream: this.#o.name, step, timeoutMs: this.#handshake.ms }, reason);
    const waiting = this.#waiting ?? [];
    this.#waiting = undefined;
    this.#initialized = undefined;
    if (this.#initialize) this.#out.fail(this.#initialize.id, reason);
    for (const item of waiting) if (isRequest(item.message)) this.#out.fail(item.message.id, reason);
    this.#out.finish({ reason });
    this.#http.abort();
    void this.#http.release();
  }

  #expired(): void {
    if (this.#out.closed) return;
    this.#o.metrics.inc('upstream_sessions_expired_total', { upstream: this.#o.name });
    this.#o.logger.warn({ upstream: this.#o.name }, 'the upstream session expired (404)');
    this.#out.finish({ reason: 'upstream session expired (404)' });
    void this.#http.release();
  }

  async #shutdown(): Promise<void> {
    if (this.#out.closed) return;
    this.#out.stop();
    this.#handshake.dispose();
    this.#http.abort();
    // What still waits for the initialize is never written: the link closes, and with it every
    // request the router still waits on.
    this.#waiting = undefined;
    this.#initialized = undefined;
    if (this.#sessionId !== undefined) await this.#deleteSession();
    await this.#http.release();
    this.#out.finish({ reason: 'closed' });
  }

  /** Ends the upstream session; 405 (the server keeps sessions itself) and failures are fine. */
  async #deleteSession(): Promise<void> {
    const timeout = this.#o.closeTimeoutMs;
    try {
      const response = await this.#http.request({
        method: 'DELETE',
        path: this.#path,
        headers: this.#sessionHeaders,
        headersTimeoutMs: timeout,
        bodyTimeoutMs: timeout,
        signal: AbortSignal.timeout(timeout),
      });
      discardBody(response.body);
      if (!isSuccess(response.statusCode) && response.statusCode !== 405) {
        this.#o.logger.debug(
          { upstream: this.#o.name, status: response.statusCode },
          'DELETE of the upstream session refused',
        );
      }
    } catch (error) {
      this.#o.logger.debug(
        { upstream: this.#o.name, err: describeNetworkError(error) },
        'DELETE of the upstream session failed',
      );
    }
  }
}
