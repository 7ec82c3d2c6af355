/**
 * Each upstream's state, from its links' changes (`CallObserver.linkChanged`): `ready` when one of
 * its connections is ready, else `starting` or `restarting` when one is on its way, else `down`
 * for a shared upstream whose connection is gone for good and `idle` for a per-session or pooled
 * upstream with no connection (it starts one when a session needs it).
 */
import type { CallObserver, LinkChange, LinkPhase, ObservedLink } from '../../core/observations.js';

export type UpstreamState = 'ready' | 'starting' | 'restarting' | 'down' | 'idle';

export const UPSTREAM_STATES: readonly UpstreamState[] = ['ready', 'starting', 'restarting', 'down', 'idle'];

const RANK: Readonly<Record<Exclude<LinkPhase, 'down'>, number>> = { ready: 0, starting: 1, restarting: 2 };

export class UpstreamStates implements CallObserver {
  readonly name = 'prometheus-upstreams';
  /** The live links (not down) of each upstream, and their phase. */
  readonly #links = new Map<string, Map<string, Exclude<LinkPhase, 'down'>>>();
  /** Upstreams a link of which went down for good. */
  readonly #wentDown = new Set<string>();

  linkChanged(link: ObservedLink, change: LinkChange): void {
    let links = this.#links.get(link.upstream);
    if (links === undefined) {
      links = new Map();
      this.#links.set(link.upstream, links);
    }
    if (change.phase === 'down') {
      links.delete(link.link);
      this.#wentDown.add(link.upstream);
    } else links.set(link.link, change.phase);
  }

  /** The state of `upstream`, given how it is shared (`shared`, `per-session`, `pooled`). */
  state(upstream: string, sharing: string): UpstreamState {
    let best: Exclude<LinkPhase, 'down'> | undefined;
    for (const phase of this.#links.get(upstream)?.values() ?? []) {
      if (best === undefined || RANK[phase] < RANK[best]) best = phase;
    }
    if (best !== undefined) return best;
    if (sharing !== 'shared') return 'idle';
    return this.#wentDown.has(upstream) ? 'down' : 'starting';
  }
}
