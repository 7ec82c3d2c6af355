/**
 * What each upstream link has been doing and since when, for `GET /ready`: the supervisors attach,
 * ready and close their links through a `LinkHost`, and `observe` hands them one that notes each of
 * those calls here before passing it on to the router unchanged. It observes and never steers: the
 * router's own state stays the authority for routing; this only adds what the router does not keep
 * (when a state began, why the last connection closed, how many restarts).
 */
import type { LinkId } from '../../core/correlation-table.js';
import type { LinkHost } from '../../core/ports.js';

/** A link's state as readiness tells them apart (the router's `starting` is split in two). */
export type LinkPhase = 'starting' | 'ready' | 'restarting' | 'down';

export interface LinkStateRecord {
  readonly phase: LinkPhase;
  /** When `phase` began, ms since the epoch. */
  readonly since: number;
  /** Why its last connection closed (or could not start), if one did. */
  readonly lastError?: string;
  /** Connections attached after the first (restarts that got as far as a transport). */
  readonly restarts: number;
}

export class LinkStates {
  readonly #links = new Map<LinkId, LinkStateRecord>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** `host` with each link call noted here first. */
  observe(host: LinkHost): LinkHost {
    return {
      addLink: (params) => {
        this.#attached(params.id);
        host.addLink(params);
      },
      setLinkReady: (id) => {
        this.#ready(id);
        host.setLinkReady(id);
      },
      linkClosed: (id, close, options) => {
        this.#closed(id, close.reason, options?.restarting === true);
        host.linkClosed(id, close, options);
      },
    };
  }

  /** A link's record, if it was ever started. */
  get(id: LinkId): LinkStateRecord | undefined {
    return this.#links.get(id);
  }

  /** A link that will not come back (it could not start, or was stopped): `down`, with why. */
  stopped(id: LinkId, reason: string): void {
    const known = this.#links.get(id);
    if (known?.phase === 'down') return;
    this.#links.set(id, {
      phase: 'down',
      since: this.#now(),
      lastError: reason,
      restarts: known?.restarts ?? 0,
    });
  }

  /** Forgets a link no longer relevant (a per-session connection whose session ended, a retired child). */
  forget(id: LinkId): void {
    this.#links.delete(id);
  }

  /** Registers a link about to start, so that it reads `starting` before its transport is up. */
  starting(id: LinkId): void {
    if (!this.#links.has(id)) this.#links.set(id, { phase: 'starting', since: this.#now(), restarts: 0 });
  }

  #attached(id: LinkId): void {
    const known = this.#links.get(id);
    // A link attached again after a close is a restart: it stays `restarting` until it is ready.
    if (known?.phase === 'restarting') this.#links.set(id, { ...known, restarts: known.restarts + 1 });
    else if (known === undefined) this.#links.set(id, { phase: 'starting', since: this.#now(), restarts: 0 });
  }

  #ready(id: LinkId): void {
    const known = this.#links.get(id);
    // As the router: a link that is down stays down.
    if (known === undefined || known.phase === 'down' || known.phase === 'ready') return;
    this.#links.set(id, { ...known, phase: 'ready', since: this.#now() });
  }

  #closed(id: LinkId, reason: string, restarting: boolean): void {
    const known = this.#links.get(id);
    const phase: LinkPhase = restarting ? 'restarting' : 'down';
    // A failed restart closes a link that is already restarting: it keeps its `since`.
    const since = known?.phase === phase ? known.since : this.#now();
    this.#links.set(id, { phase, since, lastError: reason, restarts: known?.restarts ?? 0 });
  }
}
