/**
 * Resumable SSE streams of `switchboard serve` over raw HTTP (server-everything behind it over
 * stdio): priming events and `retry` (2025-11-25), a client that drops a POST stream mid-call and
 * resumes by GET with `Last-Event-ID` (a disconnect is not a cancellation: nothing lost, nothing
 * duplicated, nothing from other streams), event ids unique in the session and naming their
 * stream, Last-Event-ID from another session refused, events that left the store reported (never
 * silently skipped), and progress of a request whose POST stream is gone going to the GET stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import {
  initialize,
  isProgress,
  isResponseTo,
  openSse,
  progressValue,
  type SseStream,
  send,
  sleep,
} from './support/sse-client.js';

const everything = { everything: { script: EVERYTHING, args: ['stdio'] } };
const EVENT_ID = /^([A-Za-z0-9_-]+)\.([1-9][0-9]*)$/;

let gw: RunningServe;
/** `streamAfter: 0`: calls stream at once, as with `responseMode: sse`. */
let small: RunningServe;
/** `responseMode: sse`: every call streams from its first byte, even one answered at once (echo). */
let streaming: RunningServe;
/**
 * `streamAfter: 20s`: a window no answer of echo misses, even on a loaded machine (with the default
 * 100 ms, an echo answered late under load became a stream and failed the test that wants JSON).
 */
let patient: RunningServe;
const PATIENT_WINDOW_MS = 20_000;

beforeAll(async () => {
  [gw, small, streaming, patient] = await Promise.all([
    startServe({ configYaml: stdioUpstreamConfig(everything, 'resumability:\n  retry: 1500ms\n') }),
    startServe({
      configYaml: stdioUpstreamConfig(
        everything,
        'server:\n  streamAfter: 0\nresumability:\n  maxEventsPerSession: 2\n',
      ),
    }),
    startServe({
      configYaml: stdioUpstreamConfig(
        everything,
        'server:\n  responseMode: sse\nresumability:\n  retry: 1500ms\n',
      ),
    }),
    startServe({ configYaml: stdioUpstreamConfig(everything, 'server:\n  streamAfter: 20s\n') }),
  ]);
});

afterAll(async () => {
  await Promise.all([gw?.stop(), small?.stop(), streaming?.stop(), patient?.stop()]);
});

function longCall(id: number, token: string, steps: number, duration: number): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: 'trigger-long-running-operation',
      arguments: { duration, steps },
      _meta: { progressToken: token },
    },
  });
}

function echoCall(id: number, message: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message } },
  });
}

function postSse(url: string, headers: Record<string, string>, body: string): Promise<SseStream> {
  return openSse(url, 'POST', { ...headers, 'content-type': 'application/json' }, body);
}

/** The stream part of an event id. */
function streamOf(id: string): string {
  const match = EVENT_ID.exec(id);
  if (!match) throw new Error(`not an event id of the gateway: ${JSON.stringify(id)}`);
  return match[1]!;
}

function seqOf(id: string): number {
  return Number(EVENT_ID.exec(id)![2]);
}

/** Events that carry a message, with their ids. */
function dataEvents(stream: SseStream): { id: string; message: Record<string, unknown> }[] {
  return stream.events.flatMap((event, i) =>
    event.data.length > 0
      ? [{ id: stream.ids[i]!, message: JSON.parse(event.data) as Record<string, unknown> }]
      : [],
  );
}

function tokenOf(message: Record<string, unknown>): unknown {
  return (message.params as { progressToken?: unknown } | undefined)?.progressToken;
}

describe('priming events and retry', () => {
  it('starts every 2025-11-25 stream with a priming event (id, empty data) and the configured retry', async () => {
    const session = await initialize(streaming.url, { version: '2025-11-25' });
    const call = await postSse(streaming.url, session.headers, echoCall(2, 'p'));
    await call.done;
    expect(call.status).toBe(200);
    expect(call.events[0]?.data).toBe('');
    expect(call.ids[0]).toMatch(EVENT_ID);
    expect(call.retry).toBe(1500);
    expect(call.messages()).toHaveLength(1);
    expect(isResponseTo(call.messages()[0], 2)).toBe(true);

    const get = await openSse(streaming.url, 'GET', session.headers);
    try {
      const first = await get.waitFor(() => true);
      expect(first.data).toBe('');
      expect(get.ids[0]).toMatch(EVENT_ID);
      expect(get.retry).toBe(1500);
      expect(streamOf(get.ids[0]!)).not.toBe(streamOf(call.ids[0]!));
    } finally {
      get.abort();
      await send(streaming.url, 'DELETE', session.headers);
    }
  });

  it('sends no priming event to a 2025-06-18 session', async () => {
    const session = await initialize(streaming.url, { version: '2025-06-18' });
    const call = await postSse(streaming.url, session.headers, echoCall(2, 'q'));
    await call.done;
    expect(call.events).toHaveLength(1);
    expect(isResponseTo(call.messages()[0], 2)).toBe(true);
    expect(call.ids[0]).toMatch(EVENT_ID);
    await send(streaming.url, 'DELETE', session.headers);
  });
});

describe('held answers (responseMode auto, streamAfter 100ms)', () => {
  it('answers a call whose response comes first as one JSON body, with no stream and no event', async () => {
    const session = await initialize(patient.url, { version: '2025-11-25' });
    try {
      const started = performance.now();
      const call = await postSse(patient.url, session.headers, echoCall(2, 'held'));
      await call.done;
      expect(call.status).toBe(200);
      expect(String(call.headers['content-type'])).toMatch(/^application\/json/);
      expect(call.headers['mcp-session-id']).toBe(session.id);
      expect(call.events).toEqual([]);
      // Not held for the whole window: it went as soon as the response was there.
      expect(performance.now() - started).toBeLessThan(PATIENT_WINDOW_MS);
    } finally {
      await send(patient.url, 'DELETE', session.headers);
    }
  });

  it('becomes a stream at the first progress: priming event first, then progress, then the response', async () => {
    const session = await initialize(gw.url, { version: '2025-11-25' });
    try {
      const call = await postSse(gw.url, session.headers, longCall(3, 'tok-held', 2, 0.4));
      await call.done;
      expect(call.status).toBe(200);
      expect(String(call.headers['content-type'])).toMatch(/^text\/event-stream/);
      expect(call.events[0]?.data).toBe('');
      expect(call.ids[0]).toMatch(EVENT_ID);
      expect(call.retry).toBe(1500);
      const messages = call.messages();
      expect(messages.filter(isProgress).map(progressValue)).toEqual([1, 2]);
      expect(isResponseTo(messages.at(-1), 3)).toBe(true);
      expect(new Set(call.ids.map(streamOf)).size).toBe(1);
    } finally {
      await send(gw.url, 'DELETE', session.headers);
    }
  });

  it('with streamAfter 0, streams a call at once, even one answered at once', async () => {
    const session = await initialize(small.url, { version: '2025-11-25' });
    try {
      const call = await postSse(small.url, session.headers, echoCall(2, 'at once'));
      await call.done;
      expect(String(call.headers['content-type'])).toMatch(/^text\/event-stream/);
      expect(call.events[0]?.data).toBe('');
      expect(isResponseTo(call.messages().at(-1), 2)).toBe(true);
    } finally {
      await send(small.url, 'DELETE', session.headers);
    }
  });

  it('becomes a stream after streamAfter when nothing comes, and a client that drops it then resumes the answer', async () => {
    const session = await initialize(gw.url, { version: '2025-11-25' });
    try {
      // No progress token: nothing but the response will come, after about 1.2 s.
      const slow = JSON.stringify({
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 2 } },
      });
      const started = performance.now();
      const call = await postSse(gw.url, session.headers, slow);
      const priming = await call.waitFor(() => true);
      const primedAfter = performance.now() - started;
      expect(String(call.headers['content-type'])).toMatch(/^text\/event-stream/);
      expect(priming.data).toBe('');
      // Opened by the hold timer (100 ms), long before the response.
      expect(primedAfter).toBeLessThan(1000);
      expect(call.messages()).toEqual([]);
      const primingId = call.ids[0]!;
      call.abort(); // a disconnect is not a cancellation: the answer is kept
      await call.done;

      const resumed = await openSse(gw.url, 'GET', { ...session.headers, 'last-event-id': primingId });
      await resumed.waitFor((_, m) => isResponseTo(m, 4), 20_000);
      await resumed.done;
      expect(resumed.messages().filter((m) => isResponseTo(m, 4))).toHaveLength(1);
      expect(resumed.ids.filter((id) => id !== '').every((id) => streamOf(id) === streamOf(primingId))).toBe(
        true,
      );
    } finally {
      await send(gw.url, 'DELETE', session.headers);
    }
  });
});

describe('resuming a dropped POST stream', () => {
  it('replays exactly the rest of that stream after Last-Event-ID, once the call is over', async () => {
    const session = await initialize(gw.url);
    // Two calls in flight in one session, each on its own POST stream.
    const dropped = await postSse(gw.url, session.headers, longCall(10, 'tok-a', 4, 1.2));
    const other = await postSse(gw.url, session.headers, longCall(11, 'tok-b', 4, 1.2));
    try {
      expect(dropped.status).toBe(200);
      await dropped.waitFor((_, m) => isProgress(m));
      dropped.abort(); // the client goes away mid-call
      await dropped.done;
      const seenBefore = dataEvents(dropped);
      const lastId = dropped.ids.filter((id) => id !== '').at(-1)!;
      expect(seenBefore.every((e) => tokenOf(e.message) === 'tok-a')).toBe(true);
      const seenProgress = seenBefore.map((e) => progressValue(e.message));
      expect(seenProgress.length).toBeGreaterThanOrEqual(1);

      // The other stream runs to its end undisturbed; the dropped call finishes meanwhile.
      await other.done;
      expect(other.messages().filter(isProgress).map(progressValue)).toEqual([1, 2, 3, 4]);
      expect(
        other
          .messages()
          .filter(isProgress)
          .every((m) => tokenOf(m) === 'tok-b'),
      ).toBe(true);
      expect(isResponseTo(other.messages().at(-1), 11)).toBe(true);
      await sleep(300);

      const resumed = await openSse(gw.url, 'GET', { ...session.headers, 'last-event-id': lastId });
      expect(resumed.status).toBe(200);
      await resumed.waitFor((_, m) => isResponseTo(m, 10));
      await resumed.done; // a POST stream whose call is over ends after its replay
      const replayed = dataEvents(resumed);

      // Nothing lost, nothing twice: what was seen plus what was replayed is the whole call.
      const replayedProgress = replayed
        .filter((e) => isProgress(e.message))
        .map((e) => progressValue(e.message));
      expect([...seenProgress, ...replayedProgress]).toEqual([1, 2, 3, 4]);
      const responses = replayed.filter((e) => isResponseTo(e.message, 10));
      expect(responses).toHaveLength(1);
      expect(replayed.at(-1)?.message.id).toBe(10);
      // A disconnect is not a cancellation: the call completed normally.
      expect(JSON.stringify(responses[0]!.message.result)).toContain('Steps: 4');
      // Nothing from the other stream, and no gap notice (nothing left the store).
      expect(replayed.every((e) => e.message.id === 10 || tokenOf(e.message) === 'tok-a')).toBe(true);
      expect(JSON.stringify(replayed)).not.toContain('SB_EVENTS_LOST');

      // Ids: each names its stream, increases along it, and is unique in the session.
      const droppedStream = streamOf(dropped.ids[0]!);
      expect(streamOf(other.ids[0]!)).not.toBe(droppedStream);
      for (const e of replayed) {
        expect(streamOf(e.id)).toBe(droppedStream);
        expect(seqOf(e.id)).toBeGreaterThan(seqOf(lastId));
      }
      const replayedSeqs = replayed.map((e) => seqOf(e.id));
      expect([...replayedSeqs].sort((x, y) => x - y)).toEqual(replayedSeqs);
      const all = [...dropped.ids, ...other.ids, ...resumed.ids].filter((id) => id !== '');
      expect(new Set(all).size).toBe(all.length);
      expect(
        other.ids.filter((id) => id !== '').every((id) => streamOf(id) === streamOf(other.ids[0]!)),
      ).toBe(true);
    } finally {
      dropped.abort();
      other.abort();
      await send(gw.url, 'DELETE', session.headers);
    }
  });

  it('continues a stream resumed while its call is still running: replay, then live, then the end', async () => {
    const session = await initialize(gw.url);
    const dropped = await postSse(gw.url, session.headers, longCall(20, 'tok-live', 5, 2));
    let resumed: SseStream | undefined;
    try {
      await dropped.waitFor((_, m) => isProgress(m));
      dropped.abort();
      await dropped.done;
      const seen = dataEvents(dropped).map((e) => progressValue(e.message));
      const lastId = dropped.ids.filter((id) => id !== '').at(-1)!;

      resumed = await openSse(gw.url, 'GET', { ...session.headers, 'last-event-id': lastId });
      expect(resumed.status).toBe(200);
      await resumed.waitFor((_, m) => isResponseTo(m, 20), 20_000);
      await resumed.done;
      const rest = dataEvents(resumed);
      expect([
        ...seen,
        ...rest.filter((e) => isProgress(e.message)).map((e) => progressValue(e.message)),
      ]).toEqual([1, 2, 3, 4, 5]);
      expect(rest.filter((e) => isResponseTo(e.message, 20))).toHaveLength(1);
      expect(rest.every((e) => streamOf(e.id) === streamOf(lastId))).toBe(true);
    } finally {
      dropped.abort();
      resumed?.abort();
      await send(gw.url, 'DELETE', session.headers);
    }
  });

  it("never replays another session's stream (answered like an expired one) and refuses what is not an event id of the gateway", async () => {
    const owner = await initialize(streaming.url);
    const thief = await initialize(streaming.url);
    try {
      const call = await postSse(streaming.url, owner.headers, echoCall(2, 'secret'));
      await call.done;
      const ownerId = call.ids[0]!;
      expect(ownerId).toMatch(EVENT_ID);

      const stolen = await openSse(streaming.url, 'GET', { ...thief.headers, 'last-event-id': ownerId });
      await stolen.waitFor((_e, m) => JSON.stringify(m ?? {}).includes('SB_EVENTS_LOST'));
      stolen.abort();
      expect(stolen.status).toBe(200);
      expect(JSON.stringify(stolen.messages())).not.toContain('secret');

      for (const bad of ['not-an-event-id', `${streamOf(ownerId)}.0`, `${streamOf(ownerId)}.99999999`]) {
        const response = await openSse(streaming.url, 'GET', { ...owner.headers, 'last-event-id': bad });
        response.abort();
        expect(response.status, bad).toBe(400);
      }

      // The owner itself resumes its (complete) stream from the priming event: the response again.
      const own = await openSse(streaming.url, 'GET', { ...owner.headers, 'last-event-id': ownerId });
      await own.done;
      expect(own.status).toBe(200);
      expect(JSON.stringify(own.messages())).toContain('secret');
    } finally {
      await send(streaming.url, 'DELETE', owner.headers);
      await send(streaming.url, 'DELETE', thief.headers);
    }
  });
});

describe('the GET stream', () => {
  it('carries each message on exactly one connection, and resumes after a drop without loss', async () => {
    const session = await initialize(gw.url);
    const first = await openSse(gw.url, 'GET', session.headers);
    const second = await openSse(gw.url, 'GET', session.headers);
    const toggle = (id: number) =>
      postSse(
        gw.url,
        session.headers,
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'toggle-simulated-logging', arguments: {} },
        }),
      ).then((s) => s.done);
    const logs = (stream: SseStream) =>
      dataEvents(stream).filter((e) => e.message.method === 'notifications/message');
    let resumed: SseStream | undefined;
    try {
      await first.waitFor(() => true);
      await second.waitFor(() => true);
      const getStream = streamOf(first.ids[0]!);
      expect(streamOf(second.ids[0]!)).toBe(getStream);
      // Each toggle on sends one log message at once (server-everything); none is related to a request.
      for (let i = 0; i < 3; i++) {
        await toggle(100 + 2 * i);
        await toggle(101 + 2 * i);
      }
      await sleep(300);
      const seen = [...logs(first), ...logs(second)];
      expect(seen.length).toBeGreaterThanOrEqual(3);
      // Never broadcast: no event went to both connections.
      const firstIds = new Set(logs(first).map((e) => e.id));
      expect(logs(second).filter((e) => firstIds.has(e.id))).toEqual([]);
      expect(seen.every((e) => streamOf(e.id) === getStream)).toBe(true);

      // Both connections drop; messages sent meanwhile are kept, and a GET with the last id seen gets them.
      const lastSeen = seen
        .map((e) => e.id)
        .sort((x, y) => seqOf(x) - seqOf(y))
        .at(-1)!;
      first.abort();
      second.abort();
      await Promise.all([first.done, second.done]);
      for (let i = 0; i < 2; i++) {
        await toggle(200 + 2 * i);
        await toggle(201 + 2 * i);
      }
      resumed = await openSse(gw.url, 'GET', { ...session.headers, 'last-event-id': lastSeen });
      await resumed.waitFor(() => logs(resumed!).length >= 2);
      await sleep(300);
      const replayed = logs(resumed);
      expect(replayed.every((e) => streamOf(e.id) === getStream && seqOf(e.id) > seqOf(lastSeen))).toBe(true);
      expect(new Set(replayed.map((e) => e.id)).size).toBe(replayed.length);
    } finally {
      first.abort();
      second.abort();
      resumed?.abort();
      await send(gw.url, 'DELETE', session.headers);
    }
  });
});

describe('what a Last-Event-ID tells about other sessions', () => {
  it("answers a Last-Event-ID of another session's stream as it answers one of no stream at all", async () => {
    const owner = await initialize(streaming.url);
    const other = await initialize(streaming.url);
    try {
      const call = await postSse(streaming.url, owner.headers, echoCall(2, 'x'));
      await call.done;
      const foreign = call.ids[0]!;
      const madeUp = `${'Q'.repeat(streamOf(foreign).length)}.${seqOf(foreign)}`;
      const statusOf = async (lastEventId: string) => {
        const stream = await openSse(streaming.url, 'GET', {
          ...other.headers,
          'last-event-id': lastEventId,
        });
        stream.abort();
        return stream.status;
      };
      expect(await statusOf(madeUp)).toBe(await statusOf(foreign));
    } finally {
      await send(streaming.url, 'DELETE', owner.headers);
      await send(streaming.url, 'DELETE', other.headers);
    }
  });
});

describe('events that left the store (maxEventsPerSession: 2)', () => {
  it('tells the resuming client with an SB_EVENTS_LOST warning before what remains', async () => {
    const session = await initialize(small.url);
    const clockSession = await initialize(small.url);
    const dropped = await postSse(small.url, session.headers, longCall(2, 'tok-gap', 4, 0.8));
    // The same call in another session, read to its end: a clock for when the dropped one is over.
    const clock = await postSse(small.url, clockSession.headers, longCall(2, 'tok-clock', 4, 0.8));
    try {
      const priming = await dropped.waitFor(() => true);
      expect(priming.data).toBe('');
      const primingId = dropped.ids[0]!;
      dropped.abort();
      await dropped.done;
      // Four progress notifications and the response are stored; only the last two are kept.
      await clock.done;
      expect(isResponseTo(clock.messages().at(-1), 2)).toBe(true);
      await sleep(300);

      const resumed = await openSse(small.url, 'GET', { ...session.headers, 'last-event-id': primingId });
      expect(resumed.status).toBe(200);
      await resumed.waitFor((_, m) => isResponseTo(m, 2));
      await resumed.done;
      const messages = resumed.messages();
      const [notice, ...rest] = messages;
      expect(notice).toMatchObject({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'warning', data: { code: 'SB_EVENTS_LOST', lastEventId: primingId } },
      });
      expect(rest).toHaveLength(2);
      expect(isProgress(rest[0]) && progressValue(rest[0]!)).toBe(4);
      expect(isResponseTo(rest[1], 2)).toBe(true);
    } finally {
      dropped.abort();
      clock.abort();
      await send(small.url, 'DELETE', session.headers);
      await send(small.url, 'DELETE', clockSession.headers);
    }
  });
});

describe('progress of a request whose POST stream is gone', () => {
  it('goes to the GET stream while one is open; the response stays on the POST stream for resumption', async () => {
    const session = await initialize(gw.url);
    const get = await openSse(gw.url, 'GET', session.headers);
    const dropped = await postSse(gw.url, session.headers, longCall(30, 'tok-get', 4, 1.2));
    let resumed: SseStream | undefined;
    try {
      await get.waitFor(() => true); // its priming event
      const getStream = streamOf(get.ids[0]!);
      await dropped.waitFor((_, m) => isProgress(m));
      dropped.abort();
      await dropped.done;
      const seen = dataEvents(dropped).map((e) => progressValue(e.message));
      const lastId = dropped.ids.filter((id) => id !== '').at(-1)!;

      await get.waitFor((_, m) => isProgress(m) && progressValue(m!) === 4, 15_000);
      await sleep(500); // the response, if it (wrongly) came to the GET stream, would be here by now
      const onGet = dataEvents(get);
      expect(onGet.length).toBeGreaterThan(0);
      expect(onGet.every((e) => isProgress(e.message) && tokenOf(e.message) === 'tok-get')).toBe(true);
      expect(onGet.every((e) => streamOf(e.id) === getStream)).toBe(true);
      const diverted = onGet.map((e) => progressValue(e.message));
      expect([...seen, ...diverted]).toEqual([1, 2, 3, 4]);

      // The response is kept on the dropped POST stream, and only it: the progress is not replayed twice.
      resumed = await openSse(gw.url, 'GET', { ...session.headers, 'last-event-id': lastId });
      await resumed.waitFor((_, m) => isResponseTo(m, 30));
      await resumed.done;
      const replayed = dataEvents(resumed);
      expect(replayed.map((e) => e.message.id)).toEqual([30]);
      expect(streamOf(replayed[0]!.id)).toBe(streamOf(lastId));
    } finally {
      get.abort();
      dropped.abort();
      resumed?.abort();
      await send(gw.url, 'DELETE', session.headers);
    }
  });
});

describe('events evicted by the store budget (resumability.maxTotalBytes: 1KiB)', () => {
  let tiny: RunningServe;
  beforeAll(async () => {
    tiny = await startServe({
      configYaml: stdioUpstreamConfig(
        everything,
        'server:\n  streamAfter: 0\nresumability:\n  maxTotalBytes: 1KiB\n',
      ),
    });
  });
  afterAll(async () => {
    await tiny?.stop();
  });

  it('evicts past the configured budget, and a client resuming past the eviction gets SB_EVENTS_LOST first', async () => {
    const session = await initialize(tiny.url);
    const clockSession = await initialize(tiny.url);
    const dropped = await postSse(tiny.url, session.headers, longCall(2, 'tok-budget', 4, 0.8));
    const clock = await postSse(tiny.url, clockSession.headers, longCall(2, 'tok-budget-clock', 4, 0.8));
    try {
      await dropped.waitFor(() => true);
      const primingId = dropped.ids[0]!;
      dropped.abort();
      await dropped.done;
      // Six events of some 200 bytes each and 96 bytes of charge (far under maxEventsPerSession):
      // only the byte budget can have made the store drop any of them.
      await clock.done;
      expect(isResponseTo(clock.messages().at(-1), 2)).toBe(true);

      const resumed = await openSse(tiny.url, 'GET', { ...session.headers, 'last-event-id': primingId });
      expect(resumed.status).toBe(200);
      await resumed.waitFor((_, m) => isResponseTo(m, 2));
      await resumed.done;
      const messages = resumed.messages();
      expect(messages[0]).toMatchObject({
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'warning', data: { code: 'SB_EVENTS_LOST', lastEventId: primingId } },
      });
      expect(isResponseTo(messages.at(-1), 2)).toBe(true);
      // Fewer than the four progress notifications came back: some were evicted.
      expect(messages.filter(isProgress).length).toBeLessThan(4);
    } finally {
      dropped.abort();
      clock.abort();
      await send(tiny.url, 'DELETE', session.headers);
      await send(tiny.url, 'DELETE', clockSession.headers);
    }
  });
});
