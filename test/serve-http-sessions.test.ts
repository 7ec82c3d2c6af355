/**
 * `switchboard serve` sessions over raw HTTP, with server-everything behind it over stdio: strict
 * and lenient modes (seed 003 and the spec), the limits (sessions in total, per principal, streams
 * per session) and the lifetimes (idle timeout, maximum age). Three gateways with different
 * `sessions` configurations run side by side.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import {
  headerOf,
  initialize,
  isProgress,
  isResponseTo,
  jsonOf,
  messagesOf,
  openSse,
  post,
  type RawResponse,
  type SseStream,
  send,
  sessionCount,
  sleep,
  waitUntil,
} from './support/sse-client.js';

const everything = { everything: { script: EVERYTHING, args: ['stdio'] } };

function expectError(response: RawResponse, status: number, code: number) {
  expect(response.status, response.text).toBe(status);
  const body = jsonOf<{ error: { code: number; message: string } }>(response);
  expect(body.error.code).toBe(code);
  return body.error.message;
}

const ping = (id: number | string = 1) => ({ jsonrpc: '2.0', id, method: 'ping' });

let strict: RunningServe;
let lenient: RunningServe;
let lifetimes: RunningServe;

beforeAll(async () => {
  [strict, lenient, lifetimes] = await Promise.all([
    startServe({
      configYaml: stdioUpstreamConfig(
        everything,
        'sessions:\n  mode: strict\n  maxSessions: 3\n  maxStreamsPerSession: 2\n',
      ),
    }),
    startServe({
      configYaml: stdioUpstreamConfig(
        everything,
        'sessions:\n  mode: lenient\n  maxSessionsPerPrincipal: 3\n',
      ),
    }),
    startServe({
      configYaml: stdioUpstreamConfig(everything, 'sessions:\n  idleTimeout: 1s\n  maxAge: 4s\n'),
    }),
  ]);
});

afterAll(async () => {
  await Promise.all([strict?.stop(), lenient?.stop(), lifetimes?.stop()]);
});

/** Ends the given sessions (ignoring ones already gone). */
async function deleteAll(url: string, ids: readonly string[]): Promise<void> {
  for (const id of ids) await send(url, 'DELETE', { 'mcp-session-id': id });
}

describe('strict sessions', () => {
  it('answers 400 to a request without Mcp-Session-Id (POST, GET, DELETE)', async () => {
    const message = expectError(await post(strict.url, ping()), 400, -32600);
    expect(message).toMatch(/Mcp-Session-Id/i);
    expectError(await send(strict.url, 'GET', { accept: 'text/event-stream' }), 400, -32600);
    expectError(await send(strict.url, 'DELETE', {}), 400, -32600);
    // Nothing was opened by those.
    expect(await sessionCount(strict.base)).toBe(0);
  });

  it('answers 404 to an id it never issued, and never adopts a client-chosen id', async () => {
    const unknown = 'client-made-up-id-0123456789';
    expectError(await post(strict.url, ping(), { 'mcp-session-id': unknown }), 404, -32000);
    expectError(
      await send(strict.url, 'GET', { accept: 'text/event-stream', 'mcp-session-id': unknown }),
      404,
      -32000,
    );
    expectError(await send(strict.url, 'DELETE', { 'mcp-session-id': unknown }), 404, -32000);
    // initialize carrying a client-chosen id: the gateway mints its own.
    const session = await initialize(strict.url, { headers: { 'mcp-session-id': unknown } });
    try {
      expect(session.id).not.toBe(unknown);
      expect((await post(strict.url, ping(2), session.headers)).status).toBe(200);
      expectError(await post(strict.url, ping(3), { 'mcp-session-id': unknown }), 404, -32000);
    } finally {
      await deleteAll(strict.url, [session.id]);
    }
  });

  it('serves an issued id, and answers 404 once it was deleted', async () => {
    const session = await initialize(strict.url);
    const ok = await post(strict.url, ping(2), session.headers);
    expect(ok.status).toBe(200);
    expect(headerOf(ok, 'mcp-session-id')).toBe(session.id);
    expect((await send(strict.url, 'DELETE', session.headers)).status).toBe(200);
    expectError(await post(strict.url, ping(3), session.headers), 404, -32000);
    expectError(
      await send(strict.url, 'GET', { ...session.headers, accept: 'text/event-stream' }),
      404,
      -32000,
    );
  });

  it('refuses sessions beyond maxSessions with 503 when none is idle, and admits again once one ended', async () => {
    expect(await sessionCount(strict.base)).toBe(0);
    const opened: string[] = [];
    const streams: SseStream[] = [];
    try {
      for (let i = 0; i < 3; i++) opened.push((await initialize(strict.url)).id);
      // An open stream makes a session busy: not one the limit may end to make room.
      for (const id of opened) streams.push(await openSse(strict.url, 'GET', { 'mcp-session-id': id }));
      const refused = await post(strict.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
      });
      expectError(refused, 503, -32007);
      expect(headerOf(refused, 'mcp-session-id')).toBeUndefined();
      expect(await sessionCount(strict.base)).toBe(3);
      // The sessions already open are unaffected.
      expect((await post(strict.url, ping(), { 'mcp-session-id': opened[0]! })).status).toBe(200);
      await deleteAll(strict.url, [opened.shift()!]);
      opened.push((await initialize(strict.url)).id);
      expect(await sessionCount(strict.base)).toBe(3);
    } finally {
      for (const stream of streams) stream.abort();
      await deleteAll(strict.url, opened);
    }
  });

  it('refuses a GET stream beyond maxStreamsPerSession with 429, and accepts one again after a close', async () => {
    const session = await initialize(strict.url);
    const streams: SseStream[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const stream = await openSse(strict.url, 'GET', session.headers);
        expect(stream.status).toBe(200);
        streams.push(stream);
      }
      const third = await openSse(strict.url, 'GET', session.headers);
      third.abort();
      expect(third.status).toBe(429);
      expect(
        jsonOf<{ error: { code: number } }>({
          status: third.status,
          headers: third.headers,
          text: third.text ?? '',
        }).error.code,
      ).toBe(-32007);
      // Requests answered as JSON open no stream and are still served.
      expect((await post(strict.url, ping(2), session.headers)).status).toBe(200);
      streams.shift()!.abort();
      let again: SseStream | undefined;
      await waitUntil(
        async () => {
          const attempt = await openSse(strict.url, 'GET', session.headers);
          if (attempt.status === 200) again = attempt;
          return again !== undefined;
        },
        5000,
        'a GET accepted after one stream closed',
        100,
      );
      streams.push(again!);
    } finally {
      for (const stream of streams) stream.abort();
      await deleteAll(strict.url, [session.id]);
    }
  });

  it('counts POST answers streamed as SSE against maxStreamsPerSession: beyond it, the call is answered as JSON', async () => {
    const session = await initialize(strict.url);
    const streams: SseStream[] = [];
    try {
      for (let i = 0; i < 2; i++) streams.push(await openSse(strict.url, 'GET', session.headers));
      const call = await openSse(
        strict.url,
        'POST',
        { ...session.headers, 'content-type': 'application/json' },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 5,
          method: 'tools/call',
          params: { name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 1 } },
        }),
      );
      streams.push(call);
      expect(call.status).toBe(200);
      expect(String(call.headers['content-type'])).toMatch(/^application\/json/);
    } finally {
      for (const stream of streams) stream.abort();
      await deleteAll(strict.url, [session.id]);
    }
  });
});

describe('lenient sessions', () => {
  it('adopts a client-chosen id on initialize, and the same id later continues that session', async () => {
    const chosen = `my-own-session-${Date.now()}`;
    const before = await sessionCount(lenient.base);
    const session = await initialize(lenient.url, {
      version: '2025-06-18',
      headers: { 'mcp-session-id': chosen },
    });
    try {
      expect(session.id).toBe(chosen);
      expect(await sessionCount(lenient.base)).toBe(before + 1);
      const again = await post(lenient.url, ping(2), { 'mcp-session-id': chosen });
      expect(again.status).toBe(200);
      expect(headerOf(again, 'mcp-session-id')).toBe(chosen);
      expect(await sessionCount(lenient.base)).toBe(before + 1);
      // The id carries the session's state: it negotiated 2025-06-18, so a batch is refused even
      // without a version header, where a session-less request (2025-03-26) may batch.
      const batch = [ping(3), ping(4)];
      expectError(await post(lenient.url, batch, { 'mcp-session-id': chosen }), 400, -32600);
      expect((await post(lenient.url, batch)).status).toBe(200);
      expect((await send(lenient.url, 'DELETE', { 'mcp-session-id': chosen })).status).toBe(200);
      // Ended ids are remembered: 404 in lenient mode too, so the client re-initializes.
      expectError(await post(lenient.url, ping(5), { 'mcp-session-id': chosen }), 404, -32000);
    } finally {
      await deleteAll(lenient.url, [chosen]);
    }
  });

  it('serves a POST without an id in a one-off session, answered as JSON or as SSE', async () => {
    const before = await sessionCount(lenient.base);
    const json = await post(lenient.url, ping(1));
    expect(json.status).toBe(200);
    expect(headerOf(json, 'content-type')).toMatch(/^application\/json/);
    expect(headerOf(json, 'mcp-session-id')).toBeUndefined();
    expect(messagesOf(json)).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);

    const sse = await post(lenient.url, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: {
        name: 'trigger-long-running-operation',
        arguments: { duration: 0.4, steps: 2 },
        _meta: { progressToken: 'one-off' },
      },
    });
    expect(sse.status).toBe(200);
    expect(headerOf(sse, 'content-type')).toMatch(/^text\/event-stream/);
    expect(headerOf(sse, 'mcp-session-id')).toBeUndefined();
    const messages = messagesOf(sse);
    expect(messages.filter(isProgress).map((m) => (m.params as { progress: number }).progress)).toEqual([
      1, 2,
    ]);
    expect(messages.filter((m) => isResponseTo(m, 2))).toHaveLength(1);
    expect(JSON.stringify(messages.at(-1))).toContain('Steps: 2');
    // Nothing stays behind.
    expect(await sessionCount(lenient.base)).toBe(before);
  });

  it('echoes a client-chosen id on a POST answered with SSE, and keeps it as a session', async () => {
    const chosen = `sse-chosen-${Date.now()}`;
    const before = await sessionCount(lenient.base);
    try {
      const sse = await post(
        lenient.url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          // Progress before the response: the answer is a stream (a held one would be JSON).
          params: {
            name: 'trigger-long-running-operation',
            arguments: { duration: 0.2, steps: 1 },
            _meta: { progressToken: 'p' },
          },
        },
        { 'mcp-session-id': chosen },
      );
      expect(sse.status).toBe(200);
      expect(headerOf(sse, 'content-type')).toMatch(/^text\/event-stream/);
      expect(headerOf(sse, 'mcp-session-id')).toBe(chosen);
      expect(JSON.stringify(messagesOf(sse))).toContain('Steps: 1');
      expect(await sessionCount(lenient.base)).toBe(before + 1);
    } finally {
      await deleteAll(lenient.url, [chosen]);
    }
    expect(await sessionCount(lenient.base)).toBe(before);
  });

  it('refuses sessions beyond maxSessionsPerPrincipal with 429 when none is idle, whichever way they are opened', async () => {
    expect(await sessionCount(lenient.base)).toBe(0);
    const opened: string[] = [];
    const streams: SseStream[] = [];
    try {
      for (let i = 0; i < 3; i++) opened.push((await initialize(lenient.url)).id);
      for (const id of opened) streams.push(await openSse(lenient.url, 'GET', { 'mcp-session-id': id }));
      const refused = await post(lenient.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
      });
      expect(expectError(refused, 429, -32007)).toMatch(/principal/);
      // A GET without an id and a POST with an unknown id would open sessions too: refused alike.
      expectError(await send(lenient.url, 'GET', { accept: 'text/event-stream' }), 429, -32007);
      expectError(await post(lenient.url, ping(), { 'mcp-session-id': 'one-too-many' }), 429, -32007);
      expect(await sessionCount(lenient.base)).toBe(3);
      await deleteAll(lenient.url, [opened.shift()!]);
      opened.push((await initialize(lenient.url)).id);
    } finally {
      for (const stream of streams) stream.abort();
      await deleteAll(lenient.url, opened);
    }
    expect(await sessionCount(lenient.base)).toBe(0);
  });

  it('never adopts a client-chosen id that is not visible ASCII', async () => {
    const bad = ['has space', 'has\ttab', 'caf\u00e9'];
    const ids: string[] = [];
    try {
      for (const id of bad) {
        const response = await post(lenient.url, ping(), { 'mcp-session-id': id });
        const echoed = headerOf(response, 'mcp-session-id');
        if (echoed !== undefined) ids.push(echoed);
        expect(
          echoed === undefined || /^[\x21-\x7e]+$/.test(echoed),
          `echoed ${JSON.stringify(echoed)}`,
        ).toBe(true);
      }
    } finally {
      await deleteAll(lenient.url, [...bad, ...ids]);
    }
  });
});

describe('session lifetimes (idleTimeout 1s, maxAge 4s)', () => {
  it('ends an idle session, keeps one with an open stream until maxAge, then 404 for both', async () => {
    const url = lifetimes.url;
    const idle = await initialize(url);
    const busy = await initialize(url);
    const busyCreated = Date.now();
    const stream = await openSse(url, 'GET', busy.headers);
    try {
      expect(stream.status).toBe(200);
      expect(await sessionCount(lifetimes.base)).toBe(2);
      // The sweep runs every second: the idle one goes within about two seconds, untouched by us.
      await waitUntil(
        async () => (await sessionCount(lifetimes.base)) === 1,
        8000,
        'the idle session to end',
      );
      expectError(await post(url, ping(2), idle.headers), 404, -32000);
      // The busy one (a GET stream open) survived the idle timeout...
      expect(stream.ended).toBe(false);
      // ...until its maximum age, when the gateway ends it and closes its stream.
      await Promise.race([stream.done, sleep(10_000)]);
      expect(stream.ended).toBe(true);
      expect(Date.now() - busyCreated).toBeGreaterThanOrEqual(3000);
      expectError(await post(url, ping(3), busy.headers), 404, -32000);
      expect(await sessionCount(lifetimes.base)).toBe(0);
    } finally {
      stream.abort();
    }
  });

  it('counts activity: a session used more often than the idle timeout stays alive', async () => {
    const url = lifetimes.url;
    const session = await initialize(url);
    // Used every 300 ms for 2 s (twice the idle timeout, well under maxAge).
    for (let i = 0; i < 7; i++) {
      await sleep(300);
      expect((await post(url, ping(i + 2), session.headers)).status).toBe(200);
    }
    await deleteAll(url, [session.id]);
  });
});
