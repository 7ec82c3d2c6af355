/**
 * The cut's rule on its own, over a stream whose unsent bytes the test sets: a reader is cut once
 * it holds the bound unsent, except while it is taking one message larger than the bound, which is
 * allowed on top of the bound until the stream is back under it.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import { SlowReaderCut } from './slow-reader-cut.js';

/** A response whose unsent bytes are what the test says. */
function stream() {
  const s = {
    writableLength: 0,
    destroyed: false,
    destroy() {
      s.destroyed = true;
    },
  };
  return s;
}

const cut = () =>
  new SlowReaderCut({ maxBufferedBytes: 1000, metrics: new Metrics(), logger: new MemoryLogger() });
const behind = (c: SlowReaderCut, s: ReturnType<typeof stream>, next?: string) =>
  c.cutIfBehind(s as unknown as ServerResponse, 'sse-2024', { session: 'S' }, next);

describe('SlowReaderCut', () => {
  it('cuts a stream that holds the bound unsent', () => {
    const c = cut();
    const s = stream();
    s.writableLength = 999;
    expect(behind(c, s, 'x')).toBe(false);
    s.writableLength = 1000;
    expect(behind(c, s, 'x')).toBe(true);
    expect(s.destroyed).toBe(true);
  });

  it('lets a reader take one message larger than the bound, and cuts it once it holds more than both', () => {
    const c = cut();
    const s = stream();
    const big = 'b'.repeat(5000);
    expect(behind(c, s, big)).toBe(false);
    s.writableLength = 5000;
    // The next event right after the big one is not refused: the reader is taking it.
    expect(behind(c, s, 'small')).toBe(false);
    s.writableLength = 5900;
    expect(behind(c, s, 'small')).toBe(false);
    // A reader that stopped: what it holds reaches the bound plus the big message.
    s.writableLength = 6000;
    expect(behind(c, s, 'small')).toBe(true);
  });

  it('forgets the allowance once the stream is back under the bound', () => {
    const c = cut();
    const s = stream();
    expect(behind(c, s, 'b'.repeat(5000))).toBe(false);
    s.writableLength = 500;
    expect(behind(c, s, 'small')).toBe(false);
    s.writableLength = 1000;
    expect(behind(c, s, 'small')).toBe(true);
  });
});
