import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { childContext, isValidContext, isValidContextSegment } from './context-path.js';
import { createIdGenerator, idTime, newEnvelopeId } from './ids.js';

describe('envelope ids', () => {
  it('are 26 characters of Crockford base32', () => {
    const id = newEnvelopeId();
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('are valid context segments, so a reasoning/start id can root a context (meup.md requirement 27)', () => {
    for (let i = 0; i < 1000; i++) {
      const id = newEnvelopeId();
      expect(isValidContextSegment(id)).toBe(true);
      expect(isValidContext(id)).toBe(true);
      expect(childContext(id, newEnvelopeId()).ok).toBe(true);
    }
  });

  it('contain no "/" or ":" at any time value (property, requirement 27)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), (now) => {
        const id = createIdGenerator(() => now)();
        expect(id).toHaveLength(26);
        expect(isValidContextSegment(id)).toBe(true);
        expect(idTime(id)).toBe(now);
      }),
    );
  });

  it('are unique and increase within one millisecond', () => {
    const next = createIdGenerator(() => 1_700_000_000_000);
    const ids = Array.from({ length: 500 }, () => next());
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('sort by creation time', () => {
    let now = 1_000;
    const next = createIdGenerator(() => now);
    const first = next();
    now = 2_000;
    const second = next();
    expect(first < second).toBe(true);
    expect(idTime(first)).toBe(1_000);
    expect(idTime(second)).toBe(2_000);
  });

  it('differ between generators (per-generator random prefix)', () => {
    const a = createIdGenerator(() => 0)();
    const b = createIdGenerator(() => 0)();
    expect(a).not.toBe(b);
  });

  it('idTime refuses strings that are not ids', () => {
    expect(idTime('short')).toBeUndefined();
    expect(idTime('ILOU000000AAAAAAAA00000001')).toBeUndefined();
    expect(idTime('/'.repeat(26))).toBeUndefined();
  });
});
