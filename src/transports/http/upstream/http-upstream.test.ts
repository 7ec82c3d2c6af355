import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../../protocol/jsonrpc/types.js';
import { HttpUpstreamTransport, type HttpUpstreamTransportOptions } from './http-upstream.js';
import { capture } from './test-support/capture.js';
import {
  eventually,
  json,
  type RecordedRequest,
  ScriptedServer,
  sseEvent,
  startSse,
} from './test-support/scripted-server.js';

function message(value: Record<string, unknown>): [string, JsonRpcMessage] {
  const full = { jsonrpc: '2.0', ...value } as unknown as JsonRpcMessage;
  return [JSON.stringify(full), full];
}

const INITIALIZE = message({
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'gw', version: '1' } },
});

interface LegacyScript {
  /** What the Streamable HTTP POST of `initialize` gets. */
  readonly refuse?: number;
  readonly endpoint?: string;
  /** Delay before the endpoint event. */
  readonly endpointDelayMs?: number;
  /** What the GET of the SSE stream gets instead of a stream. */
  readonly getStatus?: number;
}

/**
 * A 2024-11-05 server on /mcp: POST /mcp is refused, GET /mcp opens the stream whose first event
 * names /messages, and each request POSTed there is answered on the stream.
 */
function legacyServer(script: LegacyScript = {}) {
  const state: { stream?: ServerResponse } = {};
  const handler = (request: RecordedRequest, response: ServerResponse): void => {
    if (request.method === 'POST' && request.url === '/mcp') {
      json(
        response,
        { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed.' } },
        script.refuse ?? 405,
      );
      return;
    }
    if (request.method === 'GET' && request.url === '/mcp') {
      if (script.getStatus !== undefined) {
        response.writeHead(script.getStatus).end('no such stream');
        return;
      }
      startSse(response);
      state.stream = response;
      const endpoint = sseEvent({ event: 'endpoint', data: script.endpoint ?? '/messages?sessionId=abc' });
      if (script.endpointDelayMs) setTimeout(() => response.write(endpoint), script.endpointDelayMs);
      else response.write(endpoint);
      return;
    }
    if (request.method === 'POST' && request.url.startsWith('/messages')) {
      response.writeHead(202).end('Accepted');
      const m = JSON.parse(request.body) as Record<string, unknown>;
      if ('id' in m && 'method' in m) {
        const result =
          m.method === 'initialize'
            ? { protocolVersion: '2024-11-05', capabilities: {}, serverInfo: { name: 'old', version: '1' } }
            : { echo: m.method };
        state.stream?.write(sseEvent({ event: 'message', data: { jsonrpc: '2.0', id: m.id, result } }));
      }
      return;
    }
    response.writeHead(404).end();
  };
  return { handler, state };
}

describe('HttpUpstreamTransport', () => {
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
      maxMessageBytes: 64 * 1024,
      logger: silentLogger,
      metrics,
      ...options,
      url: options.url ?? server.url(),
    });
    transports.push(transport);
    return { transport, seen: capture(transport) };
  }

  it('speaks Streamable HTTP when the server does', async () => {
    server.handler = (_r, res) =>
      json(res, { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-11-25' } }, 200, {
        'mcp-session-id': 's-1',
      });
    const { transport, seen } = open();
    await transport.start();
    transport.send(...INITIALIZE);
    const answer = await seen.response(1);
    expect(answer.meta.relatedUpstreamId).toBe(1);
    expect(transport.kind).toBe('streamable-http');
    expect(transport.sessionId).toBe('s-1');
    expect(transport.protocolVersion).toBe('2025-11-25');
  });

  describe.each([400, 404, 405])('falls back to 2024-11-05 HTTP+SSE when initialize gets %i', (status) => {
    it('re-sends the initialize to the endpoint and receives everything on the GET stream', async () => {
      server.handler = legacyServer({ refuse: status }).handler;
      const { transport, seen } = open({ headers: { 'x-api-key': 'k' } });
      await transport.start();
      transport.send(...INITIALIZE);
      const answer = await seen.response(1);
      expect(answer.value.result).toMatchObject({ protocolVersion: '2024-11-05' });
      expect(answer.meta.relatedUpstreamId).toBeUndefined();
      expect(answer.meta.transport).toMatchObject({ kind: 'sse', streamId: 'sse' });
      expect(transport.kind).toBe('sse');

      transport.send(...message({ method: 'notifications/initialized' }));
      transport.send(...message({ id: 2, method: 'tools/list' }));
      await seen.response(2);
      const [refused, get, ...posts] = server.requests;
      expect(refused).toMatchObject({ method: 'POST', url: '/mcp', body: INITIALIZE[0] });
      expect(get).toMatchObject({ method: 'GET', url: '/mcp' });
      expect(get?.headers).toMatchObject({ accept: 'text/event-stream', 'x-api-key': 'k' });
      expect(posts.map((p) => [p.method, p.url])).toEqual([
        ['POST', '/messages?sessionId=abc'],
        ['POST', '/messages?sessionId=abc'],
        ['POST', '/messages?sessionId=abc'],
      ]);
      expect(posts[0]?.body).toBe(INITIALIZE[0]);
      expect(posts[0]?.headers).toMatchObject({ 'content-type': 'application/json', 'x-api-key': 'k' });
      expect(posts[0]?.headers['mcp-protocol-version']).toBeUndefined();
      expect(metrics.get('upstream_http_fallbacks_total', { upstream: 'up' })).toBe(1);
    });
  });

  it('holds what is sent while the fallback connects, and sends it in order afterwards', async () => {
    server.handler = legacyServer({ endpointDelayMs: 80 }).handler;
    const { transport, seen } = open();
    await transport.start();
    transport.send(...INITIALIZE);
    await eventually(() => server.requestsOf('GET').length === 1);
    transport.send(...message({ method: 'notifications/initialized' }));
    transport.send(...message({ id: 2, method: 'tools/list' }));
    await seen.response(2);
    const bodies = server.requests
      .filter((r) => r.url.startsWith('/messages'))
      .map((r) => (JSON.parse(r.body) as { method: string }).method);
    expect(bodies).toEqual(['initialize', 'notifications/initialized', 'tools/list']);
  });

  it('fails the initialize, naming both attempts, when the fallback cannot connect either', async () => {
    server.handler = legacyServer({ refuse: 404, getStatus: 404 }).handler;
    const { transport, seen } = open();
    await transport.start();
    transport.send(...INITIALIZE);
    const answer = await seen.response(1);
    expect(answer.value.error).toMatchObject({
      code: -32000,
      message: expect.stringMatching(
        /HTTP 404 \(Method not allowed\.\), and the 2024-11-05 HTTP\+SSE fallback failed: .*HTTP 404/,
      ),
      data: { code: 'SB_UPSTREAM_UNAVAILABLE', status: 404 },
    });
  });

  describe('HTTP+SSE (2024-11-05) chosen up front', () => {
    it('connects on start and POSTs to the endpoint', async () => {
      server.handler = legacyServer().handler;
      const { transport, seen } = open({ transport: 'sse' });
      await transport.start();
      expect(server.requestsOf('GET')).toHaveLength(1);
      transport.send(...INITIALIZE);
      await seen.response(1);
      expect(server.requestsOf('POST', 'initialize').map((r) => r.url)).toEqual(['/messages?sessionId=abc']);
    });

    it("POSTs a 2026-07-28 client's call as a 2024-11-05 client would: no modern envelope in _meta", async () => {
      server.handler = legacyServer().handler;
      const { transport, seen } = open({ transport: 'sse' });
      await transport.start();
      transport.send(...INITIALIZE);
      await seen.response(1);
      transport.send(
        ...message({
          id: 2,
          method: 'tools/call',
          params: {
            name: 'echo',
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
              'switchboard.dev/forwardHeaders': { 'mcp-param-a': '1' },
              progressToken: 'p',
            },
          },
        }),
      );
      await seen.response(2);
      expect(JSON.parse(server.requestsOf('POST', 'tools/call')[0]!.body)).toEqual({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'echo', _meta: { progressToken: 'p' } },
      });
      // And a retry with a requestState is refused: a 2024-11-05 server never issued one.
      const [, retry] = message({
        id: 3,
        method: 'tools/call',
        params: {
          name: 'echo',
          requestState: 's',
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
        },
      });
      expect(transport.refuse(retry as JsonRpcRequest)).toMatchObject({ code: -32602 });
    });

    it('refuses an endpoint on another origin', async () => {
      server.handler = legacyServer({ endpoint: 'http://evil.example/messages' }).handler;
      const { transport } = open({ transport: 'sse' });
      await expect(transport.start()).rejects.toThrow(/another origin/);
    });

    it('rejects start when no endpoint comes in time', async () => {
      server.handler = (_r, res) => {
        startSse(res);
        res.write(': hello\n\n');
      };
      const { transport } = open({ transport: 'sse', endpointTimeoutMs: 100 });
      await expect(transport.start()).rejects.toMatchObject({
        code: 'SB_UPSTREAM_UNAVAILABLE',
        message: expect.stringContaining('no endpoint within 100 ms'),
      });
    });

    it('fails a request whose POST is refused, and closes once when the stream ends', async () => {
      const legacy = legacyServer();
      server.handler = (r, res) =>
        r.url.startsWith('/messages') && r.body.includes('tools/call')
          ? res.writeHead(500).end('boom')
          : legacy.handler(r, res);
      const { transport, seen } = open({ transport: 'sse' });
      await transport.start();
      transport.send(...message({ id: 3, method: 'tools/call' }));
      const answer = await seen.response(3);
      expect(answer.value.error).toMatchObject({
        code: -32000,
        message: 'upstream up answered HTTP 500: boom',
        data: { status: 500 },
      });
      legacy.state.stream?.end();
      await eventually(() => seen.closes.length === 1);
      expect(seen.closes[0]?.reason).toBe('the upstream SSE stream ended');
      await transport.close();
      expect(seen.closes).toHaveLength(1);
    });

    it('close() ends the stream and closes once', async () => {
      const legacy = legacyServer();
      server.handler = legacy.handler;
      const { transport, seen } = open({ transport: 'sse' });
      await transport.start();
      const closed = new Promise<void>((resolve) => legacy.state.stream?.on('close', () => resolve()));
      await transport.close();
      await closed;
      expect(seen.closes).toEqual([{ reason: 'closed' }]);
    });
  });
});
