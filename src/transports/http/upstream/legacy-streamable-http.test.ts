import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import {
  type InitializeRejection,
  type LegacyStreamableHttpOptions,
  LegacyStreamableHttpTransport,
} from './legacy-streamable-http.js';
import { capture } from './test-support/capture.js';
import {
  eventually,
  json,
  type RecordedRequest,
  ScriptedServer,
  sseEvent,
  startSse,
} from './test-support/scripted-server.js';

const SESSION = 'sess-0123';
const VERSION = '2025-06-18';

type MethodHandler = (
  request: RecordedRequest,
  response: ServerResponse,
  message: Record<string, unknown>,
) => unknown;

/**
 * A well-behaved legacy server: initialize -> JSON with a session id, notifications -> 202, GET ->
 * 405, DELETE -> 200; `methods` overrides what a given JSON-RPC method gets, `get` the GET.
 */
function mcpHandler(
  methods: Record<string, MethodHandler> = {},
  get?: (r: RecordedRequest, res: ServerResponse) => void,
) {
  return async (request: RecordedRequest, response: ServerResponse): Promise<void> => {
    if (request.method === 'GET') {
      if (get) get(request, response);
      else response.writeHead(405).end();
      return;
    }
    if (request.method === 'DELETE') {
      response.writeHead(200).end();
      return;
    }
    const message = JSON.parse(request.body) as Record<string, unknown>;
    const method = String(message.method ?? '');
    const custom = methods[method];
    if (custom) {
      await custom(request, response, message);
      return;
    }
    if (method === 'initialize') {
      json(
        response,
        {
          jsonrpc: '2.0',
          id: message.id,
          result: { protocolVersion: VERSION, capabilities: {}, serverInfo: { name: 's', version: '1' } },
        },
        200,
        {
          'mcp-session-id': SESSION,
        },
      );
      return;
    }
    if (!('id' in message)) {
      response.writeHead(202).end();
      return;
    }
    json(response, { jsonrpc: '2.0', id: message.id, result: { echo: method } });
  };
}

function request(
  id: number | string,
  method: string,
  params?: Record<string, unknown>,
): [string, JsonRpcMessage] {
  const message =
    params === undefined
      ? { jsonrpc: '2.0' as const, id, method }
      : { jsonrpc: '2.0' as const, id, method, params };
  return [JSON.stringify(message), message];
}

function notification(method: string, params?: Record<string, unknown>): [string, JsonRpcMessage] {
  const message =
    params === undefined ? { jsonrpc: '2.0' as const, method } : { jsonrpc: '2.0' as const, method, params };
  return [JSON.stringify(message), message];
}

const INITIALIZE = request(0, 'initialize', {
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'gw', version: '1' },
});

describe('LegacyStreamableHttpTransport', () => {
  let server: ScriptedServer;
  let metrics: Metrics;
  const transports: LegacyStreamableHttpTransport[] = [];

  beforeEach(async () => {
    server = await ScriptedServer.start(mcpHandler());
    metrics = new Metrics();
  });

  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.close()));
    await server.close();
  });

  function open(options: Partial<LegacyStreamableHttpOptions> = {}) {
    const transport = new LegacyStreamableHttpTransport({
      name: 'up',
      maxMessageBytes: 64 * 1024,
      logger: silentLogger,
      metrics,
      ...options,
      url: options.url ?? server.url(),
    });
    transports.push(transport);
    const seen = capture(transport);
    return { transport, seen };
  }

  /** Initialized; the GET stream stays closed unless asked for, so swapped handlers see only POSTs. */
  async function initialized(options: Partial<LegacyStreamableHttpOptions> = {}) {
    const opened = open({ standaloneStream: false, ...options });
    await opened.transport.start();
    opened.transport.send(...INITIALIZE);
    await opened.seen.response(0);
    opened.transport.send(...notification('notifications/initialized'));
    await eventually(() => server.requestsOf('POST', 'notifications/initialized').length === 1);
    return opened;
  }

  describe('POST and headers', () => {
    it('sends Accept for both answer types, then the session id and negotiated version on every later request', async () => {
      const { transport, seen } = await initialized({
        headers: { 'X-Api-Key': 'k', 'Mcp-Session-Id': 'forged', accept: 'text/html' },
      });
      transport.send(...request(1, 'tools/list'));
      const answer = await seen.response(1);
      expect(answer.value).toEqual({ jsonrpc: '2.0', id: 1, result: { echo: 'tools/list' } });
      expect(answer.meta.relatedUpstreamId).toBe(1);
      expect(answer.meta.transport).toMatchObject({
        kind: 'http',
        method: 'POST',
        path: '/mcp',
        status: 200,
      });

      const [init, initializedNote, list] = server.requestsOf('POST');
      expect(init?.headers).toMatchObject({
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'x-api-key': 'k',
      });
      expect(init?.headers['mcp-session-id']).toBeUndefined();
      expect(init?.headers['mcp-protocol-version']).toBeUndefined();
      for (const later of [initializedNote, list]) {
        expect(later?.headers).toMatchObject({
          'mcp-session-id': SESSION,
          'mcp-protocol-version': VERSION,
          'x-api-key': 'k',
        });
        expect(later?.headers.accept).toBe('application/json, text/event-stream');
      }
      expect(transport.sessionId).toBe(SESSION);
      expect(transport.protocolVersion).toBe(VERSION);
      const init0 = seen.messages[0];
      expect(init0?.meta.transport).toMatchObject({
        kind: 'http',
        headers: { 'mcp-session-id': '[REDACTED]' },
      });
    });

    it("sends a 2026-07-28 client's call as a 2025 client would: no modern envelope or gateway member in _meta", async () => {
      const { transport, seen } = await initialized();
      const modernMeta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'modern-client', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
        'io.modelcontextprotocol/logLevel': 'debug',
        'switchboard.dev/forwardHeaders': { 'mcp-param-region': 'eu' },
      };
      const [json, message] = request(5, 'tools/call', {
        name: 'echo',
        arguments: { message: 'hi' },
        _meta: { ...modernMeta, progressToken: 'p-5', 'example.com/note': 'kept' },
      });
      const written = transport.send(json, message);
      await seen.response(5);
      transport.send(...request(6, 'tools/list', { _meta: modernMeta }));
      await seen.response(6);
      const [call, list] = server.requestsOf('POST').slice(-2);
      // What it wrote is returned, for the router's trace.
      expect(written?.json).toBe(call?.body);
      expect(call?.headers['mcp-protocol-version']).toBe(VERSION);
      expect(JSON.parse(call!.body)).toEqual({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { message: 'hi' },
          _meta: { progressToken: 'p-5', 'example.com/note': 'kept' },
        },
      });
      // Nothing but the envelope: no `_meta` at all, as a 2025 client sends it.
      expect(JSON.parse(list!.body)).toEqual({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: {} });
      // What the router handed over is left as it was.
      expect(message).toMatchObject({ params: { _meta: modernMeta } });
    });

    it('sends a legacy message that has nothing to remove byte for byte', async () => {
      const { transport, seen } = await initialized();
      const text = '{"jsonrpc":"2.0",  "id":7,"method":"tools/list","params":{"_meta":{"progressToken":1}}}';
      expect(transport.send(text, JSON.parse(text) as JsonRpcMessage)).toBeUndefined();
      await seen.response(7);
      expect(server.requestsOf('POST').at(-1)?.body).toBe(text);
    });

    it('tolerates, and counts, a notification accepted with 200 instead of 202', async () => {
      const { transport } = await initialized();
      server.handler = (_r, res) => res.writeHead(200).end();
      transport.send(...notification('notifications/roots/list_changed'));
      await eventually(
        () => metrics.get('upstream_http_unexpected_status_total', { upstream: 'up', status: '200' }) === 1,
      );
      expect(metrics.total('upstream_send_failures_total')).toBe(0);
    });

    it('delivers a JSON batch answer message by message, the response last', async () => {
      server.handler = mcpHandler({
        'tools/list': (_r, res, m) =>
          json(res, [
            { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
            { jsonrpc: '2.0', id: m.id, result: {} },
            { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'y' } },
          ]),
      });
      const { transport, seen } = await initialized();
      transport.send(...request(7, 'tools/list'));
      await seen.response(7);
      const after = seen.messages
        .filter((m) => m.meta.relatedUpstreamId === 7)
        .map((m) => m.value as { id?: number; params?: { data: string } });
      expect(after.map((m) => [m.id ?? m.params?.data, 7])).toEqual([
        ['x', 7],
        ['y', 7],
        [7, 7],
      ]);
    });

    it('expects 202 for notifications and reports, without any message, a notification the server refused', async () => {
      const { transport, seen } = await initialized();
      server.handler = (_r, res) => res.writeHead(500).end('down');
      transport.send(...notification('notifications/roots/list_changed'));
      await eventually(() => seen.errors.length === 1);
      expect(seen.errors[0]?.message).toContain('HTTP 500');
      expect(metrics.get('upstream_http_errors_total', { upstream: 'up', status: '500' })).toBe(1);
      expect(seen.messages.filter((m) => !('id' in m.value && m.value.id === 0))).toHaveLength(0);
    });
  });

  describe('failures of a request produce an error response for its id', () => {
    it('names the HTTP status and what the error body said', async () => {
      const { transport, seen } = await initialized();
      server.handler = (_r, res) =>
        json(res, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: boom' } }, 500);
      transport.send(...request('a', 'tools/call'));
      const answer = await seen.response('a');
      expect(answer.value.error).toEqual({
        code: -32000,
        message: 'upstream up answered HTTP 500: Bad Request: boom',
        data: { code: 'SB_UPSTREAM_UNAVAILABLE', status: 500 },
      });
      expect(answer.meta.relatedUpstreamId).toBe('a');
    });

    it('fails a request answered with 202 and no response', async () => {
      const { transport, seen } = await initialized();
      server.handler = (_r, res) => res.writeHead(202).end();
      transport.send(...request(2, 'tools/list'));
      const answer = await seen.response(2);
      // The server is there and answered: not "unavailable", but an answer MCP does not allow.
      expect(answer.value.error).toEqual({
        code: -32603,
        message: 'upstream up answered a request with HTTP 202 without a response',
        data: { code: 'SB_UPSTREAM_PROTOCOL', upstream: 'up', status: 202 },
      });
    });

    it('names the network error when the server cannot be reached', async () => {
      const port = server.port;
      await server.close();
      const { transport, seen } = open({ url: `http://127.0.0.1:${port}/mcp` });
      transport.send(...INITIALIZE);
      const answer = await seen.response(0);
      expect(answer.value.error).toMatchObject({
        code: -32000,
        message: expect.stringContaining('ECONNREFUSED'),
        data: { code: 'SB_UPSTREAM_UNAVAILABLE' },
      });
      server = await ScriptedServer.start();
    });

    it('fails a request whose JSON answer breaks off', async () => {
      const { transport, seen } = await initialized();
      server.handler = (_r, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"jsonrpc":"2.0",');
        setTimeout(() => res.destroy(), 20);
      };
      transport.send(...request(3, 'tools/list'));
      const answer = await seen.response(3);
      expect(answer.value.error).toMatchObject({
        code: -32000,
        message: expect.stringContaining('broke off'),
      });
    });

    it('answers with a too-large error instead of buffering an oversized JSON body', async () => {
      const { transport, seen } = await initialized({ maxMessageBytes: 1000 });
      server.handler = (_r, res) => json(res, { jsonrpc: '2.0', id: 4, result: { blob: 'x'.repeat(5000) } });
      transport.send(...request(4, 'resources/read'));
      const answer = await seen.response(4);
      expect(answer.value.error).toMatchObject({
        code: -32006,
        data: { code: 'SB_MESSAGE_TOO_LARGE', limit: 1000 },
      });
      expect(metrics.get('oversized_messages_total', { side: 'upstream', upstream: 'up' })).toBe(1);
    });

    it('stops reading a chunked JSON body as soon as it outgrows the limit', async () => {
      const { transport, seen } = await initialized({ maxMessageBytes: 1000 });
      let written = 0;
      server.handler = (_r, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"jsonrpc":"2.0","id":6,"result":"');
        const timer = setInterval(() => {
          if (res.destroyed || written > 1_000_000) {
            clearInterval(timer);
            res.end('"}');
            return;
          }
          written += 500;
          res.write('x'.repeat(500));
        }, 1);
      };
      transport.send(...request(6, 'resources/read'));
      const answer = await seen.response(6);
      expect(answer.value.error).toMatchObject({ code: -32006, data: { limit: 1000 } });
      expect(written).toBeLessThan(1_000_000);
    });

    it('answers with a too-large error for an oversized response event, and keeps the related ones', async () => {
      const { transport, seen } = await initialized({ maxMessageBytes: 1000 });
      server.handler = (_r, res) => {
        startSse(res);
        res.write(
          sseEvent({
            data: {
              jsonrpc: '2.0',
              method: 'notifications/progress',
              params: { progressToken: 1, progress: 1 },
            },
          }),
        );
        res.write(sseEvent({ data: { result: { blob: 'x'.repeat(5000) }, jsonrpc: '2.0', id: 5 } }));
        res.end();
      };
      transport.send(...request(5, 'resources/read'));
      const answer = await seen.response(5);
      expect(answer.value.error).toMatchObject({ code: -32006 });
      expect(answer.meta.relatedUpstreamId).toBe(5);
      expect((await seen.notification('notifications/progress')).meta.relatedUpstreamId).toBe(5);
      expect(server.requestsOf('GET').filter((r) => r.headers['last-event-id'])).toHaveLength(0);
    });

    it('fails the initialize when the session id is not visible ASCII', async () => {
      server.handler = (_r, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'has space' });
        res.end('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}');
      };
      const { transport, seen } = open();
      transport.send(...INITIALIZE);
      const answer = await seen.response(0);
      expect(answer.value.error).toMatchObject({
        message: expect.stringContaining('invalid Mcp-Session-Id'),
      });
      expect(transport.sessionId).toBeUndefined();
    });
  });

  describe('SSE answers', () => {
    it('delivers every message of a POST stream with the id of the request it answers', async () => {
      server.handler = mcpHandler({
        'tools/call': (_r, res, m) => {
          startSse(res);
          res.write(
            sseEvent({
              id: 'e1',
              data: {
                jsonrpc: '2.0',
                method: 'notifications/progress',
                params: { progressToken: 't', progress: 1 },
              },
            }),
          );
          res.write(
            sseEvent({
              id: 'e2',
              data: { jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: {} },
            }),
          );
          res.write(
            sseEvent({
              id: 'e3',
              event: 'message',
              data: { jsonrpc: '2.0', id: m.id, result: { content: [] } },
            }),
          );
          res.end();
        },
      });
      const { transport, seen } = await initialized();
      transport.send(...request(9, 'tools/call', { name: 'x', _meta: { progressToken: 't' } }));
      const answer = await seen.response(9);
      const progress = await seen.notification('notifications/progress');
      const serverRequest = seen.messages.find(
        (m) => 'method' in m.value && m.value.method === 'sampling/createMessage',
      );
      for (const m of [progress, serverRequest, answer]) expect(m?.meta.relatedUpstreamId).toBe(9);
      expect(progress.meta.transport).toMatchObject({ kind: 'sse', eventId: 'e1' });
      expect(answer.meta.transport).toMatchObject({
        kind: 'sse',
        eventId: 'e3',
        streamId: (progress.meta.transport as { streamId: string }).streamId,
      });
      expect(seen.messages.map((m) => m.meta.relatedUpstreamId)).toEqual([0, 9, 9, 9]);
    });

    it('never delivers the priming event, nor events of other types', async () => {
      server.handler = mcpHandler({
        ping: (_r, res, m) => {
          startSse(res);
          res.write('id: p0\nretry: 50\ndata: \n\n');
          res.write(sseEvent({ event: 'other', data: { jsonrpc: '2.0', method: 'x' } }));
          res.write(': keep-alive\n\n');
          res.write(sseEvent({ id: 'p1', data: { jsonrpc: '2.0', id: m.id, result: {} } }));
          res.end();
        },
      });
      const { transport, seen } = await initialized();
      const before = seen.messages.length;
      transport.send(...request(11, 'ping'));
      await seen.response(11);
      expect(seen.messages.slice(before).map((m) => m.value)).toEqual([
        { jsonrpc: '2.0', id: 11, result: {} },
      ]);
    });

    it('resumes a stream that ended before its response: waits `retry`, GETs with Last-Event-ID, same request id', async () => {
      let postEnded = 0;
      server.handler = mcpHandler(
        {
          'tools/call': (_r, res) => {
            startSse(res);
            res.write('id: s1-0\nretry: 150\ndata: \n\n');
            res.write(
              sseEvent({
                id: 's1-1',
                data: {
                  jsonrpc: '2.0',
                  method: 'notifications/progress',
                  params: { progressToken: 1, progress: 1 },
                },
              }),
            );
            res.end();
            postEnded = performance.now();
          },
        },
        (r, res) => {
          if (r.headers['last-event-id'] !== 's1-1') {
            res.writeHead(405).end();
            return;
          }
          startSse(res);
          res.write(
            sseEvent({
              id: 's1-2',
              data: {
                jsonrpc: '2.0',
                method: 'notifications/progress',
                params: { progressToken: 1, progress: 2 },
              },
            }),
          );
          res.write(sseEvent({ id: 's1-3', data: { jsonrpc: '2.0', id: 12, result: { done: true } } }));
          res.end();
        },
      );
      const { transport, seen } = await initialized();
      transport.send(...request(12, 'tools/call', { _meta: { progressToken: 1 } }));
      const answer = await seen.response(12);
      expect(answer.value.result).toEqual({ done: true });
      expect(answer.meta.relatedUpstreamId).toBe(12);
      expect(answer.meta.transport).toMatchObject({
        kind: 'sse',
        eventId: 's1-3',
        lastEventId: 's1-1',
        retryMs: 150,
      });
      const progress = seen.messages.filter(
        (m) => 'method' in m.value && m.value.method === 'notifications/progress',
      );
      expect(progress.map((m) => m.meta.relatedUpstreamId)).toEqual([12, 12]);
      const resume = server.requestsOf('GET').find((r) => r.headers['last-event-id'] === 's1-1');
      expect(resume?.headers).toMatchObject({
        accept: 'text/event-stream',
        'mcp-session-id': SESSION,
        'mcp-protocol-version': VERSION,
      });
      expect((resume?.at ?? 0) - postEnded).toBeGreaterThanOrEqual(140);
      expect(metrics.get('upstream_sse_resumptions_total', { upstream: 'up', stream: 'post' })).toBe(1);
    });

    it('resumes after the connection breaks mid-stream, waiting 1000 ms when the server gave no retry', async () => {
      server.handler = mcpHandler(
        {
          'tools/call': (_r, res) => {
            startSse(res);
            res.write(
              sseEvent({
                id: 'b1',
                data: {
                  jsonrpc: '2.0',
                  method: 'notifications/progress',
                  params: { progressToken: 1, progress: 1 },
                },
              }),
            );
            setTimeout(() => res.destroy(), 20);
          },
        },
        (r, res) => {
          if (r.headers['last-event-id'] !== 'b1') {
            res.writeHead(405).end();
            return;
          }
          startSse(res);
          res.end(sseEvent({ id: 'b2', data: { jsonrpc: '2.0', id: 13, result: {} } }));
        },
      );
      const { transport, seen } = await initialized();
      const sent = performance.now();
      transport.send(...request(13, 'tools/call'));
      await seen.response(13, 4000);
      const resume = server.requestsOf('GET').find((r) => r.headers['last-event-id'] === 'b1');
      expect((resume?.at ?? 0) - sent).toBeGreaterThanOrEqual(990);
    });

    it('treats a stream silent for longer than streamIdleTimeoutMs as broken, and resumes it', async () => {
      server.handler = mcpHandler(
        {
          'tools/call': (_r, res) => {
            startSse(res);
            res.write('id: i0\nretry: 10\ndata: \n\n');
          },
        },
        (r, res) => {
          if (r.headers['last-event-id'] !== 'i0') {
            res.writeHead(405).end();
            return;
          }
          startSse(res);
          res.end(sseEvent({ id: 'i1', data: { jsonrpc: '2.0', id: 17, result: {} } }));
        },
      );
      const { transport, seen } = await initialized({ streamIdleTimeoutMs: 150 });
      transport.send(...request(17, 'tools/call'));
      const answer = await seen.response(17);
      expect(answer.value).toEqual({ jsonrpc: '2.0', id: 17, result: {} });
      expect(answer.meta.transport).toMatchObject({ lastEventId: 'i0' });
    });

    it('gives up after the configured number of fruitless resumptions', async () => {
      server.handler = mcpHandler(
        {
          'tools/call': (_r, res) => {
            startSse(res);
            res.end('id: g0\nretry: 10\ndata: \n\n');
          },
        },
        (r, res) => {
          if (!r.headers['last-event-id']) {
            res.writeHead(405).end();
            return;
          }
          startSse(res);
          res.end(': nothing new\n\n');
        },
      );
      const { transport, seen } = await initialized({ maxResumeAttempts: 2 });
      transport.send(...request(14, 'tools/call'));
      const answer = await seen.response(14);
      expect(answer.value.error).toMatchObject({
        code: -32000,
        message: expect.stringContaining('gave up after 2 attempts'),
      });
      expect(server.requestsOf('GET').filter((r) => r.headers['last-event-id'] === 'g0')).toHaveLength(2);
    });

    it('fails at once a stream that ended before its response without any event id', async () => {
      server.handler = mcpHandler({
        'tools/call': (_r, res) => {
          startSse(res);
          res.end(
            sseEvent({
              data: {
                jsonrpc: '2.0',
                method: 'notifications/progress',
                params: { progressToken: 1, progress: 1 },
              },
            }),
          );
        },
      });
      const { transport, seen } = await initialized();
      transport.send(...request(15, 'tools/call'));
      const answer = await seen.response(15);
      expect(answer.value.error).toMatchObject({
        message: expect.stringContaining('cannot be resumed (no event id)'),
      });
    });

    it('does not resume a stream whose response came on the GET stream', async () => {
      let getStream: ServerResponse | undefined;
      server.handler = mcpHandler(
        {
          'tools/call': (_r, res, m) => {
            startSse(res);
            res.end('id: x0\nretry: 100\ndata: \n\n');
            getStream?.write(
              sseEvent({ id: 'x1', data: { jsonrpc: '2.0', id: m.id, result: { via: 'get' } } }),
            );
          },
        },
        (r, res) => {
          if (r.headers['last-event-id']) {
            res.writeHead(405).end();
            return;
          }
          startSse(res);
          res.write(': open\n\n');
          getStream = res;
        },
      );
      const { transport, seen } = await initialized({ standaloneStream: true });
      await eventually(() => getStream);
      transport.send(...request(18, 'tools/call'));
      const answer = await seen.response(18);
      expect(answer.value.result).toEqual({ via: 'get' });
      expect(answer.meta.relatedUpstreamId).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(server.requestsOf('GET').filter((r) => r.headers['last-event-id'])).toHaveLength(0);
      expect(seen.messages.filter((m) => !Array.isArray(m.value) && m.value.id === 18)).toHaveLength(1);
    });

    it('does not resume the stream of a request the gateway cancelled', async () => {
      server.handler = mcpHandler({
        'tools/call': (_r, res) => {
          startSse(res);
          res.end('id: c0\nretry: 100\ndata: \n\n');
        },
      });
      const { transport, seen } = await initialized();
      transport.send(...request(16, 'tools/call'));
      await eventually(() => server.requestsOf('POST', 'tools/call').length === 1);
      transport.send(...notification('notifications/cancelled', { requestId: 16, reason: 'client gone' }));
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(server.requestsOf('GET').filter((r) => r.headers['last-event-id'])).toHaveLength(0);
      expect(seen.messages.filter((m) => 'id' in m.value && m.value.id === 16)).toHaveLength(0);
    });
  });

  describe('the standalone GET stream', () => {
    it('opens after initialized, delivers messages without a related id, and reconnects with Last-Event-ID after `retry`', async () => {
      let gets = 0;
      server.handler = mcpHandler({}, (r, res) => {
        gets++;
        if (gets === 1) {
          startSse(res);
          res.write(
            sseEvent({
              id: 'g1',
              retry: 60,
              data: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
            }),
          );
          res.end();
        } else if (gets === 2) {
          expect(r.headers['last-event-id']).toBe('g1');
          startSse(res);
          res.write(sseEvent({ id: 'g2', data: { jsonrpc: '2.0', id: 'ping-1', method: 'ping' } }));
          setTimeout(() => res.destroy(), 10);
        } else res.writeHead(405).end();
      });
      const { seen } = await initialized({ standaloneStream: true });
      const note = await seen.notification('notifications/tools/list_changed');
      expect(note.meta.relatedUpstreamId).toBeUndefined();
      expect(note.meta.transport).toMatchObject({ kind: 'sse', streamId: 'get', eventId: 'g1', retryMs: 60 });
      const ping = await eventually(() =>
        seen.messages.find((m) => 'method' in m.value && m.value.method === 'ping'),
      );
      expect(ping.meta.relatedUpstreamId).toBeUndefined();
      expect(ping.meta.transport).toMatchObject({ lastEventId: 'g1' });
      await eventually(() => gets === 3, 3000, 'the third GET');
      const [first, second, third] = server.requestsOf('GET');
      expect(first?.headers).toMatchObject({ accept: 'text/event-stream', 'mcp-session-id': SESSION });
      expect(first?.headers['last-event-id']).toBeUndefined();
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(55);
      expect(third?.headers['last-event-id']).toBe('g2');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(gets).toBe(3);
      expect(metrics.get('upstream_sse_resumptions_total', { upstream: 'up', stream: 'get' })).toBe(1);
    });

    it('backs off while the GET stream is refused, and stops on 405', async () => {
      let gets = 0;
      server.handler = mcpHandler({}, (_r, res) => {
        gets++;
        if (gets < 3) res.writeHead(503).end();
        else res.writeHead(405).end();
      });
      await initialized({
        standaloneStream: true,
        reconnectBackoff: { initialMs: 20, maxMs: 100, stableMs: 1000 },
      });
      await eventually(() => gets === 3);
      const [a, b, c] = server.requestsOf('GET');
      expect((b?.at ?? 0) - (a?.at ?? 0)).toBeGreaterThanOrEqual(15);
      expect((c?.at ?? 0) - (b?.at ?? 0)).toBeGreaterThanOrEqual(35);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(gets).toBe(3);
    });

    it('is not opened when disabled', async () => {
      await initialized({ standaloneStream: false });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(server.requestsOf('GET')).toHaveLength(0);
    });
  });

  describe('session end', () => {
    it('closes once with the reason when a request carrying the session id gets 404', async () => {
      const { transport, seen } = await initialized();
      server.handler = (_r, res) => res.writeHead(404).end();
      transport.send(...request(20, 'tools/list'));
      transport.send(...request(21, 'tools/list'));
      await eventually(() => seen.closes.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(seen.closes).toEqual([{ reason: 'upstream session expired (404)' }]);
      expect(
        seen.messages.filter((m) => 'id' in m.value && (m.value.id === 20 || m.value.id === 21)),
      ).toHaveLength(0);
      transport.send(...request(22, 'tools/list'));
      await transport.close();
      expect(seen.closes).toHaveLength(1);
      expect(server.requestsOf('DELETE')).toHaveLength(0);
      expect(metrics.get('upstream_sessions_expired_total', { upstream: 'up' })).toBe(1);
    });

    it('close() DELETEs the session (405 is fine), stops the streams and closes once; it is idempotent', async () => {
      server.handler = mcpHandler({}, (_r, res) => {
        startSse(res);
        res.write(': open\n\n');
      });
      const { transport, seen } = await initialized({ standaloneStream: true, defaultRetryMs: 20 });
      await eventually(() => server.requestsOf('GET').length === 1);
      const handler = server.handler;
      server.handler = (r, res) => (r.method === 'DELETE' ? res.writeHead(405).end() : handler(r, res));
      const first = transport.close();
      expect(transport.close()).toBe(first);
      await first;
      const deletes = server.requestsOf('DELETE');
      expect(deletes).toHaveLength(1);
      expect(deletes[0]?.headers).toMatchObject({
        'mcp-session-id': SESSION,
        'mcp-protocol-version': VERSION,
      });
      expect(seen.closes).toEqual([{ reason: 'closed' }]);
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(server.requestsOf('GET')).toHaveLength(1);
    });

    it('close() sends no DELETE when there is no session', async () => {
      const { transport, seen } = open();
      await transport.close();
      expect(server.requestsOf('DELETE')).toHaveLength(0);
      expect(seen.closes).toEqual([{ reason: 'closed' }]);
    });
  });

  it('hands a 400/404/405 on initialize to the fallback hook instead of failing it', async () => {
    const rejections: InitializeRejection[] = [];
    server.handler = (_r, res) =>
      json(res, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed.' } }, 405);
    const { transport, seen } = open({ onInitializeRejected: (r) => rejections.push(r) });
    transport.send(...INITIALIZE);
    await eventually(() => rejections.length === 1);
    expect(rejections[0]).toMatchObject({ status: 405, detail: 'Method not allowed.', json: INITIALIZE[0] });
    expect(seen.messages).toHaveLength(0);
  });

  describe('JSON answers holding several messages (issue 19)', () => {
    /** A raw `application/json` body for every `tools/call`. */
    function answerCallsWith(body: (id: unknown) => string): void {
      server.handler = mcpHandler({
        'tools/call': (_r, res, m) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(body(m.id));
        },
      });
    }
    const progress = (data = 1) =>
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 't', progress: data },
      });
    const done = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [] } });
    /** What the transport handed over after the handshake, as [method or id, related id]. */
    const handed = (seen: ReturnType<typeof capture>) =>
      seen.messages
        .filter((m) => !Array.isArray(m.value) && m.value.id !== 0)
        .map((m) => {
          const value = m.value as Record<string, unknown>;
          return [value.method ?? value.id, m.meta.relatedUpstreamId];
        });

    it('delivers a notification and a server request, then the response, written one per line', async () => {
      // As the conformance suite's reference server answers a streaming elicitation call.
      const elicit = JSON.stringify({
        jsonrpc: '2.0',
        id: 'srv-1',
        method: 'elicitation/create',
        params: { message: 'name?', requestedSchema: { type: 'object', properties: {} } },
      });
      answerCallsWith((id) => `${progress()}\n${elicit}\n${done(id)}\n`);
      const { transport, seen } = await initialized();
      transport.send(...request(5, 'tools/call', { name: 'ask' }));
      const answer = await seen.response(5);
      expect(answer.value).toEqual({ jsonrpc: '2.0', id: 5, result: { content: [] } });
      expect(handed(seen)).toEqual([
        ['notifications/progress', 5],
        ['elicitation/create', 5],
        [5, 5],
      ]);
      expect(seen.messages.at(-1)?.meta.transport).toMatchObject({ kind: 'http', status: 200 });
    });

    it('takes values separated by CRLF, pretty-printed over lines, or not separated at all', async () => {
      const { transport, seen } = await initialized();
      for (const [n, body] of [
        [6, (id: unknown) => `${progress()}\r\n${done(id)}\r\n`],
        [
          7,
          (id: unknown) =>
            `${JSON.stringify(JSON.parse(progress()), null, 2)}\n${JSON.stringify({ jsonrpc: '2.0', id, result: {} }, null, 2)}`,
        ],
        [8, (id: unknown) => `${progress()}${done(id)}`],
      ] as const) {
        answerCallsWith(body);
        transport.send(...request(n, 'tools/call', { name: 'x' }));
        await seen.response(n);
        expect(handed(seen).filter(([, related]) => related === n)).toEqual([
          ['notifications/progress', n],
          [n, n],
        ]);
      }
    });

    it('gives a refusal without id the request id', async () => {
      answerCallsWith(() =>
        JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'unreadable' } }),
      );
      const { transport, seen } = await initialized();
      transport.send(...request(9, 'tools/call', { name: 'x' }));
      const answer = await seen.response(9);
      expect(answer.value.error).toEqual({ code: -32600, message: 'unreadable' });
    });

    describe('fails the request with SB_UPSTREAM_PROTOCOL naming what is wrong', () => {
      const cases: [string, (id: unknown) => string, string, string[]?][] = [
        ['an empty body', () => ' \n', 'an empty body'],
        [
          'text that is not JSON (line, column and offset)',
          (id) => `${progress()}\n{"jsonrpc":"2.0","id":${String(id)},"result":{]}\n`,
          `a body that is not JSON at line 2, column 36 (offset ${progress().length + 36}): Expected property name or '}'`,
        ],
        [
          'an unterminated value',
          (id) => `${progress()}\n{"jsonrpc":"2.0","id":${String(id)}`,
          `a body that is not JSON at line 2, column 25 (offset ${progress().length + 25}): Expected ',' or '}' after property value`,
        ],
        [
          'JSON that is not JSON-RPC',
          (id) => `${progress()}\n{"id":${String(id)},"result":{}}`,
          'JSON that is not a JSON-RPC message (value 2 of 2, line 2, column 1): missing "jsonrpc": "2.0"',
        ],
        [
          'a bare JSON number',
          () => '42',
          'JSON that is not a JSON-RPC message: a message must be a JSON object, got a number',
        ],
        [
          'no response for the request id',
          () => `${progress()}\n${progress(2)}\n`,
          '2 messages and no response to the request (id 10)',
          ['notifications/progress', 'notifications/progress'],
        ],
        [
          'a response with a different id',
          () => `${progress()}\n${done(11)}\n`,
          'a response to another request (id 11; value 2 of 2, line 2, column 1) where the response to id 10 was due',
          ['notifications/progress'],
        ],
        ['two responses', (id) => `${done(id)}\n${done(id)}`, 'two responses to the request (id 10)'],
      ];
      for (const [what, body, fault, related] of cases)
        it(what, async () => {
          answerCallsWith(body);
          const { transport, seen } = await initialized();
          transport.send(...request(10, 'tools/call', { name: 'x' }));
          const answer = await seen.response(10);
          expect(answer.value.error).toEqual({
            code: -32603,
            message: `upstream up answered HTTP 200 with ${fault}`,
            data: { code: 'SB_UPSTREAM_PROTOCOL', upstream: 'up', status: 200 },
          });
          expect(answer.meta.relatedUpstreamId).toBe(10);
          // Related messages of a body read well come first; nothing of a body that is not JSON.
          expect(handed(seen).slice(0, -1)).toEqual((related ?? []).map((m) => [m, 10]));
          expect(metrics.get('upstream_malformed_total', { upstream: 'up' })).toBe(1);
        });
    });

    it('holds the whole body to the message limit', async () => {
      answerCallsWith((id) => `${progress()}\n`.repeat(20) + done(id));
      const { transport, seen } = await initialized({ maxMessageBytes: 1000 });
      transport.send(...request(12, 'tools/call', { name: 'x' }));
      const answer = await seen.response(12);
      expect(answer.value.error).toMatchObject({ code: -32006, data: { code: 'SB_MESSAGE_TOO_LARGE' } });
      expect(handed(seen)).toEqual([[12, 12]]);
    });
  });
});
