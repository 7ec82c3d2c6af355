/**
 * Routing for one client in front of one upstream (the stdio gateway): everything goes through,
 * `initialize` included, so the client and the server negotiate with each other as if the gateway
 * were not there.
 */
import type { LinkId, SessionKey } from './correlation-table.js';
import type { RequestResolver, Resolution } from './router.js';

export class PassthroughResolver implements RequestResolver {
  readonly #link: LinkId;
  readonly #session: SessionKey;

  constructor(link: LinkId, session: SessionKey) {
    this.#link = link;
    this.#session = session;
  }

  resolve(): Resolution {
    return { kind: 'forward', link: this.#link };
  }

  notificationLinks(): readonly LinkId[] {
    return [this.#link];
  }

  sessionsFor(): readonly SessionKey[] {
    return [this.#session];
  }

  notificationTargets(): readonly SessionKey[] {
    return [this.#session];
  }
}
