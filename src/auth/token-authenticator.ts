/**
 * Opaque bearer tokens from the configuration (`auth.tokens`): the presented token is hashed and
 * its hash compared with every configured hash, in constant time and without stopping at the first
 * match, so neither the position of the matching entry nor how many digits a guess shares with a
 * configured hash shows in the response time. (Hashing first already makes timing useless to an
 * attacker, who controls the preimage and not the hash; the constant-time scan keeps it that way
 * whatever the comparison is later changed to.)
 */
import type { TokenCredential } from '../config/types.js';
import { hashToken, safeEqualHex } from './token-hash.js';

/** Who a token belongs to. */
export interface TokenIdentity {
  readonly principal: string;
  readonly roles: readonly string[];
}

/** Compares two hex hashes; injectable so tests can observe that every configured hash is touched. */
export type HexComparer = (a: string, b: string) => boolean;

/**
 * Checks opaque tokens against the configured hashes. Holds no tokens, only their hashes. The
 * configuration guarantees lower-case hashes and no duplicates (`config/sections/auth.ts`); should
 * two entries share a hash anyway, the first one wins, still after comparing all of them.
 */
export class TokenAuthenticator {
  readonly #tokens: readonly TokenCredential[];
  readonly #compare: HexComparer;

  constructor(tokens: readonly TokenCredential[], options: { readonly compare?: HexComparer } = {}) {
    this.#tokens = tokens.map((t) => ({ principal: t.principal, sha256: t.sha256, roles: [...t.roles] }));
    this.#compare = options.compare ?? safeEqualHex;
  }

  /** How many tokens are configured. */
  get size(): number {
    return this.#tokens.length;
  }

  /**
   * The identity of `token`, or undefined when no configured hash matches. Always compares the
   * token's hash with every configured hash (no early exit).
   */
  verify(token: string): TokenIdentity | undefined {
    return this.verifyHash(hashToken(token));
  }

  /** {@link verify} for a token already hashed with `hashToken` (the caller logs a prefix of it). */
  verifyHash(sha256: string): TokenIdentity | undefined {
    let match: TokenCredential | undefined;
    for (const credential of this.#tokens) {
      const equal = this.#compare(sha256, credential.sha256);
      // Both operands are evaluated on every iteration: the loop never ends early.
      match = equal && match === undefined ? credential : match;
    }
    return match === undefined ? undefined : { principal: match.principal, roles: match.roles };
  }
}
