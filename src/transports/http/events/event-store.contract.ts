/**
 * The contract every `EventStore` keeps, written once and run against each implementation (the
 * way Hono runs one router suite against every router): `eventStoreContract('memory', make)`.
 *
 * It checks only what the port promises: ids, isolation, refusals, oldest-first eviction by count
 * and age, and gap reporting, ending with a model-based property over random interleavings.
 * Budgets specific to one implementation (the memory store's byte cap) are tested beside it.
 * Every call is awaited so the suite also runs against a store whose methods return promises.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatEventId, newStreamId, parseEventId } from './event-id.js';
import type { EventStore, EventStoreLimits, ReplayResult, StoredEvent } from './event-store.js';

/** Builds a fresh, empty store with the given bounds (defaults for those left out), isolated from other stores it built. */
export type MakeEventStore = (limits: EventStoreLimits) => EventStore | Promise<EventStore>;

const T0 = 1_000_000;

function seqOf(id: string): number {
  const parsed = parseEventId(id);
  if (parsed === undefined) throw new Error(`store issued an unreadable id ${id}`);
  return parsed.seq;
}

/** Runs the shared `EventStore` suite against stores built by `make`. */
export function eventStoreContract(name: string, make: MakeEventStore): void {
  describe(`${name} (EventStore contract)`, () => {
    describe('ids', () => {
      it('gives every event and priming position a distinct id naming its stream', async () => {
        const store = await make({});
        const [a, b] = [newStreamId(), newStreamId()];
        const ids = [
          await store.prime('s1', a, T0),
          await store.append('s1', a, 'x', T0),
          await store.append('s1', b, 'y', T0),
          await store.prime('s1', b, T0),
          await store.append('s1', a, 'z', T0),
        ];
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids.map((id) => parseEventId(id)?.streamId)).toEqual([a, a, b, b, a]);
        const seqs = ids.map(seqOf);
        expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      });

      it('refuses stream ids it could not write into an event id', async () => {
        const store = await make({});
        for (const bad of ['', 'a.b', 'a b', 'é', 'x'.repeat(65), 'a\nb']) {
          await expect(async () => store.append('s1', bad, 'x', T0)).rejects.toThrow(RangeError);
          await expect(async () => store.prime('s1', bad, T0)).rejects.toThrow(RangeError);
        }
      });

      it('keeps a stream to the session that first used it', async () => {
        const store = await make({});
        const stream = newStreamId();
        await store.append('s1', stream, 'x', T0);
        await expect(async () => store.append('s2', stream, 'y', T0)).rejects.toThrow(RangeError);
        await expect(async () => store.prime('s2', stream, T0)).rejects.toThrow(RangeError);
      });
    });

    describe('replay', () => {
      it('replays the later events of that stream only, in order, data intact', async () => {
        const store = await make({});
        const [a, b] = [newStreamId(), newStreamId()];
        const first = await store.append('s1', a, 'a1', T0);
        await store.append('s1', b, 'b1', T0);
        const a2 = await store.append('s1', a, 'line 1\nline 2', T0);
        await store.append('s2', newStreamId(), 'other session', T0);
        const a3 = await store.append('s1', a, '{"unicode":"é😀\\u0000"}', T0);
        const a4 = await store.append('s1', a, '', T0);
        await store.append('s1', b, 'b2', T0);
        expect(await store.replayAfter('s1', first, T0)).toEqual({
          ok: true,
          streamId: a,
          gap: false,
          events: [
            { id: a2, data: 'line 1\nline 2' },
            { id: a3, data: '{"unicode":"é😀\\u0000"}' },
            { id: a4, data: '' },
          ],
        });
        expect(await store.replayAfter('s1', a4, T0)).toEqual({
          ok: true,
          streamId: a,
          gap: false,
          events: [],
        });
      });

      it('replays everything appended after a priming id, and nothing before it', async () => {
        const store = await make({});
        const stream = newStreamId();
        const before = await store.append('s1', stream, 'before', T0);
        const primed = await store.prime('s1', stream, T0);
        expect(await store.replayAfter('s1', primed, T0)).toEqual({
          ok: true,
          streamId: stream,
          gap: false,
          events: [],
        });
        const after = await store.append('s1', stream, 'after', T0);
        const replay = await store.replayAfter('s1', primed, T0);
        expect(replay).toEqual({
          ok: true,
          streamId: stream,
          gap: false,
          events: [{ id: after, data: 'after' }],
        });
        expect(before).not.toBe(primed);
      });

      it('never replays another session, even with a valid id', async () => {
        const store = await make({});
        const stream = newStreamId();
        const id = await store.append('s1', stream, 'secret', T0);
        const primed = await store.prime('s1', stream, T0);
        await store.append('s1', stream, 'secret 2', T0);
        await store.append('s2', newStreamId(), 'mine', T0);
        for (const session of ['s2', 'never-seen']) {
          expect(await store.replayAfter(session, id, T0)).toEqual({ ok: false, reason: 'other-session' });
          expect(await store.replayAfter(session, primed, T0)).toEqual({
            ok: false,
            reason: 'other-session',
          });
        }
      });

      it('refuses ids of streams it does not know', async () => {
        const store = await make({});
        await store.append('s1', newStreamId(), 'x', T0);
        const unknown = formatEventId(newStreamId(), 1);
        expect(await store.replayAfter('s1', unknown, T0)).toEqual({ ok: false, reason: 'unknown-stream' });
      });

      it.each([
        ['empty', ''],
        ['no sequence number', 'abc'],
        ['10 KB', 'a'.repeat(10_000)],
        ['10 KB with a dot', `${'a'.repeat(10_000)}.1`],
        ['unicode', 'ſtrëam.1'],
        ['zero', 'abc.0'],
        ['negative', 'abc.-1'],
        ['whitespace', ' abc.1 '],
        ['header injection', 'abc.1\r\nSet-Cookie: x=y'],
      ])('refuses a %s Last-Event-ID as malformed', async (_label, id) => {
        const store = await make({});
        await store.append('s1', newStreamId(), 'x', T0);
        expect(await store.replayAfter('s1', id, T0)).toEqual({ ok: false, reason: 'malformed' });
      });

      it('refuses a sequence number its stream never reached', async () => {
        const store = await make({});
        const stream = newStreamId();
        const last = await store.append('s1', stream, 'x', T0);
        await store.append('s1', newStreamId(), 'y', T0);
        for (const seq of [seqOf(last) + 1, seqOf(last) + 1000, Number.MAX_SAFE_INTEGER]) {
          const future = formatEventId(stream, seq);
          expect(await store.replayAfter('s1', future, T0)).toEqual({ ok: false, reason: 'malformed' });
        }
      });
    });

    describe('bounds and gaps', () => {
      it('evicts a session’s oldest events beyond maxEventsPerSession and reports the gap', async () => {
        const store = await make({ maxEventsPerSession: 3 });
        const stream = newStreamId();
        const primed = await store.prime('s1', stream, T0);
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(await store.append('s1', stream, `e${i}`, T0));
        const kept: StoredEvent[] = [2, 3, 4].map((i) => ({ id: ids[i]!, data: `e${i}` }));
        const fromPrime = await store.replayAfter('s1', primed, T0);
        expect(fromPrime).toMatchObject({ ok: true, streamId: stream, gap: true, events: kept });
        expectMissedFrom(fromPrime, ids[0]!);
        expect(await store.replayAfter('s1', ids[0]!, T0)).toMatchObject({ gap: true, events: kept });
        expect(await store.replayAfter('s1', ids[1]!, T0)).toEqual({
          ok: true,
          streamId: stream,
          gap: false,
          events: kept,
        });
        expect((await store.stats()).events).toBe(3);
      });

      it('counts events per session, not per stream and not across sessions', async () => {
        const store = await make({ maxEventsPerSession: 2 });
        const [a, b, c] = [newStreamId(), newStreamId(), newStreamId()];
        const a1 = await store.append('s1', a, 'a1', T0);
        const a2 = await store.append('s1', a, 'a2', T0);
        const c1 = await store.append('s2', c, 'c1', T0);
        await store.append('s1', b, 'b1', T0);
        await store.append('s1', b, 'b2', T0);
        expect(await store.replayAfter('s1', a1, T0)).toMatchObject({ gap: true, events: [] });
        expect(await store.replayAfter('s1', a2, T0)).toMatchObject({ gap: false, events: [] });
        const c2 = await store.append('s2', c, 'c2', T0);
        expect(await store.replayAfter('s2', c1, T0)).toMatchObject({ gap: false, events: [{ id: c2 }] });
      });

      it('evicts events older than maxEventAgeMs when the session is used', async () => {
        const store = await make({ maxEventAgeMs: 1000 });
        const stream = newStreamId();
        const primed = await store.prime('s1', stream, T0);
        const old = await store.append('s1', stream, 'old', T0);
        const young = await store.append('s1', stream, 'young', T0 + 500);
        expect(await store.replayAfter('s1', primed, T0 + 1000)).toMatchObject({
          gap: false,
          events: [{ id: old }, { id: young }],
        });
        const late = await store.replayAfter('s1', primed, T0 + 1001);
        expect(late).toMatchObject({ ok: true, gap: true, events: [{ id: young, data: 'young' }] });
        expectMissedFrom(late, old);
        expect(await store.replayAfter('s1', old, T0 + 1001)).toMatchObject({
          gap: false,
          events: [{ id: young }],
        });
        expect(await store.replayAfter('s1', primed, T0 + 1501)).toMatchObject({ gap: true, events: [] });
      });

      it('prune(now) evicts expired events of sessions nobody touches', async () => {
        const store = await make({ maxEventAgeMs: 1000 });
        await store.append('s1', newStreamId(), 'x', T0);
        await store.append('s2', newStreamId(), 'y', T0 + 600);
        await store.prune(T0 + 1200);
        expect(await store.stats()).toMatchObject({ sessions: 2, events: 1 });
        await store.prune(T0 + 1700);
        expect(await store.stats()).toMatchObject({ sessions: 2, events: 0, bytes: 0 });
      });

      it('still places a stream whose events were all evicted, and reports the gap', async () => {
        const store = await make({ maxEventsPerSession: 1 });
        const stream = newStreamId();
        const primed = await store.prime('s1', stream, T0);
        await store.append('s1', stream, 'lost', T0);
        await store.append('s1', newStreamId(), 'pushes it out', T0);
        expect(await store.replayAfter('s1', primed, T0)).toMatchObject({
          ok: true,
          streamId: stream,
          gap: true,
          events: [],
        });
      });
    });

    describe('sessions', () => {
      it('dropSession forgets the session’s events and streams and leaves others alone', async () => {
        const store = await make({});
        const [a, b] = [newStreamId(), newStreamId()];
        const a1 = await store.append('s1', a, 'x', T0);
        const b1 = await store.append('s2', b, 'y', T0);
        const b2 = await store.append('s2', b, 'z', T0);
        await store.dropSession('s1');
        await store.dropSession('s1');
        await store.dropSession('never-seen');
        expect(await store.replayAfter('s1', a1, T0)).toEqual({ ok: false, reason: 'unknown-stream' });
        expect(await store.replayAfter('s2', b1, T0)).toMatchObject({ gap: false, events: [{ id: b2 }] });
        expect(await store.stats()).toMatchObject({ sessions: 1, streams: 1, events: 2 });
        await store.dropSession('s2');
        expect(await store.stats()).toEqual({ sessions: 0, streams: 0, events: 0, bytes: 0 });
      });

      it('counts sessions, streams, events and bytes', async () => {
        const store = await make({});
        expect(await store.stats()).toEqual({ sessions: 0, streams: 0, events: 0, bytes: 0 });
        await store.prime('s1', newStreamId(), T0);
        await store.append('s1', newStreamId(), 'abc', T0);
        await store.append('s2', newStreamId(), 'défg', T0);
        const stats = await store.stats();
        expect(stats).toMatchObject({ sessions: 2, streams: 3, events: 2 });
        expect(stats.bytes).toBeGreaterThanOrEqual(3 + 5);
      });
    });

    it('replays exactly the later stored events of the stream, and a gap exactly when one is gone', async () => {
      await fc.assert(
        fc.asyncProperty(scenario, (s) => checkScenario(make, s)),
        { numRuns: 150 },
      );
    });
  });
}

function expectMissedFrom(result: ReplayResult, firstMissedId: string): void {
  if (!result.ok || !result.gap) throw new Error(`expected a gap, got ${JSON.stringify(result)}`);
  if (result.missedFrom !== undefined) expect(result.missedFrom).toBe(seqOf(firstMissedId));
}

const SESSIONS = ['sA', 'sB', 'sC'] as const;
const MAX_AGE = 1000;

type Op =
  | { readonly kind: 'append'; readonly session: number; readonly stream: number; readonly dt: number }
  | { readonly kind: 'prime'; readonly session: number; readonly stream: number; readonly dt: number }
  | { readonly kind: 'replay'; readonly pick: number; readonly asOther: boolean; readonly dt: number };

interface Scenario {
  readonly maxEventsPerSession: number;
  readonly ops: readonly Op[];
  readonly finalDt: number;
}

/** Steps of 125 ms, so that ages land exactly on `MAX_AGE` often. */
const dt = fc.integer({ min: 0, max: 3 }).map((n) => n * 125);
const where = { session: fc.nat({ max: 2 }), stream: fc.nat({ max: 2 }), dt };
const scenario: fc.Arbitrary<Scenario> = fc.record({
  maxEventsPerSession: fc.integer({ min: 1, max: 6 }),
  ops: fc.array(
    fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('append' as const), ...where }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('prime' as const), ...where }) },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('replay' as const),
          pick: fc.nat(),
          asOther: fc.boolean(),
          dt,
        }),
      },
    ),
    { maxLength: 40 },
  ),
  finalDt: fc.integer({ min: 0, max: 12 }).map((n) => n * 125),
});

/** One id the store issued, as the model remembers it. */
interface Issued {
  readonly id: string;
  readonly session: string;
  readonly streamId: string;
  /** Set for events; primes are positions only. */
  readonly event?: { readonly data: string; readonly at: number; readonly index: number };
}

async function checkScenario(make: MakeEventStore, s: Scenario): Promise<void> {
  const store = await make({ maxEventsPerSession: s.maxEventsPerSession, maxEventAgeMs: MAX_AGE });
  const streamIds = SESSIONS.map(() => [newStreamId(), newStreamId(), newStreamId()]);
  const issued: Issued[] = [];
  const eventCount = new Map<string, number>();
  let now = T0;

  /** The model: what replaying `from` as `asSession` must give at `now`. */
  const expected = (from: Issued, asSession: string): ReplayResult => {
    if (asSession !== from.session) return { ok: false, reason: 'other-session' };
    const count = eventCount.get(from.session) ?? 0;
    const later = issued.filter(
      (i) =>
        i.event !== undefined &&
        i.session === from.session &&
        i.streamId === from.streamId &&
        seqOf(i.id) > seqOf(from.id),
    );
    const stored = later.filter(
      (i) => i.event!.index >= count - s.maxEventsPerSession && now - i.event!.at <= MAX_AGE,
    );
    const events = stored.map((i) => ({ id: i.id, data: i.event!.data }));
    const streamId = from.streamId;
    return stored.length < later.length
      ? { ok: true, streamId, events, gap: true }
      : { ok: true, streamId, events, gap: false };
  };

  const check = async (from: Issued, asSession: string): Promise<void> => {
    const actual = await store.replayAfter(asSession, from.id, now);
    const want = expected(from, asSession);
    if (!want.ok || !actual.ok || !actual.gap) {
      expect(actual).toEqual(want);
      return;
    }
    const { missedFrom, ...rest } = actual;
    expect(rest).toEqual(want);
    if (missedFrom !== undefined) {
      const firstLater = issued.find(
        (i) => i.event !== undefined && i.streamId === from.streamId && seqOf(i.id) > seqOf(from.id),
      );
      expect(missedFrom).toBe(seqOf(firstLater!.id));
    }
  };

  for (const op of s.ops) {
    now += op.dt;
    if (op.kind === 'replay') {
      const from = issued[op.pick % Math.max(1, issued.length)];
      if (from === undefined) continue;
      const other = SESSIONS.find((x) => x !== from.session)!;
      await check(from, op.asOther ? other : from.session);
      continue;
    }
    const session = SESSIONS[op.session]!;
    const streamId = streamIds[op.session]![op.stream]!;
    if (op.kind === 'prime') {
      issued.push({ id: await store.prime(session, streamId, now), session, streamId });
      continue;
    }
    const index = eventCount.get(session) ?? 0;
    eventCount.set(session, index + 1);
    const data = `${session}/${op.stream}/${index}`;
    const id = await store.append(session, streamId, data, now);
    issued.push({ id, session, streamId, event: { data, at: now, index } });
  }

  for (const session of SESSIONS) {
    const ids = issued.filter((i) => i.session === session).map((i) => i.id);
    expect(new Set(ids).size).toBe(ids.length);
  }
  now += s.finalDt;
  for (const from of issued) {
    await check(from, from.session);
    await check(from, SESSIONS.find((x) => x !== from.session)!);
  }
}
