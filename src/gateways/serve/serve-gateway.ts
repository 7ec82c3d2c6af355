/**
 * `switchboard serve`: the Streamable HTTP gateway. Composition only: the router and its taps, the
 * upstream connections, the routing policy, and the HTTP server, wired from one configuration.
 */
import type { AddressInfo } from 'node:net';
import { createRedactor } from '../../audit/redaction.js';
import type { GatewayConfig, UpstreamConfig } from '../../config/types.js';
import { Router, type TraceContextWriter } from '../../core/router.js';
import { type Tap, TapBus } from '../../core/taps.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import { GatewayMetrics, type GatewaySources } from '../../observe/prometheus/gateway-metrics.js';
import type { TraceReadiness } from '../../observe/readiness.js';
import { ApprovalRegistry } from '../../policy/approvals.js';
import { PolicyEngine } from '../../policy/policy-engine.js';
import type { JsonObject } from '../../protocol/jsonrpc/types.js';
import type { SpaceTraceSink } from '../../space/meup-space.js';
import { ServeSpace } from '../../space/serve-space.js';
import type { GatewayAuthenticate } from '../../space/space-auth.js';
import { mergeSessionInfo } from '../../trace/session-info-merge.js';
import type { TraceSessionInfo } from '../../trace/types.js';
import { MemoryEventStore } from '../../transports/http/events/memory-event-store.js';
import {
  type Authenticate,
  type ExtraRoute,
  McpHttpServer,
} from '../../transports/http/server/mcp-http-server.js';
import { EraCache } from '../../transports/http/upstream/era-cache.js';
import { createUpstreamPool } from '../../transports/http/upstream/http-connection.js';
import { SupervisedHttpUpstream } from '../../transports/http/upstream/supervised-http-upstream.js';
import { childEnvironment } from '../../transports/stdio/child-env.js';
import { SupervisedUpstream } from '../../transports/stdio/supervised-upstream.js';
import { type DrainOutcome, drainCalls } from '../drain.js';
import { approvalsRoutes } from '../governance/approvals-routes.js';
import type { AuditSink } from '../governance/audit-sink.js';
import { GovernanceInterceptor } from '../governance/governance-interceptor.js';
import { listAllTools } from '../governance/list-tools.js';
import { ToolCatalog } from '../governance/tool-catalog.js';
import { type MetricsEndpointOptions, MetricsListener, metricsRoute } from './metrics-endpoint.js';
import { PoolLeaseInterceptor } from './pool-lease-interceptor.js';
import { ServeResolver } from './serve-resolver.js';
import {
  type LinkFactory,
  type LinkFactoryParams,
  type SupervisedLink,
  UpstreamManager,
} from './upstream-manager.js';

export interface ServeGatewayOptions {
  readonly config: GatewayConfig;
  readonly version: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly taps?: readonly Tap[];
  /** Writes the gateway's trace context into what it sends (OpenTelemetry on); see `RouterOptions`. */
  readonly traceContext?: TraceContextWriter;
  readonly onSession?: (info: TraceSessionInfo) => void;
  readonly authenticate?: Authenticate;
  /** The audit ledger; undefined when it is disabled. */
  readonly ledger?: AuditSink;
  /** How the trace store is doing (`TraceRecorder.health`), for `/ready`; undefined: no trace. */
  readonly traceHealth?: () => TraceReadiness;
  readonly routes?: readonly ExtraRoute[];
  /** Builds links for upstream kinds other than stdio (the HTTP upstream client). */
  readonly linkFactories?: Partial<Record<UpstreamConfig['transport'], LinkFactory>>;
  /** The MEUP space's authentication (the gateway's authenticator) and where it records envelopes. */
  readonly space?: { readonly authenticate?: GatewayAuthenticate; readonly trace?: SpaceTraceSink };
  /** What `/metrics` reads of the parts the gateway does not hold (the trace recorder's queue). */
  readonly metricsSources?: Pick<GatewaySources, 'traceQueue'>;
}

const STABLE_AFTER_MS = 30_000;

export class ServeGateway {
  readonly #o: ServeGatewayOptions;
  readonly router: Router;
  readonly upstreams: UpstreamManager;
  readonly resolver: ServeResolver;
  readonly http: McpHttpServer;
  readonly policy: PolicyEngine;
  /** Calls held for approval: shared by the HTTP approvals API and the MEUP space. */
  readonly approvals: ApprovalRegistry;
  readonly catalog: ToolCatalog;
  /** The MEUP space on `/meup`; undefined when `space.enabled` is false. */
  readonly space: ServeSpace | undefined;
  /** What `GET /metrics` exports; undefined when `observe.metrics.enabled` is false. */
  readonly prometheus: GatewayMetrics | undefined;
  /** `/metrics` on a listener of its own (`observe.metrics.listen`), if configured. */
  readonly metricsListener: MetricsListener | undefined;
  /**
   * What was last reported to the trace of each open session. An endpoint ends a session in the
   * router before it tells the gateway (`hooks.closed`), so the router has forgotten the session's
   * facts by the time its end is reported: the end is laid over what is remembered here.
   */
  readonly #reported = new Map<string, TraceSessionInfo>();
  /** One keep-alive pool per HTTP upstream, shared by all of its per-session connections. */
  readonly #pools = new Map<string, ReturnType<typeof createUpstreamPool>>();
  /** The era of each HTTP upstream once probed, so per-session connections probe it once. */
  readonly #eras = new EraCache();
  /** The events kept for resumption (what `/metrics` reports of them). */
  readonly #store: MemoryEventStore;
  /** Where the metrics listener listens, once started. */
  metricsAddress: AddressInfo | undefined;

  constructor(options: ServeGatewayOptions) {
    this.#o = options;
    const { config, logger, metrics } = options;
    const taps = new TapBus(logger, metrics, options.taps ?? []);
    this.catalog = new ToolCatalog((upstream, session) => this.#listTools(upstream, session));
    // A server whose tool list changed may have new tools with other annotations: learn again.
    // The tap names its one method, so that no other hop is built for it (`--no-trace` builds none).
    taps.add({
      name: 'tool-catalog',
      methods: ['notifications/tools/list_changed'],
      observe: (event) => {
        if (event.upstream !== undefined && event.from.startsWith('server-')) {
          this.catalog.forget(event.upstream);
        }
      },
    });
    // The resolver is created right after the router; the router only calls it once traffic flows.
    let resolver: ServeResolver | undefined;
    this.router = new Router({
      resolver: {
        resolve: (s, r) => resolver!.resolve(s, r),
        notificationLinks: (s, n) => resolver!.notificationLinks(s, n),
        sessionsFor: (l) => resolver!.sessionsFor(l),
        notificationTargets: (l, n) => resolver!.notificationTargets(l, n),
      },
      logger,
      metrics,
      taps,
      ...(options.traceContext === undefined ? {} : { traceContext: options.traceContext }),
      timeouts: {
        requestTimeoutMs: config.timeouts.requestMs,
        resetOnProgress: config.timeouts.resetOnProgress,
        maxTotalTimeoutMs: config.timeouts.maxTotalMs,
      },
      maxJsonDepth: config.server.maxJsonDepth,
    });
    this.prometheus = config.observe.metrics.enabled ? this.#prometheus() : undefined;
    for (const observer of this.prometheus?.observers ?? []) this.router.observations.add(observer);
    this.upstreams = new UpstreamManager({
      upstreams: config.upstreams,
      router: this.router,
      makeLink: (params) => this.#makeLink(params),
      logger,
      metrics,
      gatewayVersion: options.version,
      onSharedRestart: (name) => resolver?.upstreamRestarted(name),
      onPooledChildReady: (name, link) => resolver?.pooledChildReady(name, link),
    });
    resolver = new ServeResolver({
      manager: this.upstreams,
      router: this.router,
      logger,
      metrics,
      gatewayVersion: options.version,
      revisions: ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'],
      onInitialized: (key) => this.#reportSession(key),
    });
    this.resolver = resolver;
    this.policy = new PolicyEngine(config.policy);
    const localIsTrusted = config.auth === undefined;
    this.approvals = new ApprovalRegistry({
      timeoutMs: config.policy.approvals.timeoutMs,
      // Four eyes needs two identities: without authentication there is one user, `local`.
      allowSelfApproval: localIsTrusted || config.policy.approvals.allowSelfApproval,
    });
    const prometheus = this.prometheus;
    if (prometheus)
      this.approvals.subscribe({
        decided: (request, outcome) =>
          prometheus.approvalDecided(
            outcome.approved ? 'approved' : outcome.why,
            Date.now() - request.createdAt,
          ),
      });
    this.router.addInterceptor(
      new GovernanceInterceptor({
        policy: this.policy,
        approvals: this.approvals,
        catalog: this.catalog,
        ...(options.ledger ? { ledger: options.ledger } : {}),
        resolveName: (name) => resolver!.resolveName(name),
        redact: createRedactor({
          extraKeyPatterns: config.audit.redact.keys,
          extraValuePatterns: config.audit.redact.patterns.map((p) => new RegExp(p, 'g')),
        }),
        localIsTrusted,
        logger,
        metrics,
      }),
    );
    // After governance, so it sees the response the client gets (and a held one only once it is let go).
    if (config.upstreams.some((u) => u.sharing === 'pooled'))
      this.router.addInterceptor(new PoolLeaseInterceptor(this.upstreams));
    const store = new MemoryEventStore({
      maxEventsPerSession: config.resumability.maxEventsPerSession,
      maxEventAgeMs: config.resumability.maxEventAgeMs,
      maxTotalBytes: config.resumability.maxTotalBytes,
    });
    const hooks = {
      opened: (key: string, endpoint: string) => {
        resolver!.openSession(
          key,
          endpoint === '*' ? { kind: 'aggregate' } : { kind: 'single', upstream: endpoint },
        );
        this.#reportSession(key);
      },
      closed: (key: string) => {
        this.#reportSession(key, Date.now());
        resolver!.closeSession(key);
        void this.upstreams.closeSession(key);
      },
    };
    this.http = new McpHttpServer({
      config,
      router: this.router,
      store,
      upstreamNames: config.upstreams.map((u) => u.name),
      logger,
      metrics,
      hooks,
      ...(options.authenticate ? { authenticate: options.authenticate } : {}),
      gatewayVersion: options.version,
      ...(options.traceContext === undefined ? {} : { scopeClientAddress: true }),
      modern: {
        discover: (_endpoint, session) => resolver!.discover(session),
        paramHeaders: (_endpoint, session, tool) => this.#paramHeaders(session, tool),
        forwardsParamHeaders: (_endpoint, session, tool) => {
          const target = this.resolver.targetOf(session, tool);
          return target !== undefined && this.upstreams.eraOf(target.server, session) !== 'legacy';
        },
      },
      routes: [
        approvalsRoutes({
          approvals: this.approvals,
          policy: this.policy,
          localIsTrusted,
          bodyTimeoutMs: config.server.bodyTimeoutMs,
          ...(options.authenticate ? { authenticate: options.authenticate } : {}),
        }),
        ...(this.prometheus && !config.observe.metrics.listen
          ? [metricsRoute(this.#metricsEndpoint(this.prometheus))]
          : []),
        ...(options.routes ?? []),
      ],
      readiness: () => ({
        upstreams: this.upstreams.status(),
        ...(options.ledger
          ? { ledger: { healthy: options.ledger.healthy, reason: options.ledger.unavailable?.reason } }
          : {}),
        ...(options.traceHealth ? { trace: options.traceHealth() } : {}),
      }),
    });
    this.metricsListener =
      this.prometheus && config.observe.metrics.listen
        ? new MetricsListener(config.observe.metrics.listen, this.#metricsEndpoint(this.prometheus))
        : undefined;
    this.#store = store;
    this.space = config.space.enabled
      ? new ServeSpace({
          config,
          router: this.router,
          approvals: this.approvals,
          sessions: { opened: hooks.opened, closed: hooks.closed },
          ...(options.space?.authenticate ? { authenticate: options.space.authenticate } : {}),
          ...(options.space?.trace ? { trace: options.space.trace } : {}),
          logger,
          metrics,
        })
      : undefined;
    this.space?.attach(this.http);
  }

  /**
   * Starts the shared upstreams, then listens (and the metrics listener, when configured: its
   * address is `metricsAddress`). Resolves with the bound address.
   */
  async start(): Promise<AddressInfo> {
    await this.upstreams.start();
    const address = await this.http.listen();
    if (this.metricsListener) this.metricsAddress = await this.metricsListener.listen();
    return address;
  }

  /**
   * The graceful part of a shutdown, before `close`: no new connections, sessions or streams
   * (503), new requests in open sessions answered with `SB_SHUTTING_DOWN`, the calls in flight
   * given `graceMs` (`server.drainTimeout` by default) to finish, and the rest answered with
   * `SB_SHUTTING_DOWN` and cancelled upstream.
   */
  drain(graceMs: number = this.#o.config.server.drainTimeoutMs): Promise<DrainOutcome> {
    this.http.beginDrain();
    return drainCalls(this.router, { graceMs, logger: this.#o.logger, metrics: this.#o.metrics });
  }

  /** Stops accepting, ends every session, and shuts every upstream down. */
  async close(): Promise<void> {
    this.space?.close();
    this.approvals.close();
    await this.metricsListener?.close();
    await this.http.close();
    await this.upstreams.close();
    await Promise.all([...this.#pools.values()].map((pool) => pool.close().catch(() => undefined)));
    this.router.close();
  }

  /** The registry of `/metrics`, reading the gateway's parts when scraped. */
  #prometheus(): GatewayMetrics {
    const { config, metrics, version } = this.#o;
    const m = config.observe.metrics;
    const prometheus = new GatewayMetrics({
      metrics,
      version,
      ...(m.principalLabel ? { principals: { max: m.maxPrincipals } } : {}),
      sources: {
        callsInFlight: () => this.router.callsInFlight,
        upstreamRequestsPending: () => this.router.pendingRequests,
        sessionProtocol: (key) => this.router.session(key)?.protocolVersion,
        // The manager's view, from the one link record /ready reports too, so both speak alike.
        upstreams: () =>
          this.upstreams.status().map(({ name, state }) => {
            const version = this.upstreams.known(name)?.protocolVersion;
            return { name, state, ...(version === undefined ? {} : { protocolVersion: version }) };
          }),
        httpStreams: () => {
          let legacy = 0;
          for (const session of this.http.sessions.all()) legacy += session.openStreams;
          return { legacy, modern: this.http.modernStreams };
        },
        resumption: () => this.#store.stats(),
        ...(this.#o.ledger
          ? {
              ledger: () => {
                const ledger = this.#o.ledger!;
                const why = ledger.healthy ? undefined : ledger.unavailable?.reason;
                return { queued: ledger.queued ?? 0, ...(why === undefined ? {} : { failingClosed: why }) };
              },
            }
          : {}),
        approvalsPending: () => this.approvals.pending().length,
        spaceParticipants: () => this.space?.space.participants.present().length ?? 0,
        ...this.#o.metricsSources,
      },
    });
    return prometheus;
  }

  #metricsEndpoint(prometheus: GatewayMetrics): MetricsEndpointOptions {
    return {
      metrics: prometheus,
      role: this.#o.config.observe.metrics.role,
      logger: this.#o.logger,
      counters: this.#o.metrics,
      ...(this.#o.authenticate ? { authenticate: this.#o.authenticate } : {}),
    };
  }

  #makeLink(params: LinkFactoryParams): SupervisedLink {
    const { config } = params;
    const custom = this.#o.linkFactories?.[config.transport];
    if (custom) return custom(params);
    const backoff = {
      initialMs: config.restart.initialDelayMs,
      maxMs: config.restart.maxDelayMs,
      stableMs: STABLE_AFTER_MS,
    };
    if (config.transport === 'http') {
      let pool = this.#pools.get(config.name);
      if (!pool) {
        pool = createUpstreamPool(new URL(config.url));
        this.#pools.set(config.name, pool);
      }
      return new SupervisedHttpUpstream({
        router: params.host,
        link: params.link,
        http: {
          name: config.name,
          url: config.url,
          headers: config.headers,
          maxMessageBytes: config.maxMessageBytes,
          maxJsonDepth: this.#o.config.server.maxJsonDepth,
          dispatcher: pool,
          era: config.era,
          eraCache: this.#eras,
          handshakeTimeoutMs: config.handshakeTimeoutMs,
        },
        logger: this.#o.logger,
        metrics: this.#o.metrics,
        restart: config.restart.enabled,
        maxRestarts: config.restart.maxRestarts,
        backoff,
        initialize: params.initialize,
        onstop: params.onstop,
      });
    }
    return new SupervisedUpstream({
      router: params.host,
      link: params.link,
      child: {
        name: config.name,
        command: config.command,
        args: config.args,
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
        env: childEnvironment({ passEnv: config.passEnv, env: config.env }),
        maxMessageBytes: config.maxMessageBytes,
        maxStdinBufferBytes: config.maxStdinBufferBytes,
      },
      logger: this.#o.logger,
      metrics: this.#o.metrics,
      restart: config.restart.enabled,
      maxRestarts: config.restart.maxRestarts,
      backoff,
      initialize: params.initialize,
      onstop: params.onstop,
    });
  }

  /**
   * The `x-mcp-header` parameters of a tool as a session's client names it, learning the
   * upstream's tools first when they are not known yet.
   */
  async #paramHeaders(session: string, exposed: string) {
    const target = this.resolver.targetOf(session, exposed);
    if (!target) return undefined;
    await this.catalog.ensure(target.server, session);
    return this.catalog.paramHeaders(target.server, target.name);
  }

  /** The tools of an upstream as the session's connection to it lists them (all pages). */
  async #listTools(upstream: string, session: string): Promise<readonly JsonObject[]> {
    let lookup = this.upstreams.linkFor(upstream, session);
    if (lookup.kind === 'pending') {
      await lookup.ready;
      lookup = this.upstreams.linkFor(upstream, session);
    }
    if (lookup.kind !== 'ready') return [];
    return listAllTools(this.router, lookup.link, session);
  }

  /**
   * Reports a session to the trace: what the router knows of it now, laid over what was reported
   * before (a field the router no longer knows keeps its value); at its end, with `endedAt`.
   */
  #reportSession(key: string, endedAt?: number): void {
    if (!this.#o.onSession) return;
    const known = this.#reported.get(key);
    const session = this.router.session(key);
    const endpoint = this.resolver.endpointOf(key);
    const info: { -readonly [K in keyof TraceSessionInfo]: TraceSessionInfo[K] } = {
      key,
      transport: session?.transport ?? known?.transport ?? 'http',
      upstreams: endpoint?.kind === 'single' ? [endpoint.upstream] : this.upstreams.names,
      startedAt: known?.startedAt ?? Date.now(),
    };
    if (endedAt !== undefined) info.endedAt = endedAt;
    if (session?.mcpSessionId !== undefined) info.mcpSessionId = session.mcpSessionId;
    if (session?.principal !== undefined) info.principal = session.principal;
    if (session) info.protocolVersion = session.protocolVersion;
    const clientInfo = session?.initializeParams?.clientInfo;
    if (clientInfo && typeof clientInfo === 'object') info.clientInfo = clientInfo as Record<string, unknown>;
    const merged = mergeSessionInfo(known, info);
    if (endedAt === undefined) this.#reported.set(key, merged);
    else this.#reported.delete(key);
    this.#o.onSession(merged);
  }
}
