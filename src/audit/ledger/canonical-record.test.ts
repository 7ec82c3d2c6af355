import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize, toWellFormedJson } from '../canonical-json.js';
import { canonicalJson, canonicalRepairedJson } from './canonical-record.js';

/** The outcome of a canonicalizer: its text, or the reason it refused. */
function outcome(fn: (value: unknown) => string, value: unknown): string {
  try {
    return `ok ${fn(value)}`;
  } catch (error) {
    return `error ${(error as { details?: { reason?: string } }).details?.reason}`;
  }
}

describe('canonicalJson', () => {
  it('is byte-identical to canonicalize for any repaired JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), (raw) => {
        const value = toWellFormedJson(raw);
        expect(canonicalJson(value)).toBe(canonicalize(value));
      }),
      { numRuns: 200 },
    );
  });

  it('is byte-identical to canonicalize for anything, refusals included', () => {
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withBoxedValues: true, withMap: true, withNullPrototype: true }),
        (value) => {
          expect(outcome(canonicalJson, value)).toBe(outcome(canonicalize, value));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('handles what the fast path cannot: array-index names, __proto__, lone surrogates, toJSON, cycles', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const cases: unknown[] = [
      { '10': 1, '2': 2, b: 3 },
      JSON.parse('{"__proto__":{"x":1},"a":2}'),
      { lone: 'a\ud800' },
      { date: new Date(0) },
      [1, undefined, () => 1],
      { nan: Number.NaN },
      cyclic,
      { deep: JSON.parse(`${'['.repeat(300)}${']'.repeat(300)}`) },
    ];
    for (const value of cases) expect(outcome(canonicalJson, value)).toBe(outcome(canonicalize, value));
    expect(canonicalJson({ '10': 1, '2': 2, b: 3 })).toBe('{"10":1,"2":2,"b":3}');
  });

  it('canonicalRepairedJson is canonicalize(toWellFormedJson(value)) for anything, and never throws', () => {
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withBoxedValues: true, withMap: true, withNullPrototype: true }),
        (value) => {
          expect(canonicalRepairedJson(value)).toBe(canonicalize(toWellFormedJson(value)));
        },
      ),
      { numRuns: 300 },
    );
    const cyclic: Record<string, unknown> = { a: [1, Number.NaN, 'x\ud800'] };
    cyclic.self = cyclic;
    expect(canonicalRepairedJson(cyclic)).toBe('{"a":[1,null,"x\ufffd"],"self":"[Circular]"}');
  });
});
