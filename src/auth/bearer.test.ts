import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BearerResult,
  isBearerTokenSyntax,
  MAX_AUTHORIZATION_LENGTH,
  parseAuthorization,
  readBearer,
} from './bearer.js';

const kindOf = (r: BearerResult): string => r.kind;

describe('parseAuthorization', () => {
  it('reads the token after a case-insensitive Bearer and one or more spaces', () => {
    for (const value of [
      'Bearer abc',
      'bearer abc',
      'BEARER abc',
      'BeArEr    abc',
      ' Bearer abc\t',
      'Bearer\tabc',
    ]) {
      expect(parseAuthorization(value)).toEqual({ kind: 'token', token: 'abc' });
    }
  });

  it('accepts every b64token character, with trailing padding', () => {
    const token = 'Az09-._~+/==';
    expect(parseAuthorization(`Bearer ${token}`)).toEqual({ kind: 'token', token });
    expect(parseAuthorization('Bearer eyJhbGciOi.eyJzdWIi.c2ln')).toEqual({
      kind: 'token',
      token: 'eyJhbGciOi.eyJzdWIi.c2ln',
    });
  });

  it('reports other schemes by name so the client learns it needs a bearer token', () => {
    expect(parseAuthorization('Basic dXNlcjpwYXNz')).toEqual({ kind: 'other-scheme', scheme: 'Basic' });
    expect(parseAuthorization('Digest')).toEqual({ kind: 'other-scheme', scheme: 'Digest' });
    expect(parseAuthorization('Bearerx abc')).toEqual({ kind: 'other-scheme', scheme: 'Bearerx' });
  });

  it('refuses empty values and empty tokens', () => {
    expect(parseAuthorization('')).toMatchObject({
      kind: 'malformed',
      problem: expect.stringContaining('empty'),
    });
    expect(parseAuthorization('   ')).toMatchObject({ kind: 'malformed' });
    expect(parseAuthorization('Bearer')).toMatchObject({
      kind: 'malformed',
      problem: 'the bearer token is empty',
    });
    expect(parseAuthorization('Bearer    ')).toMatchObject({
      kind: 'malformed',
      problem: 'the bearer token is empty',
    });
  });

  it('refuses tokens with characters a b64token cannot hold', () => {
    for (const value of [
      'Bearer a b',
      'Bearer a,Bearer b',
      'Bearer "abc"',
      'Bearer a=b',
      'Bearer ab\u00e9',
      'Bearer a\nb',
    ]) {
      expect(kindOf(parseAuthorization(value))).toBe('malformed');
    }
  });

  it('does not repeat a scheme that is not a plain token', () => {
    const r = parseAuthorization(`${'x'.repeat(40)} abc`);
    expect(r).toMatchObject({ kind: 'malformed' });
    expect(JSON.stringify(r)).not.toContain('xxxx');
    expect(parseAuthorization('B"as ic')).toMatchObject({ kind: 'malformed' });
  });

  it('refuses over-long values before looking at them', () => {
    const long = `Bearer ${'a'.repeat(MAX_AUTHORIZATION_LENGTH)}`;
    expect(parseAuthorization(long)).toMatchObject({
      kind: 'malformed',
      problem: expect.stringContaining('longer'),
    });
    const fits = `Bearer ${'a'.repeat(MAX_AUTHORIZATION_LENGTH - 7)}`;
    expect(parseAuthorization(fits).kind).toBe('token');
  });

  it('never throws, whatever the value, and a token result is always a b64token (property)', () => {
    const arbitrary = fc.oneof(
      fc.string({ maxLength: 200 }),
      // Any UTF-16 code unit: controls, non-ASCII, lone surrogates.
      fc.string({
        unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
        maxLength: 200,
      }),
      fc
        .tuple(
          fc.constantFrom('Bearer', 'bearer', 'Basic', '', ' '),
          fc.string({ unit: 'binary-ascii', maxLength: 50 }),
        )
        .map(([scheme, rest]) => `${scheme} ${rest}`),
      fc.nat({ max: 3 * MAX_AUTHORIZATION_LENGTH }).map((n) => `Bearer ${' '.repeat(n)}x`),
    );
    fc.assert(
      fc.property(arbitrary, (value) => {
        const r = parseAuthorization(value);
        const known = ['token', 'missing', 'other-scheme', 'malformed'].includes(r.kind);
        return known && (r.kind !== 'token' || isBearerTokenSyntax(r.token));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('readBearer', () => {
  it('is missing without an Authorization header', () => {
    expect(readBearer([])).toEqual({ kind: 'missing' });
    expect(readBearer(['Host', 'localhost', 'X-Authorization', 'Bearer abc'])).toEqual({ kind: 'missing' });
  });

  it('finds the header whatever the case of its name', () => {
    expect(readBearer(['Host', 'h', 'authorization', 'Bearer abc'])).toEqual({ kind: 'token', token: 'abc' });
    expect(readBearer(['AUTHORIZATION', 'Bearer abc'])).toEqual({ kind: 'token', token: 'abc' });
  });

  it('refuses several Authorization headers, even when they agree', () => {
    const r = readBearer(['Authorization', 'Bearer abc', 'authorization', 'Bearer abc']);
    expect(r).toEqual({ kind: 'malformed', problem: 'the request has 2 Authorization headers' });
  });

  it('ignores a dangling name without a value', () => {
    expect(readBearer(['Authorization'])).toEqual({ kind: 'missing' });
  });

  it('never throws on arbitrary raw headers (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constant('Authorization'), fc.string({ maxLength: 40 })), { maxLength: 12 }),
        (raw) => {
          expect(() => readBearer(raw)).not.toThrow();
        },
      ),
    );
  });
});

describe('isBearerTokenSyntax', () => {
  it('accepts b64tokens only', () => {
    expect(isBearerTokenSyntax('sbt_abc-DEF')).toBe(true);
    expect(isBearerTokenSyntax('')).toBe(false);
    expect(isBearerTokenSyntax('a b')).toBe(false);
    expect(isBearerTokenSyntax('a'.repeat(MAX_AUTHORIZATION_LENGTH + 1))).toBe(false);
  });
});
