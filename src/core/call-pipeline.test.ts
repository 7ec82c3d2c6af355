import { describe, expect, it } from 'vitest';
import { runInterceptors } from './call-pipeline.js';

describe('runInterceptors', () => {
  it('goes on in the same turn while answers come at once, and stops where take says', () => {
    const taken: number[] = [];
    const all = runInterceptors(
      [1, 2, 3],
      0,
      (n) => n * 10,
      (a) => taken.push(a) > 0,
      () => {},
    );
    expect([all, taken]).toEqual([true, [10, 20, 30]]);
    taken.length = 0;
    const take = (a: number) => {
      taken.push(a);
      return a < 20;
    };
    const stopped = runInterceptors(
      [1, 2, 3],
      1,
      (n) => n * 10,
      take,
      () => {},
    );
    expect([stopped, taken]).toEqual([false, [20]]);
  });

  it('hands a promise, or a throw as a rejected promise, to wait with its index and stops', async () => {
    const waits: [number, unknown][] = [];
    const wait = (p: Promise<number>, _n: number, i: number) => {
      p.then(
        (v) => waits.push([i, v]),
        (e: unknown) => waits.push([i, String(e)]),
      );
    };
    const asked: number[] = [];
    const ask = (n: number) => {
      asked.push(n);
      if (n === 2) return Promise.resolve(20);
      if (n === 3) throw new Error('boom');
      return n;
    };
    expect(runInterceptors([1, 2, 3], 0, ask, () => true, wait)).toBe(false);
    expect(runInterceptors([1, 2, 3], 2, ask, () => true, wait)).toBe(false);
    await Promise.resolve();
    await Promise.resolve();
    expect(asked).toEqual([1, 2, 3]);
    expect(waits).toEqual([
      [1, 20],
      [2, 'Error: boom'],
    ]);
  });
});
