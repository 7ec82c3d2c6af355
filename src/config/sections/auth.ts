/**
 * The `auth` section: bearer tokens (stored as sha256 hashes, never plain) mapped to principals and
 * roles, and optionally JWT validation against a JWKS. Absent: no authentication (the gateway then
 * serves loopback only, as the principal `local`). Present but empty is an error, not "no
 * authentication": whoever writes `auth:` means to authenticate.
 */
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Checker, type ConfigPath, describeValue, entriesOf } from '../checker.js';
import type { AuthConfig, JwtConfig, TokenCredential } from '../types.js';

export const AUTH_KEYS = ['tokens', 'jwt'] as const;
export const TOKEN_KEYS = ['principal', 'sha256', 'roles'] as const;
export const JWT_KEYS = [
  'jwks',
  'issuer',
  'audience',
  'principalClaim',
  'rolesClaim',
  'clockTolerance',
] as const;
const SHA256_HEX = /^[0-9a-f]{64}$/i;
const SHA256_EXPECTED = 'the sha256 of the token, 64 hex digits (switchboard auth token prints it)';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/;
const NAME_EXPECTED = 'a name of letters, digits and . _ @ : - (at most 128 characters)';
const TOKEN_EXPECTED =
  'a map with principal, sha256 and roles (sha256 is the hash of the token, never the token)';
const JWKS_EXPECTED =
  'a JWKS URL (https://..., or http:// on localhost), a file: URL, or the path of a file holding a JWKS (relative to the configuration file)';
const AUDIENCE_EXPECTED = 'the expected "aud" of tokens: a non-empty string or a list of them';
/** `scheme://`: what the JWT authenticator reads as a URL rather than as a file path. */
const URL_WITH_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function name(c: Checker, value: unknown, path: ConfigPath): string | undefined {
  const text = c.text(value, path, NAME_EXPECTED);
  if (text !== undefined && !NAME.test(text)) {
    c.issue(path, describeValue(text), NAME_EXPECTED);
    return undefined;
  }
  return text;
}

/** A string that is not empty or blank. */
function nonEmpty(c: Checker, value: unknown, path: ConfigPath, expected: string): string | undefined {
  const text = c.text(value, path, expected);
  if (text !== undefined && text.trim() === '') {
    c.issue(path, describeValue(text), expected);
    return undefined;
  }
  return text;
}

/** The hosts the JWT authenticator fetches keys from over plain http:// (keep in step with it). */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/**
 * `jwt.jwks`: a URL the authenticator accepts, or a file path, a relative one resolved against the
 * configuration file's directory (the file beside the configuration, wherever the gateway runs).
 */
function readJwks(c: Checker, j: Map<string, unknown>, jp: ConfigPath): string {
  const path = [...jp, 'jwks'];
  const before = c.errors.length;
  const text = c.requiredText(j, jp, 'jwks', JWKS_EXPECTED);
  if (c.errors.length > before) return text;
  if (!URL_WITH_AUTHORITY.test(text)) {
    if (isAbsolute(text)) return text;
    if (SCHEME.test(text)) {
      // `https:host/x`, `file:x`, `localhost:8080/x`: a URL missing its `//`, not a file name.
      c.issue(
        path,
        describeValue(text),
        `${JWKS_EXPECTED}; a URL has // after the scheme, and a file name containing ":" needs ./ before it`,
      );
      return text;
    }
    return resolve(c.options.baseDir, text);
  }
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined) {
    c.issue(path, describeValue(text), JWKS_EXPECTED);
  } else if (url.username !== '' || url.password !== '') {
    c.issue(path, 'a URL with user:password@ (value not shown)', `${JWKS_EXPECTED}, without credentials`);
  } else if (url.protocol === 'file:') {
    try {
      fileURLToPath(url);
    } catch {
      c.issue(path, describeValue(text), `${JWKS_EXPECTED}; a file: URL is file:///absolute/path`);
    }
  } else if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    c.issue(
      path,
      describeValue(text),
      `${JWKS_EXPECTED}: keys fetched over http:// from another machine could be swapped on the way`,
    );
  } else if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    c.issue(path, describeValue(text), JWKS_EXPECTED);
  }
  return text;
}

function readJwt(c: Checker, raw: unknown): JwtConfig | undefined {
  const jp = ['auth', 'jwt'];
  const j = c.section(raw, jp, JWT_KEYS);
  if (raw !== null && entriesOf(raw) === undefined) return undefined;
  const jwks = readJwks(c, j, jp);
  const issuer = c.requiredText(j, jp, 'issuer', 'the expected "iss" of tokens');
  let audience: string[] = [];
  const audRaw = j.get('audience');
  const ap = [...jp, 'audience'];
  if (audRaw === undefined) c.issue(ap, 'nothing', AUDIENCE_EXPECTED, 'key');
  else if (Array.isArray(audRaw)) {
    // Without an audience any token of the issuer would do, even one meant for another service.
    if (audRaw.length === 0) c.issue(ap, 'an empty list', AUDIENCE_EXPECTED);
    audience = [...c.list<string>(j, jp, 'audience', [], (v, at) => nonEmpty(c, v, at, AUDIENCE_EXPECTED))];
  } else {
    const one = nonEmpty(c, audRaw, ap, AUDIENCE_EXPECTED);
    if (one !== undefined) audience = [one];
  }
  const claim = (key: string) =>
    j.get(key) === undefined ? undefined : nonEmpty(c, j.get(key), [...jp, key], 'the name of a claim');
  const principalClaim = claim('principalClaim') ?? 'sub';
  const rolesClaim = claim('rolesClaim');
  const clockToleranceMs = c.duration(j, jp, 'clockTolerance', 30_000, true);
  return {
    jwks,
    issuer,
    audience,
    principalClaim,
    clockToleranceMs,
    ...(rolesClaim === undefined ? {} : { rolesClaim }),
  };
}

function readToken(
  c: Checker,
  value: unknown,
  path: ConfigPath,
  seen: Map<string, number>,
): TokenCredential | undefined {
  if (entriesOf(value) === undefined) {
    // Never echo a string here: it is most likely a token pasted where its hash belongs.
    const found =
      typeof value === 'string' ? `a string of ${value.length} characters (not shown)` : describeValue(value);
    c.issue(path, found, TOKEN_EXPECTED);
    return undefined;
  }
  const t = c.section(value, path, TOKEN_KEYS, TOKEN_EXPECTED);
  const principalRaw = t.get('principal');
  let principal = '';
  if (principalRaw === undefined)
    c.issue([...path, 'principal'], 'nothing', `who the token is: ${NAME_EXPECTED}`, 'key');
  else principal = name(c, principalRaw, [...path, 'principal']) ?? '';
  const sha = t.get('sha256');
  const sp = [...path, 'sha256'];
  let sha256 = '';
  if (sha === undefined) c.issue(sp, 'nothing', SHA256_EXPECTED, 'key');
  else {
    const text = c.text(sha, sp, SHA256_EXPECTED);
    if (text !== undefined && !SHA256_HEX.test(text)) {
      // Never echo what is there: it may be a token pasted by mistake.
      c.issue(
        sp,
        `a value of ${text.length} characters that is not 64 hex digits`,
        `${SHA256_EXPECTED}, never the token itself`,
      );
    } else if (text !== undefined) sha256 = text.toLowerCase();
  }
  if (sha256 !== '') {
    const index = path[path.length - 1] as number;
    const before = seen.get(sha256);
    if (before !== undefined)
      c.issue(sp, `the same hash as tokens[${before}]`, 'a different token for every entry');
    else seen.set(sha256, index);
  }
  const roles = c.list<string>(t, path, 'roles', [], (v, rp) => name(c, v, rp));
  return { principal, sha256, roles };
}

export function readAuth(c: Checker, raw: unknown): AuthConfig | undefined {
  if (raw === undefined) return undefined;
  const p = ['auth'];
  const f = c.section(raw, p, AUTH_KEYS);
  // Not a map (reported): still "configured", so that nothing else complains about its absence.
  if (raw !== null && entriesOf(raw) === undefined) return { tokens: [] };
  const seen = new Map<string, number>();
  const tokens = c.list<TokenCredential>(f, p, 'tokens', [], (value, path) =>
    readToken(c, value, path, seen),
  );
  const jwt = f.has('jwt') ? readJwt(c, f.get('jwt')) : undefined;
  const tokensRaw = f.get('tokens');
  if ((tokensRaw === undefined || (Array.isArray(tokensRaw) && tokensRaw.length === 0)) && !f.has('jwt')) {
    c.issue(
      p,
      raw === null
        ? 'an empty section'
        : tokensRaw === undefined
          ? 'neither tokens nor jwt'
          : 'an empty list of tokens and no jwt',
      'at least one way to authenticate: tokens, jwt, or both (remove the section for no authentication)',
    );
  }
  return jwt === undefined ? { tokens } : { tokens, jwt };
}
