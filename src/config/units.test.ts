import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DURATION_UNITS, formatDuration, formatSize, parseDuration, parseSize, SIZE_UNITS } from './units.js';

const value = (r: ReturnType<typeof parseDuration>) => (r.ok ? r.value : r.message);

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1500],
    ['1.1s', 1100],
    ['.5s', 500],
    ['0', 0],
    ['0s', 0],
    ['1500', 1500],
    [' 2m ', 120_000],
    [0, 0],
    [1500, 1500],
  ])('%j is %d ms', (input, ms) => {
    expect(parseDuration(input)).toEqual({ ok: true, value: ms });
  });

  it.each([
    ['10 minutes', 'a unit ms, s, m, h or d after the number, not "minutes"'],
    ['5min', 'not "min"'],
    ['1h30m', 'a duration: a whole number of milliseconds or a number with a unit'],
    ['-5s', 'a duration: a whole number'],
    ['s', 'a duration: a whole number'],
    ['', 'a duration: a whole number'],
    ['0.5ms', 'a whole number of milliseconds'],
    ['1.5', 'a whole number of milliseconds (use a unit for fractions, e.g. 1.5s)'],
    [1.5, 'a whole number of milliseconds (use a unit for fractions, e.g. 1.5s)'],
    [-1, 'a duration: a whole number'],
    [Number.POSITIVE_INFINITY, 'a duration: a whole number'],
    [true, 'a duration'],
    [null, 'a duration'],
    ['99999999999999999d', `at most ${Number.MAX_SAFE_INTEGER} milliseconds`],
  ])('rejects %j, expecting %j', (input, expected) => {
    const result = parseDuration(input);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.expected).toContain(expected);
      expect(result.message).toMatch(/is not a duration: expected /);
    }
  });

  it('names the input in its message', () => {
    expect(value(parseDuration('10x'))).toBe(
      '"10x" is not a duration: expected a unit ms, s, m, h or d after the number, not "x"',
    );
    expect(value(parseDuration(Number.POSITIVE_INFINITY))).toMatch(/^\.inf is not a duration/);
  });
});

describe('parseSize', () => {
  it.each([
    ['512', 512],
    [512, 512],
    ['512B', 512],
    ['64KiB', 65_536],
    ['4MiB', 4_194_304],
    ['4 MiB', 4_194_304],
    ['1GiB', 1_073_741_824],
    ['1.5MiB', 1_572_864],
    ['2KB', 2000],
    ['2kB', 2000],
    ['3MB', 3_000_000],
    ['1GB', 1_000_000_000],
    ['0', 0],
  ])('%j is %d bytes', (input, bytes) => {
    expect(parseSize(input)).toEqual({ ok: true, value: bytes });
  });

  it.each([
    ['4M', 'a unit B, KiB, MiB, GiB, KB, MB or GB after the number, not "M"'],
    ['4mb', 'not "mb"'],
    ['4 MiB of data', 'a size: a whole number of bytes'],
    ['1.0000001GiB', 'a whole number of bytes'],
    ['1.5', 'a whole number of bytes (use a unit for fractions, e.g. 1.5MiB)'],
    [-1, 'a size: a whole number of bytes'],
    [[1], 'a size'],
  ])('rejects %j, expecting %j', (input, expected) => {
    const result = parseSize(input);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.expected).toContain(expected);
      expect(result.message).toMatch(/is not a size: expected /);
    }
  });
});

describe('formatDuration and formatSize', () => {
  it.each([
    [0, '0'],
    [250, '250ms'],
    [1500, '1500ms'],
    [30_000, '30s'],
    [90_000, '90s'],
    [600_000, '10m'],
    [5_400_000, '90m'],
    [86_400_000, '1d'],
  ])('formatDuration(%d) is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    [0, '0'],
    [512, '512'],
    [65_536, '64KiB'],
    [4_194_304, '4MiB'],
    [1_073_741_824, '1GiB'],
    [2000, '2KB'],
    [3_000_000, '3MB'],
    [1025, '1025'],
  ])('formatSize(%d) is %s', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
  });
});

describe('round trips (properties)', () => {
  const amount = fc.nat({ max: Number.MAX_SAFE_INTEGER });

  it('parseDuration(formatDuration(ms)) is ms', () => {
    fc.assert(fc.property(amount, (ms) => value(parseDuration(formatDuration(ms))) === ms));
  });

  it('parseSize(formatSize(bytes)) is bytes', () => {
    fc.assert(fc.property(amount, (bytes) => value(parseSize(formatSize(bytes))) === bytes));
  });

  it('a number with a duration unit is that many units', () => {
    const unit = fc.constantFrom(...Object.keys(DURATION_UNITS));
    fc.assert(
      fc.property(
        fc.nat({ max: 100_000 }),
        unit,
        (n, u) => value(parseDuration(`${n}${u}`)) === n * (DURATION_UNITS[u] ?? 0),
      ),
    );
  });

  it('a number with a size unit is that many units', () => {
    const unit = fc.constantFrom(...Object.keys(SIZE_UNITS));
    fc.assert(
      fc.property(
        fc.nat({ max: 100_000 }),
        unit,
        (n, u) => value(parseSize(`${n}${u}`)) === n * (SIZE_UNITS[u] ?? 0),
      ),
    );
  });

  it('formatting never gives a longer text than the plain number', () => {
    fc.assert(
      fc.property(
        amount,
        (n) => formatDuration(n).length <= `${n}ms`.length && formatSize(n).length <= String(n).length,
      ),
    );
  });

  it('parsing never throws', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.double(), fc.anything()), (input) => {
        parseDuration(input);
        parseSize(input);
      }),
    );
  });
});
