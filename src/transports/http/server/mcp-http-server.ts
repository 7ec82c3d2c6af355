/**
 * The gateway's HTTP server: `/mcp` (all upstreams, aggregated), `/servers/<name>/mcp` (one
 * upstream), `/health`. Every MCP request passes the DNS-rebinding and Origin guards, then
 * authentication, then goes to the endpoint of its protocol era: the session-based revisions
 * (`LegacyEndpoint`) or the stateless 2026-07-28 one (`ModernEndpoint`), told apart by the
 * `MCP-Protocol-Version` header.
 *
 * One server-wide timer writes SSE keep-alive comments and one sweeps expired sessions and old
 * events, so an idle session costs no timer of its own.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewayConfig } from '../../../config/types.js';
import type { Router } from '../../../core/router.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { MODERN_REVISION } from '../../../protocol/mcp/revisions.js';
import type { EventStore } from '../events/event-store.js';
import { formatComment } from '../sse/sse-writer.js';
import { drainingHealth, refuseWhileDraining } from './drain-gate.js';
import { checkHost, checkOrigin } from './http-guards.js';
import { type EndpointRequest, LegacyEndpoint, type SessionHooks } from './legacy-endpoint.js';
import { ModernEndpoint, type ModernEndpointOptions } from './modern/modern-endpoint.js';
import { answerInternalError, sendJsonRpcError } from './responses.js';
import { SessionRegistry } from './session-registry.js';

export type AuthOutcome =
  | {
      readonly ok: true;
      readonly principal: string;
      /** The principal's roles (policy, approvals); absent means none. */
      readonly roles?: readonly string[];
    }
  | {
      readonly ok: false;
      readonly status: 401 | 403;
      readonly message: string;
      readonly headers?: Record<string, string>;
    };

/** Decides who is calling. Without authentication configured everyone is `local`. */
export type Authenticate = (req: IncomingMessage) => AuthOutcome | Promise<AuthOutcome>;

/** A route of another part of the gateway (approvals API, metrics...): true when it handled the request. */
export type ExtraRoute = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
) => boolean | Promise<boolean>;

export interface McpHttpServerOptions {
  readonly config: Pick<GatewayConfig, 'server' | 'sessions' | 'resumability'>;
  readonly router: Router;
  readonly hooks: SessionHooks;
  readonly upstreamNames: readonly string[];
  readonly store: EventStore & { prune?(now: number): void };
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly authenticate?: Authenticate;
  readonly routes?: readonly ExtraRoute[];
  readonly gatewayVersion: string;
  /** What the 2026-07-28 endpoint needs from the deployment (`server/discover`, `Mcp-Param-*`). */
  readonly modern: Pick<
    ModernEndpointOptions,
    'discover' | 'paramHeaders' | 'forwardsParamHeaders' | 'parkMs'
  >;
}

const SERVER_PATH = /^\/servers\/([^/]+)\/mcp$/;

/** At close, how long a connection may take to send the answer it was given before it is cut. */
const CLOSE_FLUSH_MS = 1_000;

export class McpHttpServer {
  readonly #o: McpHttpServerOptions;
  readonly #server: Server;
  readonly #registry: SessionRegistry;
  readonly #legacy: LegacyEndpoint;
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
    this.#registry = new SessionRegistry(options.config.sessions);
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
    this.#server = createServer((req, res) => {
      const fail = (error: unknown): void =>
        answerInternalError(res, error, req.url, options.logger, options.metrics);
      try {
        this.#handle(req, res)?.catch(fail);
      } catch (error) {
        fail(error);
      }
    });
    // Long-lived SSE responses must not be cut by Node's request timeout.
    this.#server.requestTimeout = 0;
    this.#server.keepAliveTimeout = 65_000;
  }

  get sessions(): SessionRegistry {
    return this.#registry;
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
    const { idleTimeoutMs } = this.#o.config.sessions;
    const every = Math.max(1000, Math.min(idleTimeoutMs > 0 ? idleTimeoutMs / 4 : 30_000, 30_000));
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
    const server = this.#o.config.server;

    const hostProblem = checkHost(req.headers.host, {
      bindHost: server.host,
      allowedHosts: server.allowedHosts,
    });
    if (hostProblem) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'host' });
      sendJsonRpcError(res, 403, JsonRpcCode.InvalidRequest, `Forbidden: ${hostProblem}`);
      return undefined;
    }
    const origin = req.headers.origin;
    const originProblem = checkOrigin(Array.isArray(origin) ? origin[0] : origin, {
      bindHost: server.host,
      allowedOrigins: server.allowedOrigins,
    });
    if (originProblem) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'origin' });
      sendJsonRpcError(res, 403, JsonRpcCode.InvalidRequest, `Forbidden: ${originProblem}`);
      return undefined;
    }

    let endpoint: string | undefined;
    if (path === '/mcp') endpoint = '*';
    else {
      const match = SERVER_PATH.exec(path);
      if (match) {
        let name: string;
        try {
          name = decodeURIComponent(match[1]!);
        } catch {
          name = '';
        }
        if (this.#upstreams.has(name)) endpoint = name;
      }
    }
    if (endpoint === undefined) return this.#other(req, res, path);
    if (this.#draining && refuseWhileDraining(req, res)) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'draining' });
      return undefined;
    }
    const authenticate = this.#o.authenticate;
    if (authenticate) return this.#authenticated(authenticate, req, res, endpoint, path);
    return this.#endpoint({ req, res, endpoint, principal: 'local', roles: [], path });
  }

  /** A path that is no MCP endpoint: `/health`, the extra routes, else 404. */
  async #other(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (path === '/health' && req.method === 'GET') {
      if (this.#draining) return drainingHealth(res, this.#registry.size);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', sessions: this.#registry.size }));
      return;
    }
    for (const route of this.#o.routes ?? []) if (await route(req, res, path)) return;
    sendJsonRpcError(
      res,
      404,
      JsonRpcCode.InvalidRequest,
      `Not Found: ${path.slice(0, 200)} (MCP endpoints: /mcp, /servers/<name>/mcp)`,
    );
  }

  async #authenticated(
    authenticate: Authenticate,
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: string,
    path: string,
  ): Promise<void> {
    const auth = await authenticate(req);
    if (!auth.ok) {
      this.#o.metrics.inc('http_rejected_total', { reason: 'auth' });
      sendJsonRpcError(res, auth.status, JsonRpcCode.Unauthorized, auth.message, null, auth.headers ?? {});
      return;
    }
    await this.#endpoint({ req, res, endpoint, principal: auth.principal, roles: auth.roles ?? [], path });
  }

  /**
   * The era of a request (spec 2026-07-28 versioning): a modern client always sends
   * MCP-Protocol-Version: 2026-07-28. Everything else is legacy traffic, and the legacy endpoint
   * refuses bodies that claim the modern era without that header (-32020) and versions nobody
   * serves (-32022).
   */
  #endpoint(request: EndpointRequest): Promise<void> | undefined {
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
