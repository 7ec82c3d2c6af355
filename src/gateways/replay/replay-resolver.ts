/**
 * Routing for the replay server over HTTP: every client session gets its own replay of the tape
 * (its own link, a `TapeUpstream`), so two clients, or a client that reconnects, each find the
 * whole tape; a 2026-07-28 client, which has no session of its own, shares the one router session
 * the endpoint keeps per principal. Everything goes to the session's link, `initialize` included.
 */
import type { LinkId, SessionKey } from '../../core/correlation-table.js';
import type { SessionView } from '../../core/ports.js';
import type { RequestResolver, Resolution } from '../../core/router.js';
import { SbErrorCode } from '../../errors/switchboard-error.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';

export class ReplayResolver implements RequestResolver {
  readonly #links = new Map<SessionKey, LinkId>();
  readonly #sessions = new Map<LinkId, SessionKey>();

  /** Session `key` is served by link `link` from now on. */
  bind(key: SessionKey, link: LinkId): void {
    this.#links.set(key, link);
    this.#sessions.set(link, key);
  }

  /** Forgets session `key`; returns its link, to be closed. */
  unbind(key: SessionKey): LinkId | undefined {
    const link = this.#links.get(key);
    this.#links.delete(key);
    if (link !== undefined) this.#sessions.delete(link);
    return link;
  }

  resolve(session: SessionView): Resolution {
    const link = this.#links.get(session.key);
    if (link === undefined)
      return {
        kind: 'error',
        error: gatewayError(SbErrorCode.RouteUnresolved, 'no replay for this session'),
      };
    return { kind: 'forward', link };
  }

  notificationLinks(session: SessionView): readonly LinkId[] {
    const link = this.#links.get(session.key);
    return link === undefined ? [] : [link];
  }

  sessionsFor(link: LinkId): readonly SessionKey[] {
    const key = this.#sessions.get(link);
    return key === undefined ? [] : [key];
  }

  notificationTargets(link: LinkId): readonly SessionKey[] {
    return this.sessionsFor(link);
  }
}
