import { describe, expect, it } from 'vitest';
import { Metrics } from './metrics.js';

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

  it('keeps separate instances separate', () => {
    const one = new Metrics();
    const two = new Metrics();
    one.inc('y', { k: 'v' });
    expect(two.get('y', { k: 'v' })).toBe(0);
  });
});
