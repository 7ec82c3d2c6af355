/**
 * Capabilities granted at runtime (`capability/grant`, MEUP ADR-g7r): each grant is known by the
 * id of the grant envelope (its `grant_id`), belongs to one recipient and holds a list of
 * capabilities; `capability/revoke` removes a grant by id, or removes given capabilities from
 * every grant of the recipient. Grants live as long as the gateway process; they are not persisted.
 */

import { type CompiledCapability, compileCapability } from './capability-matcher.js';
import { type CapabilityPattern, canonicalCapability } from './capability-pattern.js';

export interface Grant {
  /** The grant envelope's id: the `grant_id` a revoke names and the id a grant-ack correlates to. */
  readonly id: string;
  readonly recipient: string;
  readonly granter: string;
  capabilities: readonly CapabilityPattern[];
  compiled: readonly CompiledCapability[];
  acknowledged: boolean;
}

export class GrantBook {
  readonly #byId = new Map<string, Grant>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  get size(): number {
    return this.#byId.size;
  }

  get full(): boolean {
    return this.#byId.size >= this.#max;
  }

  has(id: string): boolean {
    return this.#byId.has(id);
  }

  get(id: string): Grant | undefined {
    return this.#byId.get(id);
  }

  add(params: {
    readonly id: string;
    readonly recipient: string;
    readonly granter: string;
    readonly capabilities: readonly CapabilityPattern[];
  }): Grant {
    const grant: Grant = {
      ...params,
      compiled: params.capabilities.map(compileCapability),
      acknowledged: false,
    };
    this.#byId.set(grant.id, grant);
    return grant;
  }

  /** The grants a participant holds, oldest first. */
  of(recipient: string): Grant[] {
    return [...this.#byId.values()].filter((g) => g.recipient === recipient);
  }

  /** Whether `recipient` holds any grant. */
  holds(recipient: string): boolean {
    for (const grant of this.#byId.values()) if (grant.recipient === recipient) return true;
    return false;
  }

  /** Removes grant `id` of `recipient`; false when the recipient holds no such grant. */
  revoke(recipient: string, id: string): boolean {
    const grant = this.#byId.get(id);
    if (!grant || grant.recipient !== recipient) return false;
    this.#byId.delete(id);
    return true;
  }

  /**
   * Removes each of `capabilities` (compared in canonical form) from every grant of `recipient`;
   * a grant left empty goes. Returns how many capabilities were removed.
   */
  revokeCapabilities(recipient: string, capabilities: readonly CapabilityPattern[]): number {
    const remove = new Set(capabilities.map(canonicalCapability));
    let removed = 0;
    for (const grant of this.of(recipient)) {
      const kept = grant.capabilities.filter((c) => !remove.has(canonicalCapability(c)));
      removed += grant.capabilities.length - kept.length;
      if (kept.length === 0) this.#byId.delete(grant.id);
      else if (kept.length !== grant.capabilities.length) {
        grant.capabilities = kept;
        grant.compiled = kept.map(compileCapability);
      }
    }
    return removed;
  }
}
