/**
 * An HTTP upstream under supervision, the counterpart of the stdio `SupervisedUpstream`: when the
 * upstream session ends (404 to a request carrying the session id, a 2024-11-05 stream that ends),
 * the router fails what was in flight, and a new transport is created after a backoff, initialized
 * by the owner's hook (which replays the `initialize`), and only then marked ready.
 *
 * Two things carry over from one transport to the next:
 * - the wire protocol learned on the first connection (Streamable HTTP, or the 2024-11-05 fallback),
 *   so a reconnection does not probe again; an attempt that fails forgets it, and the next probes;
 * - the keep-alive connections (one undici `Pool` for the supervisor's lifetime).
 */
import type { Dispatcher, Pool } from 'undici';
import type { LinkId } from '../../../core/correlation-table.js';
import type { LinkHost, UpstreamClose } from '../../../core/ports.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import type { BackoffOptions } from '../../backoff.js';
import { LinkSupervisor } from '../../link-supervisor.js';
import type { UpstreamEra } from './era-probe.js';
import type { HttpUpstreamKind } from './era-transport.js';
import { createUpstreamPool } from './http-connection.js';
import { HttpUpstreamTransport, type HttpUpstreamTransportOptions } from './http-upstream.js';

/** The upstream, the router link, the restart policy and the owner's hooks. */
export interface SupervisedHttpUpstreamOptions {
  readonly router: LinkHost;
  readonly link: LinkId;
  /** The upstream: URL, headers, limits, and which protocol (`auto` by default). */
  readonly http: Omit<HttpUpstreamTransportOptions, 'logger' | 'metrics'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Reconnect (with a new session) when the session ends; without it the link goes down. */
  readonly restart: boolean;
  readonly backoff?: BackoffOptions;
  /** Reconnections in a row before giving up (Infinity by default; see `LinkSupervisorOptions`). */
  readonly maxRestarts?: number;
  /** Runs after each connection, before the link is ready: sends `initialize` (bypassing the queue). */
  readonly initialize: (restart: number) => Promise<void>;
  /** The link is gone for good. */
  readonly onstop: (close: UpstreamClose) => void;
}

/** One HTTP upstream kept connected and initialized (see the file comment). */
export class SupervisedHttpUpstream {
  readonly #link: LinkSupervisor<HttpUpstreamTransport>;
  readonly #pool: Pool | undefined;
  /** The protocol the upstream spoke last time; consumed by each attempt, set again when it works. */
  #kind: HttpUpstreamKind | undefined;

  constructor(options: SupervisedHttpUpstreamOptions) {
    const url = typeof options.http.url === 'string' ? new URL(options.http.url) : options.http.url;
    this.#pool = options.http.dispatcher ? undefined : createUpstreamPool(url, options.http.maxConnections);
    const dispatcher: Dispatcher = options.http.dispatcher ?? (this.#pool as Pool);
    this.#link = new LinkSupervisor<HttpUpstreamTransport>({
      router: options.router,
      link: options.link,
      name: options.http.name,
      logger: options.logger,
      metrics: options.metrics,
      restart: options.restart,
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
      create: () => {
        const kind = this.#kind;
        this.#kind = undefined;
        return new HttpUpstreamTransport({
          ...options.http,
          url,
          dispatcher,
          logger: options.logger,
          metrics: options.metrics,
          transport: kind ?? options.http.transport ?? 'auto',
        });
      },
      transportContext: (transport) => transport.transportContext,
      initialize: options.initialize,
      onready: (transport) => {
        this.#kind = transport.kind;
      },
      onstop: options.onstop,
    });
  }

  /** The current transport. */
  get transport(): HttpUpstreamTransport | undefined {
    return this.#link.transport;
  }

  /** The protocol the upstream speaks, once a connection was initialized. */
  get kind(): HttpUpstreamKind | undefined {
    return this.#link.transport?.kind;
  }

  /** The upstream's protocol era, once connected (`SupervisedLink.era`). */
  get era(): UpstreamEra | undefined {
    switch (this.kind) {
      case undefined:
        return undefined;
      case 'modern-http':
        return 'modern';
      case 'dual-http':
        return 'dual';
      default:
        return 'legacy';
    }
  }

  get restarts(): number {
    return this.#link.restarts;
  }

  /** Connects and initializes; rejects if the first attempt fails (no retry then). */
  async start(): Promise<void> {
    try {
      await this.#link.start();
    } catch (error) {
      await this.#pool?.destroy().catch(() => {});
      throw error;
    }
  }

  /** Stops supervising, ends the session (DELETE) and closes the connections. */
  async close(): Promise<void> {
    await this.#link.close();
    await this.#pool?.destroy().catch(() => {});
  }
}
