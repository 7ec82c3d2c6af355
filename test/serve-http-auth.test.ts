/**
 * `switchboard serve` with authentication configured, end to end over HTTP: tokens made by
 * `switchboard auth token` and JWTs checked against a JWKS file named relative to the configuration
 * file. Every request is authenticated (a session id is not a credential), sessions belong to their
 * principal, the approvals API needs a principal too, and `/health` stays open.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING, makeToken, tempDir } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { headerOf, initialize, jsonOf, post, send } from './support/sse-client.js';

const ISSUER = 'https://idp.test/';
const AUDIENCE = 'https://switchboard.test/mcp';

describe('serve with authentication', () => {
  let serve: RunningServe;
  let alice: string;
  let bob: string;
  let signJwt: (
    claims: Record<string, unknown>,
    options?: { alg?: string; expiresIn?: string },
  ) => Promise<string>;

  beforeAll(async () => {
    const a = await makeToken('alice', ['approver']);
    const b = await makeToken('bob', []);
    alice = a.token;
    bob = b.token;
    const dataDir = tempDir('switchboard-auth-');
    // The JWKS sits beside the configuration file and is named relatively.
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    writeFileSync(join(dataDir, 'keys/jwks.json'), JSON.stringify({ keys: [jwk] }));
    signJwt = (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '5m')
        .sign(privateKey);
    const auth = [
      'auth:',
      '  tokens:',
      a.yaml,
      b.yaml,
      '  jwt:',
      '    jwks: keys/jwks.json',
      `    issuer: ${ISSUER}`,
      `    audience: ${AUDIENCE}`,
      '    rolesClaim: roles',
      '',
    ].join('\n');
    serve = await startServe({
      dataDir,
      configYaml: stdioUpstreamConfig({ everything: { script: EVERYTHING, args: ['stdio'] } }, auth),
    });
  }, 120_000);
  afterAll(async () => {
    await serve?.stop();
  });

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it('refuses a request without credentials with 401 and a Bearer challenge', async () => {
    const response = await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(response.status).toBe(401);
    expect(headerOf(response, 'www-authenticate')).toBe('Bearer realm="switchboard"');
    expect(jsonOf<{ error: { code: number } }>(response).error.code).toBe(-32009);
  });

  it('refuses an unknown token and a token in the query string', async () => {
    const unknown = await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, bearer('sbt_nope'));
    expect(unknown.status).toBe(401);
    expect(headerOf(unknown, 'www-authenticate')).toMatch(/error="invalid_token"/);
    const query = await post(
      `${serve.url}?access_token=${alice}`,
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      bearer(alice),
    );
    expect(query.status).toBe(401);
    expect(headerOf(query, 'www-authenticate')).toMatch(/error="invalid_request"/);
  });

  it('serves a principal with its token, and keeps its session from another principal', async () => {
    const session = await initialize(serve.url, { headers: bearer(alice) });
    const listed = await post(
      serve.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { ...session.headers, ...bearer(alice) },
    );
    expect(listed.status, listed.text).toBe(200);
    // The same session id from bob reaches nothing: 404, as for an unknown session.
    const stolen = await post(
      serve.url,
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { ...session.headers, ...bearer(bob) },
    );
    expect(stolen.status).toBe(404);
    // And the session id alone is no credential.
    const bare = await post(serve.url, { jsonrpc: '2.0', id: 4, method: 'tools/list' }, session.headers);
    expect(bare.status).toBe(401);
  });

  it('accepts a JWT signed by a key of the JWKS file named relative to the configuration', async () => {
    const token = await signJwt({ sub: 'carol', roles: ['approver'] });
    const session = await initialize(serve.url, { headers: bearer(token) });
    expect(session.id.length).toBeGreaterThan(0);
    // carol is an approver: the approvals API answers her.
    const approvals = await send(`${serve.base}/approvals`, 'GET', bearer(token));
    expect(approvals.status, approvals.text).toBe(200);
  });

  it('refuses expired JWTs, HMAC-signed ones and ones for another audience', async () => {
    const expired = await signJwt({ sub: 'carol' }, { expiresIn: '-10m' });
    const response = await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, bearer(expired));
    expect(response.status).toBe(401);
    const hmac = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('x'.repeat(32)));
    expect((await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, bearer(hmac))).status).toBe(401);
    const elsewhere = await new SignJWT({ sub: 'carol' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience('https://another-service.test/')
      .setExpirationTime('5m')
      .sign((await generateKeyPair('ES256')).privateKey);
    const wrongAudience = await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, bearer(elsewhere));
    expect(wrongAudience.status).toBe(401);
  });

  it('guards the approvals API: 401 without credentials, 403 without an approver role', async () => {
    expect((await send(`${serve.base}/approvals`, 'GET', {})).status).toBe(401);
    expect((await send(`${serve.base}/approvals`, 'GET', bearer(bob))).status).toBe(403);
    expect((await send(`${serve.base}/approvals`, 'GET', bearer(alice))).status).toBe(200);
  });

  it('leaves /health and /ready open (probes carry no credentials)', async () => {
    expect((await send(`${serve.base}/health`, 'GET', {})).status).toBe(200);
    expect((await send(`${serve.base}/ready`, 'GET', {})).status).toBe(200);
  });

  it('authenticates 2026-07-28 requests too, each principal in its own trace root', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    };
    const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    expect((await post(serve.url, body, headers)).status).toBe(401);
    expect((await post(serve.url, body, { ...headers, ...bearer(bob) })).status).toBe(200);
  });
});
