/**
 * Who a space connection is. Credentials come as `Authorization: Bearer` on the WebSocket upgrade
 * or as the `token` of a MEW join frame, and are checked in this order:
 *
 * 1. a space-only token (`space.participants.<id>.tokens`, stored as sha256): the participant is
 *    `<id>`. Every configured hash is compared in constant time, as for `auth.tokens`;
 * 2. the gateway's own authentication (`auth.tokens`, `auth.jwt`) when configured: the participant
 *    is the principal, with its roles;
 * 3. nothing else: an unknown token is refused.
 *
 * Without credentials: refused when the gateway has authentication configured. Without it (the
 * gateway then listens on loopback only) a local participant picks its id in the join frame
 * (default `local`), except an id whose configuration entry has tokens: that one needs its token.
 * The id a join frame asks for must equal the id the credentials give; it is never overwritten.
 */

import type { AuthOutcome } from '../auth/auth-outcome.js';
import type { AuthRequest } from '../auth/authenticator.js';
import { readBearer } from '../auth/bearer.js';
import { hashToken, safeEqualHex } from '../auth/token-hash.js';
import type { SpaceParticipantConfig } from '../config/sections/space.js';
import { participantIdProblem } from './participant-id.js';
import { SpaceErrorCode } from './space-error-codes.js';

/** An authenticated participant. */
export interface SpaceIdentity {
  readonly id: string;
  readonly roles: readonly string[];
  /** How it was established: a space token, the gateway's authentication, or local trust. */
  readonly via: 'space-token' | 'gateway-auth' | 'local';
}

export type SpaceAuthResult =
  | { readonly ok: true; readonly identity: SpaceIdentity }
  | {
      readonly ok: false;
      readonly code: typeof SpaceErrorCode.Unauthorized;
      readonly message: string;
      /** What an HTTP upgrade is answered with (401, or 403 for a refused participant id). */
      readonly status: 401 | 403;
      readonly headers?: Record<string, string>;
    };

/** The gateway's request authenticator (`createAuthenticator`), or undefined without `auth`. */
export type GatewayAuthenticate = (req: AuthRequest) => AuthOutcome | Promise<AuthOutcome>;

export interface SpaceAuthOptions {
  readonly gateway: GatewayAuthenticate | undefined;
  readonly participants: readonly SpaceParticipantConfig[];
}

const CHALLENGE = { 'WWW-Authenticate': 'Bearer realm="switchboard"' };

function refuse(message: string, status: 401 | 403 = 401): SpaceAuthResult {
  return { ok: false, code: SpaceErrorCode.Unauthorized, message, status, headers: CHALLENGE };
}

export class SpaceAuthenticator {
  readonly #o: SpaceAuthOptions;
  readonly #tokens: readonly { readonly sha256: string; readonly participant: SpaceParticipantConfig }[];
  readonly #protected: ReadonlySet<string>;

  constructor(options: SpaceAuthOptions) {
    this.#o = options;
    this.#tokens = options.participants.flatMap((p) =>
      p.tokens.map((t) => ({ sha256: t.sha256, participant: p })),
    );
    this.#protected = new Set(options.participants.filter((p) => p.tokens.length > 0).map((p) => p.id));
  }

  /** Whether credentials are required (the gateway has authentication configured). */
  get required(): boolean {
    return this.#o.gateway !== undefined;
  }

  /** Credentials on the upgrade request (its `Authorization` header is present). */
  async fromRequest(req: AuthRequest): Promise<SpaceAuthResult> {
    const bearer = readBearer(req.rawHeaders);
    if (bearer.kind === 'token') {
      const space = this.#spaceToken(bearer.token);
      if (space) return { ok: true, identity: space };
    }
    if (this.#o.gateway === undefined) {
      return refuse(
        bearer.kind === 'token'
          ? 'Unauthorized: the bearer token is not one of the space tokens'
          : 'Unauthorized: send Authorization: Bearer <token>',
      );
    }
    const outcome = await this.#o.gateway(req);
    if (!outcome.ok)
      return {
        ok: false,
        code: SpaceErrorCode.Unauthorized,
        message: outcome.message,
        status: 401,
        ...(outcome.headers ? { headers: outcome.headers } : {}),
      };
    const problem = participantIdProblem(outcome.principal);
    if (problem !== undefined) return refuse(`Forbidden: principal cannot join the space: ${problem}`, 403);
    return {
      ok: true,
      identity: this.#withConfiguredRoles({
        id: outcome.principal,
        roles: outcome.roles ?? [],
        via: 'gateway-auth',
      }),
    };
  }

  /** Credentials of a join frame (`token`, `participantId`); `url` is the upgrade's URL. */
  async fromJoin(
    join: { readonly token?: string; readonly participantId?: string },
    url?: string,
  ): Promise<SpaceAuthResult> {
    let result: SpaceAuthResult;
    if (join.token !== undefined) {
      result = await this.fromRequest({ rawHeaders: ['Authorization', `Bearer ${join.token}`], url });
    } else if (this.#o.gateway !== undefined) {
      return refuse('Unauthorized: this space needs a token (the join frame has none)');
    } else {
      const id = join.participantId ?? 'local';
      const problem = participantIdProblem(id);
      if (problem !== undefined) return refuse(`Forbidden: ${problem}`, 403);
      if (this.#protected.has(id))
        return refuse(`Unauthorized: participant ${id} has space tokens configured; join with one`);
      return { ok: true, identity: this.#withConfiguredRoles({ id, roles: [], via: 'local' }) };
    }
    if (result.ok && join.participantId !== undefined && join.participantId !== result.identity.id) {
      return refuse(
        `Forbidden: the token is participant ${result.identity.id}, not ${join.participantId.slice(0, 64)} (the id is never overwritten)`,
        403,
      );
    }
    return result;
  }

  #spaceToken(token: string): SpaceIdentity | undefined {
    if (this.#tokens.length === 0) return undefined;
    const sha256 = hashToken(token);
    let found: SpaceParticipantConfig | undefined;
    // Compare with every hash, without stopping at a match: the time says nothing about which.
    for (const entry of this.#tokens)
      if (safeEqualHex(sha256, entry.sha256) && !found) found = entry.participant;
    return found ? { id: found.id, roles: found.roles, via: 'space-token' } : undefined;
  }

  #withConfiguredRoles(identity: SpaceIdentity): SpaceIdentity {
    const configured = this.#o.participants.find((p) => p.id === identity.id);
    if (!configured || configured.roles.length === 0) return identity;
    return { ...identity, roles: [...new Set([...identity.roles, ...configured.roles])] };
  }
}
