/**
 * The 2024-11-05 HTTP+SSE transport of `switchboard serve` (`/sse`, `/messages`), raw over HTTP, so
 * every status and frame is what the gateway sent: an old client's session negotiates 2024-11-05,
 * and the endpoints obey what every endpoint obeys (Host and Origin guard, authentication, session
 * binding to the principal, body size, JSON depth, session limits, a slow reader cut, 503 for a new
 * stream while draining, a session ended with its stream).
 */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeToken, ROOT } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import {
  type Headers,
  jsonOf,
  openSse,
  post,
  type SseStream,
  send,
  waitUntil,
} from './support/sse-client.js';

const FLOOD_SERVER = join(ROOT, 'test/fixtures/flood-server.mjs');
const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');

const gateways: RunningServe[] = [];
const streams: SseStream[] = [];
const requests: ClientRequest[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) s.abort();
  for (const r of requests.splice(0)) r.destroy();
  await Promise.all(gateways.splice(0).map((g) => g.stop()));
});

async function start(extra = '', upstream = FLOOD_SERVER, args: string[] = []): Promise<RunningServe> {
  const gw = await startServe({
    configYaml: stdioUpstreamConfig({ up: { script: upstream } }, extra),
    args: ['--no-trace', '--log-level', 'info', ...args],
  });
  gateways.push(gw);
  return gw;
}

interface LegacySession {
  readonly stream: SseStream;
  /** The absolute URL of the endpoint event. */
  readonly postUrl: string;
}

/** GET `<base><path>` and waits for the `endpoint` event. */
async function openLegacy(base: string, path = '/sse', headers: Headers = {}): Promise<LegacySession> {
  const stream = await openSse(`${base}${path}`, 'GET', headers);
  streams.push(stream);
  expect(stream.status).toBe(200);
  const endpoint = await stream.waitFor((e) => e.type === 'endpoint');
  return { stream, postUrl: new URL(endpoint.data, `${base}${path}`).href };
}

const initialize = (id: number, protocolVersion = '2024-11-05') => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'old', version: '1' } },
});

/** POSTs to the session's endpoint (`Content-Type: application/json`, as the 2024-11-05 SDK does). */
function postTo(session: LegacySession, payload: unknown, headers: Headers = {}) {
  return send(
    session.postUrl,
    'POST',
    { 'content-type': 'application/json', ...headers },
    typeof payload === 'string' ? payload : JSON.stringify(payload),
  );
}

/** Opens a session and initializes it; returns it once `initialized` was sent. */
async function initialized(base: string, path = '/sse', headers: Headers = {}): Promise<LegacySession> {
  const session = await openLegacy(base, path, headers);
  expect((await postTo(session, initialize(1), headers)).status).toBe(202);
  await session.stream.waitFor((_e, m) => m?.id === 1);
  expect(
    (await postTo(session, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status,
  ).toBe(202);
  return session;
}

describe('serve: the 2024-11-05 HTTP+SSE transport', () => {
  it('names the POST endpoint first, negotiates 2024-11-05, answers 202 and sends answers down the stream', async () => {
    const gw = await start();
    for (const path of ['/sse', '/servers/up/sse']) {
      const session = await openLegacy(gw.base, path);
      expect(session.stream.events[0]?.type).toBe('endpoint');
      expect(new URL(session.postUrl).pathname).toBe(path.replace(/sse$/, 'messages'));
      const accepted = await postTo(session, initialize(1));
      expect(accepted.status).toBe(202);
      const answer = await session.stream.waitFor((_e, m) => m?.id === 1);
      expect(JSON.parse(answer.data)).toMatchObject({ result: { protocolVersion: '2024-11-05' } });
      await postTo(session, { jsonrpc: '2.0', method: 'notifications/initialized' });
      await postTo(session, {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'hi' } },
      });
      const echoed = await session.stream.waitFor((_e, m) => m?.id === 2);
      expect(JSON.parse(echoed.data)).toMatchObject({ result: { content: [{ text: 'hi' }] } });
      // Its id is not a Streamable HTTP session's: /mcp does not serve it (nor adopt it, in lenient mode).
      const id = new URL(session.postUrl).searchParams.get('sessionId')!;
      const foreign = await post(
        `${gw.base}${path.replace(/sse$/, 'mcp')}`,
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { 'mcp-session-id': id },
      );
      expect(foreign.status).toBe(404);
      await postTo(session, { jsonrpc: '2.0', id: 4, method: 'ping' });
      await session.stream.waitFor((_e, m) => m?.id === 4);
      session.stream.abort();
    }
    // Sessions end with their streams.
    await waitUntil(
      async () => (jsonOf(await send(`${gw.base}/health`, 'GET', {})) as { sessions: number }).sessions === 0,
      5_000,
      'the sessions to end with their streams',
    );
    // A POST to an ended session, or without one, is refused.
    const gone = await send(
      `${gw.base}/messages?sessionId=nope`,
      'POST',
      { 'content-type': 'application/json' },
      '{}',
    );
    expect(gone.status).toBe(404);
    const none = await send(`${gw.base}/messages`, 'POST', { 'content-type': 'application/json' }, '{}');
    expect(none.status).toBe(400);
    const method = await send(`${gw.base}/sse`, 'POST', { 'content-type': 'application/json' }, '{}');
    expect(method.status).toBe(405);
  }, 60_000);

  it('applies the Host and Origin guard to /sse and /messages', async () => {
    const gw = await start();
    const host = await send(`${gw.base}/sse`, 'GET', { accept: 'text/event-stream', host: 'evil.example' });
    expect(host.status).toBe(403);
    const session = await initialized(gw.base);
    const origin = await postTo(
      session,
      { jsonrpc: '2.0', id: 5, method: 'ping' },
      { origin: 'https://evil.example' },
    );
    expect(origin.status).toBe(403);
    const accept = await send(`${gw.base}/sse`, 'GET', { accept: 'application/json' });
    expect(accept.status).toBe(406);
  }, 60_000);

  it('requires authentication when configured, and binds a session to its principal', async () => {
    const alice = await makeToken('alice');
    const bob = await makeToken('bob');
    const gw = await start(['auth:', '  tokens:', alice.yaml, bob.yaml, ''].join('\n'));
    const anonymous = await send(`${gw.base}/sse`, 'GET', { accept: 'text/event-stream' });
    expect(anonymous.status).toBe(401);
    const asAlice = { authorization: `Bearer ${alice.token}` };
    const session = await initialized(gw.base, '/sse', asAlice);
    // The session id is not a credential: without a token, or with another principal's, refused.
    expect((await postTo(session, { jsonrpc: '2.0', id: 3, method: 'ping' })).status).toBe(401);
    const asBob = await postTo(
      session,
      { jsonrpc: '2.0', id: 3, method: 'ping' },
      { authorization: `Bearer ${bob.token}` },
    );
    expect(asBob.status).toBe(404);
    expect((await postTo(session, { jsonrpc: '2.0', id: 3, method: 'ping' }, asAlice)).status).toBe(202);
    await session.stream.waitFor((_e, m) => m?.id === 3);
  }, 60_000);

  it('bounds the body and its depth, and refuses a non-JSON body', async () => {
    const gw = await start(['server:', '  maxBodyBytes: 4KiB', '  maxJsonDepth: 16', ''].join('\n'));
    const session = await initialized(gw.base);
    const big = await postTo(session, {
      jsonrpc: '2.0',
      id: 7,
      method: 'ping',
      params: { pad: 'x'.repeat(8192) },
    });
    expect(big.status).toBe(413);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const tooDeep = await postTo(session, { jsonrpc: '2.0', id: 8, method: 'ping', params: { deep } });
    expect(tooDeep.status).toBe(202);
    const refused = await session.stream.waitFor((_e, m) => m?.id === 8);
    expect(JSON.parse(refused.data)).toMatchObject({ error: { code: -32600 } });
    expect(JSON.parse(refused.data).error.message).toMatch(/16/);
    const garbage = await postTo(session, '{not json');
    expect(garbage.status).toBe(400);
    expect(jsonOf(garbage)).toMatchObject({ error: { code: -32700 } });
    const type = await send(session.postUrl, 'POST', { 'content-type': 'text/plain' }, '{}');
    expect(type.status).toBe(415);
    // The session survived all of it.
    await postTo(session, { jsonrpc: '2.0', id: 9, method: 'ping' });
    expect(JSON.parse((await session.stream.waitFor((_e, m) => m?.id === 9)).data)).toMatchObject({
      result: {},
    });
  }, 60_000);

  it("counts its sessions against the same limits as /mcp: two open streams hold the principal's two", async () => {
    const gw = await start(['sessions:', '  maxSessionsPerPrincipal: 2', ''].join('\n'));
    await openLegacy(gw.base);
    await openLegacy(gw.base);
    // Both hold their stream (not idle): a third session is refused, on either transport.
    const third = await send(`${gw.base}/sse`, 'GET', { accept: 'text/event-stream' });
    expect(third.status).toBe(429);
    const streamable = await post(gw.url, initialize(1, '2025-06-18'));
    expect(streamable.status).toBe(429);
  }, 60_000);

  it('cuts a client that stops reading its stream, and ends its session', async () => {
    // No keep-alive comments: the cut must come from the write of a message itself.
    const gw = await start(['server:', '  maxStreamBufferBytes: 64KiB', '  keepAlive: 0', ''].join('\n'));
    const session = await initialized(gw.base);
    session.stream.abort();
    // A reader that reads nothing: a raw request paused from the start.
    const slow = await new Promise<{ postUrl: string; over: Promise<void>; read(): void }>(
      (resolve, reject) => {
        const target = new URL(`${gw.base}/sse`);
        const req = request(
          {
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            method: 'GET',
            headers: { accept: 'text/event-stream' },
          },
          (response: IncomingMessage) => {
            let text = '';
            const onData = (chunk: Buffer) => {
              text += chunk.toString();
              const match = /event: endpoint\ndata: (.*)\n/.exec(text);
              if (!match) return;
              response.off('data', onData);
              response.pause();
              const over = new Promise<void>((r) => response.once('close', () => r()));
              response.once('error', () => {});
              resolve({ postUrl: new URL(match[1]!, target).href, over, read: () => response.resume() });
            };
            response.on('data', onData);
          },
        );
        req.once('error', reject);
        req.end();
        requests.push(req);
      },
    );
    const headers = { 'content-type': 'application/json' };
    const postSlow = (payload: unknown) => send(slow.postUrl, 'POST', headers, JSON.stringify(payload));
    expect((await postSlow(initialize(1))).status).toBe(202);
    await postSlow({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await postSlow({ jsonrpc: '2.0', method: 'logging/setLevel', id: 2, params: { level: 'info' } });
    await postSlow({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'flood', arguments: { count: 1500, bytes: 32_768, tag: 'slow' } },
    });
    await waitUntil(
      () => /cutting a 2024-11-05 HTTP\+SSE stream/.test(gw.stderr()),
      20_000,
      'the cut to be logged',
    );
    // Read what the kernel holds, up to the end the cut made.
    slow.read();
    await slow.over;
    // The session ended with its stream: its endpoint is gone.
    await waitUntil(
      async () => (await postSlow({ jsonrpc: '2.0', id: 4, method: 'ping' })).status === 404,
      5_000,
      '404',
    );
  }, 60_000);

  it('refuses a new stream with 503 while draining, and lets a session in progress finish its call', async () => {
    const gw = await start(['server:', '  drainTimeout: 6s', ''].join('\n'), MISBEHAVING);
    const session = await initialized(gw.base);
    await postTo(session, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 1_500, tag: 'finished in time' } },
    });
    await new Promise((r) => setTimeout(r, 300));
    gw.process.child.kill('SIGTERM');
    await waitUntil(() => /"msg":"shutting down"/.test(gw.stderr()), 10_000, 'the shutdown to begin');
    const fresh = await send(`${gw.base}/sse`, 'GET', { accept: 'text/event-stream' });
    expect(fresh.status).toBe(503);
    expect(jsonOf(fresh)).toMatchObject({ error: { data: { code: 'SB_SHUTTING_DOWN' } } });
    // A POST of the open session is still read: a new request in it is answered -32010 on the stream.
    const echo = { name: 'echo', arguments: { message: 'too late' } };
    expect(
      (await postTo(session, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: echo })).status,
    ).toBe(202);
    const late = await session.stream.waitFor((_e, m) => m?.id === 3);
    expect(JSON.parse(late.data)).toMatchObject({ error: { code: -32010 } });
    const answer = await session.stream.waitFor((_e, m) => m?.id === 2, 10_000);
    expect(JSON.parse(answer.data)).toMatchObject({ result: { content: [{ text: 'finished in time' }] } });
  }, 60_000);
});
