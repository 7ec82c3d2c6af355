/**
 * Routing for one client in front of one upstream (the stdio gateway): everything goes through,
 * `initialize` included, so the client and the server negotiate with each other as if the gateway
 * were not there.
 */
import type { LinkId, SessionKey } from './correlation-table.js';
import type { RequestResolver, Resolution } from './router.js';

/** Sends everything of the one session to the one link, and everything of the link to the session. */
export class PassthroughResolver implements RequestResolver {
  readonly #link: LinkId;
  readonly #session: SessionKey;

  /** A resolver between `session` (the only client) and `link` (the only upstream). */
  constructor(link: LinkId, session: SessionKey) {
    this.#link = link;
    this.#session = session;
  }

  /** Every client request is forwarded to the link, `initialize` included, as the client wrote it. */
  resolve(): Resolution {
    return { kind: 'forward', link: this.#link };
  }

  /** Every client notification goes to the link. */
  notificationLinks(): readonly LinkId[] {
    return [this.#link];
  }

  /** Every server request belongs to the session. */
  sessionsFor(): readonly SessionKey[] {
    return [this.#session];
  }

  /** Every server notification goes to the session. */
  notificationTargets(): readonly SessionKey[] {
    return [this.#session];
  }
}
