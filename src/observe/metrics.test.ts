import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LABEL_SETS_FOLDED_METRIC, MAX_LABEL_SETS_PER_COUNTER, Metrics } from './metrics.js';

describe('Metrics', () => {
  it('counts one label set as one counter, whatever the order of its labels', () => {
    const m = new Metrics();
    m.inc('calls_total', { tier: 'T1', action: 'allow' });
    m.inc('calls_total', { action: 'allow', tier: 'T1' }, 2);
    expect(m.get('calls_total', { tier: 'T1', action: 'allow' })).toBe(3);
    expect(m.get('calls_total', { action: 'allow', tier: 'T1' })).toBe(3);
  });

  it('keeps label sets apart, including ones that would read alike if their parts were joined', () => {
    const m = new Metrics();
    m.inc('x', { a: 'b', c: 'd' });
    m.inc('x', { a: 'b\u0000c\u0001d' });
    m.inc('x', { a: 'b,c="d"' });
    m.inc('x');
    expect(m.get('x', { a: 'b', c: 'd' })).toBe(1);
    expect(m.get('x', { a: 'b\u0000c\u0001d' })).toBe(1);
    expect(m.get('x', { a: 'b,c="d"' })).toBe(1);
    expect(m.get('x')).toBe(1);
    expect(m.total('x')).toBe(4);
  });

  it('counts no labels and an empty label set as one series', () => {
    const metrics = new Metrics();
    metrics.inc('x');
    metrics.inc('x', {});
    expect(metrics.snapshot()).toEqual([{ name: 'x', labels: {}, value: 2 }]);
    expect(metrics.get('x', {})).toBe(2);
  });

  it('keeps separate instances separate', () => {
    const one = new Metrics();
    const two = new Metrics();
    one.inc('y', { k: 'v' });
    expect(two.get('y', { k: 'v' })).toBe(0);
  });

  it('keeps at most MAX_LABEL_SETS_PER_COUNTER label sets per counter: 100,000 invented methods stay bounded', () => {
    const m = new Metrics();
    m.inc('modern_requests_total', { method: 'tools/call' });
    m.inc('http_rejected_total', { reason: 'too-large' });
    for (let i = 0; i < 100_000; i++) {
      m.inc('modern_requests_total', { method: `x/${i}/${Math.random().toString(36).slice(2)}` });
      // A getter never makes room either.
      m.get('modern_requests_total', { method: `never-counted/${i}` });
    }
    const { labelSets, keyNodes } = m.footprint();
    // The counter's label sets up to the cap, its overflow set, the other counter, the fold counter.
    expect(labelSets).toBe(MAX_LABEL_SETS_PER_COUNTER + 3);
    expect(m.snapshot()).toHaveLength(labelSets);
    // Each label set cached is a path of three nodes (name, label name, value), names shared.
    expect(keyNodes).toBeLessThanOrEqual(3 * labelSets);
    // Nothing is lost: every increment is somewhere, and the folds are counted.
    expect(m.total('modern_requests_total')).toBe(100_001);
    const folded = 100_000 - (MAX_LABEL_SETS_PER_COUNTER - 1);
    expect(m.get('modern_requests_total', { method: 'other' })).toBe(folded);
    expect(m.get(LABEL_SETS_FOLDED_METRIC, { counter: 'modern_requests_total' })).toBe(folded);
    // Label sets kept before the cap keep counting as themselves; other counters are untouched.
    m.inc('modern_requests_total', { method: 'tools/call' });
    expect(m.get('modern_requests_total', { method: 'tools/call' })).toBe(2);
    m.inc('http_rejected_total', { reason: 'too-large' });
    expect(m.get('http_rejected_total', { reason: 'too-large' })).toBe(2);
  });

  it('whatever label sets come, in whatever order, the footprint stays within the cap and no increment is lost', () => {
    const labelSet = fc.record(
      { a: fc.string({ maxLength: 6 }), b: fc.string({ maxLength: 6 }) },
      { requiredKeys: ['a'] },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('one', 'two'), labelSet, fc.integer({ min: 1, max: 3 })), {
          maxLength: 3_000,
        }),
        (increments) => {
          const m = new Metrics();
          let sum = 0;
          for (const [name, labels, by] of increments) {
            m.inc(name, labels, by);
            sum += by;
          }
          const { labelSets, keyNodes } = m.footprint();
          // Per name: the cap, plus one overflow set per label-name shape ({a} or {a, b}); the fold counter's two.
          expect(labelSets).toBeLessThanOrEqual(2 * (MAX_LABEL_SETS_PER_COUNTER + 2) + 2);
          expect(keyNodes).toBeLessThanOrEqual(5 * labelSets);
          expect(m.total('one') + m.total('two')).toBe(sum);
        },
      ),
      { numRuns: 30 },
    );
  });
});
