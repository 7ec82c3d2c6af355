import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VALUE_RULES } from '../audit/secret-patterns.js';
import { isBearerTokenSyntax } from './bearer.js';
import { hashToken, newToken, safeEqualHex, TOKEN_PREFIX } from './token-hash.js';

describe('hashToken', () => {
  it('is the lower-case hex SHA-256 of the UTF-8 bytes', () => {
    expect(hashToken('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashToken('é')).toBe(createHash('sha256').update(Buffer.from('c3a9', 'hex')).digest('hex'));
  });
});

describe('newToken', () => {
  it('is the prefix and 32 random bytes in base64url, usable in a Bearer header', () => {
    const token = newToken();
    expect(token).toMatch(/^sbt_[A-Za-z0-9_-]{43}$/);
    expect(token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url')).toHaveLength(32);
    expect(isBearerTokenSyntax(token)).toBe(true);
    expect(token).not.toContain('.');
  });

  it('never repeats', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => newToken()));
    expect(tokens.size).toBe(1000);
  });

  it('is caught by the redactor when written after "Bearer" or as a token value', () => {
    const token = newToken();
    const redact = (text: string): string =>
      VALUE_RULES.reduce((acc, rule) => acc.replace(rule.pattern, rule.replacement), text);
    expect(redact(`Authorization: Bearer ${token}`)).not.toContain(token);
    expect(redact(`token=${token}`)).not.toContain(token);
  });
});

describe('safeEqualHex', () => {
  const a = hashToken('a');
  const b = hashToken('b');

  it('compares hex case-insensitively', () => {
    expect(safeEqualHex(a, a)).toBe(true);
    expect(safeEqualHex(a, a.toUpperCase())).toBe(true);
    expect(safeEqualHex(a, b)).toBe(false);
  });

  it('is false for different lengths, odd lengths and non-hex text, without throwing', () => {
    expect(safeEqualHex(a, a.slice(0, 62))).toBe(false);
    expect(safeEqualHex('abc', 'abc')).toBe(false);
    expect(safeEqualHex('zz', 'zz')).toBe(false);
    expect(safeEqualHex('', '')).toBe(true);
    expect(safeEqualHex(`${a.slice(0, 62)}zz`, `${a.slice(0, 62)}zz`)).toBe(false);
  });

  it('agrees with string equality of lower-cased hex (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ maxLength: 40 }), (x, y) => {
        const hx = Buffer.from(x).toString('hex');
        const hy = Buffer.from(y).toString('hex');
        expect(safeEqualHex(hx, hy)).toBe(hx === hy);
        expect(safeEqualHex(hx, hx.toUpperCase())).toBe(true);
      }),
    );
  });

  it('never throws on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (x, y) => {
        expect(typeof safeEqualHex(x, y)).toBe('boolean');
      }),
    );
  });
});
