import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newSessionKey } from '../../../core/session-key.js';
import { formatEventId, newStreamId, parseEventId } from './event-id.js';
import { eventStoreContract } from './event-store.contract.js';
import { EVENT_OVERHEAD_BYTES, MemoryEventStore } from './memory-event-store.js';

eventStoreContract('MemoryEventStore', (limits) => new MemoryEventStore(limits));

const T0 = Date.UTC(2026, 10, 21);

/** Any code point, lone surrogates included, ASCII half the time (the 'binary' unit is slow to start). */
const anyChar = fc
  .oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0, max: 0x10ffff }))
  .map((c) => String.fromCodePoint(c));

/** A payload that costs exactly `bytes` in the store's accounting. */
const payload = (bytes: number) => 'x'.repeat(bytes - EVENT_OVERHEAD_BYTES);

const parseStream = (id: string) => parseEventId(id)!.streamId;

describe('MemoryEventStore options', () => {
  it.each([
    { maxEventsPerSession: 0 },
    { maxEventAgeMs: -1 },
    { maxTotalBytes: 1.5 },
    { maxStreamsPerSession: Number.NaN },
  ])('refuses %j', (options) => {
    expect(() => new MemoryEventStore(options)).toThrow(RangeError);
  });

  it('charges UTF-8 bytes plus a fixed overhead per event', () => {
    const store = new MemoryEventStore();
    store.append('s1', newStreamId(), 'défg😀', T0);
    expect(store.stats().bytes).toBe(9 + EVENT_OVERHEAD_BYTES);
  });
});

describe('MemoryEventStore total byte budget', () => {
  it('takes the oldest events of the largest session first and spares small sessions', () => {
    const store = new MemoryEventStore({ maxTotalBytes: 16 * 1000 });
    const [big, small] = [newStreamId(), newStreamId()];
    const smallIds = [0, 1].map((i) => store.append('small', small, payload(1000), T0 + i));
    const primed = store.prime('big', big, T0);
    const bigIds: string[] = [];
    for (let i = 0; i < 14; i++) bigIds.push(store.append('big', big, payload(1000), T0 + i));
    expect(store.stats().bytes).toBe(16_000);
    const overflow = store.append('big', big, payload(1000), T0 + 20);
    // 17,000 > 16,000: shed to 15/16 of the budget (15,000) from the big session alone.
    expect(store.stats()).toMatchObject({ events: 15, bytes: 15_000 });
    const replay = store.replayAfter('big', primed, T0 + 20);
    expect(replay).toMatchObject({ ok: true, gap: true, missedFrom: parseEventId(bigIds[0]!)!.seq });
    expect(replay.ok && replay.events.map((e) => e.id)).toEqual([...bigIds.slice(2), overflow]);
    expect(store.replayAfter('small', smallIds[0]!, T0 + 20)).toMatchObject({ gap: false, events: [{}] });
  });

  it('levels the largest sessions down together when one alone would not free enough', () => {
    const store = new MemoryEventStore({ maxTotalBytes: 16 * 1000 });
    const primed = new Map<string, string>();
    for (const [session, count] of [
      ['a', 7],
      ['b', 6],
      ['c', 2],
    ] as const) {
      const stream = newStreamId();
      primed.set(session, store.prime(session, stream, T0));
      for (let i = 0; i < count; i++) store.append(session, stream, payload(1000), T0 + i);
    }
    const cStream = parseStream(primed.get('c')!);
    store.append('c', cStream, payload(4000), T0 + 10);
    // 19,000 bytes: 4,000 must go. Levelling a (7,000) alone or a and b (6,000) frees only 1,000;
    // levelling all three frees enough at (19,000 - 4,000) / 3 = 5,000 each.
    expect(store.stats()).toMatchObject({ bytes: 15_000 });
    const kept = (session: string) => {
      const replay = store.replayAfter(session, primed.get(session)!, T0 + 10);
      if (!replay.ok) throw new Error('no replay');
      return { gap: replay.gap, sizes: replay.events.map((e) => e.data.length + EVENT_OVERHEAD_BYTES) };
    };
    expect(kept('a')).toEqual({ gap: true, sizes: [1000, 1000, 1000, 1000, 1000] });
    expect(kept('b')).toEqual({ gap: true, sizes: [1000, 1000, 1000, 1000, 1000] });
    expect(kept('c')).toEqual({ gap: true, sizes: [1000, 4000] });
  });

  it('lets an event larger than the whole budget through and reports it missing', () => {
    const store = new MemoryEventStore({ maxTotalBytes: 1000 });
    const stream = newStreamId();
    const primed = store.prime('s1', stream, T0);
    const huge = store.append('s1', stream, 'x'.repeat(5000), T0);
    expect(formatEventId(stream, 2)).toBe(huge);
    expect(store.stats()).toMatchObject({ events: 0, bytes: 0 });
    expect(store.replayAfter('s1', primed, T0)).toEqual({
      ok: true,
      streamId: stream,
      events: [],
      gap: true,
      missedFrom: 2,
    });
  });
});

describe('MemoryEventStore stream records', () => {
  it('forgets the least recently used streams without events beyond maxStreamsPerSession', () => {
    const store = new MemoryEventStore({ maxStreamsPerSession: 2 });
    const [a, b, c] = [newStreamId(), newStreamId(), newStreamId()];
    const pa = store.prime('s1', a, T0);
    const pb = store.prime('s1', b, T0);
    store.prime('s1', a, T0); // a is now more recently used than b
    store.prime('s1', c, T0);
    expect(store.replayAfter('s1', pb, T0)).toEqual({ ok: false, reason: 'unknown-stream' });
    expect(store.replayAfter('s1', pa, T0)).toMatchObject({ ok: true, gap: false });
    expect(store.stats().streams).toBe(2);
  });

  it('never forgets a stream that still holds events', () => {
    const store = new MemoryEventStore({ maxStreamsPerSession: 1 });
    const streams = [newStreamId(), newStreamId(), newStreamId()];
    const ids = streams.map((s) => store.append('s1', s, 'x', T0));
    expect(store.stats().streams).toBe(3);
    for (const [i, id] of ids.entries()) {
      expect(store.replayAfter('s1', id, T0)).toEqual({
        ok: true,
        streamId: streams[i],
        events: [],
        gap: false,
      });
    }
  });

  it('reports a gap, not a clean replay, for an id from before a forgotten stream came back', () => {
    const store = new MemoryEventStore({ maxStreamsPerSession: 1 });
    const [a, b] = [newStreamId(), newStreamId()];
    const old = store.prime('s1', a, T0);
    store.prime('s1', b, T0); // forgets a
    store.prime('s1', a, T0); // a again, as a new record; forgets b
    const next = store.append('s1', a, 'x', T0);
    expect(store.replayAfter('s1', old, T0)).toEqual({
      ok: true,
      streamId: a,
      events: [{ id: next, data: 'x' }],
      gap: true,
    });
  });
});

describe('MemoryEventStore stream records against a model', () => {
  /**
   * The documented rule, naively: streams in the order they last became idle (primed while
   * holding nothing, or emptied by eviction); registering one more than the limit forgets idle
   * ones from the front; a stream with events is never forgotten.
   */
  class Model {
    readonly known = new Map<string, { live: number }>();
    idle: string[] = [];
    queue: string[] = [];
    constructor(
      readonly maxStreams: number,
      readonly maxEvents: number,
    ) {}
    #register(id: string): { live: number } {
      let s = this.known.get(id);
      if (s) return s;
      s = { live: 0 };
      this.known.set(id, s);
      while (this.known.size > this.maxStreams && this.idle.length > 0) this.known.delete(this.idle.shift()!);
      return s;
    }
    #setIdle(id: string, idle: boolean): void {
      this.idle = this.idle.filter((x) => x !== id);
      if (idle) this.idle.push(id);
    }
    prime(id: string): void {
      const s = this.#register(id);
      if (s.live === 0) this.#setIdle(id, true);
    }
    append(id: string): void {
      const s = this.#register(id);
      if (s.live === 0) this.#setIdle(id, false);
      s.live += 1;
      this.queue.push(id);
      while (this.queue.length > this.maxEvents) {
        const gone = this.queue.shift()!;
        const g = this.known.get(gone)!;
        g.live -= 1;
        if (g.live === 0) this.#setIdle(gone, true);
      }
    }
  }

  it('forgets exactly the streams the rule says, in any sequence of primes and appends', () => {
    const streams = Array.from({ length: 6 }, () => newStreamId());
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: streams.length - 1 })), { maxLength: 60 }),
        (maxStreams, maxEvents, ops) => {
          const store = new MemoryEventStore({
            maxStreamsPerSession: maxStreams,
            maxEventsPerSession: maxEvents,
          });
          const model = new Model(maxStreams, maxEvents);
          for (const [isPrime, i] of ops) {
            const id = streams[i]!;
            if (isPrime) {
              store.prime('s1', id, T0);
              model.prime(id);
            } else {
              store.append('s1', id, 'x', T0);
              model.append(id);
            }
            expect(store.stats().streams).toBe(model.known.size);
          }
          for (const id of streams) {
            const replay = store.replayAfter('s1', formatEventId(id, 1), T0);
            expect(replay.ok || replay.reason === 'unknown-stream').toBe(true);
            expect(replay.ok, id).toBe(model.known.has(id));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps the newest maxStreamsPerSession records when a session opens thousands of streams', () => {
    const store = new MemoryEventStore({ maxStreamsPerSession: 64 });
    const ids: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const stream = newStreamId();
      ids.push(store.prime('s1', stream, T0));
    }
    expect(store.stats().streams).toBe(64);
    expect(store.replayAfter('s1', ids[ids.length - 65]!, T0)).toEqual({
      ok: false,
      reason: 'unknown-stream',
    });
    expect(store.replayAfter('s1', ids[ids.length - 64]!, T0)).toMatchObject({ ok: true, gap: false });
  });
});

describe('MemoryEventStore at scale', () => {
  it('replays correctly across queue compaction', () => {
    const store = new MemoryEventStore({ maxEventsPerSession: 300 });
    const [a, b] = [newStreamId(), newStreamId()];
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) ids.push(store.append('s1', i % 3 === 0 ? a : b, String(i), T0));
    const from = 4990 - (4990 % 3); // an event of a
    const replay = store.replayAfter('s1', ids[from]!, T0);
    const expected = [from + 3, from + 6, from + 9].map((i) => ({ id: ids[i]!, data: String(i) }));
    expect(replay).toEqual({ ok: true, streamId: a, events: expected, gap: false });
    expect(store.stats().events).toBe(300);
  });

  it('answers hostile Last-Event-IDs with a refusal, never an exception or a replay', () => {
    const store = new MemoryEventStore();
    const stream = newStreamId();
    store.append('s1', stream, 'x', T0);
    store.append('s2', newStreamId(), 'y', T0);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: anyChar, maxLength: 200 }),
          fc.tuple(fc.string({ maxLength: 4 }), fc.nat({ max: 5000 })).map(([s, n]) => s.repeat(n)),
          fc.nat().map((n) => `${stream}.${n}`),
          fc.string().map((tail) => `${stream}.1${tail}`),
        ),
        (id) => {
          const result = store.replayAfter('s2', id, T0);
          expect(result.ok).toBe(false);
        },
      ),
    );
  });

  it('keeps idle sessions small: measured heap per session and per event', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const heap = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const n = 10_000;
    const sessions = Array.from({ length: n }, () => newSessionKey());
    const streams = Array.from({ length: n }, () => newStreamId());
    const data = '{"jsonrpc":"2.0","method":"notifications/message"}';

    const store = new MemoryEventStore({ maxEventAgeMs: 1000 });
    const before = heap();
    for (let i = 0; i < n; i++) {
      store.prime(sessions[i]!, streams[i]!, T0);
      store.append(sessions[i]!, streams[i]!, data, T0);
    }
    store.prune(T0 + 2000);
    const perIdleSession = (heap() - before) / n;
    expect(store.stats()).toMatchObject({ sessions: n, streams: n, events: 0, bytes: 0 });

    const events = new MemoryEventStore({ maxEventsPerSession: 100_000 });
    const stream = newStreamId();
    events.append('s', stream, data, T0);
    const beforeEvents = heap();
    for (let i = 0; i < 100_000; i++) events.append('s', stream, data, T0);
    const perEvent = (heap() - beforeEvents) / 100_000;

    console.info(
      `MemoryEventStore: ${perIdleSession.toFixed(0)} B per idle session (one stream, events evicted), ` +
        `${perEvent.toFixed(0)} B per stored event besides its data`,
    );
    expect(perIdleSession).toBeLessThan(512);
    expect(perEvent).toBeLessThanOrEqual(EVENT_OVERHEAD_BYTES);
    // Both stores stay reachable until here, so neither measurement saw them collected.
    expect(store.stats().sessions + events.stats().events).toBe(n + 100_000);
  });
});
