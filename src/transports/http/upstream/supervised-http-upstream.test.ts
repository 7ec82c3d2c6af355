/**
 * An HTTP upstream attached to a real router under supervision: client traffic through the router,
 * stream messages attributed to the client request that caused them, re-initialization on a new
 * session after a 404, and the protocol learned once (no new probe after the 2024-11-05 fallback).
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PassthroughResolver } from '../../../core/passthrough-resolver.js';
import type { Delivery, UpstreamClose } from '../../../core/ports.js';
import { Router } from '../../../core/router.js';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import { SupervisedHttpUpstream, type SupervisedHttpUpstreamOptions } from './supervised-http-upstream.js';
import {
  json,
  type RecordedRequest,
  ScriptedServer,
  sseEvent,
  startSse,
} from './test-support/scripted-server.js';

const LINK = 'up';
const SESSION = 'S';
const INIT_PARAMS = {
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'gw', version: '1' },
};

const servers: ScriptedServer[] = [];
const supervisors: SupervisedHttpUpstream[] = [];
const routers: Router[] = [];

afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
  for (const r of routers.splice(0)) r.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function make(
  handler: (r: RecordedRequest, res: ServerResponse) => void,
  options: Partial<SupervisedHttpUpstreamOptions> = {},
) {
  const server = await ScriptedServer.start(handler);
  servers.push(server);
  const metrics = new Metrics();
  const router = new Router({
    resolver: new PassthroughResolver(LINK, SESSION),
    logger: silentLogger,
    metrics,
  });
  routers.push(router);
  const delivered: { message: JsonRpcMessage; delivery: Delivery }[] = [];
  router.openSession({
    key: SESSION,
    port: { send: (_json, message, delivery) => delivered.push({ message, delivery }) },
    transport: 'memory',
    transportContext: { kind: 'memory' },
  });
  const stops: UpstreamClose[] = [];
  const inits: number[] = [];
  const supervisor = new SupervisedHttpUpstream({
    router,
    link: LINK,
    http: { name: 'up', url: server.url(), maxMessageBytes: 64 * 1024 },
    logger: silentLogger,
    metrics,
    restart: true,
    backoff: { initialMs: 20, maxMs: 200, stableMs: 60_000 },
    initialize: async (restart) => {
      inits.push(restart);
      const reply = await router.requestUpstream(LINK, 'initialize', INIT_PARAMS, { bypassQueue: true });
      if ('error' in reply.response) throw new Error(reply.response.error.message);
      router.notifyUpstream(LINK, 'notifications/initialized', undefined, { bypassQueue: true });
    },
    onstop: (close) => stops.push(close),
    ...options,
  });
  supervisors.push(supervisor);
  const request = (id: number, method: string, params?: Record<string, unknown>) =>
    router.handleClientMessage(
      SESSION,
      params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
      { kind: 'memory' },
    );
  const responseTo = (id: number) =>
    delivered.find((d) => 'id' in d.message && d.message.id === id && !('method' in d.message));
  return { server, router, metrics, delivered, stops, inits, supervisor, request, responseTo };
}

/** Streamable HTTP: sessions s1, s2...; sessions in `expired` get 404; tools/call streams progress. */
function streamable(expired: Set<string>) {
  let sessions = 0;
  return (r: RecordedRequest, res: ServerResponse): void => {
    const session = r.headers['mcp-session-id'];
    if (typeof session === 'string' && expired.has(session)) {
      res.writeHead(404).end();
      return;
    }
    if (r.method === 'GET') {
      res.writeHead(405).end();
      return;
    }
    if (r.method === 'DELETE') {
      res.writeHead(200).end();
      return;
    }
    const m = JSON.parse(r.body) as {
      id?: number;
      method: string;
      params?: { _meta?: { progressToken?: unknown } };
    };
    if (m.method === 'initialize') {
      json(
        res,
        { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {} } },
        200,
        { 'mcp-session-id': `s${++sessions}` },
      );
    } else if (m.id === undefined) res.writeHead(202).end();
    else if (m.method === 'tools/call') {
      startSse(res);
      res.write(
        sseEvent({
          id: 'e1',
          data: {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: m.params?._meta?.progressToken, progress: 1 },
          },
        }),
      );
      res.end(sseEvent({ id: 'e2', data: { jsonrpc: '2.0', id: m.id, result: { session } } }));
    } else json(res, { jsonrpc: '2.0', id: m.id, result: { session } });
  };
}

describe('SupervisedHttpUpstream', () => {
  it('initializes before the link is ready, and attributes stream messages to the client request', async () => {
    const h = await make(streamable(new Set()));
    await h.supervisor.start();
    expect(h.router.linkState(LINK)).toBe('ready');
    expect(h.supervisor.kind).toBe('streamable-http');
    h.request(1, 'tools/call', { name: 't', _meta: { progressToken: 'p' } });
    await vi.waitFor(() => expect(h.responseTo(1)).toBeDefined());
    const progress = h.delivered.find(
      (d) => 'method' in d.message && d.message.method === 'notifications/progress',
    );
    expect(progress?.delivery).toEqual({ kind: 'related', request: 1 });
    expect(progress?.message).toMatchObject({ params: { progressToken: 'p' } });
    expect(h.responseTo(1)?.message).toMatchObject({ result: { session: 's1' } });
  });

  it('re-initializes on a new session after a 404 and carries on', async () => {
    const expired = new Set<string>();
    const h = await make(streamable(expired));
    await h.supervisor.start();
    expired.add('s1');
    h.request(1, 'tools/list');
    await vi.waitFor(() => expect(h.responseTo(1)).toBeDefined());
    expect(h.responseTo(1)?.message).toMatchObject({
      error: { message: expect.stringContaining('upstream session expired (404)') },
    });
    await vi.waitFor(() => expect(h.router.linkState(LINK)).toBe('ready'));
    expect(h.inits).toEqual([0, 1]);
    expect(h.supervisor.restarts).toBe(1);
    h.request(2, 'tools/list');
    await vi.waitFor(() => expect(h.responseTo(2)).toBeDefined());
    expect(h.responseTo(2)?.message).toMatchObject({ result: { session: 's2' } });
    expect(h.stops).toEqual([]);
  });

  it('goes down for good when restarts are off', async () => {
    const expired = new Set<string>();
    const h = await make(streamable(expired), { restart: false });
    await h.supervisor.start();
    expired.add('s1');
    h.request(1, 'tools/list');
    await vi.waitFor(() => expect(h.stops).toEqual([{ reason: 'upstream session expired (404)' }]));
    expect(h.router.linkState(LINK)).toBe('down');
  });

  it('gives up after maxRestarts reconnections in a row', async () => {
    const expired = new Set<string>();
    const h = await make(streamable(expired), { maxRestarts: 1 });
    await h.supervisor.start();
    expired.add('s1');
    h.request(1, 'tools/list');
    await vi.waitFor(() => expect(h.inits).toEqual([0, 1]));
    await vi.waitFor(() => expect(h.router.linkState(LINK)).toBe('ready'));
    expired.add('s2');
    h.request(2, 'tools/list');
    await vi.waitFor(() => expect(h.stops).toEqual([{ reason: 'upstream session expired (404)' }]));
    expect(h.router.linkState(LINK)).toBe('down');
    expect(h.supervisor.restarts).toBe(1);
  });

  it('remembers the 2024-11-05 fallback: a reconnection goes straight to the SSE stream', async () => {
    const streams: ServerResponse[] = [];
    const h = await make((r, res) => {
      if (r.method === 'POST' && r.url === '/mcp') {
        res.writeHead(405).end();
      } else if (r.method === 'GET') {
        startSse(res);
        res.write(sseEvent({ event: 'endpoint', data: `/messages?n=${streams.length}` }));
        streams.push(res);
      } else {
        res.writeHead(202).end();
        const m = JSON.parse(r.body) as { id?: number; method: string };
        const stream = streams[Number(new URL(r.url, 'http://x').searchParams.get('n'))];
        if (m.id !== undefined)
          stream?.write(
            sseEvent({
              event: 'message',
              data: { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2024-11-05' } },
            }),
          );
      }
    });
    await h.supervisor.start();
    expect(h.supervisor.kind).toBe('sse');
    streams[0]?.end();
    await vi.waitFor(() => expect(h.inits).toEqual([0, 1]));
    await vi.waitFor(() => expect(h.router.linkState(LINK)).toBe('ready'));
    expect(h.server.requestsOf('POST').filter((r) => r.url === '/mcp')).toHaveLength(1);
    expect(h.supervisor.kind).toBe('sse');
  });

  it('rejects start when the first connection cannot be initialized', async () => {
    const h = await make((_r, res) => res.writeHead(500).end('nope'));
    await expect(h.supervisor.start()).rejects.toMatchObject({
      message: expect.stringContaining('HTTP 500'),
    });
  });
});
