/**
 * The `Authenticate` function of `switchboard serve`: who is calling, for every MCP HTTP request
 * (sessions are never authentication: each request carries its credentials). Without an `auth`
 * section everyone is `local` (the configuration then allows loopback only); with one, a bearer
 * token is required: opaque tokens are checked against `auth.tokens`, JWT-shaped tokens against
 * `auth.jwt` when configured. The principal becomes the ledger's `client_id` and owns MCP sessions.
 *
 * Answers follow RFC 6750 §3: no credentials (or another scheme) gets a plain challenge, unusable
 * requests `error="invalid_request"`, bad tokens `error="invalid_token"`; all with status 401 (403
 * is left to policy). Tokens are never logged, only the first 8 hex digits of their SHA-256, which
 * is enough to tell tokens apart in the log and useless to an attacker.
 */
import type { AuthConfig } from '../config/types.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { AuthOutcome } from './auth-outcome.js';
import { type BearerResult, readBearer } from './bearer.js';
import {
  JwtAuthenticator,
  type JwtAuthenticatorOptions,
  type JwtFailureReason,
  looksLikeJwt,
} from './jwt-authenticator.js';
import { type HexComparer, TokenAuthenticator } from './token-authenticator.js';
import { hashToken } from './token-hash.js';

/** The realm of every `WWW-Authenticate` challenge. */
export const AUTH_REALM = 'switchboard';

/** The principal of every caller when no authentication is configured. */
export const LOCAL_PRINCIPAL = 'local';

/** Why a request was refused: the `reason` label of `auth_failures_total`. */
export type AuthFailureReason =
  | 'missing'
  | 'query_token'
  | 'unsupported_scheme'
  | 'malformed'
  | 'unknown_token'
  | 'error'
  | JwtFailureReason;

/** What the authenticator reads of a request (an `IncomingMessage` has all of it). */
export interface AuthRequest {
  readonly rawHeaders: readonly string[];
  readonly url?: string | undefined;
  readonly socket?: { readonly remoteAddress?: string | undefined } | undefined;
}

/** An `Authenticate` (see mcp-http-server.ts) that also owns resources: `close()` releases them. */
export type Authenticator = ((req: AuthRequest) => AuthOutcome | Promise<AuthOutcome>) & {
  /** Stops background work (the JWKS file reload timer). Idempotent. */
  close(): void;
};

/** What the authenticator needs from the gateway, plus knobs for tests. */
export interface AuthenticatorDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** JWKS loading settings (reload interval of a file, remote cache); defaults suit production. */
  readonly jwt?: Omit<JwtAuthenticatorOptions, 'logger'>;
  /** The hash comparison of opaque tokens (tests observe it); default constant-time. */
  readonly compare?: HexComparer;
}

const LOCAL: AuthOutcome = Object.freeze({ ok: true, principal: LOCAL_PRINCIPAL, roles: Object.freeze([]) });
const HOW = 'send Authorization: Bearer <token>';

/** An RFC 6750 `error_description`: printable ASCII without `"` and `\`. */
function description(text: string): string {
  return text.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?');
}

function challenge(error?: 'invalid_request' | 'invalid_token', problem?: string): Record<string, string> {
  let value = `Bearer realm="${AUTH_REALM}"`;
  if (error !== undefined) value += `, error="${error}"`;
  if (problem !== undefined) value += `, error_description="${description(problem)}"`;
  return { 'WWW-Authenticate': value };
}

/** Whether the query string carries a token (RFC 6750 §2.3), which this gateway never accepts. */
function hasQueryToken(url: string | undefined): boolean {
  if (url === undefined) return false;
  const q = url.indexOf('?');
  if (q < 0) return false;
  return new URLSearchParams(url.slice(q + 1)).has('access_token');
}

interface Refusal {
  readonly reason: AuthFailureReason;
  readonly message: string;
  readonly headers: Record<string, string>;
}

/** The refusal for a request whose headers hold no usable bearer token. */
function refuseHeader(bearer: Exclude<BearerResult, { kind: 'token' }>): Refusal {
  switch (bearer.kind) {
    case 'missing':
      return {
        reason: 'missing',
        message: `Unauthorized: the request has no Authorization header; ${HOW}`,
        headers: challenge(),
      };
    case 'other-scheme':
      return {
        reason: 'unsupported_scheme',
        message: `Unauthorized: the ${bearer.scheme} authorization scheme is not accepted; ${HOW}`,
        headers: challenge(),
      };
    case 'malformed':
      return {
        reason: 'malformed',
        message: `Unauthorized: ${bearer.problem}; ${HOW}`,
        headers: challenge('invalid_request', bearer.problem),
      };
  }
}

/**
 * Builds the authenticator of `switchboard serve` from the validated `auth` section.
 *
 * - `auth` undefined: every request is `{ ok: true, principal: 'local', roles: [] }`, synchronously
 *   (nothing is counted: there is nothing to authenticate).
 * - otherwise: `Authorization: Bearer <token>` is required; the outcome carries the principal and
 *   roles of the matching `auth.tokens` entry or of the JWT's claims, or a 401 with a JSON-RPC
 *   message and a `WWW-Authenticate` challenge. Counts `auth_successes_total` and
 *   `auth_failures_total{reason}`. The returned function never rejects.
 *
 * Throws `SB_CONFIG_INVALID` at once when the JWT settings cannot be used (a plain-http JWKS URL
 * off loopback, an unreadable or invalid JWKS file).
 */
export function createAuthenticator(auth: AuthConfig | undefined, deps: AuthenticatorDeps): Authenticator {
  if (auth === undefined) return Object.assign(() => LOCAL, { close() {} });
  const { logger, metrics } = deps;
  const tokens = new TokenAuthenticator(auth.tokens, deps.compare ? { compare: deps.compare } : {});
  const jwt = auth.jwt === undefined ? undefined : new JwtAuthenticator(auth.jwt, { ...deps.jwt, logger });
  logger.info(
    { tokens: tokens.size, jwks: auth.jwt?.jwks, issuer: auth.jwt?.issuer },
    'authentication required: bearer tokens' + (jwt ? ' and JWTs' : ''),
  );

  const refuse = (refusal: Refusal, req: AuthRequest, fields: Record<string, unknown> = {}): AuthOutcome => {
    metrics.inc('auth_failures_total', { reason: refusal.reason });
    const level =
      refusal.reason === 'missing' ? 'debug' : refusal.reason === 'jwks_unavailable' ? 'warn' : 'info';
    logger[level](
      { reason: refusal.reason, remoteAddress: req.socket?.remoteAddress, ...fields },
      'authentication failed',
    );
    return { ok: false, status: 401, message: refusal.message, headers: refusal.headers };
  };

  const authenticate = async (req: AuthRequest): Promise<AuthOutcome> => {
    try {
      if (hasQueryToken(req.url)) {
        const problem = 'tokens in the URL query string are not accepted';
        return refuse(
          {
            reason: 'query_token',
            message: `Unauthorized: ${problem}; ${HOW}`,
            headers: challenge('invalid_request', problem),
          },
          req,
        );
      }
      const bearer = readBearer(req.rawHeaders);
      if (bearer.kind !== 'token') return refuse(refuseHeader(bearer), req);
      const sha256 = hashToken(bearer.token);
      const tokenHashPrefix = sha256.slice(0, 8);
      let method: 'jwt' | 'token';
      let identity: { readonly principal: string; readonly roles: readonly string[] };
      if (jwt !== undefined && looksLikeJwt(bearer.token)) {
        method = 'jwt';
        const result = await jwt.verify(bearer.token);
        if (!result.ok) {
          const refusal = {
            reason: result.reason,
            message: `Unauthorized: ${result.problem}`,
            headers: challenge('invalid_token', result.problem),
          };
          return refuse(refusal, req, { method, tokenHashPrefix, detail: result.detail });
        }
        identity = result;
      } else {
        method = 'token';
        const found = tokens.verifyHash(sha256);
        if (found === undefined) {
          const problem = 'the bearer token is not valid';
          const refusal = {
            reason: 'unknown_token' as const,
            message: `Unauthorized: ${problem}`,
            headers: challenge('invalid_token', problem),
          };
          return refuse(refusal, req, { method, tokenHashPrefix });
        }
        identity = found;
      }
      metrics.inc('auth_successes_total');
      logger.debug({ principal: identity.principal, method, tokenHashPrefix }, 'authenticated');
      return { ok: true, principal: identity.principal, roles: identity.roles };
    } catch (error) {
      // Not expected (every step above reports failures as values); refuse rather than let through.
      logger.error({ error: error instanceof Error ? error.message : String(error) }, 'authentication error');
      const problem = 'the credentials could not be checked';
      return refuse(
        {
          reason: 'error',
          message: `Unauthorized: ${problem}`,
          headers: challenge('invalid_token', problem),
        },
        req,
      );
    }
  };
  return Object.assign(authenticate, { close: () => jwt?.close() });
}
