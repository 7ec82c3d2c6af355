/**
 * What each upstream link has been doing and since when: the one record of link states, which
 * `GET /ready` reports (`UpstreamManager.status`) and the `switchboard_upstream_state` gauge of
 * `/metrics` reads through it, so the two never disagree. It is a `CallObserver` of the router's
 * link changes alone (`linkChanged`: attached, ready, restarting, down), so it turns no
 * per-request observation on (`Observations.watchesLinks`), and it is registered whether metrics
 * are on or not. It observes and never steers: the router's own state stays the authority for
 * routing; this only adds what the router does not keep (when a state began, why the last
 * connection closed, how many restarts). The owner of the links adds what the router cannot see:
 * a link about to start (`starting`), one that stopped for good or never started (`stopped`), one
 * no longer relevant (`forget`).
 */
import type { LinkId } from '../../core/correlation-table.js';
import type { CallObserver, LinkChange, LinkPhase, ObservedLink } from '../../core/observations.js';

export type { LinkPhase };

export interface LinkStateRecord {
  readonly phase: LinkPhase;
  /** When `phase` began, ms since the epoch. */
  readonly since: number;
  /** Why its last connection closed (or could not start), if one did. */
  readonly lastError?: string;
  /** Connections attached after the first (restarts that got as far as a transport). */
  readonly restarts: number;
}

export class LinkStates implements CallObserver {
  readonly name = 'link-states';
  readonly #links = new Map<LinkId, LinkStateRecord>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * A link's new state, as the router reports it: `starting` when a connection is attached (again,
   * after a restart), `ready` once its handshake is done, `restarting` or `down` when it closes.
   */
  linkChanged(link: ObservedLink, change: LinkChange): void {
    switch (change.phase) {
      case 'starting':
        this.#attached(link.link);
        return;
      case 'ready':
        this.#ready(link.link);
        return;
      case 'restarting':
      case 'down':
        this.#closed(link.link, change.reason ?? 'closed', change.phase === 'restarting');
        return;
    }
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
    // A link attached ready (no handshake to wait for) is ready from the start.
    if (known === undefined) {
      this.#links.set(id, { phase: 'ready', since: this.#now(), restarts: 0 });
      return;
    }
    // As the router: a link that is down stays down.
    if (known.phase === 'down' || known.phase === 'ready') return;
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
