/**
 * The upstream connections of `serve`. A `shared` upstream has one connection for every session,
 * started and initialized by the gateway itself (as client `switchboard`, declaring the client
 * capabilities it can route: sampling and elicitation). A `per-session` upstream gets its own
 * connection for each client session, created on first need and initialized with that client's
 * own `initialize` parameters, so the server sees the real client. A `pooled` (stdio) upstream has
 * a bounded pool of children, each initialized like a shared connection and leased to one
 * session's calls at a time (`upstream-pool.ts`), so a request a child sends names its session.
 *
 * Each connection is a router link under a supervisor that restarts it with backoff and
 * re-initializes it before it carries traffic again.
 */

import { DEFAULTS } from '../../config/defaults.js';
import type { SharingMode, UpstreamConfig } from '../../config/types.js';
import type { LinkId, SessionKey } from '../../core/correlation-table.js';
import type { LinkHost, UpstreamClose } from '../../core/ports.js';
import type { Router } from '../../core/router.js';
import { rejection } from '../../errors/rpc-error.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import type { UpstreamReadyState, UpstreamStatus } from '../../observe/readiness.js';
import type { JsonObject } from '../../protocol/jsonrpc/types.js';
import { LATEST_LEGACY_REVISION } from '../../protocol/mcp/revisions.js';
import { LinkStates } from './link-states.js';
import { UpstreamPool } from './upstream-pool.js';

/** A started upstream connection whose lifecycle a supervisor owns. */
export interface SupervisedLink {
  start(): Promise<void>;
  close(): Promise<void>;
  /**
   * The protocol era the upstream speaks, once known (stdio links are legacy: leave it out);
   * `dual`: both, each client spoken to in its own era.
   */
  readonly era?: 'modern' | 'legacy' | 'dual' | undefined;
}

export interface LinkFactoryParams {
  readonly config: UpstreamConfig;
  readonly link: LinkId;
  /**
   * Where the supervisor attaches the link: the router (whose link changes the manager's
   * `LinkStates` observes, so that it knows each link's state, since when, and why it last closed).
   */
  readonly host: LinkHost;
  /** Runs after each (re)start before traffic flows: the MCP handshake. */
  readonly initialize: (restart: number) => Promise<void>;
  /** The connection is gone for good. */
  readonly onstop: (close: UpstreamClose) => void;
}

export type LinkFactory = (params: LinkFactoryParams) => SupervisedLink;

export type InitializeResult = JsonObject & {
  readonly protocolVersion?: string;
  readonly capabilities?: JsonObject;
  readonly serverInfo?: JsonObject;
  readonly instructions?: string;
};

/**
 * What the gateway declares to shared upstreams: the client capabilities it can route back to the
 * session whose call caused the request. Not roots: roots belong to one client, and a shared server
 * asking for them could not be told whose.
 */
export const GATEWAY_CLIENT_CAPABILITIES: JsonObject = { sampling: {}, elicitation: {} };

interface Connection {
  readonly link: LinkId;
  readonly supervisor: SupervisedLink;
  /** The first start's handshake: settled once, for good (see `linkFor` for later restarts). */
  ready: Promise<InitializeResult>;
  /** The latest handshake's result, set once the first one succeeded. */
  result?: InitializeResult;
  stopped?: string;
}

interface Upstream {
  readonly config: UpstreamConfig;
  shared?: Connection;
  readonly perSession: Map<SessionKey, Connection>;
  /** `pooled`: its children (the first is the anchor: see `UpstreamPool.anchor`). */
  pool?: UpstreamPool<Connection>;
  /** The latest initialize result from any connection: the upstream's capabilities. */
  known?: InitializeResult;
}

/** Which state wins when an upstream has several connections (lower is better). */
const RANK: Readonly<Record<UpstreamReadyState, number>> = {
  ready: 0,
  idle: 1,
  starting: 2,
  restarting: 3,
  down: 4,
};

export type LinkLookup =
  | { readonly kind: 'ready'; readonly link: LinkId }
  | { readonly kind: 'pending'; readonly ready: Promise<unknown> }
  | { readonly kind: 'down'; readonly reason: string };

export interface UpstreamManagerOptions {
  readonly upstreams: readonly UpstreamConfig[];
  readonly router: Router;
  readonly makeLink: LinkFactory;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly gatewayVersion: string;
  /** How long a client waits for an upstream's handshake before getting an error. */
  readonly readyTimeoutMs?: number;
  /** A shared upstream was restarted and initialized again (its sessions' settings must be resent). */
  readonly onSharedRestart?: (name: string) => void;
  /**
   * A pooled child finished a handshake (its first, or after a restart): it knows nothing of the
   * settings the sessions asked for (the log level; on the anchor, the subscriptions).
   */
  readonly onPooledChildReady?: (name: string, link: LinkId) => void;
}

export class UpstreamManager {
  readonly #o: UpstreamManagerOptions;
  readonly #upstreams = new Map<string, Upstream>();
  /** Link id -> (upstream name, owning session for per-session links). */
  readonly #links = new Map<LinkId, { upstream: string; session?: SessionKey; pooled?: true }>();
  /** Numbers the children of pools, for their link ids (`<name>#<n>`). */
  #childCount = 0;
  #closed = false;
  /** Per-session connections being closed: `close()` waits for them too. */
  readonly #closing = new Set<Promise<void>>();
  /**
   * What each link has been doing, for readiness (`status`) and the state gauge of `/metrics`
   * (which reads `status`): an observer of the router's link changes, registered here so that
   * `/ready` works whether metrics are on or not.
   */
  readonly #states = new LinkStates();

  constructor(options: UpstreamManagerOptions) {
    this.#o = options;
    options.router.observations.add(this.#states);
    for (const config of options.upstreams)
      this.#upstreams.set(config.name, { config, perSession: new Map() });
  }

  get names(): readonly string[] {
    return [...this.#upstreams.keys()];
  }

  config(name: string): UpstreamConfig | undefined {
    return this.#upstreams.get(name)?.config;
  }

  sharing(name: string): SharingMode | undefined {
    return this.#upstreams.get(name)?.config.sharing;
  }

  /**
   * The upstream name and owning session behind a link id; `pooled` for a child of a pool (its
   * session is whoever holds it now: `holderOf`).
   */
  describeLink(
    link: LinkId,
  ): { readonly upstream: string; readonly session?: SessionKey; readonly pooled?: true } | undefined {
    return this.#links.get(link);
  }

  /** The session holding the pooled child on `link` now (undefined: free, or not pooled). */
  holderOf(link: LinkId): SessionKey | undefined {
    const owner = this.#links.get(link);
    return owner?.pooled ? this.#upstreams.get(owner.upstream)?.pool?.holderOf(link) : undefined;
  }

  /** Whether `link` is the anchor of its pool (the child the gateway's own requests go to). */
  isAnchor(link: LinkId): boolean {
    const owner = this.#links.get(link);
    return owner?.pooled === true && this.#upstreams.get(owner.upstream)?.pool?.isAnchor(link) === true;
  }

  /** The ready links of a pooled upstream's children (empty for any other upstream). */
  childLinks(name: string): readonly LinkId[] {
    const pool = this.#upstreams.get(name)?.pool;
    if (!pool) return [];
    return pool.children
      .filter((c) => c.result !== undefined && this.#o.router.linkState(c.link) === 'ready')
      .map((c) => c.link);
  }

  /**
   * Ends a call's hold on a pooled child (`holdKey`); `tainted` when the server may still be
   * working on it (see `UpstreamPool.release`). A no-op for a call that took no hold.
   */
  release(session: SessionKey, hold: string, tainted: boolean): void {
    for (const upstream of this.#upstreams.values()) upstream.pool?.release(session, hold, tainted);
  }

  /**
   * Starts every shared upstream, and the first child of every pooled one. Resolves when each has
   * finished its first handshake or failed.
   */
  async start(): Promise<void> {
    const starts: Promise<unknown>[] = [];
    for (const upstream of this.#upstreams.values()) {
      if (upstream.config.sharing === 'pooled') {
        const anchor = this.#poolOf(upstream).anchor();
        if (anchor) starts.push(anchor.ready.catch(() => undefined));
        continue;
      }
      if (upstream.config.sharing !== 'shared') continue;
      const connection = this.#connect(upstream, upstream.config.name, undefined, undefined);
      upstream.shared = connection;
      starts.push(connection.ready.catch(() => undefined));
    }
    await Promise.all(starts);
  }

  /**
   * The link a session uses for `upstream`, creating a per-session connection if needed. For a
   * pooled upstream, `hold` (one client call's `holdKey`) leases a child to the session for that
   * call, to be given back with `release`; without it (the gateway's own requests for a session:
   * merged lists, subscriptions) the session's current child is used, else the anchor.
   */
  linkFor(name: string, session: SessionKey, initializeParams?: JsonObject, hold?: string): LinkLookup {
    const upstream = this.#upstreams.get(name);
    if (!upstream) return { kind: 'down', reason: `no upstream named ${name}` };
    let connection: Connection | undefined;
    if (upstream.config.sharing === 'shared') connection = upstream.shared;
    else if (upstream.config.sharing === 'pooled') {
      const pool = this.#poolOf(upstream);
      if (hold === undefined) connection = pool.childOf(session) ?? pool.anchor();
      else {
        const lease = pool.acquire(session, hold);
        // The pool bounds the wait itself (`pool.queueTimeout`), and settles it when a child was
        // handed to this session: asked again, the session then holds it.
        if (lease.kind === 'queued') return { kind: 'pending', ready: lease.ready };
        connection = lease.child;
      }
    } else {
      connection = upstream.perSession.get(session);
      if (!connection && !this.#closed) {
        connection = this.#connect(upstream, `${name}@${session}`, session, initializeParams);
        upstream.perSession.set(session, connection);
      }
    }
    if (!connection) return { kind: 'down', reason: `upstream ${name} is not running` };
    if (connection.stopped) return { kind: 'down', reason: connection.stopped };
    // Before the first handshake: wait for it (it may fail, and the link may not exist yet). After
    // it: wait for the link as it is now, so a restart is waited for, not answered with the first
    // start's promise, settled long ago (a caller asking again at once would spin on it).
    if (connection.result === undefined)
      return { kind: 'pending', ready: this.#withTimeout(connection.ready, name) };
    if (this.#o.router.linkState(connection.link) === 'ready')
      return { kind: 'ready', link: connection.link };
    return { kind: 'pending', ready: this.#withTimeout(this.#o.router.whenLinkReady(connection.link), name) };
  }

  /**
   * The handshake result of the connection `session` uses for `name` (the shared one, or the
   * session's own, created now if needed).
   */
  initializeResult(
    name: string,
    session: SessionKey,
    initializeParams?: JsonObject,
  ): Promise<InitializeResult> {
    const lookup = this.linkFor(name, session, initializeParams);
    if (lookup.kind === 'down')
      return Promise.reject(
        new SwitchboardError(SbErrorCode.UpstreamUnavailable, lookup.reason, { details: { upstream: name } }),
      );
    const upstream = this.#upstreams.get(name)!;
    const connection =
      upstream.config.sharing === 'shared'
        ? upstream.shared!
        : upstream.config.sharing === 'pooled'
          ? this.#poolOf(upstream).anchor()
          : upstream.perSession.get(session);
    if (!connection)
      return Promise.reject(
        rejection(
          gatewayError(SbErrorCode.UpstreamUnavailable, `upstream ${name} is not running`, {
            upstream: name,
          }),
        ),
      );
    return this.#withTimeout(connection.ready, name);
  }

  /** The capabilities of an upstream as last seen (undefined before any handshake succeeded). */
  /** The era of the connection a session uses for an upstream, once it is known. */
  eraOf(name: string, session: SessionKey): 'modern' | 'legacy' | 'dual' | undefined {
    const upstream = this.#upstreams.get(name);
    if (!upstream) return undefined;
    if (upstream.config.transport === 'stdio') return 'legacy';
    return (upstream.shared ?? upstream.perSession.get(session))?.supervisor.era;
  }

  known(name: string): InitializeResult | undefined {
    return this.#upstreams.get(name)?.known;
  }

  /**
   * Each upstream as readiness sees it (`observe/readiness.ts`): a shared upstream is its one
   * connection; a per-session or pooled one is the best of its connections now (`ready` if any is),
   * and `idle` while it has none, since the gateway starts one when a session needs it.
   */
  status(): UpstreamStatus[] {
    return [...this.#upstreams.values()].map((upstream) => {
      const { config } = upstream;
      const connections: Connection[] = upstream.shared
        ? [upstream.shared]
        : upstream.pool
          ? [...upstream.pool.children]
          : [...upstream.perSession.values()];
      const base = { name: config.name, required: config.required };
      let best: { connection: Connection; state: UpstreamReadyState } | undefined;
      for (const connection of connections) {
        const state = this.#stateOf(connection);
        if (best === undefined || RANK[state] < RANK[best.state]) best = { connection, state };
      }
      if (best === undefined) return { ...base, state: 'idle', restarts: 0 };
      const record = this.#states.get(best.connection.link);
      const era = config.transport === 'stdio' ? 'legacy' : best.connection.supervisor.era;
      return {
        ...base,
        state: best.state,
        restarts: record?.restarts ?? 0,
        ...(era === undefined ? {} : { era }),
        ...(record === undefined ? {} : { since: record.since }),
        ...(record?.lastError === undefined ? {} : { lastError: record.lastError }),
      };
    });
  }

  /** One connection's state: what its supervisor last did with the link, or that it stopped. */
  #stateOf(connection: Connection): UpstreamReadyState {
    if (connection.stopped !== undefined) return 'down';
    const phase = this.#states.get(connection.link)?.phase;
    if (phase === undefined) return 'starting';
    // Ready in the router's sense too: the supervisor marks a link ready only after the handshake.
    return phase;
  }

  /**
   * Closes the per-session connections of a session that ended, and gives back the pooled children
   * it held (as tainted: its calls were cut short, so those children are retired).
   */
  async closeSession(session: SessionKey): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const upstream of this.#upstreams.values()) {
      upstream.pool?.closeSession(session);
      const connection = upstream.perSession.get(session);
      if (!connection) continue;
      upstream.perSession.delete(session);
      // Once closed: the close itself is noted (the link goes down) and must not outlive it.
      const done = connection.supervisor
        .close()
        .catch(() => undefined)
        .finally(() => this.#states.forget(connection.link));
      this.#closing.add(done);
      void done.finally(() => this.#closing.delete(done));
      closing.push(done);
    }
    await Promise.all(closing);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const closing: Promise<void>[] = [];
    for (const upstream of this.#upstreams.values()) {
      if (upstream.shared) closing.push(upstream.shared.supervisor.close().catch(() => undefined));
      if (upstream.pool) {
        upstream.pool.close();
        for (const child of upstream.pool.children)
          closing.push(child.supervisor.close().catch(() => undefined));
      }
      for (const connection of upstream.perSession.values())
        closing.push(connection.supervisor.close().catch(() => undefined));
      upstream.perSession.clear();
    }
    // Sessions ended just before (the HTTP server ends them all first) may still be shutting down.
    await Promise.all([...closing, ...this.#closing]);
  }

  /** The pool of a pooled upstream, made on first use. */
  #poolOf(upstream: Upstream): UpstreamPool<Connection> {
    if (upstream.pool) return upstream.pool;
    const name = upstream.config.name;
    const bounds =
      (upstream.config.transport === 'stdio' ? upstream.config.pool : undefined) ?? DEFAULTS.upstream.pool;
    const pool = new UpstreamPool<Connection>({
      name,
      ...bounds,
      spawn: () => {
        this.#childCount++;
        this.#o.metrics.inc('pool_children_started_total', { upstream: name });
        return this.#connect(upstream, `${name}#${this.#childCount}`, undefined, undefined, true);
      },
      // A promoted anchor that is ready gets the anchor's settings now; one still starting gets
      // them after its handshake, like any child.
      onAnchor: (child) => {
        if (child.result !== undefined && this.#o.router.linkState(child.link) === 'ready')
          setImmediate(() => this.#o.onPooledChildReady?.(name, child.link));
      },
      retire: (child) => {
        this.#links.delete(child.link);
        this.#states.forget(child.link);
        const done = child.supervisor.close().catch(() => undefined);
        this.#closing.add(done);
        void done.finally(() => this.#closing.delete(done));
      },
    });
    upstream.pool = pool;
    return pool;
  }

  #connect(
    upstream: Upstream,
    link: LinkId,
    session: SessionKey | undefined,
    initializeParams: JsonObject | undefined,
    pooled = false,
  ): Connection {
    const o = this.#o;
    this.#links.set(
      link,
      session === undefined
        ? pooled
          ? { upstream: upstream.config.name, pooled }
          : { upstream: upstream.config.name }
        : { upstream: upstream.config.name, session },
    );
    let settle: { resolve(r: InitializeResult): void; reject(e: unknown): void } = {
      resolve() {},
      reject() {},
    };
    const ready = new Promise<InitializeResult>((resolve, reject) => {
      settle = { resolve, reject };
    });
    // A rejection nobody awaits yet must not crash the process.
    ready.catch(() => undefined);
    this.#states.starting(link);
    const params: JsonObject = initializeParams ?? {
      protocolVersion: LATEST_LEGACY_REVISION,
      capabilities: GATEWAY_CLIENT_CAPABILITIES,
      clientInfo: { name: 'switchboard', title: 'Switchboard MCP gateway', version: o.gatewayVersion },
    };
    const connection: Connection = {
      link,
      ready,
      supervisor: o.makeLink({
        config: upstream.config,
        link,
        host: o.router,
        initialize: async (restart) => {
          const reply = await o.router.requestUpstream(link, 'initialize', params, {
            bypassQueue: true,
            ...(session ? { traceSession: session } : {}),
          });
          if ('error' in reply.response) {
            throw new SwitchboardError(
              SbErrorCode.UpstreamProtocol,
              `upstream ${upstream.config.name} refused initialize: ${reply.response.error.message}`,
            );
          }
          const result = (reply.response.result ?? {}) as InitializeResult;
          o.router.notifyUpstream(link, 'notifications/initialized', undefined, {
            bypassQueue: true,
            ...(session ? { traceSession: session } : {}),
          });
          connection.result = result;
          upstream.known = result;
          // After the supervisor marks the link ready (it does so once this hook returns).
          if (pooled) setImmediate(() => o.onPooledChildReady?.(upstream.config.name, link));
          if (restart === 0) settle.resolve(result);
          else {
            o.logger.info({ upstream: upstream.config.name, restart }, 'upstream re-initialized');
            if (session === undefined && !pooled)
              setImmediate(() => o.onSharedRestart?.(upstream.config.name));
          }
        },
        onstop: (close) => {
          connection.stopped = `upstream ${upstream.config.name} stopped: ${close.reason}`;
          // A pooled child that stopped leaves the pool for good, and children are numbered anew:
          // its record would only grow the map.
          if (pooled) this.#states.forget(link);
          else this.#states.stopped(link, close.reason);
          settle.reject(
            gatewayError(SbErrorCode.UpstreamUnavailable, connection.stopped, {
              upstream: upstream.config.name,
            }),
          );
          this.#links.delete(link);
          upstream.pool?.childStopped(connection);
        },
      }),
    };
    connection.supervisor.start().catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error);
      connection.stopped = `upstream ${upstream.config.name} could not start: ${reason}`;
      if (pooled) this.#states.forget(link);
      else this.#states.stopped(link, `could not start: ${reason}`);
      o.logger.error({ upstream: upstream.config.name, err: reason }, 'upstream could not start');
      o.metrics.inc('upstream_start_failures_total', { upstream: upstream.config.name });
      upstream.pool?.childStopped(connection);
      settle.reject(
        gatewayError(SbErrorCode.UpstreamUnavailable, connection.stopped, { upstream: upstream.config.name }),
      );
    });
    return connection;
  }

  #withTimeout<T>(promise: Promise<T>, name: string): Promise<T> {
    const ms = this.#o.readyTimeoutMs ?? 30_000;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            rejection(
              gatewayError(
                SbErrorCode.UpstreamUnavailable,
                `upstream ${name} did not become ready within ${ms} ms`,
                { upstream: name },
              ),
            ),
          ),
        ms,
      );
      timer.unref();
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}
