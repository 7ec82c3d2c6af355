import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boundId, MAX_ID_LENGTH } from './bound-id.js';
import { canonicalize } from './canonical-json.js';
import { isWellFormedString } from './well-formed-string.js';

const codePoints = (text: string): number => [...text].length;

function isControl(char: string): boolean {
  const c = char.codePointAt(0) as number;
  return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

describe('boundId (tamper test 25)', () => {
  it('coerces an integer', () => {
    expect(boundId(42)).toBe('42');
    expect(boundId(0)).toBe('0');
    expect(boundId(-7)).toBe('-7');
    expect(boundId(12345678901234567890n)).toBe('12345678901234567890');
  });

  it('keeps a string', () => {
    expect(boundId('req-1')).toBe('req-1');
  });

  it('coerces an object through String()', () => {
    expect(boundId({})).toBe('[object Object]');
    expect(boundId({ toString: () => 'custom' })).toBe('custom');
    expect(boundId([1, 2])).toBe('1,2');
  });

  it('returns undefined instead of throwing for a hostile toString or Symbol.toPrimitive', () => {
    const hostileToString = {
      toString(): string {
        throw new Error('hostile __str__');
      },
    };
    const hostilePrimitive = {
      [Symbol.toPrimitive](): string {
        throw new Error('hostile toPrimitive');
      },
    };
    const noPrototype = Object.create(null);
    const returnsObject = { toString: () => ({}), valueOf: () => ({}) };
    for (const value of [hostileToString, hostilePrimitive, noPrototype, returnsObject]) {
      expect(() => boundId(value)).not.toThrow();
      expect(boundId(value)).toBeUndefined();
    }
  });

  it('maps null and undefined to undefined', () => {
    expect(boundId(null)).toBeUndefined();
    expect(boundId(undefined)).toBeUndefined();
  });

  it('trims white space and drops an empty or blank id', () => {
    expect(boundId('  abc \t\n')).toBe('abc');
    expect(boundId('')).toBeUndefined();
    expect(boundId('   \u00a0\u2028\ufeff ')).toBeUndefined();
  });

  it('cuts a 10k-character id to 128 code points', () => {
    const id = boundId('x'.repeat(10_000));
    expect(id).toBe('x'.repeat(MAX_ID_LENGTH));
  });

  it('never splits an emoji (a surrogate pair) at the cut', () => {
    const id = boundId(`${'a'.repeat(127)}😀😀`) as string;
    expect(id).toBe(`${'a'.repeat(127)}😀`);
    expect(codePoints(id)).toBe(128);
    expect(id.length).toBe(129);
    expect(isWellFormedString(id)).toBe(true);
    expect(() => canonicalize(id)).not.toThrow();
    expect(boundId('😀'.repeat(200))).toBe('😀'.repeat(128));
  });

  it('removes C0, DEL and C1 control characters', () => {
    expect(boundId('a\u0000b\u001bc\u007fd\u0085e\u009ff\r\ng')).toBe('abcdefg');
    expect(boundId('\u0000\u0001')).toBeUndefined();
    expect(boundId('\u001b[31mred\u001b[0m')).toBe('[31mred[0m');
  });

  it('replaces lone surrogates with U+FFFD', () => {
    expect(boundId('a\ud800b')).toBe('a\ufffdb');
    expect(boundId('\udc00')).toBe('\ufffd');
  });

  it('counts the limit after removing control characters and leading space', () => {
    const id = boundId(`${' '.repeat(500)}${'\u0000'.repeat(500)}${'y'.repeat(300)}`);
    expect(id).toBe('y'.repeat(MAX_ID_LENGTH));
  });

  it('never trails white space after the cut', () => {
    expect(boundId(`${'a'.repeat(127)}  b`)).toBe('a'.repeat(127));
  });

  it('for any input, never throws and returns undefined or a bounded, clean, well-formed id', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 400 }),
          fc.string({ unit: 'grapheme', maxLength: 200 }),
          fc.anything({
            withBigInt: true,
            withBoxedValues: true,
            withNullPrototype: true,
            stringUnit: 'binary',
          }),
        ),
        (value) => {
          const id = boundId(value);
          if (id === undefined) return;
          expect(typeof id).toBe('string');
          expect(id.length).toBeGreaterThan(0);
          expect(id.trim()).toBe(id);
          expect(codePoints(id)).toBeLessThanOrEqual(MAX_ID_LENGTH);
          expect(isWellFormedString(id)).toBe(true);
          expect([...id].some(isControl)).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });
});
