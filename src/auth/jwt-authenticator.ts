/**
 * JWT bearer tokens (`auth.jwt`): a signature by a key of the configured JWKS, the issuer, one of
 * the audiences (MCP requires servers to check that a token was meant for them), `exp` (required)
 * and `nbf` within the clock tolerance, and only asymmetric algorithms, so neither `alg: none` nor
 * an HMAC "signed" with a public key can pass. The principal and roles come from claims.
 *
 * Keys come from an `https://` JWKS URL, fetched by jose (cached for 10 minutes, refetched at most
 * every 30 seconds when a token names an unknown `kid`, 5 second timeout), or from a JWKS file, read
 * once at start (a bad file stops the gateway) and again every minute so rotated keys are picked
 * up; a later unreadable or invalid file keeps the previous keys and logs a warning.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import type { JwtConfig } from '../config/types.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { type Logger, silentLogger } from '../observe/logger.js';

/**
 * The signature algorithms accepted: asymmetric only. A symmetric algorithm (HS256...) would let
 * anyone holding the public key forge tokens if it were ever used as a secret; `none` is no
 * signature at all.
 */
export const ASYMMETRIC_ALGORITHMS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** How often a JWKS file is read again by default (60 seconds). */
export const DEFAULT_JWKS_FILE_RELOAD_MS = 60_000;

/** The longest principal name taken from a token (characters). */
export const MAX_PRINCIPAL_LENGTH = 256;

/** Why a JWT was refused; also the `reason` label of `auth_failures_total`. */
export type JwtFailureReason =
  | 'malformed'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'bad_signature'
  | 'unknown_key'
  | 'alg_not_allowed'
  | 'invalid_claims'
  | 'jwks_unavailable';

/** The outcome of checking one JWT. `problem` is for the client; `detail` only for the log. */
export type JwtResult =
  | { readonly ok: true; readonly principal: string; readonly roles: readonly string[] }
  | {
      readonly ok: false;
      readonly reason: JwtFailureReason;
      readonly problem: string;
      readonly detail?: string;
    };

/** Knobs for tests and special deployments; the defaults suit production. */
export interface JwtAuthenticatorOptions {
  readonly logger?: Logger;
  /** How often a JWKS file is read again; default {@link DEFAULT_JWKS_FILE_RELOAD_MS}. */
  readonly fileReloadIntervalMs?: number;
  /** jose's remote JWKS settings: cache age (10 min), cooldown (30 s), fetch timeout (5 s). */
  readonly remote?: {
    readonly cacheMaxAgeMs?: number;
    readonly cooldownMs?: number;
    readonly timeoutMs?: number;
  };
}

/** Where the keys come from. */
export type JwksSource =
  | { readonly kind: 'url'; readonly url: URL }
  | { readonly kind: 'file'; readonly path: string };

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * Whether a bearer token has the shape of a JWT (compact JWS: three base64url parts, the last may
 * be empty as in `alg: none`), and so is checked as a JWT when JWT validation is configured.
 */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/**
 * Reads `auth.jwt.jwks`: an `https://` URL; an `http://` URL only on loopback (a local identity
 * provider, tests), since keys fetched in clear could be swapped by anyone on the path; a `file:`
 * URL or a path. The configuration resolves a relative path against its own file's directory
 * (config/sections/auth.ts), so a validated one is absolute; a relative path given here directly
 * is taken as is (the working directory). Throws `SB_CONFIG_INVALID` for other URLs.
 */
export function jwksSource(jwks: string): JwksSource {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(jwks)) return { kind: 'file', path: jwks };
  let url: URL;
  try {
    url = new URL(jwks);
  } catch (cause) {
    throw new SwitchboardError(SbErrorCode.ConfigInvalid, `auth.jwt.jwks: ${jwks} is not a valid URL`, {
      cause,
    });
  }
  if (url.protocol === 'file:') return { kind: 'file', path: fileURLToPath(url) };
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    return { kind: 'url', url };
  }
  throw new SwitchboardError(
    SbErrorCode.ConfigInvalid,
    `auth.jwt.jwks: ${url.protocol}//${url.host} is refused; signing keys are fetched over https:// only ` +
      '(http:// is allowed for localhost), or read from a file',
  );
}

/** A key set from JSON text; throws when it is not a JWKS. */
function parseJwks(text: string): { resolver: JWTVerifyGetKey; keys: number } {
  const parsed = JSON.parse(text) as JSONWebKeySet;
  const resolver = createLocalJWKSet(parsed);
  return { resolver, keys: parsed.keys.length };
}

function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
}

/** A usable principal name: a non-empty string without control characters, not too long. */
function principalOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > MAX_PRINCIPAL_LENGTH) return undefined;
  for (let i = 0; i < value.length; i++) if (isControl(value.charCodeAt(i))) return undefined;
  return value;
}

/** Roles from a claim: absent → none; a space-separated string; a list of strings. Else undefined. */
function rolesOf(value: unknown): readonly string[] | undefined {
  if (value === undefined) return [];
  if (typeof value === 'string') return value.split(/\s+/).filter((r) => r !== '');
  if (Array.isArray(value) && value.every((r): r is string => typeof r === 'string')) {
    return value.filter((r) => r !== '');
  }
  return undefined;
}

type Failure = Extract<JwtResult, { ok: false }>;

/** Maps jose's errors to reasons. Anything that is not about the token is about getting the keys. */
function classify(error: unknown): Failure {
  const detail = error instanceof Error ? error.message : String(error);
  const fail = (reason: JwtFailureReason, problem: string): Failure => ({
    ok: false,
    reason,
    problem,
    detail,
  });
  if (error instanceof errors.JWTExpired) return fail('expired', 'the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case 'iss':
        return fail('wrong_issuer', 'the token was issued by an issuer this gateway does not accept');
      case 'aud':
        return fail('wrong_audience', 'the token is not meant for this gateway (audience)');
      case 'nbf':
        return fail('not_yet_valid', 'the token is not valid yet');
      default:
        return fail(
          'invalid_claims',
          `the token's "${error.claim}" claim is ${error.reason === 'missing' ? 'missing' : 'invalid'}`,
        );
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return fail('alg_not_allowed', 'the token is not signed with an accepted asymmetric algorithm');
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return fail('bad_signature', 'the token signature does not verify');
  }
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) {
    return fail('unknown_key', 'the token is not signed by a known key');
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return fail('malformed', 'the token is not a well-formed JWT');
  }
  return fail('jwks_unavailable', 'the signing keys are unavailable; try again later');
}

/**
 * Validates JWTs against the configured JWKS. `close()` stops the file reload timer (idempotent);
 * `refresh()` rereads the file or refetches the URL now (for a SIGHUP handler, and tests).
 */
export class JwtAuthenticator {
  readonly #config: JwtConfig;
  readonly #logger: Logger;
  readonly #source: JwksSource;
  readonly #keys: JWTVerifyGetKey;
  #file: { text: string; resolver: JWTVerifyGetKey } | undefined;
  #remote: ReturnType<typeof createRemoteJWKSet> | undefined;
  #timer: NodeJS.Timeout | undefined;

  /** Throws `SB_CONFIG_INVALID` for an unusable configuration or an unreadable or invalid JWKS file. */
  constructor(config: JwtConfig, options: JwtAuthenticatorOptions = {}) {
    if (config.issuer === '') {
      throw new SwitchboardError(SbErrorCode.ConfigInvalid, 'auth.jwt.issuer: an issuer is required');
    }
    if (config.audience.length === 0 || config.audience.some((a) => a === '')) {
      throw new SwitchboardError(
        SbErrorCode.ConfigInvalid,
        'auth.jwt.audience: at least one non-empty audience is required (tokens meant for other services must be refused)',
      );
    }
    this.#config = config;
    this.#logger = options.logger ?? silentLogger;
    this.#source = jwksSource(config.jwks);
    if (this.#source.kind === 'file') {
      const path = this.#source.path;
      let text: string;
      let parsed: ReturnType<typeof parseJwks>;
      try {
        text = readFileSync(path, 'utf8');
        parsed = parseJwks(text);
      } catch (cause) {
        throw new SwitchboardError(
          SbErrorCode.ConfigInvalid,
          `auth.jwt.jwks: cannot use ${path} as a JWKS: ${cause instanceof Error ? cause.message : String(cause)}`,
          { cause },
        );
      }
      this.#file = { text, resolver: parsed.resolver };
      if (parsed.keys === 0)
        this.#logger.warn({ jwks: path }, 'the JWKS file holds no keys: every JWT fails');
      const every = options.fileReloadIntervalMs ?? DEFAULT_JWKS_FILE_RELOAD_MS;
      this.#timer = setInterval(() => void this.refresh(), every);
      this.#timer.unref();
      this.#keys = (header, token) => {
        const file = this.#file;
        if (file === undefined) throw new errors.JWKSNoMatchingKey();
        return file.resolver(header, token);
      };
    } else {
      const href = this.#source.url.href;
      const remote = createRemoteJWKSet(this.#source.url, {
        ...(options.remote?.cacheMaxAgeMs === undefined ? {} : { cacheMaxAge: options.remote.cacheMaxAgeMs }),
        ...(options.remote?.cooldownMs === undefined ? {} : { cooldownDuration: options.remote.cooldownMs }),
        ...(options.remote?.timeoutMs === undefined ? {} : { timeoutDuration: options.remote.timeoutMs }),
      });
      this.#remote = remote;
      this.#keys = remote;
      // Fetch once now so a wrong URL shows in the log at start, not at the first client.
      remote.reload().catch((error: unknown) => {
        this.#logger.warn(
          { jwks: href, error: String(error) },
          'cannot fetch the JWKS yet; JWTs fail until it can be fetched',
        );
      });
    }
  }

  /** Checks one JWT. Never throws: every failure is a {@link JwtResult} with a reason. */
  async verify(token: string): Promise<JwtResult> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#keys, {
        issuer: this.#config.issuer,
        audience: [...this.#config.audience],
        algorithms: [...ASYMMETRIC_ALGORITHMS],
        clockTolerance: this.#config.clockToleranceMs / 1000,
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      return classify(error);
    }
    const claim = this.#config.principalClaim;
    const principal = principalOf(payload[claim]);
    if (principal === undefined) {
      return {
        ok: false,
        reason: 'invalid_claims',
        problem: `the token's "${claim}" claim is not a principal name (a non-empty string)`,
      };
    }
    const rolesClaim = this.#config.rolesClaim;
    const roles = rolesClaim === undefined ? [] : rolesOf(payload[rolesClaim]);
    if (roles === undefined) {
      return {
        ok: false,
        reason: 'invalid_claims',
        problem: `the token's "${rolesClaim}" claim is neither a list of strings nor a space-separated string`,
      };
    }
    return { ok: true, principal, roles };
  }

  /**
   * Rereads the JWKS file (keeping the previous keys, with a warning, when the new content is
   * unreadable or not a JWKS) or refetches the JWKS URL. Never rejects.
   */
  async refresh(): Promise<void> {
    if (this.#remote !== undefined) {
      await this.#remote.reload().catch((error: unknown) => {
        this.#logger.warn({ error: String(error) }, 'cannot refetch the JWKS; keeping the previous keys');
      });
      return;
    }
    if (this.#source.kind !== 'file') return;
    const path = this.#source.path;
    try {
      const text = await readFile(path, 'utf8');
      if (text === this.#file?.text) return;
      const parsed = parseJwks(text);
      this.#file = { text, resolver: parsed.resolver };
      this.#logger.info({ jwks: path, keys: parsed.keys }, 'reloaded the JWKS file');
    } catch (error) {
      this.#logger.warn(
        { jwks: path, error: error instanceof Error ? error.message : String(error) },
        'cannot reload the JWKS file; keeping the previous keys',
      );
    }
  }

  /** Stops rereading the JWKS file. Idempotent. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
