import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import { type ModernHttpOptions, ModernHttpTransport } from './modern-http.js';
import { capture } from './test-support/capture.js';
import {
  eventually,
  json,
  type RecordedRequest,
  ScriptedServer,
  sseEvent,
  startSse,
} from './test-support/scripted-server.js';

/** A parsed request body as the scripted server sees it. */
interface Body {
  id: string | number;
  method: string;
  params: Record<string, unknown> & { _meta?: Record<string, unknown> };
}
type Handle = (m: Body, res: ServerResponse, r: RecordedRequest) => void;

const CAPS = { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } };
const SERVER_INFO = { name: 'scripted-modern', version: '9.9.9' };
const TOOLS = [
  {
    name: 'query',
    inputSchema: {
      type: 'object',
      properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, sql: { type: 'string' } },
    },
  },
  {
    name: 'broken',
    inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } },
  },
  { name: 'plain', inputSchema: { type: 'object' } },
];

/** The `_meta` envelope of a 2026-07-28 client of the gateway (what the modern endpoint routes). */
const CLIENT_ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'modern-client', version: '2' },
};

function message(value: Record<string, unknown>): [string, JsonRpcMessage] {
  const full = { jsonrpc: '2.0', ...value } as unknown as JsonRpcMessage;
  return [JSON.stringify(full), full];
}

function result(res: ServerResponse, m: Body, value: Record<string, unknown>, status = 200): void {
  json(res, { jsonrpc: '2.0', id: m.id, result: { resultType: 'complete', ...value } }, status);
}

function rpcError(
  res: ServerResponse,
  m: Body,
  status: number,
  code: number,
  text: string,
  data?: unknown,
): void {
  json(res, { jsonrpc: '2.0', id: m.id, error: { code, message: text, ...(data ? { data } : {}) } }, status);
}

const DEFAULTS: Record<string, Handle> = {
  'server/discover': (m, res) =>
    result(res, m, {
      supportedVersions: ['2026-07-28'],
      capabilities: CAPS,
      instructions: 'Be nice.',
      _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
    }),
  'tools/list': (m, res) => result(res, m, { tools: TOOLS }),
  'tools/call': (m, res) =>
    result(res, m, { content: [{ type: 'text', text: `called ${String(m.params.name)}` }] }),
  'subscriptions/listen': (m, res) => {
    startSse(res);
    res.write(
      sseEvent({
        data: {
          jsonrpc: '2.0',
          method: 'notifications/subscriptions/acknowledged',
          params: {
            notifications: m.params.notifications,
            _meta: { 'io.modelcontextprotocol/subscriptionId': m.id },
          },
        },
      }),
    );
  },
};

function bodies(server: ScriptedServer, method: string): Body[] {
  return server.requestsOf('POST', method).map((r) => JSON.parse(r.body) as Body);
}

describe('ModernHttpTransport', () => {
  let server: ScriptedServer;
  let metrics: Metrics;
  let script: Record<string, Handle>;
  const transports: ModernHttpTransport[] = [];

  beforeEach(async () => {
    script = {};
    server = await ScriptedServer.start((r, res) => {
      if (r.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const m = JSON.parse(r.body) as Body;
      const handle = script[m.method] ?? DEFAULTS[m.method];
      if (handle) handle(m, res, r);
      else rpcError(res, m, 404, -32601, 'Method not found');
    });
    metrics = new Metrics();
  });

  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.close()));
    await server.close();
  });

  function open(options: Partial<ModernHttpOptions> = {}) {
    const transport = new ModernHttpTransport({
      name: 'up',
      url: server.url(),
      maxMessageBytes: 64 * 1024,
      logger: silentLogger,
      metrics,
      headers: { 'X-Api-Key': 'k' },
      reconnectBackoff: { initialMs: 20, maxMs: 100, stableMs: 1000 },
      ...options,
    });
    transports.push(transport);
    return { transport, seen: capture(transport) };
  }

  async function initialized(options: Partial<ModernHttpOptions> = {}, protocolVersion = '2025-11-25') {
    const opened = open(options);
    await opened.transport.start();
    opened.transport.send(
      ...message({
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion,
          capabilities: { sampling: {}, elicitation: {} },
          clientInfo: { name: 'gw', version: '1' },
        },
      }),
    );
    const init = await opened.seen.response(1);
    return { ...opened, init };
  }

  describe('initialize', () => {
    it('is answered from server/discover', async () => {
      const { init, transport } = await initialized();
      expect(init.value).toEqual({
        jsonrpc: '2.0',
        id: 1,
        result: {
          protocolVersion: '2025-11-25',
          capabilities: CAPS,
          serverInfo: SERVER_INFO,
          instructions: 'Be nice.',
        },
      });
      expect(init.meta.relatedUpstreamId).toBe(1);
      expect(transport.kind).toBe('modern-http');
      expect(transport.protocolVersion).toBe('2026-07-28');
      expect(transport.sessionId).toBeUndefined();
      const [discover] = server.requestsOf('POST', 'server/discover');
      expect(discover?.headers).toMatchObject({
        'mcp-method': 'server/discover',
        'mcp-protocol-version': '2026-07-28',
        'x-api-key': 'k',
      });
      expect(JSON.parse(discover?.body ?? '')).toEqual({
        jsonrpc: '2.0',
        id: 1,
        method: 'server/discover',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'gw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} },
          },
        },
      });
    });

    it.each([
      ['2025-06-18', '2025-06-18'],
      ['2026-07-28', '2025-11-25'],
      ['1999-01-01', '2025-11-25'],
    ])('answers a client asking for %s with %s', async (asked, answered) => {
      const { init } = await initialized({}, asked);
      expect(init.value.result).toMatchObject({ protocolVersion: answered });
    });

    it('makes up a serverInfo when the server gives none', async () => {
      script['server/discover'] = (m, res) =>
        result(res, m, { supportedVersions: ['2026-07-28'], capabilities: {} });
      const { init } = await initialized();
      expect(init.value.result).toEqual({
        protocolVersion: '2025-11-25',
        capabilities: {},
        serverInfo: { name: 'up', version: 'unknown' },
      });
    });

    it('fails with what the server said when it refuses discover', async () => {
      script['server/discover'] = (m, res) =>
        rpcError(res, m, 400, -32022, 'Unsupported protocol version', { supported: ['2027-01-01'] });
      const { init } = await initialized();
      expect(init.value.error).toEqual({
        code: -32022,
        message:
          'upstream up refused server/discover: upstream up does not accept protocol 2026-07-28, the version the gateway speaks to modern servers (it supports: 2027-01-01)',
        data: { supported: ['2027-01-01'] },
      });
    });

    it('fails when the server does not list 2026-07-28', async () => {
      script['server/discover'] = (m, res) =>
        result(res, m, { supportedVersions: ['2027-01-01'], capabilities: {} });
      const { init } = await initialized();
      expect(init.value.error).toMatchObject({
        code: -32022,
        message: expect.stringContaining('supports 2027-01-01'),
      });
    });

    it('reports a discover without a JSON-RPC answer to the owner', async () => {
      script['server/discover'] = (_m, res) => res.writeHead(500).end('boom');
      let doubted = 0;
      const { init } = await initialized({ onDiscoverFailed: () => doubted++ });
      expect(init.value.error).toMatchObject({
        code: -32000,
        message: 'upstream up answered HTTP 500: boom',
        data: { status: 500 },
      });
      expect(doubted).toBe(1);
    });
  });

  it('answers ping and logging/setLevel itself, and puts the level and the client into later requests', async () => {
    const { transport, seen } = await initialized();
    transport.send(...message({ id: 2, method: 'ping' }));
    transport.send(...message({ id: 3, method: 'logging/setLevel', params: { level: 'loud' } }));
    transport.send(...message({ id: 4, method: 'logging/setLevel', params: { level: 'warning' } }));
    expect((await seen.response(2)).value.result).toEqual({});
    expect((await seen.response(3)).value.error).toMatchObject({ code: -32602 });
    expect((await seen.response(4)).value.result).toEqual({});
    transport.send(...message({ method: 'notifications/initialized' }));
    transport.send(...message({ method: 'notifications/roots/list_changed' }));
    transport.send(...message({ id: 5, method: 'tools/list', params: { _meta: { progressToken: 7 } } }));
    await seen.response(5);
    expect(
      server.requests.filter((r) => /"ping"|setLevel|notifications\/(initialized|roots)/.test(r.body)),
    ).toEqual([]);
    expect(bodies(server, 'tools/list')[0]?.params._meta).toEqual({
      progressToken: 7,
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'gw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} },
      'io.modelcontextprotocol/logLevel': 'warning',
    });
  });

  it("sends a legacy client's request with exactly its session's envelope, whatever 2026-07-28 members it set", async () => {
    const { transport, seen } = await initialized();
    transport.send(
      ...message({
        id: 2,
        method: 'tools/list',
        params: {
          _meta: {
            progressToken: 1,
            'io.modelcontextprotocol/clientInfo': { name: 'someone-else', version: '0' },
            'io.modelcontextprotocol/clientCapabilities': { roots: {} },
            'io.modelcontextprotocol/logLevel': 'debug',
            'example.com/kept': true,
          },
        },
      }),
    );
    await seen.response(2);
    expect(bodies(server, 'tools/list')[0]?.params._meta).toEqual({
      progressToken: 1,
      'example.com/kept': true,
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'gw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} },
    });
  });

  it('sends each request as one POST with the mirrored headers', async () => {
    const { transport, seen } = await initialized();
    script['resources/read'] = (m, res) => result(res, m, { contents: [] });
    transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain', arguments: {} } }));
    transport.send(...message({ id: 3, method: 'resources/read', params: { uri: 'file:///Übersicht.md' } }));
    await seen.response(2);
    await seen.response(3);
    const call = server.requestsOf('POST', 'tools/call')[0];
    expect(call?.headers).toMatchObject({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'plain',
      'x-api-key': 'k',
    });
    expect(server.requestsOf('POST', 'resources/read')[0]?.headers['mcp-name']).toBe(
      `=?base64?${Buffer.from('file:///Übersicht.md').toString('base64')}?=`,
    );
  });

  describe('x-mcp-header', () => {
    it('lists the tools once before calling a tool never seen, and mirrors its parameters', async () => {
      const { transport, seen } = await initialized();
      const call = (id: number, region: string) =>
        transport.send(
          ...message({
            id,
            method: 'tools/call',
            params: { name: 'query', arguments: { region, sql: 'x' } },
          }),
        );
      call(2, 'eu-west');
      await seen.response(2);
      call(3, 'Zürich');
      await seen.response(3);
      expect(server.requests.map((r) => (JSON.parse(r.body) as Body).method)).toEqual([
        'server/discover',
        'tools/list',
        'tools/call',
        'tools/call',
      ]);
      const [list] = bodies(server, 'tools/list');
      expect(String(list?.id)).toMatch(/^switchboard-/);
      const calls = server.requestsOf('POST', 'tools/call');
      expect(calls[0]?.headers['mcp-param-region']).toBe('eu-west');
      expect(calls[1]?.headers['mcp-param-region']).toBe(
        `=?base64?${Buffer.from('Zürich').toString('base64')}?=`,
      );
    });

    it('learns from tools/list results passing through, which lose their invalid tools', async () => {
      const { transport, seen } = await initialized();
      transport.send(...message({ id: 2, method: 'tools/list' }));
      const listed = await seen.response(2);
      expect((listed.value.result as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual([
        'query',
        'plain',
      ]);
      transport.send(
        ...message({ id: 3, method: 'tools/call', params: { name: 'query', arguments: { region: 'x' } } }),
      );
      await seen.response(3);
      transport.send(
        ...message({ id: 4, method: 'tools/call', params: { name: 'broken', arguments: { n: 1 } } }),
      );
      expect((await seen.response(4)).value.error).toMatchObject({
        code: -32602,
        message: expect.stringContaining(
          'tool "broken" of upstream up has an invalid x-mcp-header annotation',
        ),
      });
      expect(server.requestsOf('POST', 'tools/list')).toHaveLength(1);
      expect(bodies(server, 'tools/call').map((b) => b.params.name)).toEqual(['query']);
    });

    it("forwards a modern client's Mcp-Param headers unchanged, out of the body", async () => {
      const { transport, seen } = await initialized();
      transport.send(
        ...message({
          id: 2,
          method: 'tools/call',
          params: {
            name: 'query',
            arguments: { region: 'eu' },
            _meta: {
              ...CLIENT_ENVELOPE,
              'switchboard.dev/forwardHeaders': { 'mcp-param-region': 'eu', 'mcp-param-tenant': 'acme' },
              'switchboard.dev/other': 1,
            },
          },
        }),
      );
      await seen.response(2);
      const [call] = server.requestsOf('POST', 'tools/call');
      expect(call?.headers).toMatchObject({ 'mcp-param-region': 'eu', 'mcp-param-tenant': 'acme' });
      expect(call?.body).not.toContain('switchboard.dev');
      expect(bodies(server, 'tools/call')[0]?.params._meta).toEqual(CLIENT_ENVELOPE);
    });

    it('never honours the forward key on a legacy request (the modern endpoint sets it on none), nor sends it', async () => {
      const { transport, seen } = await initialized();
      transport.send(
        ...message({
          id: 2,
          method: 'tools/call',
          params: {
            name: 'query',
            arguments: { region: 'eu' },
            _meta: {
              progressToken: 4,
              'switchboard.dev/forwardHeaders': { 'mcp-param-tenant': 'acme', 'mcp-param-region': 'us' },
            },
          },
        }),
      );
      expect((await seen.response(2)).value.result).toBeDefined();
      const [call] = server.requestsOf('POST', 'tools/call');
      expect(call?.headers['mcp-param-tenant']).toBeUndefined();
      // Computed from the arguments, not taken from the forged key.
      expect(call?.headers['mcp-param-region']).toBe('eu');
      expect(call?.body).not.toContain('switchboard.dev');
    });

    it('refuses a forwarded header that contradicts the arguments, without sending anything', async () => {
      const { transport, seen } = await initialized();
      transport.send(
        ...message({
          id: 2,
          method: 'tools/call',
          params: {
            name: 'query',
            arguments: { region: 'eu' },
            _meta: { ...CLIENT_ENVELOPE, 'switchboard.dev/forwardHeaders': { 'Mcp-Param-Region': 'us' } },
          },
        }),
      );
      expect((await seen.response(2)).value.error).toMatchObject({ code: -32020 });
      expect(server.requestsOf('POST', 'tools/call')).toHaveLength(0);
    });

    it('lists the tools again and retries once when the server finds the headers wrong', async () => {
      const { transport, seen } = await initialized();
      let lists = 0;
      script['tools/list'] = (m, res) => {
        lists++;
        const region = lists === 1 ? {} : { 'x-mcp-header': 'Region' };
        result(res, m, {
          tools: [
            {
              name: 'query',
              inputSchema: { type: 'object', properties: { region: { type: 'string', ...region } } },
            },
          ],
        });
      };
      script['tools/call'] = (m, res, r) =>
        r.headers['mcp-param-region'] === undefined
          ? rpcError(res, m, 400, -32020, 'Mcp-Param-Region is missing')
          : DEFAULTS['tools/call']?.(m, res, r);
      transport.send(
        ...message({ id: 2, method: 'tools/call', params: { name: 'query', arguments: { region: 'eu' } } }),
      );
      const answer = await seen.response(2);
      expect(answer.value).toMatchObject({ id: 2, result: { content: [{ text: 'called query' }] } });
      const ids = bodies(server, 'tools/call').map((b) => b.id);
      expect(ids[0]).toBe(2);
      expect(String(ids[1])).toMatch(/^switchboard-/);
      expect(lists).toBe(2);
      expect(metrics.get('upstream_header_retries_total', { upstream: 'up' })).toBe(1);
    });
  });

  describe('input_required', () => {
    const round = (inputRequests: Record<string, unknown>, requestState?: string) => ({
      resultType: 'input_required',
      inputRequests,
      ...(requestState === undefined ? {} : { requestState }),
    });
    const ASK_NAME = {
      method: 'elicitation/create',
      params: { message: 'Name?', requestedSchema: { type: 'object' } },
    };
    const ASK_MODEL = {
      method: 'sampling/createMessage',
      params: { messages: [{ role: 'user', content: { type: 'text', text: 'Capital?' } }], maxTokens: 5 },
    };

    /** Round 1: name; round 2 (state s1 + name): model; then the result (state s2 + model). */
    function twoRounds(m: Body, res: ServerResponse): void {
      const responses = (m.params.inputResponses ?? {}) as Record<string, { content?: unknown }>;
      if (m.params.requestState === 's2' && responses.model)
        result(res, m, {
          content: [{ type: 'text', text: `done: ${JSON.stringify(responses.model.content)}` }],
        });
      else if (m.params.requestState === 's1' && responses.name)
        json(res, { jsonrpc: '2.0', id: m.id, result: round({ model: ASK_MODEL }, 's2') });
      else json(res, { jsonrpc: '2.0', id: m.id, result: round({ name: ASK_NAME }, 's1') });
    }

    function serverRequests(seen: ReturnType<typeof capture>) {
      return seen.messages.filter((m) => !Array.isArray(m.value) && 'method' in m.value && 'id' in m.value);
    }

    it('bridges two rounds through server->client requests and answers with the final result', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = twoRounds;
      transport.send(
        ...message({
          id: 2,
          method: 'tools/call',
          params: { name: 'plain', arguments: {}, _meta: { progressToken: 2 } },
        }),
      );

      const first = await eventually(() => serverRequests(seen)[0]);
      expect(first.meta.relatedUpstreamId).toBe(2);
      expect(first.value).toMatchObject({
        jsonrpc: '2.0',
        method: 'elicitation/create',
        params: ASK_NAME.params,
      });
      const firstId = (first.value as { id: string }).id;
      expect(firstId).not.toBe(2);
      transport.send(...message({ id: firstId, result: { action: 'accept', content: { name: 'Ada' } } }));

      const second = await eventually(() => serverRequests(seen)[1]);
      expect(second.value).toMatchObject({ method: 'sampling/createMessage', params: ASK_MODEL.params });
      expect(second.meta.relatedUpstreamId).toBe(2);
      const secondId = (second.value as { id: string }).id;
      expect(secondId).not.toBe(firstId);
      transport.send(
        ...message({
          id: secondId,
          result: { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm' },
        }),
      );

      const answer = await seen.response(2);
      expect(answer.value).toEqual({
        jsonrpc: '2.0',
        id: 2,
        // The legacy shape: no resultType.
        result: {
          content: [{ type: 'text', text: 'done: {"type":"text","text":"Paris"}' }],
        },
      });
      expect(answer.meta.relatedUpstreamId).toBe(2);
      const calls = bodies(server, 'tools/call');
      expect(calls.map((c) => c.id)).toEqual([
        2,
        expect.stringMatching(/^switchboard-/),
        expect.stringMatching(/^switchboard-/),
      ]);
      expect(new Set(calls.map((c) => c.id)).size).toBe(3);
      expect(calls[1]?.params).toMatchObject({
        name: 'plain',
        inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
        requestState: 's1',
        _meta: { progressToken: 2 },
      });
      expect(calls[2]?.params.inputResponses).toEqual({
        model: { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm' },
      });
      expect(calls[2]?.params.requestState).toBe('s2');
    });

    it('retries a state-only result at once', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) =>
        m.params.requestState === 'later'
          ? result(res, m, { content: [] })
          : json(res, {
              jsonrpc: '2.0',
              id: m.id,
              result: { resultType: 'input_required', requestState: 'later' },
            });
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      expect((await seen.response(2)).value.result).toEqual({ content: [] });
      expect(bodies(server, 'tools/call').map((b) => b.params.requestState)).toEqual([undefined, 'later']);
      expect(serverRequests(seen)).toEqual([]);
    });

    it('gives up after maxInputRounds', async () => {
      const { transport, seen } = await initialized({ maxInputRounds: 3 });
      script['tools/call'] = (m, res) =>
        json(res, {
          jsonrpc: '2.0',
          id: m.id,
          result: { resultType: 'input_required', requestState: 'again' },
        });
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      expect((await seen.response(2)).value.error).toMatchObject({
        message: 'upstream up still asked for input after 3 rounds; the gateway gave up on the request',
        data: { code: 'SB_UPSTREAM_PROTOCOL' },
      });
      expect(server.requestsOf('POST', 'tools/call')).toHaveLength(4);
    });

    it('fails the request when the client cannot answer, and cancels what is still waiting', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) =>
        json(res, { jsonrpc: '2.0', id: m.id, result: round({ name: ASK_NAME, model: ASK_MODEL }) });
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      await eventually(() => serverRequests(seen).length === 2);
      const [name, model] = serverRequests(seen).map((m) => (m.value as { id: string }).id);
      transport.send(...message({ id: model, error: { code: -32601, message: 'sampling not supported' } }));
      expect((await seen.response(2)).value.error).toEqual({
        code: -32601,
        message:
          'the client could not answer the sampling/createMessage request (input "model") that upstream up needs: sampling not supported',
      });
      await seen.notification('notifications/cancelled');
      const cancelled = seen.messages.filter(
        (m) => !Array.isArray(m.value) && m.value.method === 'notifications/cancelled',
      );
      expect(cancelled.map((m) => (m.value as { params: unknown }).params)).toEqual([
        { requestId: name, reason: 'the request failed' },
      ]);
      expect(server.requestsOf('POST', 'tools/call')).toHaveLength(1);
      transport.send(...message({ id: name, result: { action: 'accept', content: {} } }));
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(server.requestsOf('POST', 'tools/call')).toHaveLength(1);
    });

    it('hands a modern client its input_required result untouched', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) =>
        json(res, { jsonrpc: '2.0', id: m.id, result: round({ name: ASK_NAME }, 's') });
      const meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
        'io.modelcontextprotocol/clientInfo': { name: 'modern-client', version: '2' },
      };
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain', _meta: meta } }));
      const answer = await seen.response(2);
      expect(answer.value.result).toEqual(round({ name: ASK_NAME }, 's'));
      expect(serverRequests(seen)).toEqual([]);
      expect(bodies(server, 'tools/call')[0]?.params._meta).toEqual(meta);
    });

    it('cancels the bridged requests when the original request is cancelled', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) =>
        json(res, { jsonrpc: '2.0', id: m.id, result: round({ name: ASK_NAME }, 's') });
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      const asked = await eventually(() => serverRequests(seen)[0]);
      transport.send(...message({ method: 'notifications/cancelled', params: { requestId: 2 } }));
      const cancelled = await seen.notification('notifications/cancelled');
      expect(cancelled.value.params).toMatchObject({ requestId: (asked.value as { id: string }).id });
      transport.send(...message({ id: (asked.value as { id: string }).id, result: { action: 'cancel' } }));
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(server.requestsOf('POST', 'tools/call')).toHaveLength(1);
      expect(seen.messages.filter((m) => !Array.isArray(m.value) && m.value.id === 2)).toHaveLength(0);
    });
  });

  describe('answers', () => {
    it('delivers the notifications of an SSE answer with the request, and drops requests found there', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) => {
        startSse(res);
        res.write(
          sseEvent({
            data: {
              jsonrpc: '2.0',
              method: 'notifications/progress',
              params: { progressToken: 9, progress: 1 },
            },
          }),
        );
        res.write(sseEvent({ data: { jsonrpc: '2.0', id: 'srv-1', method: 'roots/list' } }));
        res.end(
          sseEvent({
            id: 'e3',
            data: { jsonrpc: '2.0', id: m.id, result: { resultType: 'complete', content: [] } },
          }),
        );
      };
      transport.send(
        ...message({ id: 2, method: 'tools/call', params: { name: 'plain', _meta: { progressToken: 9 } } }),
      );
      const answer = await seen.response(2);
      expect(answer.meta).toMatchObject({ relatedUpstreamId: 2, transport: { kind: 'sse', eventId: 'e3' } });
      const progress = await seen.notification('notifications/progress');
      expect(progress.meta.relatedUpstreamId).toBe(2);
      expect(seen.messages.some((m) => !Array.isArray(m.value) && m.value.method === 'roots/list')).toBe(
        false,
      );
      expect(metrics.get('upstream_protocol_violations_total', { upstream: 'up' })).toBe(1);
    });

    it('delivers the notifications of a JSON answer written one per line, then the response (issue 19)', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          [
            { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 9, progress: 1 } },
            { jsonrpc: '2.0', id: m.id, result: { resultType: 'complete', content: [] } },
          ]
            .map((v) => JSON.stringify(v))
            .join('\n'),
        );
      };
      transport.send(
        ...message({ id: 2, method: 'tools/call', params: { name: 'plain', _meta: { progressToken: 9 } } }),
      );
      const answer = await seen.response(2);
      expect(answer.value).toEqual({ jsonrpc: '2.0', id: 2, result: { content: [] } });
      const after = seen.messages.filter((m) => m.meta.relatedUpstreamId === 2);
      expect(
        after.map((m) => [
          (m.value as Record<string, unknown>).method ?? 'response',
          m.meta.relatedUpstreamId,
        ]),
      ).toEqual([
        ['notifications/progress', 2],
        ['response', 2],
      ]);
    });

    it('fails a request whose JSON answer cannot be read with SB_UPSTREAM_PROTOCOL, naming what (issue 19)', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (_m, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          '{"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n{"jsonrpc":"2.0","id":99,"result":{}}',
        );
      };
      transport.send(...message({ id: 3, method: 'tools/call', params: { name: 'plain' } }));
      const answer = await seen.response(3);
      expect(answer.value.error).toEqual({
        code: -32603,
        message:
          'upstream up answered HTTP 200 with a response to another request (id 99; value 2 of 2, line 2, column 1) where the response to id 3 was due',
        data: { code: 'SB_UPSTREAM_PROTOCOL', upstream: 'up', status: 200 },
      });
    });

    it("gives a legacy client the legacy shape: no resultType, no 2026-07-28 _meta members (a modern client's stay)", async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (m, res) => {
        startSse(res);
        res.write(
          sseEvent({
            data: {
              jsonrpc: '2.0',
              method: 'notifications/message',
              params: {
                level: 'info',
                data: 'x',
                _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
              },
            },
          }),
        );
        res.end(
          sseEvent({
            data: {
              jsonrpc: '2.0',
              id: m.id,
              result: {
                resultType: 'complete',
                content: [],
                _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO, 'example.com/kept': 1 },
              },
            },
          }),
        );
      };
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      expect((await seen.response(2)).value.result).toEqual({
        content: [],
        _meta: { 'example.com/kept': 1 },
      });
      expect((await seen.notification('notifications/message')).value.params).toEqual({
        level: 'info',
        data: 'x',
      });
      transport.send(
        ...message({ id: 3, method: 'tools/call', params: { name: 'plain', _meta: CLIENT_ENVELOPE } }),
      );
      expect((await seen.response(3)).value.result).toEqual({
        resultType: 'complete',
        content: [],
        _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO, 'example.com/kept': 1 },
      });
    });

    it('fails a request whose stream ends before the response', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (_m, res) => {
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
      };
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      expect((await seen.response(2)).value.error).toMatchObject({
        code: -32000,
        message:
          'the answer stream of upstream up ended before the response (2026-07-28 streams cannot be resumed)',
      });
    });

    it('maps resource-not-found back to -32002 for legacy requests only', async () => {
      const { transport, seen } = await initialized();
      script['resources/read'] = (m, res) =>
        rpcError(res, m, 200, -32602, 'Resource not found', { uri: 'x://nope' });
      transport.send(...message({ id: 2, method: 'resources/read', params: { uri: 'x://nope' } }));
      expect((await seen.response(2)).value.error).toEqual({
        code: -32002,
        message: 'Resource not found',
        data: { uri: 'x://nope' },
      });
      const meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      transport.send(
        ...message({ id: 3, method: 'resources/read', params: { uri: 'x://nope', _meta: meta } }),
      );
      expect((await seen.response(3)).value.error).toMatchObject({ code: -32602 });
    });

    it('passes on -32601 for a method the upstream lacks (HTTP 404)', async () => {
      const { transport, seen } = await initialized();
      transport.send(...message({ id: 2, method: 'completion/complete', params: {} }));
      const answer = await seen.response(2);
      expect(answer.value.error).toEqual({ code: -32601, message: 'Method not found' });
      expect(answer.meta.transport).toMatchObject({ kind: 'http', status: 404 });
    });

    it('makes up an error for an HTTP error without a JSON-RPC body', async () => {
      const { transport, seen } = await initialized();
      script['tools/call'] = (_m, res) => res.writeHead(502).end('bad gateway');
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'plain' } }));
      expect((await seen.response(2)).value.error).toMatchObject({
        code: -32000,
        message: 'upstream up answered HTTP 502: bad gateway',
        data: { status: 502 },
      });
    });

    it('cancellation closes the POST stream and nothing more is delivered for it', async () => {
      const { transport, seen } = await initialized();
      const state: { closed?: boolean; res?: ServerResponse } = {};
      script['tools/call'] = (m, res) => {
        startSse(res);
        state.res = res;
        res.on('close', () => {
          state.closed = true;
        });
        res.write(
          sseEvent({
            data: {
              jsonrpc: '2.0',
              method: 'notifications/progress',
              params: { progressToken: m.id, progress: 1 },
            },
          }),
        );
      };
      transport.send(
        ...message({ id: 2, method: 'tools/call', params: { name: 'plain', _meta: { progressToken: 2 } } }),
      );
      await seen.notification('notifications/progress');
      const before = seen.messages.length;
      transport.send(
        ...message({ method: 'notifications/cancelled', params: { requestId: 2, reason: 'user' } }),
      );
      await eventually(() => state.closed === true);
      expect(server.requests.filter((r) => r.body.includes('notifications/cancelled'))).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(seen.messages.length).toBe(before);
      expect(metrics.get('upstream_requests_cancelled_total', { upstream: 'up' })).toBe(1);
    });
  });

  describe('subscriptions/listen', () => {
    function listens(): Body[] {
      return bodies(server, 'subscriptions/listen');
    }

    it('opens after notifications/initialized and delivers its notifications untagged', async () => {
      const streams: ServerResponse[] = [];
      script['subscriptions/listen'] = (m, res, r) => {
        DEFAULTS['subscriptions/listen']?.(m, res, r);
        streams.push(res);
      };
      const { transport, seen } = await initialized();
      transport.send(...message({ method: 'notifications/initialized' }));
      await eventually(() => streams.length === 1);
      const [listen] = listens();
      expect(listen?.params.notifications).toEqual({ toolsListChanged: true, resourcesListChanged: true });
      expect(server.requestsOf('POST', 'subscriptions/listen')[0]?.headers['mcp-method']).toBe(
        'subscriptions/listen',
      );
      streams[0]?.write(
        sseEvent({
          data: {
            jsonrpc: '2.0',
            method: 'notifications/resources/list_changed',
            params: { _meta: { 'io.modelcontextprotocol/subscriptionId': listen?.id } },
          },
        }),
      );
      const changed = await seen.notification('notifications/resources/list_changed');
      expect(changed.value).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/resources/list_changed',
        params: {},
      });
      expect(changed.meta.relatedUpstreamId).toBeUndefined();
      expect(
        seen.messages.some(
          (m) => !Array.isArray(m.value) && m.value.method === 'notifications/subscriptions/acknowledged',
        ),
      ).toBe(false);
      expect(transport.subscription.acknowledged).toEqual({
        toolsListChanged: true,
        resourcesListChanged: true,
      });
    });

    it('drops a notification nested past the depth limit, counted, and delivers the next (issue 18)', async () => {
      const streams: ServerResponse[] = [];
      script['subscriptions/listen'] = (m, res, r) => {
        DEFAULTS['subscriptions/listen']?.(m, res, r);
        streams.push(res);
      };
      const { transport, seen } = await initialized();
      transport.send(...message({ method: 'notifications/initialized' }));
      await eventually(() => streams.length === 1);
      const deep = `${'['.repeat(4500)}${']'.repeat(4500)}`;
      streams[0]?.write(
        `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":${deep}}}\n\n`,
      );
      streams[0]?.write(
        sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: {} } }),
      );
      await seen.notification('notifications/tools/list_changed');
      expect(
        seen.messages.some((m) => !Array.isArray(m.value) && m.value.method === 'notifications/message'),
      ).toBe(false);
      expect(metrics.get('upstream_malformed_total', { upstream: 'up' })).toBe(1);
    });

    it('is re-opened with the subscribed URIs, and closes the old stream', async () => {
      const streams: { res: ServerResponse; closed: boolean }[] = [];
      script['subscriptions/listen'] = (m, res, r) => {
        DEFAULTS['subscriptions/listen']?.(m, res, r);
        const entry = { res, closed: false };
        res.on('close', () => {
          entry.closed = true;
        });
        streams.push(entry);
      };
      const { transport, seen } = await initialized();
      transport.send(...message({ method: 'notifications/initialized' }));
      await eventually(() => streams.length === 1);
      transport.send(...message({ id: 2, method: 'resources/subscribe', params: { uri: 'test://b' } }));
      transport.send(...message({ id: 3, method: 'resources/subscribe', params: { uri: 'test://a' } }));
      expect((await seen.response(2)).value.result).toEqual({});
      await eventually(() =>
        listens().some((l) => JSON.stringify(l.params.notifications).includes('test://a')),
      );
      await eventually(() => streams.slice(0, -1).every((s) => s.closed));
      expect(listens().at(-1)?.params.notifications).toEqual({
        toolsListChanged: true,
        resourcesListChanged: true,
        resourceSubscriptions: ['test://a', 'test://b'],
      });
      transport.send(...message({ id: 4, method: 'resources/unsubscribe', params: { uri: 'test://a' } }));
      await eventually(
        () =>
          listens().at(-1)?.params.notifications !== undefined &&
          !JSON.stringify(listens().at(-1)?.params.notifications).includes('test://a'),
      );
      expect(server.requests.filter((r) => r.body.includes('"resources/subscribe"'))).toEqual([]);
    });

    it('refuses subscriptions the upstream does not offer', async () => {
      script['server/discover'] = (m, res) =>
        result(res, m, { supportedVersions: ['2026-07-28'], capabilities: { resources: {} } });
      const { transport, seen } = await initialized();
      transport.send(...message({ id: 2, method: 'resources/subscribe', params: { uri: 'test://a' } }));
      expect((await seen.response(2)).value.error).toMatchObject({ code: -32601 });
    });

    it('reconnects when the stream drops', async () => {
      const streams: ServerResponse[] = [];
      script['subscriptions/listen'] = (m, res, r) => {
        DEFAULTS['subscriptions/listen']?.(m, res, r);
        streams.push(res);
      };
      const { transport } = await initialized();
      transport.send(...message({ method: 'notifications/initialized' }));
      await eventually(() => streams.length === 1);
      streams[0]?.end();
      await eventually(() => streams.length === 2);
      expect(listens()[1]?.id).not.toBe(listens()[0]?.id);
    });

    it('leaves a server without subscriptions/listen alone', async () => {
      script['subscriptions/listen'] = (m, res) => rpcError(res, m, 404, -32601, 'Method not found');
      const { transport } = await initialized();
      transport.send(...message({ method: 'notifications/initialized' }));
      await eventually(() => listens().length === 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(listens()).toHaveLength(1);
    });

    it('makes the next call list the tools again after tools/list_changed', async () => {
      const streams: ServerResponse[] = [];
      script['subscriptions/listen'] = (m, res, r) => {
        DEFAULTS['subscriptions/listen']?.(m, res, r);
        streams.push(res);
      };
      const { transport, seen } = await initialized();
      transport.send(...message({ method: 'notifications/initialized' }));
      transport.send(...message({ id: 2, method: 'tools/call', params: { name: 'query', arguments: {} } }));
      await seen.response(2);
      await eventually(() => streams.length === 1);
      streams[0]?.write(sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' } }));
      await seen.notification('notifications/tools/list_changed');
      transport.send(...message({ id: 3, method: 'tools/call', params: { name: 'query', arguments: {} } }));
      await seen.response(3);
      expect(server.requestsOf('POST', 'tools/list')).toHaveLength(2);
    });
  });

  it('close() stops the streams, refuses what comes after and closes once', async () => {
    const streams: { closed: boolean }[] = [];
    script['subscriptions/listen'] = (m, res, r) => {
      DEFAULTS['subscriptions/listen']?.(m, res, r);
      const entry = { closed: false };
      res.on('close', () => {
        entry.closed = true;
      });
      streams.push(entry);
    };
    const { transport, seen } = await initialized();
    transport.send(...message({ method: 'notifications/initialized' }));
    await eventually(() => streams.length === 1);
    await transport.close();
    await transport.close();
    await eventually(() => streams[0]?.closed === true);
    expect(seen.closes).toEqual([{ reason: 'closed' }]);
    transport.send(...message({ id: 9, method: 'tools/list' }));
    expect(metrics.get('upstream_write_errors_total', { upstream: 'up' })).toBe(1);
  });
});
