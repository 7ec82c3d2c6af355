/**
 * The Streamable HTTP endpoint for the 2026-07-28 revision, beside the session-based one on the
 * same paths. Stateless: POST only (GET and DELETE get 405), no session ids minted or read, no
 * resumption. Each request is validated as the specification's server validation says, then
 * served through the router session of its principal and endpoint (`ModernSession`), so policy,
 * the ledger and the trace work as for any client.
 *
 * Validation, in order: media types (415, 406), body size (413), JSON (400/-32700), one request or
 * notification (400/-32600), supported version (400/-32022 with the supported list), the request's
 * `_meta` (400/-32602, also for members of the gateway's own `switchboard.dev/` namespace, see
 * `client-meta.ts`), header and `_meta` version equal (400/-32020), `Mcp-Method` and `Mcp-Name`
 * equal to the body (400/-32020, Base64 sentinel decoded), `Mcp-Param-*` for tools declaring
 * `x-mcp-header` (400/-32020), the method known (404/-32601).
 */

import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runInRequestScope } from '../../../../audit/request-scope.js';
import type { ResumabilityConfig, ServerConfig, SessionsConfig } from '../../../../config/types.js';
import type { SessionHost } from '../../../../core/ports.js';
import { safeHeaders } from '../../../../envelope/message-context.js';
import { boundMethod } from '../../../../observe/label-vocabulary.js';
import type { Logger } from '../../../../observe/logger.js';
import type { Metrics } from '../../../../observe/metrics.js';
import { JsonRpcCode } from '../../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../../protocol/jsonrpc/json-object.js';
import { parseJson, parseMessage } from '../../../../protocol/jsonrpc/parse.js';
import type {
  JsonObject,
  JsonRpcMessage,
  JsonRpcRequest,
  RequestId,
} from '../../../../protocol/jsonrpc/types.js';
import { readHeaderValue } from '../../../../protocol/mcp/header-value.js';
import {
  META_CAPABILITIES,
  META_FORWARD_HEADERS,
  META_LOG_LEVEL,
  META_SUBSCRIPTION_ID,
  META_VERSION,
  SUPPORTED_NEWEST_FIRST,
} from '../../../../protocol/mcp/modern-meta.js';
import { gatewayMetaKeys, reservedMetaError } from '../../../../protocol/mcp/reserved-meta.js';
import { MODERN_REVISION } from '../../../../protocol/mcp/revisions.js';
import {
  headerMatchesArgument,
  headerText,
  type ParamHeader,
  valueAt,
} from '../../../../protocol/mcp/x-mcp-header.js';
import { formatEvent } from '../../sse/sse-writer.js';
import { isJsonContentType, listsMediaType } from '../http-guards.js';
import type { EndpointRequest, SessionHooks } from '../legacy-endpoint.js';
import { readBody } from '../read-body.js';
import { bodyTextOrRefuse, sendJsonRpcError } from '../responses.js';
import { adaptResponse } from './adapt-response.js';
import { MODERN_SSE_HEADERS, type ModernCall, ModernSession } from './modern-session.js';
import { RequestStateCodec } from './request-state.js';

/** Methods of the legacy era that 2026-07-28 removed: 404 -32601, as for any unknown method. */
const SERVED = new Set([
  'server/discover',
  'subscriptions/listen',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'completion/complete',
]);
const NAMED: Readonly<Record<string, 'name' | 'uri'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

export interface DiscoverInfo {
  readonly capabilities: JsonObject;
  readonly instructions?: string;
}

export interface ModernEndpointOptions {
  readonly router: SessionHost;
  readonly hooks: SessionHooks;
  readonly server: ServerConfig;
  readonly sessions: SessionsConfig;
  readonly resumability: ResumabilityConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly gatewayVersion: string;
  /** Merged capabilities and instructions of an endpoint's upstreams, for `server/discover`. */
  readonly discover: (endpoint: string, session: string) => Promise<DiscoverInfo>;
  /**
   * The `x-mcp-header` parameters of a tool as the client names it (undefined: no such annotations
   * or unknown tool; `'invalid'`: the tool's annotations break the rules).
   */
  readonly paramHeaders: (
    endpoint: string,
    session: string,
    tool: string,
  ) => Promise<readonly ParamHeader[] | 'invalid' | undefined>;
  /**
   * Whether the upstream a session's call of `tool` goes to may speak 2026-07-28, so that the
   * client's `Mcp-Param-*` headers are handed on to it (default: yes).
   */
  readonly forwardsParamHeaders?: (endpoint: string, session: string, tool: string) => boolean;
  /** How long a call waiting for the client's input (MRTR) is kept; default 5 minutes. */
  readonly parkMs?: number;
}

type Check =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly status: number;
      readonly code: number;
      readonly message: string;
      readonly data?: unknown;
    };

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** An error answer: `sendJsonRpcError` with the id first, as every check here has one. */
function send(
  res: ServerResponse,
  status: number,
  id: RequestId | null,
  code: number,
  message: string,
  data?: unknown,
): void {
  sendJsonRpcError(res, status, code, message, id, {}, data);
}

/** Server capabilities 2026-07-28 defines; legacy-only ones (`tasks`...) are not offered. */
const MODERN_CAPABILITIES = [
  'experimental',
  'logging',
  'completions',
  'prompts',
  'resources',
  'tools',
  'extensions',
];

function modernCapabilities(capabilities: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of MODERN_CAPABILITIES) if (capabilities[key] !== undefined) out[key] = capabilities[key];
  return out;
}

export class ModernEndpoint {
  readonly #o: ModernEndpointOptions;
  readonly #sessions = new Map<string, ModernSession>();
  readonly #states = new RequestStateCodec();
  readonly #serverInfo: JsonObject;

  constructor(options: ModernEndpointOptions) {
    this.#o = options;
    this.#serverInfo = {
      name: 'switchboard',
      title: 'Switchboard MCP gateway',
      version: options.gatewayVersion,
    };
  }

  async handle(request: EndpointRequest): Promise<void> {
    const { req, res } = request;
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: JsonRpcCode.InvalidRequest,
            message:
              'Method Not Allowed: 2026-07-28 requests are POSTs (there is no GET stream and no session to DELETE)',
          },
        }),
      );
      return;
    }
    await this.#post(request);
  }

  async #post({ req, res, endpoint, principal, roles, path }: EndpointRequest): Promise<void> {
    const o = this.#o;
    if (!isJsonContentType(header(req, 'content-type'))) {
      send(
        res,
        415,
        null,
        JsonRpcCode.InvalidRequest,
        'Unsupported Media Type: Content-Type must be application/json',
      );
      return;
    }
    const accept = header(req, 'accept');
    if (!listsMediaType(accept, 'application/json') || !listsMediaType(accept, 'text/event-stream')) {
      send(
        res,
        406,
        null,
        JsonRpcCode.InvalidRequest,
        'Not Acceptable: Accept must list both application/json and text/event-stream',
      );
      return;
    }
    const body = await readBody(req, { maxBytes: o.server.maxBodyBytes, timeoutMs: o.server.bodyTimeoutMs });
    const text = bodyTextOrRefuse(res, body, o.server, o.metrics);
    if (text === undefined) return;
    const maxDepth = o.server.maxJsonDepth;
    const json = parseJson(text, { maxDepth });
    if (!json.ok) {
      send(res, 400, json.id, json.error.code, json.error.message);
      return;
    }
    if (Array.isArray(json.value)) {
      send(
        res,
        400,
        null,
        JsonRpcCode.InvalidRequest,
        'Invalid Request: 2026-07-28 has no batches; send one request per POST',
      );
      return;
    }
    const shape = json.shape.messages[0];
    const parsed = parseMessage(json.value, shape === undefined ? undefined : { shape, maxDepth });
    if (!parsed.ok) {
      send(res, 400, parsed.id, parsed.error.code, parsed.error.message);
      return;
    }
    const message = parsed.message;
    if (!('method' in message)) {
      send(
        res,
        400,
        null,
        JsonRpcCode.InvalidRequest,
        'Invalid Request: 2026-07-28 clients do not send responses',
      );
      return;
    }
    const id: RequestId | null = 'id' in message ? message.id : null;
    const versionHeader = header(req, 'mcp-protocol-version') ?? '';
    if (versionHeader !== MODERN_REVISION) {
      send(
        res,
        400,
        id,
        JsonRpcCode.UnsupportedProtocolVersion,
        `Unsupported protocol version: ${versionHeader.slice(0, 40)}`,
        {
          supported: SUPPORTED_NEWEST_FIRST,
          requested: versionHeader,
        },
      );
      return;
    }
    if (!('id' in message)) {
      // 2026-07-28 defines no client notifications over HTTP; accepted and dropped.
      res.writeHead(202).end();
      return;
    }
    const checked = this.#validate(req, message);
    if (!checked.ok) {
      o.metrics.inc('modern_rejected_total', { code: String(checked.code) });
      send(res, checked.status, message.id, checked.code, checked.message, checked.data);
      return;
    }
    const session = this.#session(principal, roles, endpoint);
    if (message.method === 'server/discover') {
      await this.#discover(res, message, endpoint, session);
      return;
    }
    if (message.method === 'subscriptions/listen') {
      this.#listen(res, message, session);
      return;
    }
    if (message.method === 'tools/call') {
      const params = checked.ok && isObject(message.params) ? message.params : {};
      const problem = await this.#checkParamHeaders(
        req,
        endpoint,
        session.key,
        String(params.name ?? ''),
        params.arguments,
      );
      if (problem) {
        o.metrics.inc('modern_rejected_total', { code: String(JsonRpcCode.HeaderMismatch) });
        send(res, 400, message.id, JsonRpcCode.HeaderMismatch, problem);
        return;
      }
    }
    // Mcp-Param-* headers travel on only to upstreams that may speak 2026-07-28 (a legacy one has
    // no use for them, and they would reach it inside the body).
    const forwardParams =
      message.method === 'tools/call' &&
      (o.forwardsParamHeaders?.(endpoint, session.key, String((message.params as JsonObject)?.name ?? '')) ??
        true);
    this.#forward(req, res, message, session, path, forwardParams);
  }

  /** The `_meta` and header checks of a request (everything that needs no upstream). */
  #validate(req: IncomingMessage, request: JsonRpcRequest): Check {
    const params = isObject(request.params) ? request.params : undefined;
    const meta = params && isObject(params._meta) ? params._meta : undefined;
    if (!meta)
      return {
        ok: false,
        status: 400,
        code: JsonRpcCode.InvalidParams,
        message: 'Invalid params: a 2026-07-28 request needs params._meta',
      };
    const version = meta[META_VERSION];
    if (typeof version !== 'string')
      return {
        ok: false,
        status: 400,
        code: JsonRpcCode.InvalidParams,
        message: `Invalid params: _meta needs "${META_VERSION}"`,
      };
    if (!isObject(meta[META_CAPABILITIES]))
      return {
        ok: false,
        status: 400,
        code: JsonRpcCode.InvalidParams,
        message: `Invalid params: _meta needs "${META_CAPABILITIES}" (an object; {} for none)`,
      };
    // Members of the gateway's own namespace are its instructions to its transports: never a client's.
    const reserved = gatewayMetaKeys(request);
    if (reserved.length > 0) {
      this.#o.metrics.inc('client_reserved_meta_total', { action: 'refused', transport: 'http' });
      return { ok: false, status: 400, ...reservedMetaError(reserved) };
    }
    if (version !== MODERN_REVISION) {
      return {
        ok: false,
        status: 400,
        code: JsonRpcCode.HeaderMismatch,
        message: `Header mismatch: MCP-Protocol-Version is ${MODERN_REVISION} but _meta says ${version.slice(0, 40)}`,
      };
    }
    const methodHeader = header(req, 'mcp-method');
    if (methodHeader === undefined)
      return {
        ok: false,
        status: 400,
        code: JsonRpcCode.HeaderMismatch,
        message: 'Header mismatch: the Mcp-Method header is required',
      };
    if (methodHeader.trim() !== request.method) {
      return {
        ok: false,
        status: 400,
        code: JsonRpcCode.HeaderMismatch,
        message: `Header mismatch: Mcp-Method ${JSON.stringify(methodHeader.slice(0, 80))} does not match the body's method ${JSON.stringify(request.method)}`,
      };
    }
    const field = NAMED[request.method];
    if (field) {
      const nameHeader = header(req, 'mcp-name');
      const bodyValue = params?.[field];
      if (nameHeader === undefined)
        return {
          ok: false,
          status: 400,
          code: JsonRpcCode.HeaderMismatch,
          message: `Header mismatch: the Mcp-Name header is required for ${request.method}`,
        };
      const decoded = readHeaderValue(nameHeader);
      if (!decoded.ok)
        return {
          ok: false,
          status: 400,
          code: JsonRpcCode.HeaderMismatch,
          message: `Header mismatch: Mcp-Name is unreadable: ${decoded.reason}`,
        };
      if (decoded.value !== bodyValue) {
        return {
          ok: false,
          status: 400,
          code: JsonRpcCode.HeaderMismatch,
          message: `Header mismatch: Mcp-Name ${JSON.stringify(decoded.value.slice(0, 80))} does not match params.${field}`,
        };
      }
    }
    if (!SERVED.has(request.method))
      return {
        ok: false,
        status: 404,
        code: JsonRpcCode.MethodNotFound,
        message: `Method not found: ${request.method}`,
      };
    return { ok: true };
  }

  /** `Mcp-Param-*` against the arguments, for a tool that declares `x-mcp-header` parameters. */
  async #checkParamHeaders(
    req: IncomingMessage,
    endpoint: string,
    session: string,
    tool: string,
    args: unknown,
  ): Promise<string | undefined> {
    const specs = await this.#o.paramHeaders(endpoint, session, tool).catch(() => undefined);
    if (specs === undefined) return undefined;
    if (specs === 'invalid')
      return `Header mismatch: tool ${tool} declares invalid x-mcp-header annotations, so its headers cannot be validated`;
    for (const spec of specs) {
      const raw = header(req, `mcp-param-${spec.name.toLowerCase()}`);
      const value = valueAt(args, spec.path);
      if (raw === undefined) {
        // A client sends the header exactly when the argument has a primitive value.
        if (headerText(value) !== undefined)
          return `Header mismatch: Mcp-Param-${spec.name} is required (the call has ${spec.path.join('.')})`;
        continue;
      }
      const decoded = readHeaderValue(raw);
      if (!decoded.ok) return `Header mismatch: Mcp-Param-${spec.name} is unreadable: ${decoded.reason}`;
      if (value !== undefined && value !== null && !headerMatchesArgument(decoded.value, value, spec.type)) {
        return `Header mismatch: Mcp-Param-${spec.name} does not match arguments.${spec.path.join('.')}`;
      }
    }
    return undefined;
  }

  async #discover(
    res: ServerResponse,
    request: JsonRpcRequest,
    endpoint: string,
    session: ModernSession,
  ): Promise<void> {
    let info: DiscoverInfo;
    try {
      info = await this.#o.discover(endpoint, session.key);
    } catch (error) {
      const rpc =
        isObject(error) && typeof error.code === 'number'
          ? (error as unknown as { code: number; message: string })
          : { code: JsonRpcCode.InternalError, message: 'no upstream is available' };
      send(res, 200, request.id, rpc.code, rpc.message);
      return;
    }
    const result: JsonObject = {
      supportedVersions: SUPPORTED_NEWEST_FIRST,
      capabilities: modernCapabilities(info.capabilities),
      ...(info.instructions === undefined ? {} : { instructions: info.instructions }),
    };
    const response = adaptResponse(
      request,
      { jsonrpc: '2.0', id: request.id, result },
      request.id,
      this.#serverInfo,
    );
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response));
  }

  /** `subscriptions/listen`: an acknowledgement, then the notifications the client opted in to. */
  #listen(res: ServerResponse, request: JsonRpcRequest, session: ModernSession): void {
    const params = isObject(request.params) ? request.params : {};
    const wanted = isObject(params.notifications) ? params.notifications : {};
    const uris = Array.isArray(wanted.resourceSubscriptions)
      ? wanted.resourceSubscriptions.filter((u): u is string => typeof u === 'string')
      : [];
    const filter = {
      tools: wanted.toolsListChanged === true,
      prompts: wanted.promptsListChanged === true,
      resources: wanted.resourcesListChanged === true,
      uris: new Set(uris),
    };
    res.writeHead(200, MODERN_SSE_HEADERS);
    const acknowledged: JsonObject = {};
    if (filter.tools) acknowledged.toolsListChanged = true;
    if (filter.prompts) acknowledged.promptsListChanged = true;
    if (filter.resources) acknowledged.resourcesListChanged = true;
    if (uris.length > 0) acknowledged.resourceSubscriptions = uris;
    res.write(
      formatEvent({
        data: JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/subscriptions/acknowledged',
          params: { notifications: acknowledged, _meta: { [META_SUBSCRIPTION_ID]: request.id } },
        }),
      }),
    );
    const listener = { id: request.id, res, filter };
    session.listeners.add(listener);
    // Resource updates need a subscription upstream, held on the principal's router session.
    for (const uri of uris)
      this.#toRouter(session, {
        jsonrpc: '2.0',
        id: session.nextId('subscribe'),
        method: 'resources/subscribe',
        params: { uri },
      });
    res.once('close', () => {
      session.listeners.delete(listener);
      session.lastActivity = Date.now();
      for (const uri of uris) {
        const stillWanted = [...session.listeners].some((l) => l.filter.uris.has(uri));
        if (!stillWanted)
          this.#toRouter(session, {
            jsonrpc: '2.0',
            id: session.nextId('unsubscribe'),
            method: 'resources/unsubscribe',
            params: { uri },
          });
      }
    });
  }

  #forward(
    req: IncomingMessage,
    res: ServerResponse,
    request: JsonRpcRequest,
    session: ModernSession,
    path: string,
    forwardParams: boolean,
  ): void {
    const o = this.#o;
    const params = isObject(request.params) ? request.params : {};
    const meta = isObject(params._meta) ? params._meta : {};
    const logLevel = meta[META_LOG_LEVEL];
    const mode: 'json' | 'sse' =
      meta.progressToken !== undefined || typeof logLevel === 'string' ? 'sse' : 'json';
    const state = typeof params.requestState === 'string' ? params.requestState : undefined;
    if (state !== undefined && RequestStateCodec.isOurs(state)) {
      this.#resume(res, request, session, state, mode);
      return;
    }
    const forwardHeaders: Record<string, string> = {};
    if (forwardParams)
      for (const [name, value] of Object.entries(req.headers)) {
        if (name.startsWith('mcp-param-') && typeof value === 'string') forwardHeaders[name] = value;
      }
    const downstreamId = session.nextId(request.id);
    // `#validate` refused any client member of the gateway's namespace: the only one is the gateway's.
    const upstreamMeta: JsonObject =
      Object.keys(forwardHeaders).length > 0 ? { ...meta, [META_FORWARD_HEADERS]: forwardHeaders } : meta;
    const routed: JsonRpcRequest = {
      ...request,
      id: downstreamId,
      params: { ...params, _meta: upstreamMeta },
    };
    const call: ModernCall = {
      downstreamId,
      request,
      res,
      mode,
      capabilities: isObject(meta[META_CAPABILITIES]) ? meta[META_CAPABILITIES] : {},
      inputs: new Map(),
      done: false,
      ...(typeof logLevel === 'string' ? { logLevel } : {}),
    };
    if (mode === 'sse') {
      res.writeHead(200, MODERN_SSE_HEADERS);
      res.flushHeaders();
    }
    session.track(call);
    // The client names the method: any string, so counted by the bounded vocabulary.
    o.metrics.inc('modern_requests_total', { method: boundMethod(request.method) });
    runInRequestScope({ requestId: request.id, clientId: session.principal }, () =>
      o.router.handleClientMessage(session.key, routed, {
        kind: 'http',
        method: 'POST',
        path,
        headers: safeHeaders(req.headers),
      }),
    );
  }

  /** A retry carrying the gateway's `requestState`: the parked call goes on with the client's input. */
  #resume(
    res: ServerResponse,
    retry: JsonRpcRequest,
    session: ModernSession,
    state: string,
    mode: 'json' | 'sse',
  ): void {
    const params = isObject(retry.params) ? retry.params : {};
    const opened = this.#states.open(state, {
      principal: session.principal,
      method: retry.method,
      name: String(params.name ?? params.uri ?? ''),
      now: Date.now(),
    });
    const call = opened.ok ? session.call(opened.call) : undefined;
    if (!opened.ok || !call || call.done || call.parkedUntil === undefined) {
      this.#o.metrics.inc('modern_request_state_refused_total');
      send(
        res,
        200,
        retry.id,
        JsonRpcCode.InvalidParams,
        `Invalid or expired requestState${opened.ok ? ': the call it resumes is over' : `: ${opened.reason}`}`,
      );
      return;
    }
    const responses = isObject(params.inputResponses) ? params.inputResponses : {};
    session.resume(call, retry, res, mode, responses);
  }

  #session(principal: string, roles: readonly string[], endpoint: string): ModernSession {
    const id = `${principal}\u0000${endpoint}`;
    let session = this.#sessions.get(id);
    if (session) return session;
    const key = `p${createHash('sha256').update(id).digest('base64url').slice(0, 21)}`;
    session = new ModernSession({
      key,
      principal,
      metrics: this.#o.metrics,
      states: this.#states,
      serverInfo: this.#serverInfo,
      parkMs: this.#o.parkMs ?? 300_000,
      maxBufferedBytes: this.#o.server.maxStreamBufferBytes,
      logger: this.#o.logger,
      toRouter: (message) =>
        this.#o.router.handleClientMessage(key, message, {
          kind: 'http',
          method: 'POST',
          path: '(gateway)',
          headers: {},
        }),
    });
    this.#o.router.openSession({
      key,
      port: session,
      transport: 'http',
      transportContext: { kind: 'http', method: 'POST', path: '', headers: {} },
      principal,
      roles,
      protocolVersion: MODERN_REVISION,
    });
    this.#o.hooks.opened(key, endpoint);
    this.#sessions.set(id, session);
    return session;
  }

  #toRouter(session: ModernSession, message: JsonRpcMessage): void {
    this.#o.router.handleClientMessage(session.key, message, {
      kind: 'http',
      method: 'POST',
      path: '(gateway)',
      headers: {},
    });
  }

  /** Expires parked calls, and ends principal sessions idle longer than the idle timeout. */
  sweep(now: number): void {
    for (const [id, session] of this.#sessions) {
      session.expireParked(now);
      const idle = this.#o.sessions.idleTimeoutMs;
      if (idle > 0 && session.idle && now - session.lastActivity >= idle) {
        this.#sessions.delete(id);
        this.#end(session, 'idle timeout');
      }
    }
  }

  endAll(reason: string): void {
    for (const session of this.#sessions.values()) this.#end(session, reason);
    this.#sessions.clear();
  }

  #end(session: ModernSession, reason: string): void {
    session.close();
    this.#o.router.closeSession(session.key, reason);
    this.#o.hooks.closed(session.key, reason);
  }

  /** The server info every modern result names (`_meta`). */
  /** Open streams of every 2026-07-28 session (`ModernSession.openStreams`), for the metrics. */
  get openStreams(): number {
    let open = 0;
    for (const session of this.#sessions.values()) open += session.openStreams;
    return open;
  }

  get serverInfo(): JsonObject {
    return this.#serverInfo;
  }
}
