import { describe, expect, it } from 'vitest';
import { isoTimestamp } from './iso-timestamp.js';

describe('isoTimestamp', () => {
  it('formats timestamps exactly as Date#toISOString, across minutes, fractions and 1970', () => {
    const base = Date.UTC(2026, 10, 22, 1, 2, 3, 4);
    const times = [
      base,
      base + 0.999,
      base + 56_995.5,
      base + 57_000,
      base + 60_000,
      base - 1,
      base + 59_999.9999,
      0,
      -0.5,
      -1,
      -1.5,
      -60_000.25,
      1,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
    ];
    // Twice: the second pass takes the cached minute.
    for (const t of [...times, ...times]) expect(isoTimestamp(t)).toBe(new Date(t).toISOString());
    for (const t of [Date.UTC(10_000, 0, 1), Date.UTC(-1, 0, 1)])
      expect(isoTimestamp(t)).toBe(new Date(t).toISOString());
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
  });
});
