import { describe, expect, it, vi } from 'vitest';
import type { TokenCredential } from '../config/types.js';
import { TokenAuthenticator } from './token-authenticator.js';
import { hashToken, safeEqualHex } from './token-hash.js';

const alice = 'sbt_alice-token';
const bob = 'sbt_bob-token';
const carol = 'sbt_carol-token';
const tokens: TokenCredential[] = [
  { principal: 'alice', sha256: hashToken(alice), roles: ['approver'] },
  { principal: 'bob', sha256: hashToken(bob), roles: [] },
  { principal: 'carol', sha256: hashToken(carol), roles: ['ops', 'approver'] },
];

describe('TokenAuthenticator', () => {
  it('maps a configured token to its principal and roles', () => {
    const auth = new TokenAuthenticator(tokens);
    expect(auth.verify(alice)).toEqual({ principal: 'alice', roles: ['approver'] });
    expect(auth.verify(bob)).toEqual({ principal: 'bob', roles: [] });
    expect(auth.verify(carol)).toEqual({ principal: 'carol', roles: ['ops', 'approver'] });
    expect(auth.size).toBe(3);
  });

  it('refuses unknown, empty and near-miss tokens, and a configured hash presented as the token', () => {
    const auth = new TokenAuthenticator(tokens);
    expect(auth.verify('sbt_mallory')).toBeUndefined();
    expect(auth.verify('')).toBeUndefined();
    expect(auth.verify(`${alice} `)).toBeUndefined();
    expect(auth.verify(alice.toUpperCase())).toBeUndefined();
    expect(auth.verify(hashToken(alice))).toBeUndefined();
  });

  it('refuses everything when no tokens are configured', () => {
    expect(new TokenAuthenticator([]).verify(alice)).toBeUndefined();
  });

  it('compares the presented hash with every configured hash, whichever matches (no early exit)', () => {
    for (const [token, expected] of [
      [alice, 'alice'],
      [carol, 'carol'],
      ['sbt_nobody', undefined],
    ] as const) {
      const compare = vi.fn(safeEqualHex);
      const auth = new TokenAuthenticator(tokens, { compare });
      expect(auth.verify(token)?.principal).toBe(expected);
      expect(compare).toHaveBeenCalledTimes(tokens.length);
      const presented = hashToken(token);
      expect(compare.mock.calls).toEqual(tokens.map((t) => [presented, t.sha256]));
    }
  });

  it('keeps the first entry when two share a hash, still comparing all', () => {
    const compare = vi.fn(safeEqualHex);
    const twice = [...tokens, { principal: 'alice-again', sha256: hashToken(alice), roles: [] }];
    const auth = new TokenAuthenticator(twice, { compare });
    expect(auth.verify(alice)?.principal).toBe('alice');
    expect(compare).toHaveBeenCalledTimes(4);
  });

  it('does not share the configured roles arrays with callers', () => {
    const roles = ['approver'];
    const auth = new TokenAuthenticator([{ principal: 'alice', sha256: hashToken(alice), roles }]);
    roles.push('root');
    expect(auth.verify(alice)?.roles).toEqual(['approver']);
  });
});
