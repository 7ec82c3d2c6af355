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
