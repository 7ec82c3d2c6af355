/**
 * The gateway's HTTP server: `/mcp` (all upstreams, aggregated), `/servers/<name>/mcp` (one
 * upstream), the 2024-11-05 HTTP+SSE transport for old clients beside each (`/sse` and
 * `/messages`, `/servers/<name>/sse` and `/servers/<name>/messages`: `SseEndpoint`), `/health`, the extra routes of other parts (approvals) and the upgrade routes
 * (the space's `/meup`). Every MCP request passes the DNS-rebinding and Origin guards, then
 * authentication, then goes to the endpoint of its protocol era: the session-based revisions
 * (`LegacyEndpoint`) or the stateless 2026-07-28 one (`ModernEndpoint`), told apart by the
 * `MCP-Protocol-Version` header.
 *
 * The guards are applied here, once, to both ways a request enters Node's HTTP server: the
 * `request` event and the `upgrade` event. Routes and upgrade routes are registered with this
 * server and only ever see requests that passed them, so an endpoint added later cannot forget
 * them.
 *
 * The edge's own limits (`server.*`): the request line and headers within `headersTimeout`
 * (Node's `headersTimeout`, checked every second or more often), a body within `bodyTimeout`
 * (`read-body.ts`; Node's `requestTimeout` of both together is the backstop for a body no endpoint
 * reads), an idle kept-alive connection closed after `idleConnectionTimeout`, and at most
 * `maxConnections` connections. None of them applies to a response: Node stops timing a request
 * once it has arrived whole, and an upgraded connection is no longer an HTTP one, so SSE streams,
 * long calls and WebSockets are never cut by them (their own liveness is the SSE keep-alive and the
 * space's heartbeat).
 *
 * One server-wide timer writes SSE keep-alive comments and one sweeps expired sessions and old
 * events, so an idle session costs no timer of its own.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { runInRequestScope } from '../../../audit/request-scope.js';
import type { AuthOutcome } from '../../../auth/auth-outcome.js';
import type { GatewayConfig } from '../../../config/types.js';
import type { SessionHost } from '../../../core/ports.js';
import { LogThrottle } from '../../../observe/log-throttle.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { type ReadinessSnapshot, readinessOf } from '../../../observe/readiness.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { MODERN_REVISION } from '../../../protocol/mcp/revisions.js';
import type { EventStore } from '../events/event-store.js';
import { formatComment } from '../sse/sse-writer.js';
import { DRAIN_RETRY_AFTER_S, drainingHealth, refuseWhileDraining } from './drain-gate.js';
import { HostOriginGuard } from './http-guards.js';
import {
  type EndpointRequest,
  LegacyEndpoint,
  type ServedSession,
  type SessionHooks,
} from './legacy-endpoint.js';
import { ModernEndpoint, type ModernEndpointOptions } from './modern/modern-endpoint.js';
import { answerInternalError, refuseUpgrade, rejectClientError, sendJsonRpcError } from './responses.js';
import { SessionRegistry } from './session-registry.js';
import { SseEndpoint, type SsePath } from './sse-endpoint.js';

export type { AuthOutcome };

/** Decides who is calling. Without authentication configured everyone is `local`. */
export type Authenticate = (req: IncomingMessage) => AuthOutcome | Promise<AuthOutcome>;

/** A route of another part of the gateway (approvals API, metrics...): true when it handled the request. */
export type ExtraRoute = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
) => boolean | Promise<boolean>;

/**
 * A handler of upgrade requests (WebSocket) on one path. It is called only for requests that passed
 * the Host and Origin guards, and owns the socket from then on.
 */
export type UpgradeRoute = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** Where upgrade routes are registered: the server that guards them. */
export interface UpgradeRoutes {
  /** Serves upgrades of `path` (exact, query ignored) with `route`; returns the way to stop. */
  addUpgrade(path: string, route: UpgradeRoute): () => void;
}

export interface McpHttpServerOptions {
  readonly config: Pick<GatewayConfig, 'server' | 'sessions' | 'resumability'>;
  readonly router: SessionHost;
  readonly hooks: SessionHooks;
  readonly upstreamNames: readonly string[];
  readonly store: EventStore & { prune?(now: number): void };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly authenticate?: Authenticate;
  readonly routes?: readonly ExtraRoute[];
  /**
   * What `GET /ready` is decided from, besides the drain this server knows itself (see
   * `observe/readiness.ts`); without it, `/ready` only says whether the gateway drains.
   */
  readonly readiness?: () => Omit<ReadinessSnapshot, 'now' | 'draining'>;
  readonly gatewayVersion: string;
  /** What the 2026-07-28 endpoint needs from the deployment (`server/discover`, `Mcp-Param-*`). */
  readonly modern: Pick<
    ModernEndpointOptions,
    'discover' | 'paramHeaders' | 'forwardsParamHeaders' | 'parkMs'
  >;
  /**
   * Handle each request in a request scope holding the client's address (`client.address` of the
   * OpenTelemetry spans). Off by default: nothing else reads it, and the scope is not free.
   */
  readonly scopeClientAddress?: boolean;
}

/** Which transport a path of an endpoint serves: Streamable HTTP, or one of the 2024-11-05 pair. */
type EndpointKind = 'mcp' | SsePath;

const SERVER_PATH = /^\/servers\/([^/]+)\/(mcp|sse|messages)$/;

/** At close, how long a connection may take to send the answer it was given before it is cut. */
const CLOSE_FLUSH_MS = 1_000;

/**
 * How often Node looks for requests past `headersTimeout` (it checks on an interval, 30 s by
 * default): a quarter of the timeout, between 50 ms and 1 s, so a header timeout is applied
 * within a second of when it is due.
 */
function checkingInterval(headersTimeoutMs: number): number {
  return Math.max(50, Math.min(1000, Math.floor(headersTimeoutMs / 4)));
}

export class McpHttpServer implements UpgradeRoutes {
  readonly #o: McpHttpServerOptions;
  readonly #server: Server;
  readonly #guard: HostOriginGuard;
  readonly #upgrades = new Map<string, UpgradeRoute>();
  /** Log lines of what a client can cause at will (refused connections, timeouts): throttled. */
  readonly #edgeLog = new LogThrottle();
  readonly #registry: SessionRegistry<ServedSession>;
  readonly #legacy: LegacyEndpoint;
  readonly #sse: SseEndpoint;
  readonly #modern: ModernEndpoint;
  readonly #upstreams: ReadonlySet<string>;
  #timers: NodeJS.Timeout[] = [];
  /** Set by `beginDrain`: see drain-gate.ts. */
  #draining = false;
  /** Settles when the listener is closed and every connection has ended (`server.close`). */
  #closed: Promise<void> | undefined;

  constructor(options: McpHttpServerOptions) {
    this.#o = options;
    this.#upstreams = new Set(options.upstreamNames);
    this.#registry = new SessionRegistry<ServedSession>(options.config.sessions);
    this.#legacy = new LegacyEndpoint({
      router: options.router,
      registry: this.#registry,
      store: options.store,
      hooks: options.hooks,
      server: options.config.server,
      sessions: options.config.sessions,
      resumability: options.config.resumability,
      logger: options.logger,
      metrics: options.metrics,
    });
    this.#sse = new SseEndpoint({
      router: options.router,
      registry: this.#registry,
      hooks: options.hooks,
      server: options.config.server,
      logger: options.logger,
      metrics: options.metrics,
      admit: (res, principal) => this.#legacy.admit(res, principal),
      end: (session, reason) => this.#legacy.end(session, reason),
    });
    this.#modern = new ModernEndpoint({
      ...options.modern,
      router: options.router,
      hooks: options.hooks,
      server: options.config.server,
      sessions: options.config.sessions,
      resumability: options.config.resumability,
      logger: options.logger,
      metrics: options.metrics,
      gatewayVersion: options.gatewayVersion,
    });
    const edge = options.config.server;
    this.#guard = new HostOriginGuard({
      bindHost: edge.host,
      allowedHosts: edge.allowedHosts,
      allowedOrigins: edge.allowedOrigins,
    });
    const headersTimeout = Math.ceil(edge.headersTimeoutMs);
    this.#server = createServer(
      {
        headersTimeout,
        // Headers, then the body: `read-body.ts` answers a late body first (408 with a JSON-RPC
        // error); this catches a body no endpoint reads. Node stops timing once the request has
        // arrived whole, so no response (an SSE stream, a long call) is ever cut by it.
        requestTimeout: headersTimeout + Math.ceil(edge.bodyTimeoutMs),
        connectionsCheckingInterval: checkingInterval(headersTimeout),
      },
      (req, res) => {
        const fail = (error: unknown): void =>
          answerInternalError(res, error, req.url, options.logger, options.metrics);
        const handle = (): void => {
          try {
            this.#handle(req, res)?.catch(fail);
          } catch (error) {
            fail(error);
          }
        };
        if (options.scopeClientAddress === true)
          runInRequestScope({ clientAddress: req.socket.remoteAddress }, handle);
        else handle();
      },
    );
    this.#server.keepAliveTimeout = Math.ceil(edge.idleConnectionTimeoutMs);
    this.#server.maxConnections = edge.maxConnections;
    this.#server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.#upgrade(req, socket, head),
    );
    this.#server.on('clientError', (error: Error, socket: Duplex) => this.#clientError(error, socket));
    this.#server.on('drop', () => {
      options.metrics.inc('http_connections_refused_total');
      const held = this.#edgeLog.take('drop');
      if (held !== undefined)
        options.logger.warn(
          { maxConnections: edge.maxConnections, refusalsNotLogged: held },
          'connection refused: the gateway holds server.maxConnections connections',
        );
    });
  }

  /** Serves WebSocket (or other) upgrades of `path` behind the Host and Origin guards. */
  addUpgrade(path: string, route: UpgradeRoute): () => void {
    if (this.#upgrades.has(path)) throw new Error(`an upgrade route for ${path} is already registered`);
    this.#upgrades.set(path, route);
    return () => {
      if (this.#upgrades.get(path) === route) this.#upgrades.delete(path);
    };
  }

  /** An upgrade request: the guards, then the route of its path, else 404. */
  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Node hands over the socket without its error listener: a reset must not become an
    // uncaught 'error'. A route adds its own (ws does).
    socket.on('error', () => socket.destroy());
    const { metrics } = this.#o;
    const refusal = this.#guard.check(req);
    if (refusal) {
      metrics.inc('http_rejected_total', { reason: refusal.reason });
      refuseUpgrade(socket, 403, `Forbidden: ${refusal.message}`);
      return;
    }
    if (this.#draining) {
      // A WebSocket is a new stream like a GET without Last-Event-ID (drain-gate.ts).
      metrics.inc('http_rejected_total', { reason: 'draining' });
      refuseUpgrade(
        socket,
        503,
        'Service Unavailable: the gateway is shutting down and opens no new streams',
      );
      return;
    }
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query >= 0 ? url.slice(0, query) : url;
    const route = this.#upgrades.get(path);
    if (route === undefined) {
      const known = [...this.#upgrades.keys()].join(', ') || 'none';
      refuseUpgrade(
        socket,
        404,
        `no upgrade endpoint at ${path.slice(0, 100)} (upgrade endpoints: ${known})`,
      );
      return;
    }
    route(req, socket, head);
  }

  /**
   * A connection Node's parser gave up on: a request that did not arrive within the timeouts
   * (408), headers too large (431), or a malformed request (400). Answered with a JSON-RPC error
   * when nothing was written on the connection yet, counted, and the connection closed.
   */
  #clientError(error: Error, socket: Duplex): void {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) {
      socket.destroy();
      return;
    }
    const reason =
      code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'request-timeout'
        : code === 'HPE_HEADER_OVERFLOW'
          ? 'headers-too-large'
          : 'malformed';
    this.#o.metrics.inc('http_rejected_total', { reason });
    if (reason === 'request-timeout') {
      const held = this.#edgeLog.take(reason);
      if (held !== undefined)
        this.#o.logger.info(
          { headersTimeoutMs: this.#o.config.server.headersTimeoutMs, timeoutsNotLogged: held },
          'closed a connection whose request did not arrive in time (server.headersTimeout)',
        );
    }
    if ((socket as Socket).bytesWritten > 0) {
      socket.destroy();
      return;
    }
    const server = this.#o.config.server;
    rejectClientError(
      socket,
      reason === 'request-timeout'
        ? {
            status: 408,
            message: `Request Timeout: the request did not arrive within ${server.headersTimeoutMs} ms (server.headersTimeout) or its body within ${server.bodyTimeoutMs} ms more (server.bodyTimeout)`,
          }
        : reason === 'headers-too-large'
          ? { status: 431, message: 'Request Header Fields Too Large' }
          : { status: 400, message: 'Bad Request: the request is not valid HTTP/1.1' },
    );
  }

  get sessions(): SessionRegistry<ServedSession> {
    return this.#registry;
  }

  /** Open streams of the 2026-07-28 endpoint (the legacy ones: `sessions`), for the metrics. */
  get modernStreams(): number {
    return this.#modern.openStreams;
  }

  get httpServer(): Server {
    return this.#server;
  }

  async listen(): Promise<AddressInfo> {
    const { host, port } = this.#o.config.server;
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#startTimers();
    return this.#server.address() as AddressInfo;
  }

  #startTimers(): void {
    const keepAlive = this.#o.config.server.keepAliveMs;
    if (keepAlive > 0) {
      const comment = formatComment('keep-alive');
      const timer = setInterval(() => {
        for (const session of this.#registry.all()) session.keepAlive(comment);
      }, keepAlive);
      timer.unref();
      this.#timers.push(timer);
    }
    // A quarter of the shorter lifetime (idle timeout or maximum age), between 1 s and 30 s, so a
    // session ends within about a quarter of its lifetime past it, whichever limit it meets.
    const { idleTimeoutMs, maxAgeMs } = this.#o.config.sessions;
    const quarter = (ms: number): number => (ms > 0 ? ms / 4 : 30_000);
    const every = Math.max(1000, Math.min(quarter(idleTimeoutMs), quarter(maxAgeMs), 30_000));
    const sweep = setInterval(() => this.sweep(Date.now()), every);
    sweep.unref();
    this.#timers.push(sweep);
  }

  /** Ends expired sessions and drops old events; returns how many sessions ended. */
  sweep(now: number): number {
    this.#modern.sweep(now);
    const ended = this.#legacy.sweep(now);
    this.#o.store.prune?.(now);
    if (ended > 0) this.#o.metrics.inc('http_sessions_expired_total', undefined, ended);
    return ended;
  }

  /**
   * One HTTP request. Synchronous up to the endpoint on the common path (no extra route, no
   * authentication to await): with the request scope's `AsyncLocalStorage` on, every promise a
   * request makes costs hooks. Answers whatever it cannot serve.
   */
  #handle(req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query >= 0 ? url.slice(0, query) : url;

    const refusal = this.#guard.check(req);
    if (refusal) {
      this.#o.metrics.inc('http_rejected_total', { reason: refusal.reason });
      sendJsonRpcError(res, 403, JsonRpcCode.InvalidRequest, `Forbidden: ${refusal.message}`);
      return undefined;
    }

    let endpoint: string | undefined;
    let kind = 'mcp' as EndpointKind;
    if (path === '/mcp' || path === '/sse' || path === '/messages') {
      endpoint = '*';
      kind = path.slice(1) as EndpointKind;
    } else {
      const match = SERVER_PATH.exec(path);
      if (match) {
        let name: string;
        try {
          name = decodeURIComponent(match[1]!);
        } catch {
          name = '';
        }
        if (this.#upstreams.has(name)) {
          endpoint = name;
          kind = match[2] as EndpointKind;
        }
      }
    }
    if (endpoint === undefined) return this.#other(req, res, path);
    // A POST to /messages belongs to a session that exists (its id is in the query): it goes on
    // during a drain like any request of an open session; the router refuses new calls in it.
    if (this.#draining && kind !== 'messages' && refuseWhileDraining(req, res)) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'draining' });
      return undefined;
    }
    const authenticate = this.#o.authenticate;
    if (authenticate) return this.#authenticated(authenticate, req, res, endpoint, path, kind);
    return this.#endpoint({ req, res, endpoint, principal: 'local', roles: [], path }, kind);
  }

  /**
   * A path that is no MCP endpoint: `/health`, `/ready`, the extra routes, else 404. Both probes
   * come after the Host and Origin guards and before authentication, like a load balancer's or an
   * orchestrator's probe, which carries no credentials (docs/observability.md).
   */
  async #other(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (path === '/health' && req.method === 'GET') {
      if (this.#draining) return drainingHealth(res, this.#registry.size);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', sessions: this.#registry.size }));
      return;
    }
    if (path === '/ready' && req.method === 'GET') return this.#ready(res);
    for (const route of this.#o.routes ?? []) if (await route(req, res, path)) return;
    sendJsonRpcError(
      res,
      404,
      JsonRpcCode.InvalidRequest,
      `Not Found: ${path.slice(0, 200)} (MCP endpoints: /mcp, /servers/<name>/mcp; 2024-11-05 HTTP+SSE: /sse, /servers/<name>/sse)`,
    );
  }

  /**
   * `GET /ready`: 200 when the gateway can serve (`ready`, or `degraded` with what is missing), 503
   * with the problems otherwise (`observe/readiness.ts` has the rule).
   */
  #ready(res: ServerResponse): void {
    const readiness = readinessOf({
      upstreams: [],
      ...this.#o.readiness?.(),
      now: Date.now(),
      draining: this.#draining,
    });
    const ready = readiness.status !== 'not_ready';
    res.writeHead(ready ? 200 : 503, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      ...(this.#draining ? { 'retry-after': String(DRAIN_RETRY_AFTER_S) } : {}),
    });
    res.end(JSON.stringify({ ...readiness, sessions: this.#registry.size }));
  }

  async #authenticated(
    authenticate: Authenticate,
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: string,
    path: string,
    kind: EndpointKind,
  ): Promise<void> {
    const auth = await authenticate(req);
    if (!auth.ok) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'auth' });
      sendJsonRpcError(res, auth.status, JsonRpcCode.Unauthorized, auth.message, null, auth.headers ?? {});
      return;
    }
    await this.#endpoint(
      { req, res, endpoint, principal: auth.principal, roles: auth.roles ?? [], path },
      kind,
    );
  }

  /**
   * The era of a request (spec 2026-07-28 versioning): a modern client always sends
   * MCP-Protocol-Version: 2026-07-28. Everything else is legacy traffic, and the legacy endpoint
   * refuses bodies that claim the modern era without that header (-32020) and versions nobody
   * serves (-32022).
   */
  #endpoint(request: EndpointRequest, kind: EndpointKind): Promise<void> | undefined {
    if (kind !== 'mcp') {
      this.#sse.handle(request, kind);
      return undefined;
    }
    const version = request.req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && version.trim() === MODERN_REVISION)
      return this.#modern.handle(request);
    this.#legacy.handle(request);
    return undefined;
  }

  /**
   * The first step of a graceful shutdown: requests that would open a new session or stream are
   * refused with 503 (drain-gate.ts) while the sessions in progress go on; `close` ends them. The
   * listener stays open until then: a call in flight may need its client to answer a server
   * request, cancel, or resume, each on a new POST (and a new connection, perhaps), and a client
   * that is refused gets a clear 503 rather than a refused connection. Idempotent.
   */
  beginDrain(): void {
    this.#draining = true;
  }

  #closeListener(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => this.#server.close(() => resolve()));
    return this.#closed;
  }

  /**
   * Ends every session, stops the timers and closes the listener and its connections. A connection
   * still writing the last answers it was given gets up to {@link CLOSE_FLUSH_MS} to finish them
   * (Node keeps a keep-alive connection open after its response ends, even once the server is
   * closing: it is closed as soon as it is idle); any other is cut.
   */
  async close(): Promise<void> {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    this.#legacy.endAll('the gateway is shutting down');
    this.#modern.endAll('the gateway is shutting down');
    const closed = this.#closeListener();
    this.#server.closeIdleConnections();
    const sweep = setInterval(() => this.#server.closeIdleConnections(), 20);
    const cut = setTimeout(() => this.#server.closeAllConnections(), CLOSE_FLUSH_MS);
    await closed;
    clearInterval(sweep);
    clearTimeout(cut);
  }
}
