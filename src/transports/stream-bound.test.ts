/**
 * The stream bound over real streams: a TCP pair on loopback whose reader pauses, and a Node
 * `Writable` whose consumer takes chunks only when the test says so.
 */
import { createServer, type Server, Socket } from 'node:net';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FlowGate } from './flow-gate.js';
import { StreamBound } from './stream-bound.js';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) s.close();
});

/** A connected pair on loopback: `writer` is ours, `reader` the peer, paused (it reads nothing). */
async function socketPair(): Promise<{ writer: Socket; reader: Socket }> {
  const server = createServer();
  servers.push(server);
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const reader = new Socket();
  reader.pause();
  sockets.push(reader);
  await new Promise<void>((resolve) => reader.connect(port, '127.0.0.1', resolve));
  const writer = await accepted;
  sockets.push(writer);
  return { writer, reader };
}

/** Writes `chunk` until the bound says the peer is behind; the number of writes. */
function fillUntilBehind(bound: StreamBound, writer: Socket, chunk: string, max = 100_000): number {
  let writes = 0;
  while (!bound.isBehind(writer) && writes < max) {
    writer.write(chunk);
    writes++;
  }
  return writes;
}

/** A `Writable` whose consumer takes the chunks it holds only when `take()` is called. */
function heldWritable(highWaterMark = 16 * 1024) {
  const held: (() => void)[] = [];
  const stream = new Writable({
    highWaterMark,
    write(_chunk, _encoding, callback) {
      held.push(callback);
    },
  });
  /** Lets the consumer take everything written so far (one chunk per turn, as a socket would). */
  const take = (): void => {
    const next = held.shift();
    if (next === undefined) return;
    next();
    if (held.length > 0) setImmediate(take);
  };
  return { stream, take };
}

describe('StreamBound', () => {
  it('refuses a bound that is not a positive number of bytes', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => new StreamBound(bad)).toThrow(RangeError);
  });

  it('reads what the peer has not taken from the socket itself: behind only once that reaches the bound', async () => {
    const { writer } = await socketPair();
    const bound = new StreamBound(256 * 1024);
    expect(bound.isBehind(writer)).toBe(false);
    const writes = fillUntilBehind(bound, writer, 'x'.repeat(16 * 1024));
    expect(writes).toBeLessThan(100_000);
    expect(bound.unsent(writer)).toBe(writer.writableLength);
    expect(writer.writableLength).toBeGreaterThanOrEqual(256 * 1024);
    // At most the bound plus the one write that crossed it.
    expect(writer.writableLength).toBeLessThan(256 * 1024 + 16 * 1024);
  });

  it('does not count what a cork holds back: a burst written in one turn to a peer that reads is not behind', async () => {
    const { writer, reader } = await socketPair();
    reader.resume();
    const bound = new StreamBound(128 * 1024);
    writer.cork();
    for (let i = 0; i < 32; i++) writer.write('c'.repeat(16 * 1024));
    expect(writer.writableLength).toBe(512 * 1024);
    expect(bound.isBehind(writer)).toBe(false);
    expect(writer.writableCorked).toBe(0);
    expect(writer.writableLength).toBeLessThan(128 * 1024);
  });

  it('says the peer caught up once it reads, not before', async () => {
    const { writer, reader } = await socketPair();
    const bound = new StreamBound(128 * 1024);
    fillUntilBehind(bound, writer, 'y'.repeat(8 * 1024));
    const ready = vi.fn();
    bound.whenCaughtUp(writer, ready);
    await new Promise((r) => setTimeout(r, 50));
    expect(ready).not.toHaveBeenCalled();
    reader.resume();
    await vi.waitFor(() => expect(ready).toHaveBeenCalledTimes(1), { timeout: 10_000 });
    expect(bound.isBehind(writer)).toBe(false);
  });

  it('ends the wait when the stream closes: a closed stream holds nothing anyone waits for', async () => {
    const { writer } = await socketPair();
    const bound = new StreamBound(64 * 1024);
    fillUntilBehind(bound, writer, 'z'.repeat(8 * 1024));
    const ready = vi.fn();
    bound.whenCaughtUp(writer, ready);
    writer.destroy();
    await vi.waitFor(() => expect(ready).toHaveBeenCalledTimes(1), { timeout: 10_000 });
    expect(bound.unsent(writer)).toBe(0);
  });

  it('answers from a later turn when the peer is not behind, and never after a cancel', async () => {
    const { writer } = await socketPair();
    const bound = new StreamBound(1024 * 1024);
    const ready = vi.fn();
    bound.whenCaughtUp(writer, ready);
    expect(ready).not.toHaveBeenCalled();
    await vi.waitFor(() => expect(ready).toHaveBeenCalledTimes(1));
    const cancelled = vi.fn();
    bound.whenCaughtUp(writer, cancelled)();
    await new Promise((r) => setTimeout(r, 20));
    expect(cancelled).not.toHaveBeenCalled();
  });

  it('still sees the peer catch up when the bound is below the stream’s high-water mark (no drain promised)', async () => {
    const { stream, take } = heldWritable(64 * 1024);
    const bound = new StreamBound(100);
    stream.write('a'.repeat(200));
    expect(bound.isBehind(stream)).toBe(true);
    expect(stream.writableNeedDrain).toBe(false);
    const ready = vi.fn();
    bound.whenCaughtUp(stream, ready);
    await new Promise((r) => setTimeout(r, 30));
    expect(ready).not.toHaveBeenCalled();
    take();
    await vi.waitFor(() => expect(ready).toHaveBeenCalledTimes(1));
  });

  it('holds the producers’ gates closed while the peer is behind, and reopens them once it caught up', async () => {
    const { writer, reader } = await socketPair();
    const bound = new StreamBound(128 * 1024);
    const input = new FlowGate();
    const upstream = new FlowGate();
    expect(bound.holdWhileBehind(writer, [input, upstream], 'stdout')).toBe(false);
    fillUntilBehind(bound, writer, 'w'.repeat(8 * 1024));
    expect(bound.holdWhileBehind(writer, [input, upstream], 'stdout')).toBe(true);
    // A second call while behind arms nothing more: one hold, one release.
    expect(bound.holdWhileBehind(writer, [input, upstream], 'stdout')).toBe(true);
    expect([input.open, upstream.open]).toEqual([false, false]);
    const changes: boolean[] = [];
    input.watch((open) => changes.push(open));
    reader.resume();
    await vi.waitFor(() => expect([input.open, upstream.open]).toEqual([true, true]), { timeout: 10_000 });
    expect(changes).toEqual([true]);
  });

  it('property: a writer that writes only while its peer is not behind never holds more than the bound plus one chunk', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 64 * 1024 }),
        fc.array(fc.integer({ min: 1, max: 32 * 1024 }), { minLength: 1, maxLength: 80 }),
        async (max, sizes) => {
          const { stream, take } = heldWritable(16 * 1024);
          const bound = new StreamBound(max);
          let peak = 0;
          let refused = 0;
          for (const size of sizes) {
            if (bound.isBehind(stream)) {
              refused++;
              continue;
            }
            stream.write('q'.repeat(size));
            peak = Math.max(peak, stream.writableLength);
          }
          expect(peak).toBeLessThan(max + Math.max(...sizes));
          if (sizes.reduce((a, b) => a + b, 0) >= max + Math.max(...sizes))
            expect(refused).toBeGreaterThan(0);
          // Once the consumer takes everything, the wait ends.
          const caughtUp = new Promise<void>((resolve) => bound.whenCaughtUp(stream, resolve));
          take();
          await caughtUp;
          expect(bound.isBehind(stream)).toBe(false);
        },
      ),
      { numRuns: 50 },
    );
  });
});
