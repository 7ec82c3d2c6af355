import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  type CryptoKey,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { JwtConfig } from '../config/types.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { MemoryLogger } from '../observe/logger.js';
import {
  JwtAuthenticator,
  type JwtAuthenticatorOptions,
  type JwtResult,
  jwksSource,
  looksLikeJwt,
} from './jwt-authenticator.js';

// jose's JWKS resolvers never hand out a symmetric key, so restricting the algorithms is defence in
// depth that no token can show; a wrapper around jwtVerify lets a test check what is asked of jose.
vi.mock('jose', async (importOriginal) => {
  const actual = await importOriginal<typeof import('jose')>();
  return { ...actual, jwtVerify: vi.fn(actual.jwtVerify) };
});

const ISSUER = 'https://idp.example';
const AUDIENCE = 'https://switchboard.example/mcp';

interface TestKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  readonly jwk: JWK;
}

async function makeKey(kid: string, alg: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, jwk };
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = (): number => Math.floor(Date.now() / 1000);

interface SignOptions {
  readonly key: TestKey;
  readonly kid?: string;
  readonly iss?: string;
  readonly aud?: string | string[];
  readonly exp?: number | null;
  readonly nbf?: number;
}

/** A JWT for `claims` (sub alice by default), valid for an hour unless told otherwise. */
async function sign(claims: JWTPayload, o: SignOptions): Promise<string> {
  const jwt = new SignJWT({ sub: 'alice', ...claims })
    .setProtectedHeader({ alg: o.key.alg, kid: o.kid ?? o.key.kid, typ: 'JWT' })
    .setIssuer(o.iss ?? ISSUER)
    .setAudience(o.aud ?? AUDIENCE)
    .setIssuedAt();
  if (o.exp !== null) jwt.setExpirationTime(o.exp ?? now() + 3600);
  if (o.nbf !== undefined) jwt.setNotBefore(o.nbf);
  return jwt.sign(o.key.privateKey);
}

/** A JWKS server on 127.0.0.1 whose key set and status the test changes; counts fetches. */
class JwksServer {
  keys: JWK[] = [];
  status = 200;
  fetches = 0;
  readonly #server: Server = createServer((_req, res) => {
    this.fetches++;
    res.writeHead(this.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: this.keys }));
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/.well-known/jwks.json`;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

let es: TestKey;
let rs: TestKey;
let ed: TestKey;
let other: TestKey;
const server = new JwksServer();
let jwksUrl: string;
const dir = mkdtempSync(join(tmpdir(), 'sb-jwt-'));
const opened: JwtAuthenticator[] = [];

beforeAll(async () => {
  [es, rs, ed, other] = await Promise.all([
    makeKey('es-1', 'ES256'),
    makeKey('rs-1', 'RS256'),
    makeKey('ed-1', 'Ed25519'),
    makeKey('es-1', 'ES256'), // same kid as `es`, another key: a forger's
  ]);
  jwksUrl = await server.start();
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  for (const a of opened.splice(0)) a.close();
  server.status = 200;
});

function config(overrides: Partial<JwtConfig> = {}): JwtConfig {
  return {
    jwks: jwksUrl,
    issuer: ISSUER,
    audience: [AUDIENCE],
    principalClaim: 'sub',
    clockToleranceMs: 30_000,
    ...overrides,
  };
}

function open(c: JwtConfig, options: JwtAuthenticatorOptions = {}): JwtAuthenticator {
  const a = new JwtAuthenticator(c, options);
  opened.push(a);
  return a;
}

const failure = (reason: string) => expect.objectContaining({ ok: false, reason });

describe('JwtAuthenticator with a JWKS URL', () => {
  it('accepts tokens signed by a key of the set, with ES256, RS256 and Ed25519', async () => {
    server.keys = [es.jwk, rs.jwk, ed.jwk];
    const auth = open(config());
    for (const key of [es, rs, ed]) {
      expect(await auth.verify(await sign({}, { key }))).toEqual({ ok: true, principal: 'alice', roles: [] });
    }
  });

  it('fetches the keys once and caches them', async () => {
    server.keys = [es.jwk];
    const before = server.fetches;
    const auth = open(config());
    for (let i = 0; i < 5; i++) expect((await auth.verify(await sign({}, { key: es }))).ok).toBe(true);
    expect(server.fetches - before).toBe(1);
  });

  it('checks the issuer', async () => {
    server.keys = [es.jwk];
    const auth = open(config());
    expect(await auth.verify(await sign({}, { key: es, iss: 'https://evil.example' }))).toEqual(
      failure('wrong_issuer'),
    );
  });

  it('checks the audience: one of the configured audiences must be in aud', async () => {
    server.keys = [es.jwk];
    const auth = open(config({ audience: [AUDIENCE, 'switchboard'] }));
    expect(await auth.verify(await sign({}, { key: es, aud: 'https://other-service.example' }))).toEqual(
      failure('wrong_audience'),
    );
    expect((await auth.verify(await sign({}, { key: es, aud: ['x', 'switchboard'] }))).ok).toBe(true);
    expect((await auth.verify(await sign({}, { key: es, aud: AUDIENCE }))).ok).toBe(true);
  });

  it('refuses expired tokens and tokens without exp, allowing the clock tolerance', async () => {
    server.keys = [es.jwk];
    const auth = open(config({ clockToleranceMs: 30_000 }));
    expect(await auth.verify(await sign({}, { key: es, exp: now() - 60 }))).toEqual(failure('expired'));
    expect((await auth.verify(await sign({}, { key: es, exp: now() - 10 }))).ok).toBe(true);
    expect(await auth.verify(await sign({}, { key: es, exp: null }))).toMatchObject({
      ok: false,
      reason: 'invalid_claims',
      problem: 'the token\'s "exp" claim is missing',
    });
  });

  it('refuses tokens that are not valid yet, allowing the clock tolerance', async () => {
    server.keys = [es.jwk];
    const auth = open(config({ clockToleranceMs: 30_000 }));
    expect(await auth.verify(await sign({}, { key: es, nbf: now() + 120 }))).toEqual(
      failure('not_yet_valid'),
    );
    expect((await auth.verify(await sign({}, { key: es, nbf: now() + 10 }))).ok).toBe(true);
  });

  it('refuses a token signed by another key under a known kid, and one with an unknown kid', async () => {
    server.keys = [es.jwk];
    const auth = open(config());
    expect(await auth.verify(await sign({}, { key: other }))).toEqual(failure('bad_signature'));
    expect(await auth.verify(await sign({}, { key: other, kid: 'nobody' }))).toEqual(failure('unknown_key'));
  });

  it('refuses alg none, with or without a signature part', async () => {
    server.keys = [es.jwk];
    const auth = open(config());
    const claims = { sub: 'mallory', iss: ISSUER, aud: AUDIENCE, exp: now() + 3600 };
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
    expect(looksLikeJwt(unsigned)).toBe(true);
    expect(await auth.verify(unsigned)).toEqual(failure('alg_not_allowed'));
    const withKid = `${b64({ alg: 'none', kid: es.kid })}.${b64(claims)}.c2ln`;
    expect(await auth.verify(withKid)).toEqual(failure('alg_not_allowed'));
  });

  it('refuses HS256 tokens "signed" with the public key as the HMAC secret', async () => {
    server.keys = [es.jwk, rs.jwk];
    const auth = open(config());
    for (const key of [es, rs]) {
      for (const secret of [await exportSPKI(key.publicKey), JSON.stringify(key.jwk)]) {
        const forged = await new SignJWT({ sub: 'mallory' })
          .setProtectedHeader({ alg: 'HS256', kid: key.kid })
          .setIssuer(ISSUER)
          .setAudience(AUDIENCE)
          .setExpirationTime('1h')
          .sign(new TextEncoder().encode(secret));
        expect(await auth.verify(forged)).toEqual(failure('alg_not_allowed'));
      }
    }
  });

  it('refuses HS256 even when the JWKS holds a symmetric key that would verify it', async () => {
    const secret = new TextEncoder().encode('a shared secret of at least 32 bytes!!');
    const oct: JWK = { kty: 'oct', k: Buffer.from(secret).toString('base64url'), kid: 'hs-1', alg: 'HS256' };
    server.keys = [es.jwk, oct];
    const auth = open(config());
    const token = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'HS256', kid: 'hs-1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('1h')
      .sign(secret);
    expect(await auth.verify(token)).toEqual(failure('alg_not_allowed'));
  });

  it('asks jose for asymmetric algorithms only', async () => {
    server.keys = [es.jwk];
    const auth = open(config());
    vi.mocked(jwtVerify).mockClear();
    expect((await auth.verify(await sign({}, { key: es }))).ok).toBe(true);
    const algorithms = vi.mocked(jwtVerify).mock.calls[0]?.[2]?.algorithms ?? [];
    expect(algorithms).toEqual(expect.arrayContaining(['RS256', 'PS256', 'ES256', 'EdDSA', 'Ed25519']));
    expect(algorithms.filter((a) => /^(HS|none)/i.test(a))).toEqual([]);
  });

  it('refuses malformed JWTs', async () => {
    server.keys = [es.jwk];
    const auth = open(config());
    expect(await auth.verify('abc.def.ghi')).toEqual(failure('malformed'));
    const good = await sign({}, { key: es });
    const [h, , s] = good.split('.');
    expect(await auth.verify(`${h}.bm90LWpzb24.${s}`)).toEqual(expect.objectContaining({ ok: false }));
  });

  it('stops accepting a key removed from the JWKS once the keys are fetched again', async () => {
    server.keys = [es.jwk, rs.jwk];
    const auth = open(config());
    const token = await sign({}, { key: es });
    expect((await auth.verify(token)).ok).toBe(true);
    server.keys = [rs.jwk];
    await auth.refresh();
    expect(await auth.verify(token)).toEqual(failure('unknown_key'));
    expect((await auth.verify(await sign({}, { key: rs }))).ok).toBe(true);
  });

  it('drops a removed key by itself when the cache expires', async () => {
    server.keys = [es.jwk];
    const auth = open(config(), { remote: { cacheMaxAgeMs: 50 } });
    const token = await sign({}, { key: es });
    expect((await auth.verify(token)).ok).toBe(true);
    server.keys = [rs.jwk];
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(await auth.verify(token)).toEqual(failure('unknown_key'));
  });

  it('picks up a new key when a token names an unknown kid and the cooldown has passed', async () => {
    server.keys = [es.jwk];
    const auth = open(config(), { remote: { cooldownMs: 0 } });
    expect((await auth.verify(await sign({}, { key: es }))).ok).toBe(true);
    server.keys = [es.jwk, rs.jwk];
    expect((await auth.verify(await sign({}, { key: rs }))).ok).toBe(true);
  });

  it('reports unavailable keys (not a token problem) when the JWKS cannot be fetched', async () => {
    server.keys = [es.jwk];
    server.status = 500;
    const logger = new MemoryLogger();
    const auth = open(config(), { logger });
    const result = await auth.verify(await sign({}, { key: es }));
    expect(result).toEqual(failure('jwks_unavailable'));
    await vi.waitFor(() => expect(logger.entries.some((e) => e.level === 'warn')).toBe(true));
  });
});

describe('JwtAuthenticator claims', () => {
  it('takes the principal from principalClaim', async () => {
    server.keys = [es.jwk];
    const auth = open(config({ principalClaim: 'email' }));
    const ok = await auth.verify(await sign({ email: 'alice@example.com' }, { key: es }));
    expect(ok).toEqual({ ok: true, principal: 'alice@example.com', roles: [] });
  });

  it('refuses a missing, empty, non-string, over-long or control-character principal', async () => {
    server.keys = [es.jwk];
    const auth = open(config({ principalClaim: 'email' }));
    for (const email of [undefined, '', 42, ['alice'], 'a'.repeat(257), 'alice\u0000bob', 'alice\nbob']) {
      const result = await auth.verify(await sign(email === undefined ? {} : { email }, { key: es }));
      expect(result).toEqual(failure('invalid_claims'));
    }
  });

  it('reads roles from a list or a space-separated string; none without the claim', async () => {
    server.keys = [es.jwk];
    const auth = open(config({ rolesClaim: 'roles' }));
    const roles = async (value: unknown): Promise<JwtResult> =>
      auth.verify(await sign(value === undefined ? {} : { roles: value }, { key: es }));
    expect(await roles(['approver', 'ops'])).toMatchObject({ ok: true, roles: ['approver', 'ops'] });
    expect(await roles(' approver  ops ')).toMatchObject({ ok: true, roles: ['approver', 'ops'] });
    expect(await roles('')).toMatchObject({ ok: true, roles: [] });
    expect(await roles(undefined)).toMatchObject({ ok: true, roles: [] });
    expect(await roles(['approver', 7])).toEqual(failure('invalid_claims'));
    expect(await roles({ approver: true })).toEqual(failure('invalid_claims'));
  });

  it('ignores roles in tokens when no rolesClaim is configured', async () => {
    server.keys = [es.jwk];
    const auth = open(config());
    expect(await auth.verify(await sign({ roles: ['approver'] }, { key: es }))).toMatchObject({ roles: [] });
  });
});

describe('JwtAuthenticator with a JWKS file', () => {
  const file = join(dir, 'jwks.json');

  it('reads the file at start and validates tokens against it', async () => {
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }));
    const auth = open(config({ jwks: file }));
    expect((await auth.verify(await sign({}, { key: es }))).ok).toBe(true);
    expect(await auth.verify(await sign({}, { key: rs }))).toEqual(failure('unknown_key'));
  });

  it('accepts a file: URL', async () => {
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }));
    const auth = open(config({ jwks: pathToFileURL(file).href }));
    expect((await auth.verify(await sign({}, { key: es }))).ok).toBe(true);
  });

  it('refuses to start with a missing, non-JSON or non-JWKS file', () => {
    for (const content of [undefined, 'not json', '{"keys": "no"}', 'null']) {
      const path = join(dir, `bad-${Math.random()}.json`);
      if (content !== undefined) writeFileSync(path, content);
      let error: unknown;
      try {
        open(config({ jwks: path }));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SwitchboardError);
      expect((error as SwitchboardError).code).toBe(SbErrorCode.ConfigInvalid);
      expect((error as SwitchboardError).message).toContain(path);
    }
  });

  it('picks up rotated keys on refresh: a removed key stops working, a new one works', async () => {
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }));
    const logger = new MemoryLogger();
    const auth = open(config({ jwks: file }), { logger });
    const old = await sign({}, { key: es });
    expect((await auth.verify(old)).ok).toBe(true);
    writeFileSync(file, JSON.stringify({ keys: [rs.jwk] }));
    await auth.refresh();
    expect(await auth.verify(old)).toEqual(failure('unknown_key'));
    expect((await auth.verify(await sign({}, { key: rs }))).ok).toBe(true);
    expect(logger.entries.map((e) => e.message)).toContain('reloaded the JWKS file');
  });

  it('keeps the previous keys, with a warning, when the file becomes invalid', async () => {
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }));
    const logger = new MemoryLogger();
    const auth = open(config({ jwks: file }), { logger });
    writeFileSync(file, '{"keys": [');
    await auth.refresh();
    expect((await auth.verify(await sign({}, { key: es }))).ok).toBe(true);
    expect(logger.entries).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: 'cannot reload the JWKS file; keeping the previous keys',
      }),
    );
  });

  it('rereads the file on its interval until closed', async () => {
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }));
    const auth = open(config({ jwks: file }), { fileReloadIntervalMs: 20 });
    writeFileSync(file, JSON.stringify({ keys: [rs.jwk] }));
    const token = await sign({}, { key: rs });
    await vi.waitFor(async () => expect((await auth.verify(token)).ok).toBe(true), { timeout: 2000 });
    auth.close();
    auth.close();
    await new Promise((resolve) => setTimeout(resolve, 50)); // a reread already under way ends first
    writeFileSync(file, JSON.stringify({ keys: [es.jwk] }));
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect((await auth.verify(token)).ok).toBe(true);
  });
});

describe('JwtAuthenticator configuration', () => {
  it('refuses an empty issuer or audience', () => {
    expect(() => open(config({ issuer: '' }))).toThrow(SwitchboardError);
    expect(() => open(config({ audience: [] }))).toThrow(/audience/);
    expect(() => open(config({ audience: [''] }))).toThrow(/audience/);
  });
});

describe('jwksSource', () => {
  it('takes https URLs anywhere and http URLs on loopback only', () => {
    expect(jwksSource('https://idp.example/jwks')).toMatchObject({ kind: 'url' });
    for (const url of ['http://127.0.0.1:8080/jwks', 'http://localhost/jwks', 'http://[::1]:9/jwks']) {
      expect(jwksSource(url)).toMatchObject({ kind: 'url' });
    }
    for (const url of ['http://idp.example/jwks', 'http://10.0.0.1/jwks', 'http://localhost.evil.example/']) {
      expect(() => jwksSource(url)).toThrow(/https/);
    }
    expect(() => jwksSource('ftp://idp.example/jwks')).toThrow(SwitchboardError);
  });

  it('takes anything else as a file path, and file: URLs as files', () => {
    expect(jwksSource('/etc/switchboard/jwks.json')).toEqual({
      kind: 'file',
      path: '/etc/switchboard/jwks.json',
    });
    expect(jwksSource('keys/jwks.json')).toEqual({ kind: 'file', path: 'keys/jwks.json' });
    expect(jwksSource('file:///etc/jwks.json')).toEqual({ kind: 'file', path: '/etc/jwks.json' });
  });
});

describe('looksLikeJwt', () => {
  it('is true for three base64url parts (the last may be empty), false otherwise', () => {
    expect(looksLikeJwt('eyJh.eyJz.c2ln')).toBe(true);
    expect(looksLikeJwt('eyJh.eyJz.')).toBe(true);
    expect(looksLikeJwt('sbt_abcdef')).toBe(false);
    expect(looksLikeJwt('a.b')).toBe(false);
    expect(looksLikeJwt('a.b.c.d')).toBe(false);
    expect(looksLikeJwt('a..c')).toBe(false);
    expect(looksLikeJwt('a+b.c.d')).toBe(false);
  });
});
