/**
 * The facade choosing the era: the probe and its cache, forced eras, and the default that keeps
 * the pre-era behaviour (no probe).
 */
import type { ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../../protocol/jsonrpc/types.js';
import { EraCache } from './era-cache.js';
import { HttpUpstreamTransport, type HttpUpstreamTransportOptions } from './http-upstream.js';
import { capture } from './test-support/capture.js';
import { eventually, json, type RecordedRequest, ScriptedServer } from './test-support/scripted-server.js';

function message(value: Record<string, unknown>): [string, JsonRpcMessage] {
  const full = { jsonrpc: '2.0', ...value } as unknown as JsonRpcMessage;
  return [JSON.stringify(full), full];
}

const INITIALIZE = message({
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'gw', version: '1' } },
});

/** A 2026-07-28 server: discover answers, everything else is -32601 (404). */
function modern(r: RecordedRequest, res: ServerResponse): void {
  const m = JSON.parse(r.body) as { id: unknown; method: string };
  if (m.method === 'server/discover')
    json(res, {
      jsonrpc: '2.0',
      id: m.id,
      result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} } },
    });
  else json(res, { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } }, 404);
}

/** A legacy server with sessions: 400 without one, initialize opens one. */
function legacy(r: RecordedRequest, res: ServerResponse): void {
  if (r.method !== 'POST') {
    res.writeHead(r.method === 'DELETE' ? 200 : 405).end();
    return;
  }
  const m = JSON.parse(r.body) as { id: unknown; method: string };
  if (m.method === 'initialize')
    json(
      res,
      { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {} } },
      200,
      {
        'mcp-session-id': 'S1',
      },
    );
  else if (r.headers['mcp-session-id'] === undefined)
    json(
      res,
      { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID' } },
      400,
    );
  else if (m.id === undefined) res.writeHead(202).end();
  else json(res, { jsonrpc: '2.0', id: m.id, result: {} });
}

/**
 * A server of both eras, as a v2-SDK server serving its 2025 code to 2026-07-28 clients: discover
 * lists 2026-07-28 only, yet `initialize` opens a session (S1, then S2...); a request with a modern
 * envelope is answered statelessly, one without needs the session. Each answer names the era it
 * was served in, so a test sees which side of the server got it.
 */
function dual(): (r: RecordedRequest, res: ServerResponse) => void {
  let sessions = 0;
  return (r, res) => {
    if (r.method === 'DELETE') {
      res.writeHead(200).end();
      return;
    }
    if (r.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const m = JSON.parse(r.body) as { id?: unknown; method: string; params?: { _meta?: object } };
    const modernEnvelope =
      m.params?._meta !== undefined && 'io.modelcontextprotocol/protocolVersion' in m.params._meta;
    if (m.method === 'server/discover' || modernEnvelope) {
      if (r.headers['mcp-protocol-version'] !== '2026-07-28' || r.headers['mcp-session-id'] !== undefined) {
        json(res, { jsonrpc: '2.0', id: m.id, error: { code: -32020, message: 'header mismatch' } }, 400);
        return;
      }
      json(res, {
        jsonrpc: '2.0',
        id: m.id,
        result:
          m.method === 'server/discover'
            ? { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} } }
            : { resultType: 'complete', served: '2026-07-28' },
      });
      return;
    }
    if (m.method === 'initialize') {
      sessions += 1;
      json(
        res,
        { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {} } },
        200,
        { 'mcp-session-id': `S${sessions}` },
      );
      return;
    }
    const session = r.headers['mcp-session-id'];
    if (session === undefined) {
      json(res, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No valid session ID' } }, 400);
      return;
    }
    if (m.id === undefined) res.writeHead(202).end();
    else json(res, { jsonrpc: '2.0', id: m.id, result: { served: `2025 session ${String(session)}` } });
  };
}

/** A 2026-07-28 client's retry of an input-required call. */
const RETRY_WITH_STATE: JsonRpcRequest = {
  jsonrpc: '2.0',
  id: 9,
  method: 'tools/call',
  params: {
    name: 'echo',
    arguments: {},
    inputResponses: {},
    requestState: 'opaque',
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
  },
};

describe('HttpUpstreamTransport eras', () => {
  let server: ScriptedServer;
  let metrics: Metrics;
  const transports: HttpUpstreamTransport[] = [];

  beforeEach(async () => {
    server = await ScriptedServer.start();
    metrics = new Metrics();
  });

  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.close()));
    await server.close();
  });

  function open(options: Partial<HttpUpstreamTransportOptions> = {}) {
    const transport = new HttpUpstreamTransport({
      name: 'up',
      url: server.url(),
      maxMessageBytes: 64 * 1024,
      logger: silentLogger,
      metrics,
      ...options,
    });
    transports.push(transport);
    return { transport, seen: capture(transport) };
  }

  const discovers = () => server.requestsOf('POST', 'server/discover').length;

  it('probes, then speaks 2026-07-28 to a modern server, and remembers it', async () => {
    server.handler = modern;
    const cache = new EraCache();
    const { transport, seen } = open({ era: 'auto', eraCache: cache });
    await transport.start();
    expect(transport.kind).toBe('modern-http');
    expect(transport.protocolVersion).toBe('2026-07-28');
    transport.send(...INITIALIZE);
    expect((await seen.response(1)).value.result).toMatchObject({ protocolVersion: '2025-11-25' });
    expect(cache.get(new URL(server.url()))).toBe('modern');
    expect(metrics.get('upstream_era_probes_total', { upstream: 'up', era: 'modern' })).toBe(1);
    // The state may be this server's own: it goes through.
    expect(transport.refuse(RETRY_WITH_STATE)).toBeUndefined();

    const again = open({ era: 'auto', eraCache: cache });
    await again.transport.start();
    expect(again.transport.kind).toBe('modern-http');
    expect(discovers()).toBe(2); // the first probe and the first initialize; none for the second transport
  });

  it('probes, then speaks the legacy Streamable HTTP to a legacy server', async () => {
    server.handler = legacy;
    const cache = new EraCache();
    const { transport, seen } = open({ era: 'auto', eraCache: cache });
    // Before the era is known, nothing is refused.
    expect(transport.refuse(RETRY_WITH_STATE)).toBeUndefined();
    await transport.start();
    // A legacy server issues no requestState, so one cannot resume anything there.
    expect(transport.refuse(RETRY_WITH_STATE)).toMatchObject({ code: -32602, data: { upstream: 'up' } });
    transport.send(...INITIALIZE);
    await seen.response(1);
    expect(transport.kind).toBe('streamable-http');
    expect(transport.sessionId).toBe('S1');
    expect(cache.get(new URL(server.url()))).toBe('legacy');
    expect(server.requestsOf('POST').map((r) => (JSON.parse(r.body) as { method: string }).method)).toEqual([
      'server/discover',
      'initialize',
    ]);
  });

  it('finds a server of both eras (discover answered, initialize accepted) and deletes the probe session', async () => {
    server.handler = dual();
    const cache = new EraCache();
    const { transport } = open({ era: 'auto', eraCache: cache });
    await transport.start();
    expect(transport.kind).toBe('dual-http');
    expect(cache.get(new URL(server.url()))).toBe('dual');
    expect(metrics.get('upstream_era_probes_total', { upstream: 'up', era: 'dual' })).toBe(1);
    expect(server.requests.map((r) => [r.method, r.headers['mcp-session-id']])).toEqual([
      ['POST', undefined],
      ['POST', undefined],
      ['DELETE', 'S1'],
    ]);
    // The probe's question is the 2025 handshake as a 2025 client sends it.
    const asked = server.requests[1]!;
    expect(JSON.parse(asked.body)).toMatchObject({
      method: 'initialize',
      params: { protocolVersion: '2025-11-25' },
    });
    expect(asked.headers['mcp-protocol-version']).toBeUndefined();
  });

  it('takes a discover result listing a 2025 revision as both eras, without asking initialize', async () => {
    server.handler = (r, res) => {
      const m = JSON.parse(r.body) as { id: unknown };
      json(res, {
        jsonrpc: '2.0',
        id: m.id,
        result: { resultType: 'complete', supportedVersions: ['2025-11-25', '2026-07-28'], capabilities: {} },
      });
    };
    const { transport } = open({ era: 'auto' });
    await transport.start();
    expect(transport.kind).toBe('dual-http');
    expect(server.requests.map((r) => (JSON.parse(r.body) as { method: string }).method)).toEqual([
      'server/discover',
    ]);
  });

  it("speaks to a server of both eras in each request's own era, on one link", async () => {
    server.handler = dual();
    const { transport, seen } = open({ era: 'auto' });
    await transport.start();
    transport.send(...INITIALIZE);
    expect((await seen.response(1)).value.result).toMatchObject({ protocolVersion: '2025-11-25' });
    expect(transport.sessionId).toBe('S2');
    transport.send(...message({ method: 'notifications/initialized' }));
    // A 2025 client's call (or the gateway's own request): the session.
    transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'whoami', arguments: {} } }));
    expect((await seen.response(2)).value.result).toEqual({ served: '2025 session S2' });
    // A 2026-07-28 client's call: stateless, with its own envelope, results untouched.
    const modernCall = message({
      id: 3,
      method: 'tools/call',
      params: {
        name: 'whoami',
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    expect(transport.refuse(modernCall[1] as JsonRpcRequest)).toBeUndefined();
    transport.send(...modernCall);
    expect((await seen.response(3)).value.result).toEqual({ resultType: 'complete', served: '2026-07-28' });
    // A 2026-07-28 client's state is the server's own on the stateless side: it goes through.
    expect(transport.refuse(RETRY_WITH_STATE)).toBeUndefined();
  });

  it('sends a cancellation where its request went', async () => {
    const held: ServerResponse[] = [];
    const closed: unknown[] = [];
    const base = dual();
    server.handler = (r, res) => {
      const m =
        r.method === 'POST'
          ? (JSON.parse(r.body) as { id?: unknown; method?: string; params?: { name?: string } })
          : {};
      if (m.method === 'tools/call' && m.params?.name === 'slow') {
        held.push(res);
        res.on('close', () => closed.push(m.id));
      } else base(r, res);
    };
    const { transport, seen } = open({ era: 'auto' });
    await transport.start();
    transport.send(...INITIALIZE);
    await seen.response(1);
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    transport.send(
      ...message({ id: 5, method: 'tools/call', params: { name: 'slow', arguments: {}, _meta: meta } }),
    );
    transport.send(...message({ id: 6, method: 'tools/call', params: { name: 'slow', arguments: {} } }));
    await eventually(() => held.length === 2);
    const before = server.requests.length;
    transport.send(...message({ method: 'notifications/cancelled', params: { requestId: 5 } }));
    transport.send(...message({ method: 'notifications/cancelled', params: { requestId: 6 } }));
    // The 2026-07-28 one closes its stream (nothing is POSTed); the session's is told by a POST.
    await eventually(() => server.requests.length === before + 1);
    const told = server.requests[before]!;
    expect(JSON.parse(told.body)).toMatchObject({
      method: 'notifications/cancelled',
      params: { requestId: 6 },
    });
    expect(told.headers['mcp-session-id']).toBe('S2');
    await eventually(() => closed.includes(5));
    expect(closed).toEqual([5]);
    for (const res of held) if (!res.writableEnded) res.end();
  });

  it('forces an era when configured, without probing', async () => {
    server.handler = dual();
    const legacyOnly = open({ era: 'legacy' });
    await legacyOnly.transport.start();
    expect(legacyOnly.transport.kind).toBe('streamable-http');
    const modernOnly = open({ era: 'modern' });
    await modernOnly.transport.start();
    expect(modernOnly.transport.kind).toBe('modern-http');
    const both = open({ era: 'dual' });
    await both.transport.start();
    expect(both.transport.kind).toBe('dual-http');
    expect(server.requests).toEqual([]);
  });

  it('does not probe without era: auto, nor with a forced era', async () => {
    server.handler = modern;
    const plain = open();
    await plain.transport.start();
    expect(plain.transport.kind).toBe('streamable-http');
    const forced = open({ era: 'modern' });
    await forced.transport.start();
    expect(forced.transport.kind).toBe('modern-http');
    const kind = open({ era: 'auto', transport: 'modern-http' });
    await kind.transport.start();
    expect(kind.transport.kind).toBe('modern-http');
    expect(server.requests).toEqual([]);
  });

  it('forgets a cached modern era when discover gets no JSON-RPC answer', async () => {
    server.handler = (_r, res) => res.writeHead(400).end('Bad Request');
    const cache = new EraCache();
    cache.set(new URL(server.url()), 'modern');
    const { transport, seen } = open({ era: 'auto', eraCache: cache });
    await transport.start();
    expect(transport.kind).toBe('modern-http');
    transport.send(...INITIALIZE);
    expect((await seen.response(1)).value.error).toMatchObject({
      message: 'upstream up answered HTTP 400: Bad Request',
    });
    expect(cache.get(new URL(server.url()))).toBeUndefined();
  });

  it('fails start when the probe has no verdict', async () => {
    server.handler = (_r, res) => res.writeHead(500).end('down');
    const { transport } = open({ era: 'auto' });
    await expect(transport.start()).rejects.toMatchObject({
      code: 'SB_UPSTREAM_UNAVAILABLE',
      message: expect.stringContaining('HTTP 500: down'),
    });
  });

  it('connects nothing when closed while probing', async () => {
    let answer: (() => void) | undefined;
    server.handler = (r, res) => {
      answer = () => modern(r, res);
    };
    // Connections of the caller's, which outlive the transport: the probe's answer still comes.
    const pool = new Pool(new URL(server.url()).origin);
    try {
      const { transport, seen } = open({ era: 'auto', dispatcher: pool });
      const started = transport.start();
      await eventually(() => answer !== undefined);
      await transport.close();
      answer?.();
      await started;
      expect(transport.kind).toBeUndefined();
      expect(seen.closes).toEqual([{ reason: 'closed' }]);
    } finally {
      await pool.destroy();
    }
  });
});
