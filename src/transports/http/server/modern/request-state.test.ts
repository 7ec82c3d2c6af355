import { describe, expect, it } from 'vitest';
import { RequestStateCodec } from './request-state.js';

const claims = { call: 'c1', principal: 'alice', method: 'tools/call', name: 'ask', exp: 2000 };
const expect0 = { principal: 'alice', method: 'tools/call', name: 'ask', now: 1000 };

describe('RequestStateCodec', () => {
  it('opens what it sealed', () => {
    const codec = new RequestStateCodec();
    const state = codec.seal(claims);
    expect(RequestStateCodec.isOurs(state)).toBe(true);
    expect(codec.open(state, expect0)).toEqual({ ok: true, call: 'c1' });
  });

  it('refuses tampering, another key, another principal or request, and expiry', () => {
    const codec = new RequestStateCodec();
    const state = codec.seal(claims);
    const body = state.split('.')[1]!;
    const forged = Buffer.from(JSON.stringify({ ...claims, principal: 'mallory' })).toString('base64url');
    expect(codec.open(state.replace(body, forged), { ...expect0, principal: 'mallory' })).toMatchObject({
      ok: false,
      reason: /verification/,
    });
    expect(new RequestStateCodec().open(state, expect0)).toMatchObject({ ok: false });
    expect(codec.open(state, { ...expect0, principal: 'bob' })).toMatchObject({
      ok: false,
      reason: /principal/,
    });
    expect(codec.open(state, { ...expect0, name: 'other' })).toMatchObject({
      ok: false,
      reason: /another request/,
    });
    expect(codec.open(state, { ...expect0, now: 3000 })).toMatchObject({ ok: false, reason: /expired/ });
    expect(codec.open('sbrs1.garbage', expect0)).toMatchObject({ ok: false });
    expect(RequestStateCodec.isOurs('upstream-state')).toBe(false);
  });
});
