import { describe, expect, it } from 'vitest';
import { createAuthenticator } from '../auth/authenticator.js';
import { hashToken } from '../auth/token-hash.js';
import { silentLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import { SpaceAuthenticator } from './space-auth.js';

const ALICE = 'sbt_alice_token_for_the_gateway';
const BOT = 'sbt_bot_space_only_token';
const participants = [
  { id: 'bot', roles: ['helper'], tokens: [{ sha256: hashToken(BOT) }] },
  { id: 'alice', roles: ['extra'], tokens: [] },
];

function withGatewayAuth() {
  const gateway = createAuthenticator(
    { tokens: [{ principal: 'alice', sha256: hashToken(ALICE), roles: ['approver'] }] },
    { logger: silentLogger, metrics: new Metrics() },
  );
  return new SpaceAuthenticator({ gateway, participants });
}

const header = (token: string) => ({ rawHeaders: ['Authorization', `Bearer ${token}`] });

describe("SpaceAuthenticator with the gateway's authentication", () => {
  it("takes a space token first, then the gateway's tokens (participant = principal, roles merged)", async () => {
    const auth = withGatewayAuth();
    expect(await auth.fromRequest(header(BOT))).toEqual({
      ok: true,
      identity: { id: 'bot', roles: ['helper'], via: 'space-token' },
    });
    expect(await auth.fromRequest(header(ALICE))).toEqual({
      ok: true,
      identity: { id: 'alice', roles: ['approver', 'extra'], via: 'gateway-auth' },
    });
  });

  it('refuses unknown tokens, missing credentials and tokens in the URL with 401', async () => {
    const auth = withGatewayAuth();
    expect(await auth.fromRequest(header('sbt_nope'))).toMatchObject({ ok: false, status: 401 });
    expect(await auth.fromRequest({ rawHeaders: [] })).toMatchObject({ ok: false, status: 401 });
    expect(await auth.fromJoin({ participantId: 'alice' })).toMatchObject({ ok: false, status: 401 });
    expect(await auth.fromJoin({ token: ALICE }, '/meup?access_token=x')).toMatchObject({
      ok: false,
      status: 401,
    });
  });

  it("checks a join frame's token, and its participantId against it (never overwritten)", async () => {
    const auth = withGatewayAuth();
    expect(await auth.fromJoin({ token: ALICE, participantId: 'alice' })).toMatchObject({
      ok: true,
      identity: { id: 'alice' },
    });
    expect(await auth.fromJoin({ token: BOT })).toMatchObject({ ok: true, identity: { id: 'bot' } });
    const mismatch = await auth.fromJoin({ token: ALICE, participantId: 'mallory' });
    expect(mismatch).toMatchObject({ ok: false, status: 403 });
    expect(mismatch.ok ? '' : mismatch.message).toMatch(/never overwritten/);
  });
});

describe('SpaceAuthenticator without authentication (loopback only)', () => {
  const auth = new SpaceAuthenticator({ gateway: undefined, participants });

  it('lets a local participant choose its id, default local', async () => {
    expect(await auth.fromJoin({ participantId: 'carol' })).toEqual({
      ok: true,
      identity: { id: 'carol', roles: [], via: 'local' },
    });
    expect(await auth.fromJoin({})).toMatchObject({ ok: true, identity: { id: 'local' } });
    expect(await auth.fromJoin({ participantId: 'alice' })).toMatchObject({
      ok: true,
      identity: { id: 'alice', roles: ['extra'] },
    });
  });

  it('still requires the token of an id that has space tokens, and refuses reserved ids', async () => {
    expect(await auth.fromJoin({ participantId: 'bot' })).toMatchObject({ ok: false, status: 401 });
    expect(await auth.fromJoin({ participantId: 'bot', token: BOT })).toMatchObject({
      ok: true,
      identity: { id: 'bot' },
    });
    expect(await auth.fromJoin({ participantId: 'server-everything' })).toMatchObject({
      ok: false,
      status: 403,
    });
    expect(await auth.fromRequest(header('sbt_unknown'))).toMatchObject({ ok: false, status: 401 });
  });
});
