import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthConfig } from '../config/types.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { MemoryLogger, silentLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { Authenticate, AuthOutcome } from '../transports/http/server/mcp-http-server.js';
import { type Authenticator, type AuthRequest, createAuthenticator } from './authenticator.js';
import { hashToken, newToken } from './token-hash.js';

const ISSUER = 'https://idp.example';
const AUDIENCE = 'switchboard';
const alice = newToken();
const bob = newToken();
const dir = mkdtempSync(join(tmpdir(), 'sb-authn-'));
const jwksFile = join(dir, 'jwks.json');
let privateKey: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  privateKey = pair.privateKey;
  const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tokensOnly: AuthConfig = {
  tokens: [
    { principal: 'alice', sha256: hashToken(alice), roles: ['approver'] },
    { principal: 'bob', sha256: hashToken(bob), roles: [] },
  ],
};
const withJwt = (): AuthConfig => ({
  ...tokensOnly,
  jwt: {
    jwks: jwksFile,
    issuer: ISSUER,
    audience: [AUDIENCE],
    principalClaim: 'sub',
    rolesClaim: 'roles',
    clockToleranceMs: 0,
  },
});

async function jwtFor(
  claims: Record<string, unknown>,
  exp = Math.floor(Date.now() / 1000) + 600,
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setExpirationTime(exp)
    .sign(privateKey);
}

function req(headers: readonly string[] = [], url = '/mcp'): AuthRequest {
  return { rawHeaders: headers, url, socket: { remoteAddress: '192.0.2.7' } };
}
const bearer = (token: string): string[] => ['Authorization', `Bearer ${token}`];

interface Harness {
  readonly authenticate: Authenticator;
  readonly logger: MemoryLogger;
  readonly metrics: Metrics;
}

function harness(auth: AuthConfig | undefined): Harness {
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  return { authenticate: createAuthenticator(auth, { logger, metrics }), logger, metrics };
}

function refused(outcome: AuthOutcome): Extract<AuthOutcome, { ok: false }> {
  if (outcome.ok) throw new Error(`expected a refusal, got principal ${outcome.principal}`);
  return outcome;
}

describe('createAuthenticator without an auth section', () => {
  it('makes everyone the principal local with no roles, synchronously, counting nothing', () => {
    const { authenticate, metrics } = harness(undefined);
    const outcome = authenticate(req());
    expect(outcome).toEqual({ ok: true, principal: 'local', roles: [] });
    expect(authenticate(req(bearer('whatever')))).toEqual({ ok: true, principal: 'local', roles: [] });
    expect(metrics.snapshot()).toEqual([]);
    authenticate.close();
  });
});

describe('createAuthenticator with tokens', () => {
  it('accepts a configured token: its principal and roles', async () => {
    const { authenticate, metrics } = harness(tokensOnly);
    expect(await authenticate(req(bearer(alice)))).toEqual({
      ok: true,
      principal: 'alice',
      roles: ['approver'],
    });
    expect(await authenticate(req(['authorization', `bearer   ${bob}`]))).toEqual({
      ok: true,
      principal: 'bob',
      roles: [],
    });
    expect(metrics.get('auth_successes_total')).toBe(2);
  });

  it('answers a request without credentials with a plain challenge saying what is missing', async () => {
    const { authenticate, metrics } = harness(tokensOnly);
    const r = refused(await authenticate(req(['Host', 'localhost'])));
    expect(r.status).toBe(401);
    expect(r.headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="switchboard"' });
    expect(r.message).toMatch(/no Authorization header.*Authorization: Bearer <token>/);
    expect(metrics.get('auth_failures_total', { reason: 'missing' })).toBe(1);
  });

  it('answers another scheme with a plain challenge naming it', async () => {
    const { authenticate, metrics } = harness(tokensOnly);
    const r = refused(await authenticate(req(['Authorization', 'Basic YWxpY2U6c2VjcmV0'])));
    expect(r.headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="switchboard"' });
    expect(r.message).toContain('Basic authorization scheme is not accepted');
    expect(metrics.get('auth_failures_total', { reason: 'unsupported_scheme' })).toBe(1);
  });

  it('answers a wrong token with error="invalid_token"', async () => {
    const { authenticate, metrics } = harness(tokensOnly);
    const r = refused(await authenticate(req(bearer(newToken()))));
    expect(r.status).toBe(401);
    expect(r.headers?.['WWW-Authenticate']).toBe(
      'Bearer realm="switchboard", error="invalid_token", error_description="the bearer token is not valid"',
    );
    expect(r.message).toBe('Unauthorized: the bearer token is not valid');
    expect(metrics.get('auth_failures_total', { reason: 'unknown_token' })).toBe(1);
  });

  it('answers empty tokens, several Authorization headers and over-long values with invalid_request', async () => {
    const { authenticate, metrics } = harness(tokensOnly);
    const cases: (readonly string[])[] = [
      ['Authorization', 'Bearer '],
      ['Authorization', ''],
      [...bearer(alice), ...bearer(alice)],
      [...bearer(alice), ...bearer(newToken())],
      ['Authorization', `Bearer ${'a'.repeat(9000)}`],
      ['Authorization', `Bearer ${alice} extra`],
    ];
    for (const headers of cases) {
      const r = refused(await authenticate(req(headers)));
      expect(r.status).toBe(401);
      expect(r.headers?.['WWW-Authenticate']).toMatch(/^Bearer realm="switchboard", error="invalid_request"/);
    }
    expect(metrics.get('auth_failures_total', { reason: 'malformed' })).toBe(cases.length);
    expect(metrics.get('auth_successes_total')).toBe(0);
  });

  it('refuses tokens in the query string, even next to a valid header', async () => {
    const { authenticate, metrics } = harness(tokensOnly);
    for (const url of [`/mcp?access_token=${alice}`, `/mcp?x=1&access_token=`]) {
      const r = refused(await authenticate(req(bearer(alice), url)));
      expect(r.message).toContain('query string');
      expect(r.headers?.['WWW-Authenticate']).toContain('error="invalid_request"');
    }
    expect(metrics.get('auth_failures_total', { reason: 'query_token' })).toBe(2);
    expect((await authenticate(req(bearer(alice), '/mcp?token_hint=1'))).ok).toBe(true);
  });

  it('never logs a token, only the first 8 hex digits of its hash', async () => {
    const { authenticate, logger } = harness(tokensOnly);
    const wrong = newToken();
    await authenticate(req(bearer(alice)));
    await authenticate(req(bearer(wrong)));
    await authenticate(req([...bearer(bob), ...bearer(wrong)]));
    await authenticate(req(bearer(alice), `/mcp?access_token=${alice}`));
    const text = JSON.stringify(logger.entries);
    for (const secret of [alice, bob, wrong, hashToken(alice), hashToken(wrong)])
      expect(text).not.toContain(secret);
    const failure = logger.entries.find((e) => e.fields.reason === 'unknown_token');
    expect(failure?.fields).toMatchObject({
      tokenHashPrefix: hashToken(wrong).slice(0, 8),
      remoteAddress: '192.0.2.7',
      method: 'token',
    });
    const success = logger.entries.find((e) => e.message === 'authenticated');
    expect(success?.fields).toMatchObject({
      principal: 'alice',
      tokenHashPrefix: hashToken(alice).slice(0, 8),
    });
  });

  it('checks a JWT-shaped token as an opaque token when no jwt section is configured', async () => {
    const jwtLike = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
    const { authenticate } = harness({
      tokens: [{ principal: 'svc', sha256: hashToken(jwtLike), roles: [] }],
    });
    expect(await authenticate(req(bearer(jwtLike)))).toMatchObject({ ok: true, principal: 'svc' });
  });
});

describe('createAuthenticator with JWT and tokens', () => {
  it('accepts valid JWTs (principal and roles from claims) and opaque tokens side by side', async () => {
    const { authenticate, metrics } = harness(withJwt());
    const token = await jwtFor({ sub: 'carol', roles: 'approver ops' });
    expect(await authenticate(req(bearer(token)))).toEqual({
      ok: true,
      principal: 'carol',
      roles: ['approver', 'ops'],
    });
    expect(await authenticate(req(bearer(alice)))).toMatchObject({ ok: true, principal: 'alice' });
    expect(metrics.get('auth_successes_total')).toBe(2);
    authenticate.close();
  });

  it('checks a JWT-shaped token only as a JWT when jwt is configured', async () => {
    const jwtLike = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
    const auth = withJwt();
    const { authenticate, metrics } = harness({
      ...auth,
      tokens: [{ principal: 'svc', sha256: hashToken(jwtLike), roles: [] }],
    });
    expect((await authenticate(req(bearer(jwtLike)))).ok).toBe(false);
    expect(metrics.get('auth_successes_total')).toBe(0);
    authenticate.close();
  });

  it('answers expired and foreign JWTs with error="invalid_token" and counts the reason', async () => {
    const { authenticate, metrics, logger } = harness(withJwt());
    const expired = refused(
      await authenticate(req(bearer(await jwtFor({ sub: 'carol' }, Math.floor(Date.now() / 1000) - 60)))),
    );
    expect(expired.status).toBe(401);
    expect(expired.message).toBe('Unauthorized: the token has expired');
    expect(expired.headers?.['WWW-Authenticate']).toBe(
      'Bearer realm="switchboard", error="invalid_token", error_description="the token has expired"',
    );
    const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(
      JSON.stringify({ sub: 'mallory', iss: ISSUER, aud: AUDIENCE, exp: 2e9 }),
    ).toString('base64url')}.`;
    refused(await authenticate(req(bearer(unsigned))));
    const noSub = refused(await authenticate(req(bearer(await jwtFor({ email: 'x' }))))); // no "sub"
    expect(noSub.headers?.['WWW-Authenticate']).toContain(`error_description="the token's 'sub' claim`);
    expect(metrics.get('auth_failures_total', { reason: 'expired' })).toBe(1);
    expect(metrics.get('auth_failures_total', { reason: 'alg_not_allowed' })).toBe(1);
    expect(metrics.get('auth_failures_total', { reason: 'invalid_claims' })).toBe(1);
    expect(logger.entries.filter((e) => e.message === 'authentication failed')).toHaveLength(3);
    authenticate.close();
  });

  it('refuses at once a plain-http JWKS URL off loopback', () => {
    const auth = withJwt();
    const bad: AuthConfig = { ...auth, jwt: { ...auth.jwt!, jwks: 'http://idp.example/jwks' } };
    let error: unknown;
    try {
      createAuthenticator(bad, { logger: silentLogger, metrics: new Metrics() });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SwitchboardError);
    expect((error as SwitchboardError).code).toBe(SbErrorCode.ConfigInvalid);
  });
});

describe('createAuthenticator on a real HTTP server', () => {
  let server: Server;
  let port: number;
  const { authenticate } = harness(tokensOnly);
  // The function fits the HTTP server's Authenticate type.
  const asServerSees: Authenticate = authenticate;

  beforeAll(async () => {
    server = createServer(async (incoming, res) => {
      const outcome = await asServerSees(incoming);
      res.writeHead(outcome.ok ? 200 : outcome.status, outcome.ok ? {} : (outcome.headers ?? {}));
      res.end(outcome.ok ? outcome.principal : outcome.message);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function send(
    authorization: string | string[] | undefined,
  ): Promise<{ status: number; body: string; challenge?: string }> {
    return new Promise((resolve, reject) => {
      const r = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => {
          const challenge = res.headers['www-authenticate'];
          resolve({ status: res.statusCode ?? 0, body, ...(challenge === undefined ? {} : { challenge }) });
        });
      });
      r.on('error', reject);
      if (authorization !== undefined) r.setHeader('Authorization', authorization);
      r.end();
    });
  }

  it('authenticates a request and refuses one carrying two Authorization headers', async () => {
    expect(await send(`Bearer ${alice}`)).toMatchObject({ status: 200, body: 'alice' });
    // Node keeps only the first Authorization header in req.headers; the raw headers show both.
    const two = await send([`Bearer ${alice}`, `Bearer ${bob}`]);
    expect(two).toMatchObject({ status: 401, body: expect.stringContaining('2 Authorization headers') });
    expect(await send(undefined)).toMatchObject({ status: 401, challenge: 'Bearer realm="switchboard"' });
  });
});
