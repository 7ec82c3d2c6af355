/**
 * The 2024-11-05 HTTP+SSE transport, served to old clients on `/sse` (and `/servers/<name>/sse`):
 *
 * - `GET /sse` opens a session and its event stream; the first event is `endpoint`, whose data is
 *   the URL to POST to: `/messages?sessionId=<id>` beside it (`/servers/<name>/messages?...` for
 *   the per-server endpoint);
 * - `POST /messages?sessionId=<id>` carries one client message (or a batch) and is answered 202
 *   once read; the answers come down the stream (`SseSession`). A body that is no JSON-RPC at all
 *   is answered 400 there and then, like the Streamable HTTP endpoint's.
 *
 * The session goes through the router like a Streamable HTTP one (protocol version negotiated by
 * `initialize`; 2024-11-05 until then), shares the registry with `LegacyEndpoint` (so the limits
 * count both kinds, and the sweep ends both), and ends when its stream closes. Everything else the
 * server applies to `/mcp` applies here too, before this endpoint is reached (Host and Origin,
 * authentication, 503 while draining for a new stream); this endpoint applies the body's limits
 * (`server.maxBodyBytes`, `server.bodyTimeout`, `server.maxJsonDepth`) and a session belongs to
 * the principal that opened it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runInRequestScope } from '../../../audit/request-scope.js';
import type { ServerConfig } from '../../../config/types.js';
import { planPayload } from '../../../core/batch-plan.js';
import type { InboundItem } from '../../../core/inbound.js';
import type { SessionHost } from '../../../core/ports.js';
import { newSessionKey } from '../../../core/session-key.js';
import { type HttpTransportContext, safeHeaders } from '../../../envelope/message-context.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { clientPayloadOrRefuse } from './client-payload.js';
import { isJsonContentType, listsMediaType } from './http-guards.js';
import type { EndpointRequest, ServedSession, SessionHooks } from './legacy-endpoint.js';
import { readBodyThen } from './read-body.js';
import { answerInternalError, bodyTextOrRefuse, sendJsonRpcError } from './responses.js';
import type { SessionRegistry } from './session-registry.js';
import { SseSession } from './sse-session.js';

/** The revision of the HTTP+SSE transport, and of its sessions until `initialize` says otherwise. */
export const SSE_REVISION = '2024-11-05';

/** The two paths of the transport. */
export type SsePath = 'sse' | 'messages';

export interface SseEndpointOptions {
  readonly router: SessionHost;
  readonly registry: SessionRegistry<ServedSession>;
  readonly hooks: SessionHooks;
  readonly server: ServerConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Makes room for a new session of the principal, or answers the refusal (`LegacyEndpoint.admit`). */
  readonly admit: (res: ServerResponse, principal: string) => boolean;
  /** Ends a session of the shared registry (`LegacyEndpoint.end`). */
  readonly end: (session: ServedSession, reason: string) => void;
}

/** The session id a POST names in its query (`?sessionId=`), if any. */
function sessionIdOf(req: IncomingMessage): string | undefined {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  if (query < 0) return undefined;
  return new URLSearchParams(url.slice(query + 1)).get('sessionId') ?? undefined;
}

/** Where the POSTs of a stream opened at `path` go: `messages` beside `sse`. */
function postPath(path: string): string {
  return `${path.slice(0, path.length - 'sse'.length)}messages`;
}

export class SseEndpoint {
  readonly #o: SseEndpointOptions;

  constructor(options: SseEndpointOptions) {
    this.#o = options;
  }

  handle(request: EndpointRequest, which: SsePath): void {
    const method = request.req.method;
    if (which === 'sse' && method === 'GET') this.#open(request);
    else if (which === 'messages' && method === 'POST') this.#post(request);
    else request.res.writeHead(405, { allow: which === 'sse' ? 'GET' : 'POST' }).end();
  }

  /** `GET /sse`: a new session, its stream, and the `endpoint` event. */
  #open({ req, res, endpoint, principal, roles, path }: EndpointRequest): void {
    const o = this.#o;
    if (!listsMediaType(req.headers.accept, 'text/event-stream')) {
      sendJsonRpcError(
        res,
        406,
        JsonRpcCode.InvalidRequest,
        'Not Acceptable: Accept must include text/event-stream',
      );
      return;
    }
    if (!o.admit(res, principal)) return;
    const key = newSessionKey();
    const session = new SseSession({
      key,
      mcpSessionId: key,
      principal,
      endpoint,
      metrics: o.metrics,
      logger: o.logger,
      maxBufferedBytes: o.server.maxStreamBufferBytes,
      now: Date.now,
    });
    o.router.openSession({
      key,
      port: session,
      transport: 'http',
      transportContext: { kind: 'http', method: 'GET', path, headers: safeHeaders(req.headers) },
      mcpSessionId: key,
      principal,
      roles,
      protocolVersion: SSE_REVISION,
    });
    o.hooks.opened(key, endpoint);
    o.registry.add(session);
    o.metrics.inc('http_sessions_opened_total', { kind: 'sse-2024' });
    // The stream is the session: when it closes, for whatever reason, the session ends.
    res.once('close', () => o.end(session, 'the client closed the 2024-11-05 SSE stream'));
    session.open(res, `${postPath(path)}?sessionId=${encodeURIComponent(key)}`);
  }

  /** `POST /messages?sessionId=`: the body to the router, 202, the answers down the stream. */
  #post(request: EndpointRequest): void {
    const o = this.#o;
    const { req, res, endpoint, principal } = request;
    if (!isJsonContentType(req.headers['content-type'])) {
      sendJsonRpcError(
        res,
        415,
        JsonRpcCode.InvalidRequest,
        'Unsupported Media Type: Content-Type must be application/json',
      );
      return;
    }
    const sessionId = sessionIdOf(req);
    if (sessionId === undefined) {
      sendJsonRpcError(
        res,
        400,
        JsonRpcCode.InvalidRequest,
        'Bad Request: the sessionId query parameter is required (the URL of the endpoint event)',
      );
      return;
    }
    const found = o.registry.lookup(principal, sessionId);
    if (!(found instanceof SseSession) || found.endpoint !== endpoint || found.closed) {
      sendJsonRpcError(
        res,
        404,
        JsonRpcCode.UpstreamClosed,
        'Session not found: open a new one with GET /sse',
      );
      return;
    }
    const session = found;
    readBodyThen(req, { maxBytes: o.server.maxBodyBytes, timeoutMs: o.server.bodyTimeoutMs }, (body) => {
      try {
        const text = bodyTextOrRefuse(res, body, o.server, o.metrics);
        if (text === undefined) return;
        this.#dispatch(request, session, text);
      } catch (error) {
        answerInternalError(res, error, req.url, o.logger, o.metrics);
      }
    });
  }

  #dispatch({ req, res, principal, path }: EndpointRequest, session: SseSession, text: string): void {
    const o = this.#o;
    if (session.closed) {
      sendJsonRpcError(
        res,
        404,
        JsonRpcCode.UpstreamClosed,
        'Session not found: open a new one with GET /sse',
      );
      return;
    }
    const revision = o.router.session(session.key)?.protocolVersion ?? SSE_REVISION;
    // Parsed, the gateway's `_meta` namespace screened; not JSON-RPC at all: 400.
    const payload = clientPayloadOrRefuse(res, text, revision, o.server.maxJsonDepth, o.metrics);
    if (payload === undefined) return;
    session.lastActivity = Date.now();
    // Each request gets one answer: an id already in flight, or repeated in the batch, is refused
    // on the stream with the endpoint's other own answers (`batch-plan.ts`).
    const plan = planPayload(payload.items, payload.batch, (id) => session.hasPending(id));
    if (plan.duplicates > 0)
      o.metrics.inc('duplicate_request_ids_total', { transport: 'http' }, plan.duplicates);
    if (plan.dispatch.length === 0 && plan.answers.length === 0) {
      // Nothing to route and nobody to answer on the stream (a message without an id): say why here.
      const first = plan.dropped[0];
      o.metrics.inc('http_rejected_total', { reason: 'invalid-request' });
      sendJsonRpcError(
        res,
        400,
        first?.error.code ?? JsonRpcCode.InvalidRequest,
        first?.error.message ?? 'Invalid Request',
      );
      return;
    }
    res.writeHead(202, { 'content-type': 'text/plain' }).end('Accepted');
    for (const answer of plan.answers) session.write(JSON.stringify(answer));
    session.await(plan.awaited);
    const transport: HttpTransportContext = {
      kind: 'http',
      method: 'POST',
      path,
      headers: safeHeaders(req.headers),
    };
    for (const item of plan.dispatch) this.#route(session.key, principal, item, transport);
  }

  /**
   * Hands one item to the router inside its request scope (seed 002): the JSON-RPC id as
   * request_id and the principal as client_id, read by the audit ledger.
   */
  #route(key: string, principal: string, item: InboundItem, transport: HttpTransportContext): void {
    const message =
      item.kind === 'message' ? item.message : item.kind === 'forward-error' ? item.response : undefined;
    if (message === undefined) return;
    const requestId = 'id' in message && 'method' in message ? message.id : undefined;
    runInRequestScope({ requestId, clientId: principal }, () =>
      this.#o.router.handleClientMessage(
        key,
        message,
        transport,
        item.kind === 'message' ? item.raw : undefined,
      ),
    );
  }
}
