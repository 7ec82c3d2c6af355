/**
 * Supervision of one upstream link, whatever carries it: a transport is created, started, attached
 * to the router as a link in state `starting`, initialized by the owner's hook, and only then marked
 * ready so that queued client traffic flows. When the transport closes (a child exits, an HTTP
 * session expires, a 2024-11-05 stream ends) the router fails what was in flight at once and, when
 * restarts are enabled, a new transport is created after a backoff and goes through the same steps.
 *
 * Both upstream kinds use it: `stdio/supervised-upstream.ts` (a child process per start) and
 * `http/upstream/supervised-http-upstream.ts` (a new upstream session per start).
 */
import type { LinkId } from '../core/correlation-table.js';
import type { LinkHost, UpstreamClose, UpstreamTransport } from '../core/ports.js';
import type { TransportContext } from '../envelope/message-context.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { Backoff, type BackoffOptions, DEFAULT_BACKOFF } from './backoff.js';

/** What to supervise and how: the transport factory, the router link, the restart policy, the hooks. */
export interface LinkSupervisorOptions<T extends UpstreamTransport> {
  readonly router: LinkHost;
  readonly link: LinkId;
  /** The upstream's name in the router, logs and metrics. */
  readonly name: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Builds a fresh transport for each start; `restart` is 0 for the first. */
  readonly create: (restart: number) => T;
  /** The link's transport context, read once the transport has started. */
  readonly transportContext: (transport: T) => TransportContext;
  readonly restart: boolean;
  readonly backoff?: BackoffOptions;
  /**
   * Restarts in a row before giving up (Infinity by default). The count starts over once a
   * transport has stayed up for the backoff's `stableMs` (as the stdio supervisor counts).
   */
  readonly maxRestarts?: number;
  /**
   * Runs after each start, before the link is ready (requests must bypass the queue). `restart` is
   * 0 for the first start. Throwing counts as a failed start.
   */
  readonly initialize: (restart: number) => Promise<void>;
  /** Extra log fields describing a started transport (e.g. a child's pid). */
  readonly describe?: (transport: T) => Record<string, unknown>;
  /** The transport is initialized and the link ready (e.g. to remember what it negotiated). */
  readonly onready?: (transport: T, restart: number) => void;
  /** The link is gone for good (no restart, restarts exhausted, or `close()` was called). */
  readonly onstop: (close: UpstreamClose) => void;
}

/** Supervises one upstream link (see the file comment). */
export class LinkSupervisor<T extends UpstreamTransport> {
  readonly #o: LinkSupervisorOptions<T>;
  readonly #backoff: Backoff;
  #transport: T | undefined;
  #restarts = 0;
  /** Restarts since the last transport that stayed up for `stableMs`. */
  #streak = 0;
  #startedAt = 0;
  #stopping = false;
  #timer: NodeJS.Timeout | undefined;
  /** Transports whose close was already handled: a close schedules at most one restart. */
  readonly #handled = new WeakSet<T>();

  constructor(options: LinkSupervisorOptions<T>) {
    this.#o = options;
    this.#backoff = new Backoff(options.backoff ?? DEFAULT_BACKOFF);
  }

  /** The current transport (the last one created). */
  get transport(): T | undefined {
    return this.#transport;
  }

  get restarts(): number {
    return this.#restarts;
  }

  /** Starts and initializes the first transport; rejects if that fails (no restart then). */
  async start(): Promise<void> {
    try {
      await this.#attempt(0);
    } catch (error) {
      this.#stopping = true;
      if (this.#timer) clearTimeout(this.#timer);
      await this.#transport?.close();
      throw error;
    }
  }

  /** Stops supervising and closes the transport (its close is reported through `onstop`). */
  async close(): Promise<void> {
    this.#stopping = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#transport?.close();
  }

  async #attempt(restart: number): Promise<void> {
    const o = this.#o;
    const transport = o.create(restart);
    this.#transport = transport;
    transport.onclose = (close) => this.#closed(transport, close);
    transport.onerror = (error) =>
      o.logger.warn({ upstream: o.name, err: error.message }, 'upstream transport error');
    await transport.start();
    this.#startedAt = performance.now();
    o.router.addLink({
      id: o.link,
      name: o.name,
      transport,
      transportContext: o.transportContext(transport),
      state: 'starting',
    });
    o.logger.info(
      { upstream: o.name, restart, ...o.describe?.(transport) },
      restart === 0 ? 'upstream started' : 'upstream restarted',
    );
    await o.initialize(restart);
    o.router.setLinkReady(o.link);
    o.onready?.(transport, restart);
  }

  #closed(transport: T, close: UpstreamClose): void {
    const o = this.#o;
    if (transport !== this.#transport || this.#handled.has(transport)) return;
    this.#handled.add(transport);
    const uptime = performance.now() - this.#startedAt;
    if (uptime >= (o.backoff ?? DEFAULT_BACKOFF).stableMs) this.#streak = 0;
    const willRestart =
      o.restart && !this.#stopping && this.#streak < (o.maxRestarts ?? Number.POSITIVE_INFINITY);
    o.metrics.inc('upstream_exits_total', { upstream: o.name });
    o.router.linkClosed(o.link, close, { restarting: willRestart });
    if (!willRestart) {
      if (!this.#stopping) o.logger.warn({ upstream: o.name, reason: close.reason }, 'upstream closed');
      o.onstop(close);
      return;
    }
    const delay = this.#backoff.next(uptime);
    o.logger.warn(
      { upstream: o.name, reason: close.reason, restartInMs: delay },
      'upstream closed; reconnecting',
    );
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#restarts++;
      this.#streak++;
      o.metrics.inc('upstream_restarts_total', { upstream: o.name });
      this.#attempt(this.#restarts).catch((error: unknown) => {
        o.logger.error({ upstream: o.name, err: String(error) }, 'upstream restart failed');
        const failed = this.#transport;
        if (!failed) return;
        // Counted as a close of that transport (which schedules the next attempt); closing it too
        // releases what it holds, and its own close report is then ignored.
        this.#closed(failed, {
          reason: `restart failed: ${error instanceof Error ? error.message : String(error)}`,
        });
        void failed.close();
      });
    }, delay);
  }
}
