/**
 * `switchboard serve` (server-everything behind it over stdio) answering bad HTTP requests, each
 * with its exact status and JSON-RPC error code, driven by raw HTTP so that nothing between the
 * test and the gateway fixes a request up. Also: batches only where the negotiated revision allows
 * them, `MCP-Protocol-Version` validation, 202 for notifications and responses, Origin and Host
 * (DNS rebinding), unknown paths, DELETE, hostile and missing session ids, and the format of the
 * session ids the gateway mints.
 */
import { randomInt } from 'node:crypto';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import {
  ACCEPT_BOTH,
  headerOf,
  initialize,
  jsonOf,
  messagesOf,
  openSse,
  post,
  type RawResponse,
  send,
  sessionCount,
  sleep,
} from './support/sse-client.js';

const MAX_BODY = 4096;

interface ErrorBody {
  jsonrpc: string;
  id: string | number | null;
  error: { code: number; message: string };
}

function expectError(response: RawResponse, status: number, code: number, id: string | number | null = null) {
  expect(response.status, response.text).toBe(status);
  expect(headerOf(response, 'content-type')).toMatch(/^application\/json/);
  const body = jsonOf<ErrorBody>(response);
  expect(body.jsonrpc).toBe('2.0');
  expect(body.error.code).toBe(code);
  expect(body.id).toEqual(id);
  expect(body.error.message.length).toBeGreaterThan(0);
  return body;
}

const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };

function randomVisibleAscii(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += String.fromCharCode(0x21 + randomInt(94));
  return out;
}

describe('switchboard serve: bad requests get their exact status', () => {
  let gw: RunningServe;
  let url: string;

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig(
        { everything: { script: EVERYTHING, args: ['stdio'] } },
        `server:\n  maxBodyBytes: ${MAX_BODY}\n`,
      ),
    });
    url = gw.url;
  });

  afterAll(async () => {
    await gw?.stop();
  });

  describe('content negotiation', () => {
    it('answers 406 to a POST whose Accept lacks one of the two types', async () => {
      for (const accept of ['application/json', 'text/event-stream', 'text/html', '*/*', undefined]) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (accept !== undefined) headers.accept = accept;
        const response = await send(url, 'POST', headers, JSON.stringify(PING));
        expectError(response, 406, -32600);
      }
      // Both types, in any order and with parameters: accepted.
      const ok = await send(
        url,
        'POST',
        { 'content-type': 'application/json', accept: 'text/event-stream;q=0.9, application/json' },
        JSON.stringify(PING),
      );
      expect(ok.status).toBe(200);
      expect(messagesOf(ok)).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    });

    it('answers 406 to a GET whose Accept lacks text/event-stream', async () => {
      const session = await initialize(url);
      const response = await send(url, 'GET', { ...session.headers, accept: 'application/json' });
      expectError(response, 406, -32600);
    });

    it('answers 415 to a POST that is not application/json', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const headers: Record<string, string> = { accept: ACCEPT_BOTH };
        if (type !== undefined) headers['content-type'] = type;
        const response = await send(url, 'POST', headers, JSON.stringify(PING));
        expectError(response, 415, -32600);
      }
      const withCharset = await post(url, PING, { 'content-type': 'application/json; charset=utf-8' });
      expect(withCharset.status).toBe(200);
    });

    it('answers 405 to a method the endpoint does not serve', async () => {
      const response = await send(url, 'PUT', { 'content-type': 'application/json' }, '{}');
      expect(response.status).toBe(405);
      expect(headerOf(response, 'allow')).toMatch(/POST/);
    });
  });

  describe('body size (server.maxBodyBytes)', () => {
    const padded = (size: number) => {
      const base = JSON.stringify({ ...PING, params: { _meta: { pad: '' } } });
      return JSON.stringify({ ...PING, params: { _meta: { pad: 'x'.repeat(size - base.length) } } });
    };

    it('answers 413 (-32006) to a body over the limit and serves one just under it', async () => {
      const under = padded(MAX_BODY - 10);
      expect(Buffer.byteLength(under)).toBe(MAX_BODY - 10);
      const ok = await post(url, under);
      expect(ok.status, ok.text).toBe(200);

      const over = padded(MAX_BODY + 1);
      expectError(await post(url, over), 413, -32006);
    });

    it('answers 413 to a chunked body without Content-Length as soon as it grows past the limit', async () => {
      let produced = 0;
      let stop = false;
      const chunk = Buffer.alloc(1024, 0x20);
      async function* growing(): AsyncGenerator<Uint8Array> {
        yield Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"');
        // Up to 2 MiB, slowly: a gateway that waited for the end would take seconds to answer.
        for (let i = 0; i < 2048 && !stop; i++) {
          produced += chunk.length;
          yield chunk;
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
        yield Buffer.from('"}}');
      }
      const response = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH },
        body: Readable.from(growing()),
      });
      const producedWhenAnswered = produced;
      stop = true;
      const text = await response.body.text();
      expect(response.headers['content-length']).toBeUndefined();
      expectError({ status: response.statusCode, headers: response.headers, text }, 413, -32006);
      // Refused once the limit was crossed, not after reading the 2 MiB.
      expect(producedWhenAnswered).toBeLessThan(512 * 1024);
    });
  });

  it('ends the connection with its 413, in both eras (the rest of the body is never read)', async () => {
    const over = JSON.stringify({ ...PING, params: { pad: 'x'.repeat(MAX_BODY) } });
    const eras: Record<string, string>[] = [
      {},
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'ping' },
    ];
    for (const era of eras) {
      const response = await post(url, over, era);
      expectError(response, 413, -32006);
      expect(headerOf(response, 'connection'), JSON.stringify(era)).toBe('close');
    }
  });

  describe('JSON-RPC validity', () => {
    it('answers 400 -32700 to malformed JSON', async () => {
      for (const body of ['{bad', '{"jsonrpc":"2.0","id":1,', '', 'null x']) {
        expectError(await post(url, body), 400, -32700);
      }
    });

    it('answers 400 -32600 to invalid messages (id null, numeric method, no jsonrpc, empty batch)', async () => {
      expectError(await post(url, { jsonrpc: '2.0', id: null, method: 'ping' }), 400, -32600, null);
      // The id could be read: the error echoes it.
      expectError(await post(url, { jsonrpc: '2.0', id: 7, method: 5 }), 400, -32600, 7);
      expectError(await post(url, { id: 8, method: 'ping' }), 400, -32600, 8);
      expectError(await post(url, []), 400, -32600);
      expectError(await post(url, '"hello"'), 400, -32600);
      expectError(await post(url, { jsonrpc: '1.0', id: 9, method: 'ping' }), 400, -32600, 9);
      expectError(await post(url, { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }), 400, -32600);
    });

    it('answers 400 -32600 to an invalid response-shaped message', async () => {
      expectError(await post(url, { jsonrpc: '2.0', id: 1 }), 400, -32600, 1);
      expectError(
        await post(url, { jsonrpc: '2.0', id: 2, result: {}, error: { code: 1, message: 'x' } }),
        400,
        -32600,
        2,
      );
      expectError(await post(url, { jsonrpc: '2.0', id: 3, error: { code: 'x' } }), 400, -32600, 3);
    });

    it('answers each invalid element of an accepted batch with an error whose id is null', async () => {
      const response = await post(url, [PING, 5, { foo: 'boo' }]);
      expect(response.status).toBe(200);
      const messages = messagesOf(response);
      expect(messages.filter((m) => m.id === 1 && 'result' in m)).toHaveLength(1);
      expect(
        messages.filter((m) => m.id === null && (m.error as { code?: number } | undefined)?.code === -32600),
      ).toHaveLength(2);
    });
  });

  describe('batches follow the negotiated revision', () => {
    const batch = [
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
    ];

    it('refuses a batch on a 2025-06-18 session (400 -32600)', async () => {
      const session = await initialize(url, { version: '2025-06-18' });
      expectError(await post(url, batch, session.headers), 400, -32600);
      // Even without the version header: the session's negotiated revision decides.
      expectError(await post(url, batch, { 'mcp-session-id': session.id }), 400, -32600);
      // A single message on the same session is fine.
      expect((await post(url, { jsonrpc: '2.0', id: 4, method: 'ping' }, session.headers)).status).toBe(200);
    });

    it('accepts a batch on a 2025-03-26 session: one JSON array of the responses', async () => {
      const session = await initialize(url, { version: '2025-03-26' });
      const response = await post(url, batch, session.headers);
      expect(response.status, response.text).toBe(200);
      expect(headerOf(response, 'content-type')).toMatch(/^application\/json/);
      const body = jsonOf<unknown>(response);
      expect(Array.isArray(body)).toBe(true);
      const messages = body as { id: number; result?: { tools?: unknown[] } }[];
      expect(messages.map((m) => m.id).sort()).toEqual([2, 3]);
      expect(messages.find((m) => m.id === 3)?.result?.tools?.length).toBeGreaterThan(5);
    });

    /** A 2025-03-26 batch: a ping (id 5), a tools/call with these params (id 6), a notification. */
    async function batchWithCall(params: Record<string, unknown>) {
      const session = await initialize(url, { version: '2025-03-26' });
      return post(
        url,
        [
          { jsonrpc: '2.0', id: 5, method: 'ping' },
          { jsonrpc: '2.0', id: 6, method: 'tools/call', params },
          { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
        ],
        session.headers,
      );
    }

    it('accepts a batch on a 2025-03-26 session answered as SSE: every response on the stream', async () => {
      // Progress comes before the response: the held answer becomes a stream.
      const response = await batchWithCall({
        name: 'trigger-long-running-operation',
        arguments: { duration: 0.2, steps: 1 },
        _meta: { progressToken: 'b' },
      });
      expect(response.status).toBe(200);
      expect(headerOf(response, 'content-type')).toMatch(/^text\/event-stream/);
      const messages = messagesOf(response);
      expect(messages.filter((m) => m.id !== undefined).map((m) => m.id)).toEqual(
        expect.arrayContaining([5, 6]),
      );
      expect(messages.filter((m) => m.id !== undefined)).toHaveLength(2);
      expect(messages.some((m) => m.method === 'notifications/progress')).toBe(true);
      expect(JSON.stringify(messages.find((m) => m.id === 6))).toContain('Steps: 1');
    });

    it('accepts a batch on a 2025-03-26 session answered at once as one JSON array', async () => {
      const response = await batchWithCall({ name: 'echo', arguments: { message: 'b' } });
      expect(response.status).toBe(200);
      expect(headerOf(response, 'content-type')).toMatch(/^application\/json/);
      const messages = jsonOf<Record<string, unknown>[]>(response);
      expect(Array.isArray(messages)).toBe(true);
      expect(messages.map((m) => m.id).sort()).toEqual([5, 6]);
      expect(JSON.stringify(messages.find((m) => m.id === 6))).toContain('Echo: b');
    });

    it('answers 202 to a batch of notifications only', async () => {
      const session = await initialize(url, { version: '2025-03-26' });
      const response = await post(
        url,
        [
          { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
          { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
        ],
        session.headers,
      );
      expect(response.status).toBe(202);
      expect(response.text).toBe('');
    });
  });

  describe('MCP-Protocol-Version', () => {
    it('answers 400/-32022 with the supported versions to an unsupported version', async () => {
      const session = await initialize(url, { version: '2025-06-18' });
      for (const version of ['2024-01-01', 'garbage', '2025-06-18x']) {
        const response = await post(url, PING, {
          'mcp-session-id': session.id,
          'mcp-protocol-version': version,
        });
        expectError(response, 400, -32022, 1);
        expect(jsonOf<{ error: { data: unknown } }>(response).error.data).toEqual({
          supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
          requested: version,
        });
      }
    });

    it('takes a missing header as 2025-03-26 (a batch is then allowed) and a present one as given', async () => {
      // No session and no header: 2025-03-26, which allows batches.
      const assumed = await post(url, [PING, { ...PING, id: 2 }]);
      expect(assumed.status, assumed.text).toBe(200);
      expect(
        messagesOf(assumed)
          .map((m) => m.id)
          .sort(),
      ).toEqual([1, 2]);
      // The header says 2025-06-18: no batches.
      expectError(
        await post(url, [PING, { ...PING, id: 2 }], { 'mcp-protocol-version': '2025-06-18' }),
        400,
        -32600,
      );
    });
  });

  describe('what gets 202', () => {
    it('answers 202 with an empty body to a notification and to a response', async () => {
      const session = await initialize(url);
      const notification = await post(
        url,
        { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
        session.headers,
      );
      expect(notification.status).toBe(202);
      expect(notification.text).toBe('');
      const response = await post(url, { jsonrpc: '2.0', id: 'nobody-asked', result: {} }, session.headers);
      expect(response.status).toBe(202);
      expect(response.text).toBe('');
      const error = await post(
        url,
        { jsonrpc: '2.0', id: 'nobody-asked-2', error: { code: -1, message: 'no' } },
        session.headers,
      );
      expect(error.status).toBe(202);
    });

    it('answers a request with application/json or text/event-stream', async () => {
      const session = await initialize(url);
      const json = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, session.headers);
      expect(json.status).toBe(200);
      expect(headerOf(json, 'content-type')).toMatch(/^application\/json/);
      // A call is held: answered at once, it is one JSON body...
      const held = await post(
        url,
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { name: 'echo', arguments: { message: 'm' } },
        },
        session.headers,
      );
      expect(held.status).toBe(200);
      expect(headerOf(held, 'content-type')).toMatch(/^application\/json/);
      expect(JSON.stringify(jsonOf(held))).toContain('Echo: m');
      // ...and with progress before its answer, a stream.
      const sse = await post(
        url,
        {
          jsonrpc: '2.0',
          id: 4,
          method: 'tools/call',
          params: {
            name: 'trigger-long-running-operation',
            arguments: { duration: 0.2, steps: 1 },
            _meta: { progressToken: 'm' },
          },
        },
        session.headers,
      );
      expect(sse.status).toBe(200);
      expect(headerOf(sse, 'content-type')).toMatch(/^text\/event-stream/);
      expect(JSON.stringify(messagesOf(sse))).toContain('Steps: 1');
    });
  });

  describe('request ids', () => {
    it('answers 400 -32600, echoing the id, to a request whose id is already in flight in the session', async () => {
      const session = await initialize(url);
      const slow = await openSse(
        url,
        'POST',
        { ...session.headers, 'content-type': 'application/json' },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'trigger-long-running-operation', arguments: { duration: 0.5, steps: 1 } },
        }),
      );
      try {
        expectError(
          await post(url, { jsonrpc: '2.0', id: 7, method: 'ping' }, session.headers),
          400,
          -32600,
          7,
        );
        // Another session may use the same id at the same time.
        const other = await initialize(url);
        expect((await post(url, { jsonrpc: '2.0', id: 7, method: 'ping' }, other.headers)).status).toBe(200);
        // The first request is unharmed, and the id is free again once it is answered.
        await slow.done;
        expect(JSON.stringify(slow.messages())).toContain('Steps: 1.');
        expect((await post(url, { jsonrpc: '2.0', id: 7, method: 'ping' }, session.headers)).status).toBe(
          200,
        );
      } finally {
        slow.abort();
      }
    });
  });

  describe('Origin and Host', () => {
    it('answers 403 to a present Origin that is not allowed, and serves loopback origins', async () => {
      for (const origin of [
        'http://evil.example',
        'null',
        'http://localhost.evil.example',
        'http://127.0.0.1.rebind.evil.example',
      ]) {
        expectError(await post(url, PING, { origin }), 403, -32600);
      }
      const session = await initialize(url);
      expectError(
        await send(url, 'GET', {
          ...session.headers,
          accept: 'text/event-stream',
          origin: 'https://evil.example',
        }),
        403,
        -32600,
      );
      expectError(
        await send(url, 'DELETE', { ...session.headers, origin: 'https://evil.example' }),
        403,
        -32600,
      );
      const port = new URL(url).port;
      expect((await post(url, PING, { origin: 'http://localhost:5173' })).status).toBe(200);
      expect((await post(url, PING, { origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    });

    it('answers 403 to a Host that is not a loopback name (DNS rebinding)', async () => {
      const port = new URL(url).port;
      for (const host of [
        'evil.example',
        `evil.example:${port}`,
        `localhost.evil.example:${port}`,
        `127.0.0.1.rebind.evil.example:${port}`,
      ]) {
        expectError(await post(url, PING, { host }), 403, -32600);
      }
      for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
        expect((await post(url, PING, { host })).status).toBe(200);
      }
    });
  });

  describe('paths and sessions', () => {
    it('answers 404 to an unknown path and to an unknown /servers/<name>/mcp', async () => {
      expectError(await post(`${gw.base}/nope`, PING), 404, -32600);
      expectError(await post(`${gw.base}/mcp/extra`, PING), 404, -32600);
      expectError(await post(`${gw.base}/servers/nope/mcp`, PING), 404, -32600);
      expectError(await post(`${gw.base}/servers/everything/nope`, PING), 404, -32600);
      expect((await post(`${gw.base}/servers/everything/mcp`, PING)).status).toBe(200);
    });

    it('ends a session on DELETE; the id then gets 404 on POST, GET and DELETE', async () => {
      const session = await initialize(url);
      expect((await post(url, { ...PING, id: 2 }, session.headers)).status).toBe(200);
      const deleted = await send(url, 'DELETE', session.headers);
      expect(deleted.status).toBe(200);
      expectError(await post(url, { ...PING, id: 3 }, session.headers), 404, -32000);
      expectError(await send(url, 'GET', { ...session.headers, accept: 'text/event-stream' }), 404, -32000);
      expectError(await send(url, 'DELETE', session.headers), 404, -32000);
      // DELETE without an id says what is missing.
      expectError(await send(url, 'DELETE', {}), 400, -32600);
    });

    it('serves a hostile client-chosen session id (1 KB of random visible ASCII) in lenient mode', async () => {
      const hostile = randomVisibleAscii(1024);
      const session = await initialize(url, { headers: { 'mcp-session-id': hostile } });
      expect(session.id).toBe(hostile);
      const ping = await post(url, { ...PING, id: 2 }, session.headers);
      expect(ping.status).toBe(200);
      expect(headerOf(ping, 'mcp-session-id')).toBe(hostile);
      expect((await send(url, 'DELETE', session.headers)).status).toBe(200);
      expectError(await post(url, { ...PING, id: 3 }, session.headers), 404, -32000);
      // Another one used without initialize becomes a session of its own.
      const other = randomVisibleAscii(1024);
      const direct = await post(url, PING, { 'mcp-session-id': other });
      expect(direct.status).toBe(200);
      expect(headerOf(direct, 'mcp-session-id')).toBe(other);
      expect((await send(url, 'DELETE', { 'mcp-session-id': other })).status).toBe(200);
      // The gateway is unharmed.
      expect((await send(`${gw.base}/health`, 'GET', {})).status).toBe(200);
    });

    it('gives a GET without a session id a new session, named in the response header', async () => {
      const stream = await openSse(url, 'GET', {});
      try {
        expect(stream.status).toBe(200);
        expect(headerOf(stream, 'content-type')).toMatch(/^text\/event-stream/);
        const id = headerOf(stream, 'mcp-session-id');
        expect(id).toMatch(/^[\x21-\x7e]{22,}$/);
        // It is a live session: requests on it are served and it can be ended.
        const ping = await post(url, PING, { 'mcp-session-id': id! });
        expect(ping.status).toBe(200);
        expect(headerOf(ping, 'mcp-session-id')).toBe(id);
        expect((await send(url, 'DELETE', { 'mcp-session-id': id! })).status).toBe(200);
        // Ending the session ends its GET stream.
        await Promise.race([stream.done, sleep(5000)]);
        expect(stream.ended).toBe(true);
      } finally {
        stream.abort();
      }
    });

    it('leaves no session behind when it refuses a GET without a session id', async () => {
      const before = await sessionCount(gw.base);
      const response = await send(url, 'GET', {
        accept: 'text/event-stream',
        'last-event-id': 'not-an-event-id',
      });
      expectError(response, 400, -32600);
      expect(headerOf(response, 'mcp-session-id')).toBeUndefined();
      expect(await sessionCount(gw.base)).toBe(before);
    });

    it('mints session ids of visible ASCII with at least 128 random bits: 50 sessions, 50 different ids', async () => {
      const before = await sessionCount(gw.base);
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) {
        const response = await post(url, {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'ids', version: '0' },
          },
        });
        expect(response.status).toBe(200);
        ids.push(headerOf(response, 'mcp-session-id')!);
      }
      expect(await sessionCount(gw.base)).toBe(before + 50);
      expect(new Set(ids).size).toBe(50);
      for (const id of ids) {
        expect(id).toMatch(/^[\x21-\x7e]+$/);
        // base64url: 6 bits a character, so 22 characters carry at least 128 bits.
        expect(id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
      }
      // Not a counter or a timestamp with a random tail: no two share even their first 6 characters.
      expect(new Set(ids.map((id) => id.slice(0, 6))).size).toBe(50);
      // Characters spread over the alphabet (a CSPRNG, not a hex or decimal encoding in disguise).
      expect(new Set(ids.join('')).size).toBeGreaterThan(50);
      for (const id of ids) await send(url, 'DELETE', { 'mcp-session-id': id });
      expect(await sessionCount(gw.base)).toBe(before);
    });
  });
});
