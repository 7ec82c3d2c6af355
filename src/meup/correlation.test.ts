import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import {
  CORRELATION_STRING_COUNTER,
  CorrelationErrorCode,
  CorrelationMigration,
  DEFAULT_CORRELATION_MODE,
  getSingleCorrelation,
  mergeCorrelation,
  normalizeCorrelation,
  sameCorrelationSet,
} from './correlation.js';

const ids = fc.array(fc.constantFrom('a', 'b', 'c', 'env-1', 'env-2', '01J0000000000000000000000Z'), {
  maxLength: 8,
});

describe('normalizeCorrelation: arrays (meup.md requirements 9, 11, 12)', () => {
  it('accepts [], one id and several ids', () => {
    expect(normalizeCorrelation([])).toEqual({ ok: true, correlation: [], fromString: false });
    expect(normalizeCorrelation(['a'])).toEqual({ ok: true, correlation: ['a'], fromString: false });
    expect(normalizeCorrelation(['a', 'b'])).toEqual({
      ok: true,
      correlation: ['a', 'b'],
      fromString: false,
    });
  });

  it('removes duplicates, keeping the first occurrence', () => {
    expect(normalizeCorrelation(['a', 'a'])).toMatchObject({ ok: true, correlation: ['a'] });
    expect(normalizeCorrelation(['b', 'a', 'b', 'a'])).toMatchObject({ ok: true, correlation: ['b', 'a'] });
  });

  it.each([
    [[1], /correlation_id\[0\] is a number/],
    [['a', null], /correlation_id\[1\] is null/],
    [['a', ['b']], /correlation_id\[1\] is an array/],
    [[{ id: 'a' }], /is an object/],
    [[''], /is an empty string/],
    [['x'.repeat(257)], /longer than 256/],
  ])('rejects the element in %j', (raw, message) => {
    const result = normalizeCorrelation(raw);
    expect(result).toMatchObject({ ok: false, code: CorrelationErrorCode.InvalidCorrelationId });
    if (!result.ok) expect(result.message).toMatch(message);
  });

  it.each([[42], [null], [{ 0: 'a' }], [true]])('rejects the non-array, non-string value %j', (raw) => {
    const result = normalizeCorrelation(raw);
    expect(result).toMatchObject({ ok: false, code: 'invalid_correlation_id' });
    if (!result.ok) expect(result.message).toMatch(/must be an array/);
  });

  it('keeps 256-character ids', () => {
    expect(normalizeCorrelation(['x'.repeat(256)]).ok).toBe(true);
  });

  it('yields a duplicate-free list naming the same set as its input (property)', () => {
    fc.assert(
      fc.property(ids, (list) => {
        const result = normalizeCorrelation(list);
        if (!result.ok) throw new Error('valid ids refused');
        expect(new Set(result.correlation).size).toBe(result.correlation.length);
        expect(sameCorrelationSet(result.correlation, list)).toBe(true);
      }),
    );
  });
});

describe('normalizeCorrelation: the string form (requirement 10)', () => {
  it('defaults to accept mode', () => {
    expect(DEFAULT_CORRELATION_MODE).toBe('accept');
    expect(normalizeCorrelation('x')).toEqual({ ok: true, correlation: ['x'], fromString: true });
  });

  it('rejects the string in strict mode with a clear error', () => {
    const result = normalizeCorrelation('x', 'strict');
    expect(result).toMatchObject({ ok: false, code: CorrelationErrorCode.CorrelationStringRejected });
    if (!result.ok) expect(result.message).toMatch(/must be an array/);
  });

  it('still validates the string in accept mode', () => {
    expect(normalizeCorrelation('', 'accept')).toMatchObject({ ok: false, code: 'invalid_correlation_id' });
  });

  it('strict mode changes nothing for arrays', () => {
    expect(normalizeCorrelation(['a', 'a'], 'strict')).toMatchObject({ ok: true, correlation: ['a'] });
  });
});

describe('CorrelationMigration', () => {
  it('counts every accepted string per sender and warns once per sender', () => {
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const migration = new CorrelationMigration({ logger, metrics });

    normalizeCorrelation('x', 'accept', 'robot-alpha', migration);
    normalizeCorrelation('y', 'accept', 'robot-alpha', migration);
    normalizeCorrelation('z', 'accept', 'robot-beta', migration);

    expect(metrics.get(CORRELATION_STRING_COUNTER, { sender: 'robot-alpha' })).toBe(2);
    expect(metrics.get('meup_correlation_string_total', { sender: 'robot-beta' })).toBe(1);
    expect(logger.entries).toHaveLength(2);
    expect(logger.entries.map((e) => e.level)).toEqual(['warn', 'warn']);
    expect(logger.entries[0]?.fields.sender).toBe('robot-alpha');
    expect(logger.entries[0]?.message).toMatch(/deprecated: robot-alpha/);
    expect(logger.entries[1]?.fields.sender).toBe('robot-beta');
    expect(migration.hasWarned('robot-alpha')).toBe(true);
    expect(migration.warnedSenderCount).toBe(2);
  });

  it('records nothing for arrays, for strict refusals or for invalid strings', () => {
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const migration = new CorrelationMigration({ logger, metrics });
    normalizeCorrelation(['x'], 'accept', 'p', migration);
    normalizeCorrelation('x', 'strict', 'p', migration);
    normalizeCorrelation('', 'accept', 'p', migration);
    expect(metrics.total(CORRELATION_STRING_COUNTER)).toBe(0);
    expect(logger.entries).toEqual([]);
  });

  it('labels an unnamed sender "unknown"', () => {
    const metrics = new Metrics();
    normalizeCorrelation('x', 'accept', undefined, new CorrelationMigration({ metrics }));
    expect(metrics.get(CORRELATION_STRING_COUNTER, { sender: 'unknown' })).toBe(1);
  });

  it('works without a logger or metrics', () => {
    const migration = new CorrelationMigration();
    expect(() => migration.recordStringCorrelation('p')).not.toThrow();
    expect(migration.hasWarned('p')).toBe(true);
  });

  it('stops per-sender warnings past the tracking bound but keeps counting', () => {
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const migration = new CorrelationMigration({ logger, metrics, maxTrackedSenders: 2 });
    for (const sender of ['a', 'b', 'c', 'd', 'a']) migration.recordStringCorrelation(sender);
    expect(logger.entries.map((e) => e.fields.sender ?? 'summary')).toEqual(['a', 'b', 'summary']);
    expect(logger.entries[2]?.message).toMatch(/suppressed/);
    expect(metrics.total(CORRELATION_STRING_COUNTER)).toBe(5);
    expect(metrics.get(CORRELATION_STRING_COUNTER, { sender: 'd' })).toBe(1);
  });
});

describe('getSingleCorrelation (requirement 16)', () => {
  it('returns the first element or undefined', () => {
    expect(getSingleCorrelation({ correlationId: ['a', 'b'] })).toBe('a');
    expect(getSingleCorrelation({ correlationId: [] })).toBeUndefined();
    expect(getSingleCorrelation({})).toBeUndefined();
  });
});

describe('sameCorrelationSet (requirement 12: compare as sets)', () => {
  it('ignores order and repetition', () => {
    expect(sameCorrelationSet(['a', 'b'], ['b', 'a'])).toBe(true);
    expect(sameCorrelationSet(['a', 'a', 'b'], ['b', 'a'])).toBe(true);
    expect(sameCorrelationSet(['a'], ['a', 'b'])).toBe(false);
    expect(sameCorrelationSet(['a', 'c'], ['a', 'b'])).toBe(false);
  });

  it('treats absent as empty', () => {
    expect(sameCorrelationSet(undefined, [])).toBe(true);
    expect(sameCorrelationSet(undefined, undefined)).toBe(true);
    expect(sameCorrelationSet(undefined, ['a'])).toBe(false);
  });

  it('is invariant under shuffling (property)', () => {
    fc.assert(
      fc.property(ids, fc.nat(), (list, seed) => {
        const shuffled = [...list].sort(
          (x, y) => ((x.charCodeAt(0) * seed) % 7) - ((y.charCodeAt(0) * seed) % 7),
        );
        expect(sameCorrelationSet(list, shuffled)).toBe(true);
        expect(sameCorrelationSet(list, [...list, ...list])).toBe(true);
      }),
    );
  });
});

describe('mergeCorrelation', () => {
  it('unions lists without duplicates, in order of first occurrence', () => {
    expect(mergeCorrelation(['a', 'b'], undefined, ['b', 'c', 'a'])).toEqual(['a', 'b', 'c']);
    expect(mergeCorrelation()).toEqual([]);
  });

  it('contains exactly the members of its inputs (property)', () => {
    fc.assert(
      fc.property(ids, ids, (a, b) => {
        const merged = mergeCorrelation(a, b);
        expect(new Set(merged).size).toBe(merged.length);
        expect(sameCorrelationSet(merged, [...a, ...b])).toBe(true);
      }),
    );
  });
});
