/**
 * The handshake's own bound, against real HTTP servers that accept the connection and then stay
 * silent: what waits behind the handshake fails with SB_UPSTREAM_UNAVAILABLE naming the bound, the
 * transport closes, and under supervision the link reconnects with backoff like any dead upstream.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PassthroughResolver } from '../../../core/passthrough-resolver.js';
import type { Delivery } from '../../../core/ports.js';
import { Router } from '../../../core/router.js';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import { LegacySseTransport } from './legacy-sse.js';
import { LegacyStreamableHttpTransport } from './legacy-streamable-http.js';
import { SupervisedHttpUpstream } from './supervised-http-upstream.js';
import { capture } from './test-support/capture.js';
import {
  eventually,
  json,
  type RecordedRequest,
  ScriptedServer,
  sseEvent,
  startSse,
} from './test-support/scripted-server.js';

const INIT_PARAMS = {
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'gw', version: '1' },
};

function message(id: number | undefined, method: string, params?: Record<string, unknown>) {
  const m: JsonRpcMessage =
    id === undefined
      ? { jsonrpc: '2.0', method, ...(params ? { params } : {}) }
      : { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) };
  return [JSON.stringify(m), m] as const;
}

/** What a failed request carries: the stable code and the bound, in the message. */
const handshakeFailure = (ms: number) => ({
  code: -32000,
  message: expect.stringContaining(`did not finish its handshake within ${ms} ms`),
  data: { code: 'SB_UPSTREAM_UNAVAILABLE' },
});

const servers: ScriptedServer[] = [];
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(handler: (r: RecordedRequest, res: ServerResponse) => void) {
  const server = await ScriptedServer.start(handler);
  servers.push(server);
  return server;
}

/** Takes every request and never answers a POST of `silentOn` (the connection stays open). */
function silentOn(method: string) {
  return (r: RecordedRequest, res: ServerResponse): void => {
    if (r.method !== 'POST') {
      res.writeHead(r.method === 'GET' ? 405 : 200).end();
      return;
    }
    const m = JSON.parse(r.body) as { id?: number; method: string };
    if (m.method === method) return;
    if (m.method === 'initialize')
      json(
        res,
        { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {} } },
        200,
        {
          'mcp-session-id': 'S1',
        },
      );
    else if (m.id === undefined) res.writeHead(202).end();
    else json(res, { jsonrpc: '2.0', id: m.id, result: {} });
  };
}

describe('Streamable HTTP: the handshake has its own bound', () => {
  function open(url: string, handshakeTimeoutMs: number) {
    const metrics = new Metrics();
    const transport = new LegacyStreamableHttpTransport({
      name: 'up',
      url,
      maxMessageBytes: 64 * 1024,
      logger: silentLogger,
      metrics,
      standaloneStream: false,
      handshakeTimeoutMs,
    });
    closers.push(() => transport.close());
    return { transport, seen: capture(transport), metrics };
  }

  it('fails the unanswered initialize and what was pipelined behind it, then closes', async () => {
    const server = await serve(silentOn('initialize'));
    const { transport, seen, metrics } = open(server.url(), 150);
    await transport.start();
    transport.send(...message(0, 'initialize', INIT_PARAMS));
    transport.send(...message(undefined, 'notifications/initialized'));
    transport.send(...message(1, 'tools/list'));
    expect((await seen.response(0, 5000)).value.error).toMatchObject(handshakeFailure(150));
    expect((await seen.response(1, 5000)).value.error).toMatchObject(handshakeFailure(150));
    await eventually(() => seen.closes.length === 1);
    expect(seen.closes[0]?.reason).toMatch(
      /did not finish its handshake within 150 ms \(no answer to initialize\)/,
    );
    expect(metrics.get('upstream_handshake_timeouts_total', { upstream: 'up' })).toBe(1);
    // What waited was never written: only the initialize reached the server.
    expect(server.requestsOf('POST').map((r) => JSON.parse(r.body).method)).toEqual(['initialize']);
  });

  it('bounds an initialize whose SSE answer opens and never carries the response', async () => {
    const server = await serve((r, res) => {
      if (r.method === 'POST' && (JSON.parse(r.body) as { method: string }).method === 'initialize')
        startSse(res, { 'mcp-session-id': 'S1' });
      else res.writeHead(202).end();
    });
    const { transport, seen } = open(server.url(), 150);
    transport.send(...message(0, 'initialize', INIT_PARAMS));
    expect((await seen.response(0, 5000)).value.error).toMatchObject(handshakeFailure(150));
    await eventually(() => seen.closes.length === 1);
  });

  it('bounds the POST of the first notifications/initialized, behind which requests wait', async () => {
    const server = await serve(silentOn('notifications/initialized'));
    const { transport, seen } = open(server.url(), 150);
    transport.send(...message(0, 'initialize', INIT_PARAMS));
    await seen.response(0);
    transport.send(...message(undefined, 'notifications/initialized'));
    transport.send(...message(1, 'tools/list'));
    expect((await seen.response(1, 5000)).value.error).toMatchObject(handshakeFailure(150));
    await eventually(() => seen.closes.length === 1);
    expect(seen.closes[0]?.reason).toContain('no answer to notifications/initialized');
  });

  it('leaves a handshake that completes alone: later silence is the router deadline’s business', async () => {
    const server = await serve(silentOn('tools/call'));
    const { transport, seen } = open(server.url(), 100);
    transport.send(...message(0, 'initialize', INIT_PARAMS));
    transport.send(...message(undefined, 'notifications/initialized'));
    await seen.response(0);
    await eventually(() => server.requestsOf('POST').length === 2);
    transport.send(...message(1, 'tools/call', { name: 'slow' }));
    // Well past the bound: the silent call is not a handshake, so nothing fails and nothing closes.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(seen.closes).toEqual([]);
    expect(seen.messages.filter((m) => 'id' in m.value && m.value.id === 1)).toEqual([]);
  });
});

describe('2024-11-05 HTTP+SSE: the initialize answer on the stream is bounded too', () => {
  it('fails the initialize and closes when the stream never carries its answer', async () => {
    const server = await serve((r, res) => {
      if (r.method === 'GET') {
        startSse(res);
        res.write(sseEvent({ event: 'endpoint', data: '/messages' }));
      } else res.writeHead(202).end();
    });
    const transport = new LegacySseTransport({
      name: 'old',
      url: server.url(),
      maxMessageBytes: 64 * 1024,
      logger: silentLogger,
      metrics: new Metrics(),
      handshakeTimeoutMs: 150,
    });
    closers.push(() => transport.close());
    const seen = capture(transport);
    await transport.start();
    transport.send(...message(0, 'initialize', INIT_PARAMS));
    expect((await seen.response(0, 5000)).value.error).toMatchObject(handshakeFailure(150));
    await eventually(() => seen.closes.length === 1);
  });
});

describe('under supervision, a silent handshake is a dead upstream', () => {
  it('reconnects with backoff and serves once the server answers initialize again', async () => {
    let sessions = 0;
    let silent = false;
    const server = await serve((r, res) => {
      const session = r.headers['mcp-session-id'];
      if (session === 'S1' && r.method === 'POST' && sessions >= 1 && silent) {
        res.writeHead(404).end();
        return;
      }
      if (r.method !== 'POST') {
        res.writeHead(r.method === 'GET' ? 405 : 200).end();
        return;
      }
      const m = JSON.parse(r.body) as { id?: number; method: string };
      if (m.method === 'initialize') {
        // The second session's initialize gets no answer, once; the third is answered.
        if (silent && sessions === 1) {
          sessions++;
          return;
        }
        sessions++;
        json(
          res,
          { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {} } },
          200,
          {
            'mcp-session-id': `S${sessions}`,
          },
        );
      } else if (m.id === undefined) res.writeHead(202).end();
      else json(res, { jsonrpc: '2.0', id: m.id, result: { session } });
    });
    const metrics = new Metrics();
    const router = new Router({
      resolver: new PassthroughResolver('up', 'c'),
      logger: silentLogger,
      metrics,
    });
    closers.push(async () => router.close());
    const delivered: { message: JsonRpcMessage; delivery: Delivery }[] = [];
    router.openSession({
      key: 'c',
      port: { send: (_json, m, delivery) => delivered.push({ message: m, delivery }) },
      transport: 'memory',
      transportContext: { kind: 'memory' },
    });
    const inits: number[] = [];
    const failures: string[] = [];
    const supervisor = new SupervisedHttpUpstream({
      router,
      link: 'up',
      http: {
        name: 'up',
        url: server.url(),
        maxMessageBytes: 64 * 1024,
        era: 'legacy',
        handshakeTimeoutMs: 150,
      },
      logger: silentLogger,
      metrics,
      restart: true,
      backoff: { initialMs: 20, maxMs: 100, stableMs: 60_000 },
      initialize: async (restart) => {
        inits.push(restart);
        const reply = await router.requestUpstream('up', 'initialize', INIT_PARAMS, { bypassQueue: true });
        if ('error' in reply.response) {
          failures.push(reply.response.error.message);
          throw new Error(reply.response.error.message);
        }
        router.notifyUpstream('up', 'notifications/initialized', undefined, { bypassQueue: true });
      },
      onstop: () => undefined,
    });
    closers.push(() => supervisor.close());
    await supervisor.start();
    silent = true;
    // Session S1 expires: the reconnection's initialize is met with silence, then answered.
    router.handleClientMessage('c', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { kind: 'memory' });
    await vi.waitFor(() => expect(inits).toEqual([0, 1, 2]), { timeout: 5000 });
    await vi.waitFor(() => expect(router.linkState('up')).toBe('ready'), { timeout: 5000 });
    expect(failures).toEqual([expect.stringContaining('did not finish its handshake within 150 ms')]);
    expect(metrics.get('upstream_handshake_timeouts_total', { upstream: 'up' })).toBe(1);
    router.handleClientMessage('c', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { kind: 'memory' });
    await vi.waitFor(() =>
      expect(delivered.find((d) => 'id' in d.message && d.message.id === 2)?.message).toMatchObject({
        result: { session: 'S3' },
      }),
    );
  });
});
