import type { ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { Pool } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { probeEra } from './era-probe.js';
import {
  json,
  type RecordedRequest,
  ScriptedServer,
  sseEvent,
  startSse,
} from './test-support/scripted-server.js';

const DISCOVER = {
  supportedVersions: ['2026-07-28'],
  capabilities: {},
  resultType: 'complete',
};

function rpcError(code: number, message = 'm', data?: unknown) {
  return { jsonrpc: '2.0', id: 'switchboard-era-probe', error: { code, message, ...(data ? { data } : {}) } };
}

describe('probeEra', () => {
  let server: ScriptedServer;
  let pool: Pool;

  beforeEach(async () => {
    server = await ScriptedServer.start();
    pool = new Pool(new URL(server.url()).origin);
  });

  afterEach(async () => {
    await pool.destroy();
    await server.close();
  });

  const probe = (timeoutMs?: number) =>
    probeEra({
      name: 'up',
      url: new URL(server.url()),
      dispatcher: pool,
      headers: { 'X-Api-Key': 'k', 'Mcp-Method': 'forged' },
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });

  it('sends server/discover with a modern envelope and the mirrored headers', async () => {
    server.handler = (r, res) => json(res, { jsonrpc: '2.0', id: JSON.parse(r.body).id, result: DISCOVER });
    expect(await probe()).toMatchObject({ era: 'modern', status: 200 });
    const [request] = server.requests;
    expect(request?.headers).toMatchObject({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'server/discover',
      'x-api-key': 'k',
    });
    expect(JSON.parse(request?.body ?? '')).toMatchObject({
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'switchboard' },
        },
      },
    });
  });

  it('asks a modern server initialize too, and keeps it modern when it is refused (a 2026-07-28-only server)', async () => {
    server.handler = (r, res) => {
      const m = JSON.parse(r.body) as { id: unknown; method: string };
      if (m.method === 'server/discover') json(res, { jsonrpc: '2.0', id: m.id, result: DISCOVER });
      else json(res, { ...rpcError(-32022, 'Unsupported protocol version: 2025-11-25'), id: m.id }, 400);
    };
    const verdict = await probe();
    expect(verdict).toMatchObject({ era: 'modern', status: 200 });
    expect(verdict.reason).toContain('initialize got HTTP 400');
    expect(server.requests.map((r) => (JSON.parse(r.body) as { method: string }).method)).toEqual([
      'server/discover',
      'initialize',
    ]);
    // The configured headers go with the question; the protocol's own are the 2025 client's.
    expect(server.requests[1]?.headers).toMatchObject({ 'x-api-key': 'k' });
    expect(server.requests[1]?.headers['mcp-protocol-version']).toBeUndefined();
  });

  it('takes an initialize result over SSE, then ends the session it opened', async () => {
    server.handler = (r, res) => {
      if (r.method === 'DELETE') {
        res.writeHead(200).end();
        return;
      }
      const m = JSON.parse(r.body) as { id: unknown; method: string };
      if (m.method === 'server/discover') {
        json(res, { jsonrpc: '2.0', id: m.id, result: DISCOVER });
        return;
      }
      startSse(res, { 'mcp-session-id': 'probe-session' });
      res.end(
        sseEvent({
          data: { jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: {} } },
        }),
      );
    };
    expect(await probe()).toMatchObject({ era: 'dual', status: 200 });
    const deleted = server.requests.find((r) => r.method === 'DELETE');
    expect(deleted?.headers['mcp-session-id']).toBe('probe-session');
  });

  it('keeps a modern verdict when initialize is answered with a 2026-07-28 version', async () => {
    server.handler = (r, res) => {
      const m = JSON.parse(r.body) as { id: unknown; method: string };
      json(res, {
        jsonrpc: '2.0',
        id: m.id,
        result:
          m.method === 'server/discover' ? DISCOVER : { protocolVersion: '2026-07-28', capabilities: {} },
      });
    };
    expect((await probe()).era).toBe('modern');
  });

  it('reads a discover result from an SSE answer too', async () => {
    server.handler = (r, res) => {
      startSse(res);
      res.end(sseEvent({ data: { jsonrpc: '2.0', id: JSON.parse(r.body).id, result: DISCOVER } }));
    };
    expect((await probe()).era).toBe('modern');
  });

  it.each([
    [400, rpcError(-32022, 'Unsupported protocol version', { supported: ['2027-01-01'] })],
    [400, rpcError(-32020, 'Header mismatch')],
    [400, rpcError(-32021, 'Missing capability')],
    [404, rpcError(-32601, 'Method not found')],
  ])('takes HTTP %i with a modern error for a modern server', async (status, body) => {
    server.handler = (_r, res) => json(res, body, status);
    expect(await probe()).toMatchObject({ era: 'modern', status });
  });

  it.each<[string, (r: RecordedRequest, res: ServerResponse) => void]>([
    [
      'a 400 without a session id',
      (_r, res) =>
        json(res, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No session' } }, 400),
    ],
    ['a bare 404', (_r, res) => res.writeHead(404).end('Not Found')],
    ['a 405', (_r, res) => res.writeHead(405).end()],
    ['a 400 with -32601', (_r, res) => json(res, rpcError(-32601), 400)],
    ['a 200 with -32601 (a legacy server without sessions)', (_r, res) => json(res, rpcError(-32601))],
    [
      'a 200 result that is not a discover result',
      (r, res) => json(res, { jsonrpc: '2.0', id: JSON.parse(r.body).id, result: { protocolVersion: 'x' } }),
    ],
    ['a 200 with HTML', (_r, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>')],
  ])('takes %s for a legacy server', async (_what, handler) => {
    server.handler = handler;
    expect((await probe()).era).toBe('legacy');
  });

  it('has no verdict on a 5xx without a modern error', async () => {
    server.handler = (_r, res) => res.writeHead(503).end('maintenance');
    await expect(probe()).rejects.toMatchObject({
      code: 'SB_UPSTREAM_UNAVAILABLE',
      message: 'could not tell which MCP era upstream up speaks: server/discover got HTTP 503: maintenance',
    });
  });

  it('has no verdict when the answer does not come in time', async () => {
    server.handler = () => {};
    await expect(probe(100)).rejects.toMatchObject({ code: 'SB_UPSTREAM_UNAVAILABLE' });
  });

  it('has no verdict when nobody listens', async () => {
    const port = await new Promise<number>((resolve) => {
      const probeServer = createServer();
      probeServer.listen(0, '127.0.0.1', () => {
        const address = probeServer.address();
        probeServer.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    const closed = new Pool(url.origin);
    try {
      await expect(probeEra({ name: 'up', url, dispatcher: closed })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await closed.destroy();
    }
  });
});
