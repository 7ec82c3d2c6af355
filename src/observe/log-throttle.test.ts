import { describe, expect, it } from 'vitest';
import { LogThrottle } from './log-throttle.js';

describe('LogThrottle', () => {
  it('lets the first occurrence of a key through, then one per interval with the count held back', () => {
    let now = 0;
    const throttle = new LogThrottle(1000, () => now);
    expect(throttle.take('a')).toBe(0);
    expect(throttle.take('a')).toBeUndefined();
    expect(throttle.take('a')).toBeUndefined();
    expect(throttle.take('b')).toBe(0);
    now = 999;
    expect(throttle.take('a')).toBeUndefined();
    now = 1000;
    expect(throttle.take('a')).toBe(3);
    expect(throttle.take('a')).toBeUndefined();
    now = 5000;
    expect(throttle.take('a')).toBe(1);
  });

  it('remembers a bounded number of keys', () => {
    const throttle = new LogThrottle(1000, () => 0, 2);
    expect(throttle.take('a')).toBe(0);
    expect(throttle.take('b')).toBe(0);
    expect(throttle.take('c')).toBe(0);
    // Starting over forgot 'a': it is logged again rather than held without bound.
    expect(throttle.take('a')).toBe(0);
  });
});
