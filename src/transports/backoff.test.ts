import { describe, expect, it } from 'vitest';
import { Backoff, DEFAULT_BACKOFF } from './backoff.js';

describe('Backoff', () => {
  it('starts at initialMs and doubles up to maxMs', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1000, stableMs: 60_000 });
    const delays = Array.from({ length: 7 }, () => backoff.next(10));
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect(backoff.streak).toBe(7);
  });

  it('resets the streak once a child stayed up for stableMs', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1000, stableMs: 5000 });
    expect([backoff.next(0), backoff.next(0), backoff.next(0)]).toEqual([100, 200, 400]);
    expect(backoff.next(4999)).toBe(800);
    expect(backoff.next(5000)).toBe(100);
    expect(backoff.next(1)).toBe(200);
  });

  it('never exceeds maxMs, however long the streak', () => {
    const backoff = new Backoff({ initialMs: 250, maxMs: 30_000, stableMs: 30_000 });
    for (let i = 0; i < 2000; i++) expect(backoff.next(0)).toBeLessThanOrEqual(30_000);
  });

  it('defaults to 250 ms doubling to 30 s', () => {
    expect(DEFAULT_BACKOFF).toEqual({ initialMs: 250, maxMs: 30_000, stableMs: 30_000 });
    const backoff = new Backoff();
    expect([backoff.next(0), backoff.next(0), backoff.next(0)]).toEqual([250, 500, 1000]);
  });
});
