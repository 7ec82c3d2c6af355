/**
 * A stdio upstream under supervision: each start spawns the child process and attaches it to the
 * router as a link; when it exits, the router fails what was in flight at once and, when restarts
 * are enabled, a new child is started after a backoff, (re)initialized by the owner's hook, and
 * only then marked ready so that queued client traffic flows again. The supervision itself is the
 * shared `LinkSupervisor`.
 */
import type { LinkId } from '../../core/correlation-table.js';
import type { LinkHost, UpstreamClose } from '../../core/ports.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import type { BackoffOptions } from '../backoff.js';
import { LinkSupervisor } from '../link-supervisor.js';
import { type ChildProcessOptions, ChildProcessTransport } from './child-process-transport.js';

/** What to run, where to attach it, and how to restart it. */
export interface SupervisedUpstreamOptions {
  /** Where each child is attached as the link (the router, or an observer of it). */
  readonly router: LinkHost;
  /** The link's id, the same across restarts. */
  readonly link: LinkId;
  /** The child to run each time (logger and metrics are the ones below). */
  readonly child: Omit<ChildProcessOptions, 'logger' | 'metrics'>;
  /** Where the supervision and the children log. */
  readonly logger: Logger;
  /** Where restarts and the children's counters go. */
  readonly metrics: Metrics;
  /** Whether a child that exits is started again. */
  readonly restart: boolean;
  /** The delays between restarts; `DEFAULT_BACKOFF` when left out. */
  readonly backoff?: BackoffOptions;
  /**
   * Restarts in a row before giving up (Infinity by default). The count starts over once a child has
   * stayed up for the backoff's `stableMs`, so a server that crashes now and then is never abandoned.
   */
  readonly maxRestarts?: number;
  /**
   * Runs after each start, before the link is ready (bypassing the queue). `restart` is 0 for the
   * first start. Throwing counts as a failed start.
   */
  readonly initialize: (restart: number) => Promise<void>;
  /** The child is gone for good (no restart, or restarts exhausted, or `close()` was called). */
  readonly onstop: (close: UpstreamClose) => void;
}

/** One stdio upstream link kept alive by a `LinkSupervisor` (see the module comment). */
export class SupervisedUpstream {
  readonly #link: LinkSupervisor<ChildProcessTransport>;

  /** A supervisor for `options`; nothing is spawned until `start()`. */
  constructor(options: SupervisedUpstreamOptions) {
    this.#link = new LinkSupervisor<ChildProcessTransport>({
      router: options.router,
      link: options.link,
      name: options.child.name,
      logger: options.logger,
      metrics: options.metrics,
      create: () =>
        new ChildProcessTransport({ ...options.child, logger: options.logger, metrics: options.metrics }),
      transportContext: (transport) => transport.transportContext,
      describe: (transport) => ({ pid: transport.pid }),
      restart: options.restart,
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
      initialize: options.initialize,
      onstop: options.onstop,
    });
  }

  /** The process id of the child the supervisor holds now; undefined when it holds none. */
  get pid(): number | undefined {
    return this.#link.transport?.pid;
  }

  /** How many restarts were attempted since `start()` (never reset, unlike the give-up count). */
  get restarts(): number {
    return this.#link.restarts;
  }

  /** Starts the first child; rejects if it cannot be spawned or initialized (no restart then). */
  start(): Promise<void> {
    return this.#link.start();
  }

  /** Stops supervising and shuts the child down with the MCP sequence. */
  close(): Promise<void> {
    return this.#link.close();
  }
}
