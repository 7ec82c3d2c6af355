/**
 * The Streamable HTTP endpoint for the session-based revisions (2025-03-26, 2025-06-18,
 * 2025-11-25): POST carries client messages, GET opens the standalone SSE stream (or resumes one
 * with Last-Event-ID), DELETE ends the session. The 2026-07-28 era is a sibling endpoint chosen by
 * the server before this one is reached.
 *
 * Sessions, per seed 003 and the spec: the gateway mints a CSPRNG id on `initialize`; a
 * client-provided `Mcp-Session-Id` is accepted and used (lenient mode) or must name a live session
 * (strict mode: 400 without one, 404 for an unknown or ended one). A GET without an id gets a new
 * session whose id is returned in the response header. A POST without an id in lenient mode is
 * served in a one-off session that ends with the POST.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runInRequestScope } from '../../../audit/request-scope.js';
import type { ResumabilityConfig, ServerConfig, SessionsConfig } from '../../../config/types.js';
import { planPayload } from '../../../core/batch-plan.js';
import type { InboundItem } from '../../../core/inbound.js';
import type { SessionHost } from '../../../core/ports.js';
import { newSessionKey } from '../../../core/session-key.js';
import { type HttpTransportContext, safeHeaders } from '../../../envelope/message-context.js';
import { LogThrottle } from '../../../observe/log-throttle.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import { envelopeClaim, SUPPORTED_NEWEST_FIRST } from '../../../protocol/mcp/modern-meta.js';
import { eraOf, HTTP_DEFAULT_REVISION, isKnownRevision } from '../../../protocol/mcp/revisions.js';
import { parseEventId } from '../events/event-id.js';
import type { EventStore } from '../events/event-store.js';
import { clientPayloadOrRefuse } from './client-payload.js';
import { eventsLostNotice } from './events-lost-notice.js';
import { isJsonContentType, listsMediaType } from './http-guards.js';
import { HttpSession, type ResponseMode } from './http-session.js';
import { type BodyResult, readBodyThen } from './read-body.js';
import { answerInternalError, bodyTextOrRefuse, sendJsonRpcError } from './responses.js';
import type { SessionRegistry } from './session-registry.js';
import type { SseSession } from './sse-session.js';

/** The sessions one registry holds: this endpoint's, and those of the 2024-11-05 `/sse` endpoint. */
export type ServedSession = HttpSession | SseSession;

/** What the deployment does when a session starts and ends (routing state, upstream connections). */
export interface SessionHooks {
  opened(key: string, endpoint: string): void;
  closed(key: string, reason: string): void;
}

export interface LegacyEndpointOptions {
  readonly router: SessionHost;
  /** Shared with the `/sse` endpoint, so that the session limits count both kinds. */
  readonly registry: SessionRegistry<ServedSession>;
  readonly store: EventStore;
  readonly hooks: SessionHooks;
  readonly server: ServerConfig;
  readonly sessions: SessionsConfig;
  readonly resumability: ResumabilityConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** One request as the server hands it to an endpoint. */
export interface EndpointRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** `*` for the aggregated endpoint, else the upstream name. */
  readonly endpoint: string;
  readonly principal: string;
  /** The principal's roles (policy matches on them). */
  readonly roles: readonly string[];
  readonly path: string;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** MCP: a session id is visible ASCII (0x21-0x7E); the gateway also bounds its length. */
const SESSION_ID = /^[\x21-\x7E]{1,1024}$/;

/** The `Mcp-Session-Id` of a 2024-11-05 `/sse` session is not a session of this endpoint. */
const FOREIGN = 'foreign';

function isInitialize(message: JsonRpcMessage): boolean {
  return 'method' in message && message.method === 'initialize' && 'id' in message;
}

export class LegacyEndpoint {
  readonly #o: LegacyEndpointOptions;
  /** The log lines of session limits met (evictions, refusals), at most one per principal a minute. */
  readonly #limitLog = new LogThrottle();

  constructor(options: LegacyEndpointOptions) {
    this.#o = options;
  }

  /**
   * Serves one request. A POST goes on once its body is read, outside this call: a failure there
   * is answered 500 where it happens.
   */
  handle(request: EndpointRequest): void {
    switch (request.req.method) {
      case 'POST':
        this.#post(request);
        return;
      case 'GET':
        this.#get(request);
        return;
      case 'DELETE':
        this.#delete(request);
        return;
      default:
        request.res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
    }
  }

  // ------------------------------------------------------------------ POST

  #post(request: EndpointRequest): void {
    const o = this.#o;
    const { req, res } = request;
    if (!isJsonContentType(header(req, 'content-type'))) {
      sendJsonRpcError(
        res,
        415,
        JsonRpcCode.InvalidRequest,
        'Unsupported Media Type: Content-Type must be application/json',
      );
      return;
    }
    const accept = header(req, 'accept');
    if (!listsMediaType(accept, 'application/json') || !listsMediaType(accept, 'text/event-stream')) {
      sendJsonRpcError(
        res,
        406,
        JsonRpcCode.InvalidRequest,
        'Not Acceptable: Accept must list both application/json and text/event-stream',
      );
      return;
    }
    readBodyThen(req, { maxBytes: o.server.maxBodyBytes, timeoutMs: o.server.bodyTimeoutMs }, (body) => {
      try {
        this.#postBody(request, body);
      } catch (error) {
        answerInternalError(res, error, req.url, o.logger, o.metrics);
      }
    });
  }

  #postBody({ req, res, endpoint, principal, roles, path }: EndpointRequest, body: BodyResult): void {
    const o = this.#o;
    const versionHeader = header(req, 'mcp-protocol-version');
    const legacyHeader =
      versionHeader === undefined || (isKnownRevision(versionHeader) && eraOf(versionHeader) === 'legacy');
    const text = bodyTextOrRefuse(res, body, o.server, o.metrics);
    if (text === undefined) return;

    const sessionId = header(req, 'mcp-session-id');
    if (sessionId !== undefined && !SESSION_ID.test(sessionId)) {
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.InvalidRequest,
        'Bad Request: Mcp-Session-Id must be 1 to 1024 visible ASCII characters',
      );
      return;
    }
    const found = this.#lookup(principal, sessionId);
    if (found === FOREIGN) {
      sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found on this endpoint');
      return;
    }
    let session = found;
    const revision = session
      ? (o.router.session(session.key)?.protocolVersion ?? HTTP_DEFAULT_REVISION)
      : legacyHeader
        ? (versionHeader ?? HTTP_DEFAULT_REVISION)
        : HTTP_DEFAULT_REVISION;
    // Parsed, the gateway's `_meta` namespace screened; not JSON-RPC at all: 400.
    const payload = clientPayloadOrRefuse(res, text, revision, o.server.maxJsonDepth, o.metrics);
    if (payload === undefined) return;
    const valid = payload.items.filter(
      (i): i is Extract<InboundItem, { kind: 'message' }> => i.kind === 'message',
    );
    if (!legacyHeader || valid.some((i) => envelopeClaim(i.message) !== undefined)) {
      this.#refuseEra(res, versionHeader, valid);
      return;
    }
    if (valid.length === 0) {
      o.metrics.inc('http_rejected_total', { reason: 'invalid-request' });
      const plan = planPayload(payload.items, payload.batch, () => false);
      if (payload.batch && plan.answers.length > 0) {
        // A batch of invalid requests: each gets its own error, in one array (JSON-RPC 2.0),
        // and a broken response among them still reaches the server waiting for it.
        if (session) {
          const transport: HttpTransportContext = {
            kind: 'http',
            method: 'POST',
            path,
            headers: safeHeaders(req.headers),
          };
          for (const item of plan.dispatch) this.#dispatchItem(session.key, principal, item, transport);
        }
        res.writeHead(200, {
          'content-type': 'application/json',
          ...(session ? this.#sessionHeaders(session, sessionId) : {}),
        });
        res.end(JSON.stringify(plan.answers));
        return;
      }
      const first = payload.items[0];
      if (first?.kind === 'forward-error') {
        // A broken response: the server waiting for it gets an error in its place, and the client
        // is told its message was invalid.
        if (session) {
          const transport: HttpTransportContext = {
            kind: 'http',
            method: 'POST',
            path,
            headers: safeHeaders(req.headers),
          };
          for (const item of payload.items)
            if (item.kind === 'forward-error')
              this.#dispatch(session.key, principal, item.response, transport);
        }
        sendJsonRpcError(
          res,
          400,
          JsonRpcCode.InvalidRequest,
          first.response.error.message.replace(/^invalid response from the peer: /, ''),
          first.response.id,
        );
      } else if (first?.kind === 'reply') {
        sendJsonRpcError(
          res,
          400,
          first.response.error.code,
          first.response.error.message,
          first.response.id,
        );
      } else
        sendJsonRpcError(
          res,
          400,
          first?.kind === 'drop' ? first.error.code : JsonRpcCode.InvalidRequest,
          first?.kind === 'drop' ? first.error.message : 'Invalid Request',
        );
      return;
    }
    const initialize = valid.some((i) => isInitialize(i.message));
    if (initialize && (payload.batch || valid.length > 1)) {
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.InvalidRequest,
        'Invalid Request: initialize must not be part of a batch',
      );
      return;
    }

    // Which session this POST belongs to.
    let ephemeral = false;
    if (initialize) {
      if (session) this.end(session, 'the client initialized again with the same session id');
      // Strict mode only serves ids the gateway minted; lenient mode accepts the client's (seed 003).
      const opened = this.#open(
        res,
        principal,
        roles,
        endpoint,
        o.sessions.mode === 'lenient' ? sessionId : undefined,
        false,
      );
      if (!opened) return;
      session = opened;
    } else if (!session) {
      if (sessionId === undefined) {
        if (o.sessions.mode === 'strict') {
          sendJsonRpcError(
            res,
            400,
            JsonRpcCode.InvalidRequest,
            'Bad Request: Mcp-Session-Id header is required',
          );
          return;
        }
        const opened = this.#open(res, principal, roles, endpoint, undefined, true);
        if (!opened) return;
        session = opened;
        ephemeral = true;
      } else if (o.sessions.mode === 'strict' || o.registry.wasEnded(principal, sessionId)) {
        sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found: initialize a new session');
        return;
      } else {
        const opened = this.#open(res, principal, roles, endpoint, sessionId, false);
        if (!opened) return;
        session = opened;
      }
    }
    if (session.endpoint !== endpoint) {
      sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found on this endpoint');
      return;
    }
    session.lastActivity = Date.now();

    const transport: HttpTransportContext = {
      kind: 'http',
      method: 'POST',
      path,
      headers: safeHeaders(req.headers),
    };
    // Each request gets exactly one answer: ids already in flight, or repeated in the batch, are
    // refused here, with the other answers the endpoint gives itself (`batch-plan.ts`).
    const plan = planPayload(payload.items, payload.batch, (id) => session.hasPending(id));
    if (plan.duplicates > 0)
      o.metrics.inc('duplicate_request_ids_total', { transport: 'http' }, plan.duplicates);
    if (!payload.batch && plan.answers.length > 0) {
      const refusal = plan.answers[0]!;
      sendJsonRpcError(res, 400, refusal.error.code, refusal.error.message, refusal.id);
      return;
    }
    if (plan.awaited.length === 0 && plan.answers.length === 0) {
      for (const item of plan.dispatch) this.#dispatchItem(session.key, principal, item, transport);
      res.writeHead(202, this.#sessionHeaders(session, sessionId)).end();
      if (ephemeral) this.end(session, 'one-off session done');
      return;
    }
    const routed = plan.dispatch.flatMap((i) => (i.kind === 'message' ? [i.message] : []));
    let mode = plan.awaited.length === 0 ? 'json' : this.#mode(routed);
    if (mode !== 'json' && session.openStreams >= o.sessions.maxStreamsPerSession) {
      // At the stream limit the request is still served, as one JSON answer instead of a stream.
      o.metrics.inc('http_sse_downgraded_total', { reason: 'stream-limit' });
      mode = 'json';
    }
    const exchange = session.openExchange(
      res,
      plan.awaited,
      mode,
      payload.batch,
      this.#sessionHeaders(session, sessionId),
    );
    if (ephemeral) session.onidle = () => this.end(session, 'one-off session done');
    for (const answer of plan.answers) session.addToExchange(exchange, answer);
    for (const item of plan.dispatch) this.#dispatchItem(session.key, principal, item, transport);
    session.settle(exchange);
    if (exchange.done && ephemeral) this.end(session, 'one-off session done');
  }

  /**
   * A POST this endpoint must not serve as legacy: an MCP-Protocol-Version it does not know
   * (-32022 with the supported list), or a body claiming the 2026-07-28 era (its `_meta` names a
   * version) without the matching header (-32020: the header is required and must equal the claim).
   */
  #refuseEra(
    res: ServerResponse,
    versionHeader: string | undefined,
    valid: readonly Extract<InboundItem, { kind: 'message' }>[],
  ): void {
    const claimed = valid.map((i) => envelopeClaim(i.message)).find((c) => c !== undefined);
    const first = valid[0]?.message;
    const id = first && 'id' in first ? first.id : null;
    if (claimed === undefined || claimed === versionHeader) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'unsupported-version' });
      const requested = String(versionHeader ?? claimed).slice(0, 100);
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.UnsupportedProtocolVersion,
        `Unsupported protocol version ${JSON.stringify(requested)} (supported: ${SUPPORTED_NEWEST_FIRST.join(', ')})`,
        id,
        {},
        { supported: SUPPORTED_NEWEST_FIRST, requested },
      );
      return;
    }
    this.#o.metrics.inc('http_rejected_total', { reason: 'header-mismatch' });
    sendJsonRpcError(
      res,
      400,
      JsonRpcCode.HeaderMismatch,
      versionHeader === undefined
        ? `Header mismatch: the body is a request of protocol version ${JSON.stringify(String(claimed).slice(0, 40))} (its _meta says so) but the required MCP-Protocol-Version header is absent`
        : `Header mismatch: MCP-Protocol-Version is ${JSON.stringify(versionHeader.slice(0, 40))} but the body's _meta names ${JSON.stringify(String(claimed).slice(0, 40))}`,
      id,
    );
  }

  /**
   * Hands one client message to the router inside its request scope (seed 002): the JSON-RPC id as
   * request_id and the authenticated principal as client_id, read by the audit ledger.
   */
  #dispatch(
    key: string,
    principal: string,
    message: JsonRpcMessage,
    transport: HttpTransportContext,
    raw?: string,
  ): void {
    const requestId = 'id' in message && 'method' in message ? message.id : undefined;
    runInRequestScope({ requestId, clientId: principal }, () =>
      this.#o.router.handleClientMessage(key, message, transport, raw),
    );
  }

  /** Hands one item of a payload to the router: a message, or an error in place of a response. */
  #dispatchItem(key: string, principal: string, item: InboundItem, transport: HttpTransportContext): void {
    if (item.kind === 'message') this.#dispatch(key, principal, item.message, transport, item.raw);
    else if (item.kind === 'forward-error') this.#dispatch(key, principal, item.response, transport);
  }

  #mode(messages: readonly JsonRpcMessage[]): ResponseMode {
    const configured = this.#o.server.responseMode;
    if (configured !== 'auto') return configured;
    // Held when something may come before the response (progress, or a tool that may ask the
    // client): one JSON body if the response comes first, within `streamAfter`, else a stream.
    const streaming: ResponseMode = this.#o.server.streamAfterMs > 0 ? 'hold' : 'sse';
    for (const message of messages) {
      if (!('method' in message) || !('id' in message)) continue;
      if (
        message.method === 'tools/call' ||
        message.method === 'prompts/get' ||
        message.method === 'resources/read'
      )
        return streaming;
      const params = message.params as { _meta?: { progressToken?: unknown } } | undefined;
      if (params?._meta?.progressToken !== undefined) return streaming;
    }
    return 'json';
  }

  // ------------------------------------------------------------------ GET

  #get({ req, res, endpoint, principal, roles }: EndpointRequest): void {
    const o = this.#o;
    if (!listsMediaType(header(req, 'accept'), 'text/event-stream')) {
      sendJsonRpcError(
        res,
        406,
        JsonRpcCode.InvalidRequest,
        'Not Acceptable: Accept must include text/event-stream',
      );
      return;
    }
    const sessionId = header(req, 'mcp-session-id');
    if (sessionId !== undefined && !SESSION_ID.test(sessionId)) {
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.InvalidRequest,
        'Bad Request: Mcp-Session-Id must be 1 to 1024 visible ASCII characters',
      );
      return;
    }
    const lastEventId = header(req, 'last-event-id');
    // Checked before any session is opened, so a refused GET leaves nothing behind.
    if (lastEventId !== undefined && !parseEventId(lastEventId)) {
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.InvalidRequest,
        'Bad Request: Last-Event-ID is not an event id of this gateway',
      );
      return;
    }
    const found = this.#lookup(principal, sessionId);
    if (found === FOREIGN) {
      sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found on this endpoint');
      return;
    }
    let session = found;
    if (!session) {
      if (sessionId === undefined && o.sessions.mode === 'strict') {
        sendJsonRpcError(
          res,
          400,
          JsonRpcCode.InvalidRequest,
          'Bad Request: Mcp-Session-Id header is required',
        );
        return;
      }
      if (
        sessionId !== undefined &&
        (o.sessions.mode === 'strict' || o.registry.wasEnded(principal, sessionId))
      ) {
        sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found: initialize a new session');
        return;
      }
      // Seed 003: a GET without a session id gets a generated one, returned in the response header.
      const opened = this.#open(res, principal, roles, endpoint, sessionId, false);
      if (!opened) return;
      session = opened;
    }
    if (session.endpoint !== endpoint) {
      sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found on this endpoint');
      return;
    }
    if (session.openStreams >= o.sessions.maxStreamsPerSession) {
      sendJsonRpcError(
        res,
        429,
        JsonRpcCode.LimitExceeded,
        `Too Many Requests: at most ${o.sessions.maxStreamsPerSession} open streams per session`,
      );
      return;
    }
    session.lastActivity = Date.now();
    const headers = { 'mcp-session-id': session.mcpSessionId };
    if (lastEventId === undefined) {
      session.openGetStream(res, headers);
      return;
    }
    const replay = o.store.replayAfter(session.key, lastEventId, Date.now());
    if (!replay.ok) {
      if (replay.reason === 'malformed') {
        o.metrics.inc('http_resumptions_refused_total', { reason: replay.reason });
        sendJsonRpcError(
          res,
          400,
          JsonRpcCode.InvalidRequest,
          'Bad Request: Last-Event-ID does not name an event this gateway can resume',
        );
        return;
      }
      // An unknown stream (its events all expired) and another session's stream are answered
      // alike, so that an id reveals nothing about other sessions: the client is told that what
      // it asked for is gone, and the connection continues as its GET stream.
      o.metrics.inc('http_resumptions_with_gap_total');
      session.resume(res, session.getStreamId, [], headers, this.#gapNotice(lastEventId));
      return;
    }
    if (replay.gap) o.metrics.inc('http_resumptions_with_gap_total');
    o.metrics.inc('http_resumptions_total');
    session.resume(
      res,
      replay.streamId,
      replay.events,
      headers,
      replay.gap ? this.#gapNotice(lastEventId) : undefined,
    );
  }

  /**
   * What a resuming client is told when events it asks for have left the store: an MCP log message
   * (level warning) it can surface, never a silent skip.
   */
  #gapNotice(lastEventId: string): string {
    return eventsLostNotice(lastEventId);
  }

  // ------------------------------------------------------------------ DELETE

  #delete({ req, res, principal, endpoint }: EndpointRequest): void {
    const sessionId = header(req, 'mcp-session-id');
    if (sessionId === undefined) {
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.InvalidRequest,
        'Bad Request: Mcp-Session-Id header is required',
      );
      return;
    }
    const session = this.#lookup(principal, sessionId);
    if (!session || session === FOREIGN || session.endpoint !== endpoint) {
      sendJsonRpcError(res, 404, JsonRpcCode.UpstreamClosed, 'Session not found');
      return;
    }
    this.end(session, 'the client deleted the session');
    res.writeHead(200).end();
  }

  // ------------------------------------------------------------------ sessions

  /** The principal's session of this endpoint with that id; {@link FOREIGN} for an `/sse` one. */
  #lookup(principal: string, sessionId: string | undefined): HttpSession | typeof FOREIGN | undefined {
    if (sessionId === undefined) return undefined;
    const session = this.#o.registry.lookup(principal, sessionId);
    if (session === undefined || session instanceof HttpSession) return session;
    return FOREIGN;
  }

  #open(
    res: ServerResponse,
    principal: string,
    roles: readonly string[],
    endpoint: string,
    mcpSessionId: string | undefined,
    ephemeral: boolean,
  ): HttpSession | undefined {
    const o = this.#o;
    if (!ephemeral && !this.admit(res, principal)) return undefined;
    const key = newSessionKey();
    const session = new HttpSession({
      key,
      mcpSessionId: mcpSessionId ?? key,
      principal,
      endpoint,
      ephemeral,
      store: o.store,
      metrics: o.metrics,
      revision: () => o.router.session(key)?.protocolVersion ?? '',
      retryMs: o.resumability.retryMs,
      now: Date.now,
      maxStreams: o.sessions.maxStreamsPerSession,
      holdMs: o.server.streamAfterMs,
      maxBufferedBytes: o.server.maxStreamBufferBytes,
      logger: o.logger,
    });
    o.router.openSession({
      key,
      port: session,
      transport: 'http',
      transportContext: { kind: 'sse', streamId: session.getStreamId },
      mcpSessionId: session.mcpSessionId,
      principal,
      roles,
      protocolVersion: HTTP_DEFAULT_REVISION,
    });
    o.hooks.opened(key, endpoint);
    if (!ephemeral) o.registry.add(session);
    o.metrics.inc('http_sessions_opened_total', { kind: ephemeral ? 'one-off' : 'session' });
    return session;
  }

  /**
   * Makes room for one more session of `principal` (`SessionRegistry.admit`): at a limit, its least
   * recently active idle session is ended; when it has none, the request is refused (429 or 503).
   * Both are counted and logged (a line per principal and kind at most every minute, with how
   * many were left out), so a client locked out is visible to the operator.
   */
  admit(res: ServerResponse, principal: string): boolean {
    const o = this.#o;
    const admitted = o.registry.admit(principal);
    if (admitted.ok && !('evict' in admitted)) return true;
    if (admitted.ok) {
      const { evict, limit } = admitted;
      o.metrics.inc('http_sessions_evicted_total', { limit });
      const held = this.#limitLog.take(`evicted\u0000${principal}`);
      if (held !== undefined)
        o.logger.info(
          {
            principal,
            limit,
            idleMs: Date.now() - evict.lastActivity,
            sessions: o.registry.countOf(principal),
            evictionsNotLogged: held,
          },
          'session limit reached: ended the least recently active idle session of the principal to open a new one',
        );
      this.end(
        evict,
        `evicted: the ${limit === 'principal' ? 'principal' : 'gateway'} session limit was reached`,
      );
      return true;
    }
    o.metrics.inc('http_sessions_refused_total', { status: String(admitted.status) });
    const held = this.#limitLog.take(`refused\u0000${principal}`);
    if (held !== undefined)
      o.logger.warn(
        {
          principal,
          limit: admitted.limit,
          status: admitted.status,
          sessions: o.registry.countOf(principal),
          refusalsNotLogged: held,
        },
        `session refused: ${admitted.reason}`,
      );
    sendJsonRpcError(res, admitted.status, JsonRpcCode.LimitExceeded, admitted.reason);
    return false;
  }

  /**
   * Ends a session of either kind: streams closed, in-flight work cancelled upstream, state
   * released. Public for the `/sse` endpoint, whose sessions share the registry, the limits and
   * the sweep.
   */
  end(session: ServedSession, reason: string): void {
    if (session.closed) return;
    this.#o.registry.remove(session);
    session.close();
    this.#o.router.closeSession(session.key, reason);
    this.#o.hooks.closed(session.key, reason);
  }

  /** Ends every session the registry says has expired (called by the server's sweep timer). */
  sweep(now: number): number {
    const expired = this.#o.registry.expired(now);
    for (const session of expired)
      this.end(
        session,
        now - session.createdAt >= this.#o.sessions.maxAgeMs ? 'maximum age reached' : 'idle timeout',
      );
    return expired.length;
  }

  /** Ends every session (shutdown). */
  endAll(reason: string): void {
    for (const session of [...this.#o.registry.all()]) this.end(session, reason);
  }

  #sessionHeaders(session: HttpSession, given: string | undefined): Record<string, string> {
    if (!session.ephemeral) return { 'mcp-session-id': session.mcpSessionId };
    return given === undefined ? {} : { 'mcp-session-id': given };
  }
}
