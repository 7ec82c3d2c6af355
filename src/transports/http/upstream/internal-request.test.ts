import { Pool } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import { HttpConnection } from './http-connection.js';
import { type InternalRequester, internalRequest, listAllTools } from './internal-request.js';
import { json, ScriptedServer } from './test-support/scripted-server.js';

describe('internalRequest', () => {
  let server: ScriptedServer;
  let pool: Pool;
  let closing: AbortController;
  let requester: InternalRequester;

  beforeEach(async () => {
    server = await ScriptedServer.start();
    pool = new Pool(new URL(server.url()).origin);
    closing = new AbortController();
    let n = 0;
    requester = {
      http: new HttpConnection(new URL(server.url()), pool),
      path: '/mcp',
      reader: {
        upstream: 'up',
        maxMessageBytes: 4096,
        path: '/mcp',
        logger: silentLogger,
        metrics: new Metrics(),
      },
      signal: closing.signal,
      timeoutMs: 200,
      nextId: () => `own-${++n}`,
      params: (extra) => ({ ...extra, _meta: { envelope: true } }),
      headers: (method) => ({ 'mcp-method': method, 'content-type': 'application/json' }),
    };
  });

  afterEach(async () => {
    await pool.destroy();
    await server.close();
  });

  it('sends the envelope and headers, and resolves with the result', async () => {
    server.handler = (r, res) =>
      json(res, { jsonrpc: '2.0', id: JSON.parse(r.body).id, result: { tools: [] } });
    expect(await internalRequest(requester, 'tools/list', { cursor: 'c' })).toEqual({ tools: [] });
    const [sent] = server.requests;
    expect(sent?.headers['mcp-method']).toBe('tools/list');
    expect(JSON.parse(sent?.body ?? '')).toEqual({
      jsonrpc: '2.0',
      id: 'own-1',
      method: 'tools/list',
      params: { cursor: 'c', _meta: { envelope: true } },
    });
  });

  it('rejects with what went wrong', async () => {
    server.handler = (r, res) =>
      json(res, { jsonrpc: '2.0', id: JSON.parse(r.body).id, error: { code: -32601, message: 'nope' } });
    await expect(internalRequest(requester, 'tools/list', {})).rejects.toThrow('tools/list failed: nope');
    server.handler = (_r, res) => res.writeHead(500).end('down');
    await expect(internalRequest(requester, 'tools/list', {})).rejects.toThrow(
      'tools/list got HTTP 500: down',
    );
  });

  it('gives up after its deadline, or when the transport closes', async () => {
    server.handler = () => {};
    await expect(internalRequest(requester, 'tools/list', {})).rejects.toThrow();
    requester = { ...requester, timeoutMs: 60_000 };
    const pending = internalRequest(requester, 'tools/list', {});
    closing.abort();
    await expect(pending).rejects.toThrow();
  });
});

describe('listAllTools', () => {
  it('follows the cursor, and stops after maxPages', async () => {
    const asked: JsonObject[] = [];
    const tools = await listAllTools(async (_method, extra) => {
      asked.push(extra);
      const page = asked.length;
      return page < 3 ? { tools: [page], nextCursor: `p${page}` } : { tools: [page] };
    });
    expect(tools).toEqual([1, 2, 3]);
    expect(asked).toEqual([{}, { cursor: 'p1' }, { cursor: 'p2' }]);
    let calls = 0;
    await listAllTools(async () => {
      calls++;
      return { tools: [], nextCursor: 'again' };
    }, 4);
    expect(calls).toBe(4);
  });
});
