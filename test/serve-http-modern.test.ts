/**
 * `switchboard serve` serving 2026-07-28 (stateless) clients on the same endpoints as the
 * session-based revisions, with legacy upstreams behind it over stdio (the conformance fixture and
 * server-everything). Raw HTTP, so every status, header and frame is exactly what the gateway sent:
 * the era split, each validation of the specification's table (400/-32020, 400/-32022, 404/-32601,
 * 405), `server/discover`, `subscriptions/listen`, log levels, progress, a closed stream as a
 * cancellation, input-required round trips bridging a legacy server's requests to the client, and
 * the trace rooting modern traffic at the principal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING, jsonLines, runCli } from './support/cli.js';
import { FIXTURES } from './support/peers.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import {
  headerOf,
  initialize,
  jsonOf,
  messagesOf,
  openSse,
  post,
  type RawResponse,
  send,
  sleep,
  waitUntil,
} from './support/sse-client.js';

const MODERN = '2026-07-28';
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CAPS_KEY = 'io.modelcontextprotocol/clientCapabilities';

type Json = Record<string, unknown>;

function meta(extra: Json = {}, capabilities: Json = {}): Json {
  return {
    [VERSION_KEY]: MODERN,
    [CAPS_KEY]: capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '1' },
    ...extra,
  };
}

/** The headers a 2026-07-28 client sends for `method` (and `name` for the named methods). */
function modernHeaders(method: string, name?: string): Record<string, string> {
  return {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  };
}

function request(
  id: number | string,
  method: string,
  params: Json = {},
  metaExtra: Json = {},
  capabilities: Json = {},
): Json {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(metaExtra, capabilities) } };
}

/** A modern request with the right headers; returns the whole answer. */
function call(url: string, body: Json, headers: Record<string, string> = {}): Promise<RawResponse> {
  const params = (body.params ?? {}) as Json;
  const name =
    typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
  return post(url, body, { ...modernHeaders(String(body.method), name), ...headers });
}

function expectError(response: RawResponse, status: number, code: number, id: unknown) {
  expect(response.status, response.text).toBe(status);
  const [message] = messagesOf(response);
  expect(message).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
  return message as { error: { code: number; message: string; data?: Json } };
}

function resultOf(response: RawResponse): Json {
  const messages = messagesOf(response);
  const last = messages.at(-1) as { result?: Json; error?: unknown } | undefined;
  if (!last?.result) throw new Error(`no result: ${response.status} ${response.text.slice(0, 800)}`);
  return last.result;
}

function textOf(result: Json): string {
  return ((result.content as { text?: string }[] | undefined) ?? []).map((c) => c.text ?? '').join('\n');
}

interface TraceEnvelope {
  readonly kind: string;
  readonly from: string;
  readonly to?: string[];
  readonly context?: string;
  readonly payload: { id?: string | number; method?: string; params?: Json };
}

async function traceOf(serve: RunningServe): Promise<{ key: string; envelopes: TraceEnvelope[] }> {
  const sessions = await runCli(['trace', 'sessions', '--json', '--data-dir', serve.dataDir]);
  expect(sessions.code, sessions.stderr).toBe(0);
  // The principal's session on the aggregated endpoint (the one with both upstreams).
  const modern = jsonLines<{ key: string; protocolVersion?: string; upstreams: string[] }>(
    sessions.stdout,
  ).find((s) => s.protocolVersion === MODERN && s.upstreams.length === 2);
  if (!modern) throw new Error(`no 2026-07-28 session in the trace:\n${sessions.stdout}`);
  const shown = await runCli(['trace', 'show', '--json', '--data-dir', serve.dataDir, '--', modern.key]);
  expect(shown.code, shown.stderr).toBe(0);
  return { key: modern.key, envelopes: jsonLines<TraceEnvelope>(shown.stdout) };
}

describe('serve: 2026-07-28 clients beside legacy ones (legacy stdio upstreams)', () => {
  let serve: RunningServe;
  let url: string;
  let single: string;

  beforeAll(async () => {
    serve = await startServe({
      configYaml: stdioUpstreamConfig({
        conformance: { script: FIXTURES.conformanceServer, args: ['stdio'] },
        everything: { script: EVERYTHING, args: ['stdio'] },
      }),
    });
    url = serve.url;
    single = `${serve.base}/servers/conformance/mcp`;
  });
  afterAll(async () => {
    await serve?.stop();
  });

  describe('the era split', () => {
    it('serves a legacy initialize and a modern request on the same endpoint', async () => {
      const legacy = await initialize(url);
      expect(legacy.id.length).toBeGreaterThan(0);
      const modern = await call(url, request(1, 'tools/list'));
      expect(modern.status).toBe(200);
      expect(headerOf(modern, 'mcp-session-id')).toBeUndefined();
      const tools = resultOf(modern).tools as { name: string }[];
      expect(tools.map((t) => t.name)).toContain('everything__echo');
      expect(tools.map((t) => t.name)).toContain('conformance__test_simple_text');
    });

    it('never mints a session id and ignores Mcp-Session-Id and Last-Event-ID', async () => {
      const response = await call(url, request(2, 'tools/list'), {
        'mcp-session-id': 'no-such-session',
        'last-event-id': 'x_1',
      });
      expect(response.status, response.text).toBe(200);
      expect(headerOf(response, 'mcp-session-id')).toBeUndefined();
      expect(resultOf(response).tools).toBeInstanceOf(Array);
    });

    it('answers GET and DELETE with 405', async () => {
      for (const method of ['GET', 'DELETE'] as const) {
        const response = await send(url, method, {
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': MODERN,
        });
        expect(response.status).toBe(405);
        expect(headerOf(response, 'allow')).toBe('POST');
      }
    });

    it('refuses a modern body without the version header (400/-32020)', async () => {
      const response = await post(url, request(3, 'tools/list'), { 'mcp-method': 'tools/list' });
      const error = expectError(response, 400, -32020, 3);
      expect(error.error.message).toMatch(/MCP-Protocol-Version/);
    });

    it('refuses a version header that differs from _meta (400/-32020), both ways round', async () => {
      expectError(
        await call(url, {
          ...request(4, 'tools/list'),
          params: { _meta: meta({ [VERSION_KEY]: '2099-01-01' }) },
        }),
        400,
        -32020,
        4,
      );
      expectError(
        await post(url, request(5, 'tools/list'), {
          'mcp-protocol-version': '2025-11-25',
          'mcp-method': 'tools/list',
        }),
        400,
        -32020,
        5,
      );
    });

    it('answers an unsupported version with 400/-32022 and the supported list', async () => {
      const response = await post(
        url,
        { ...request(6, 'server/discover'), params: { _meta: meta({ [VERSION_KEY]: 'v999.0.0' }) } },
        { 'mcp-protocol-version': 'v999.0.0', 'mcp-method': 'server/discover' },
      );
      const error = expectError(response, 400, -32022, 6);
      expect(error.error.data).toEqual({
        supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
        requested: 'v999.0.0',
      });
    });

    it('answers unknown and removed methods with 404/-32601', async () => {
      for (const method of [
        'initialize',
        'ping',
        'logging/setLevel',
        'resources/subscribe',
        'no/such-method',
      ]) {
        expectError(await call(url, request(7, method)), 404, -32601, 7);
      }
    });

    it('refuses batches and client responses with 400/-32600', async () => {
      expectError(
        await post(url, [request(8, 'tools/list')], modernHeaders('tools/list')),
        400,
        -32600,
        null,
      );
      expectError(
        await post(url, { jsonrpc: '2.0', id: 9, result: {} }, modernHeaders('tools/list')),
        400,
        -32600,
        null,
      );
    });

    it('refuses a request without _meta or capabilities with 400/-32602, echoing the id', async () => {
      expectError(
        await call(url, { jsonrpc: '2.0', id: 10, method: 'server/discover', params: {} }),
        400,
        -32602,
        10,
      );
      expectError(
        await call(url, {
          jsonrpc: '2.0',
          id: 11,
          method: 'server/discover',
          params: { _meta: { [VERSION_KEY]: MODERN } },
        }),
        400,
        -32602,
        11,
      );
    });

    it('answers malformed JSON with 400/-32700 and accepts a notification with 202', async () => {
      expectError(await post(url, '{"jsonrpc":"2.0","id":', modernHeaders('tools/list')), 400, -32700, null);
      const note = await post(
        url,
        { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: meta() } },
        modernHeaders('notifications/initialized'),
      );
      expect(note.status).toBe(202);
    });
  });

  describe('Mcp-Method and Mcp-Name', () => {
    const echo = () => request(20, 'tools/call', { name: 'everything__echo', arguments: { message: 'hi' } });

    it('requires Mcp-Method and compares it case-sensitively, header names in any case', async () => {
      expectError(
        await post(url, request(21, 'tools/list'), { 'mcp-protocol-version': MODERN }),
        400,
        -32020,
        21,
      );
      expectError(
        await post(url, request(22, 'tools/list'), {
          'mcp-protocol-version': MODERN,
          'mcp-method': 'TOOLS/LIST',
        }),
        400,
        -32020,
        22,
      );
      expectError(
        await post(url, request(23, 'tools/list'), {
          'mcp-protocol-version': MODERN,
          'mcp-method': 'prompts/list',
        }),
        400,
        -32020,
        23,
      );
      const upper = await post(url, request(24, 'tools/list'), {
        'MCP-PROTOCOL-VERSION': MODERN,
        'MCP-METHOD': 'tools/list',
      });
      expect(upper.status, upper.text).toBe(200);
    });

    it('requires Mcp-Name for tools/call and compares it after trimming and Base64 decoding', async () => {
      expectError(await post(url, echo(), modernHeaders('tools/call')), 400, -32020, 20);
      expectError(await post(url, echo(), modernHeaders('tools/call', 'wrong')), 400, -32020, 20);
      expect(
        textOf(resultOf(await post(url, echo(), modernHeaders('tools/call', '  everything__echo  ')))),
      ).toBe('Echo: hi');
      const encoded = `=?base64?${Buffer.from('everything__echo').toString('base64')}?=`;
      expect(textOf(resultOf(await post(url, echo(), modernHeaders('tools/call', encoded))))).toBe(
        'Echo: hi',
      );
      expectError(
        await post(url, echo(), modernHeaders('tools/call', '=?base64?not base64!?=')),
        400,
        -32020,
        20,
      );
    });

    it('checks Mcp-Param-* against the arguments of tools that declare x-mcp-header', async () => {
      const tools = resultOf(await call(single, request(25, 'tools/list'))).tools as {
        name: string;
        inputSchema: Json;
      }[];
      const tool = tools.find((t) => t.name === 'test_custom_header_param');
      expect(tool, 'the fixture declares a tool with x-mcp-header').toBeDefined();
      const properties = tool!.inputSchema.properties as Record<string, { 'x-mcp-header'?: string }>;
      const [param, spec] = Object.entries(properties).find(([, p]) => p['x-mcp-header'] !== undefined)!;
      const header = `mcp-param-${spec['x-mcp-header']!.toLowerCase()}`;
      const body = request(26, 'tools/call', { name: tool!.name, arguments: { [param]: 'Hello' } });
      const ok = await post(single, body, {
        ...modernHeaders('tools/call', tool!.name),
        [header]: '=?base64?SGVsbG8=?=',
      });
      expect(ok.status, ok.text).toBe(200);
      expectError(
        await post(single, body, {
          ...modernHeaders('tools/call', tool!.name),
          [header]: '=?base64?SGVsbG8?=',
        }),
        400,
        -32020,
        26,
      );
      expectError(
        await post(single, body, { ...modernHeaders('tools/call', tool!.name), [header]: 'Goodbye' }),
        400,
        -32020,
        26,
      );
      expectError(await post(single, body, modernHeaders('tools/call', tool!.name)), 400, -32020, 26);
    });
  });

  describe('discover, results and listen', () => {
    it('answers server/discover with the aggregated capabilities and the gateway in _meta', async () => {
      const result = resultOf(await call(url, request(30, 'server/discover')));
      expect(result.supportedVersions).toEqual([
        '2026-07-28',
        '2025-11-25',
        '2025-06-18',
        '2025-03-26',
        '2024-11-05',
      ]);
      expect(result.capabilities).toMatchObject({
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { subscribe: true },
      });
      expect(result.resultType).toBe('complete');
      expect((result._meta as Json)['io.modelcontextprotocol/serverInfo']).toMatchObject({
        name: 'switchboard',
      });
      expect(String(result.instructions)).toMatch(/## everything/);
    });

    it('gives every result a resultType and cacheable ones ttlMs and cacheScope', async () => {
      for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
        const result = resultOf(await call(url, request(31, method)));
        expect(result).toMatchObject({
          resultType: 'complete',
          ttlMs: expect.any(Number),
          cacheScope: expect.stringMatching(/^(public|private)$/),
        });
      }
    });

    it('answers resources/read of an unknown resource with -32602 and data.uri', async () => {
      const uri = 'test://nonexistent-resource-for-conformance-testing';
      const response = await call(single, request(32, 'resources/read', { uri }));
      const [message] = messagesOf(response) as { error?: { code: number; data?: Json } }[];
      expect(message?.error?.code).toBe(-32602);
      expect(message?.error?.data?.uri).toBe(uri);
    });

    it('acknowledges subscriptions/listen first, tags what follows, and honours the filter', async () => {
      const tools = await openSse(
        single,
        'POST',
        { 'content-type': 'application/json', ...modernHeaders('subscriptions/listen') },
        JSON.stringify(request(40, 'subscriptions/listen', { notifications: { toolsListChanged: true } })),
      );
      const prompts = await openSse(
        single,
        'POST',
        { 'content-type': 'application/json', ...modernHeaders('subscriptions/listen') },
        JSON.stringify(request(41, 'subscriptions/listen', { notifications: { promptsListChanged: true } })),
      );
      try {
        expect(tools.status).toBe(200);
        expect(headerOf(tools, 'x-accel-buffering')).toBe('no');
        await tools.waitFor((_e, m) => m?.method === 'notifications/subscriptions/acknowledged');
        expect(tools.messages()[0]).toMatchObject({
          method: 'notifications/subscriptions/acknowledged',
          params: {
            notifications: { toolsListChanged: true },
            _meta: { 'io.modelcontextprotocol/subscriptionId': 40 },
          },
        });
        await prompts.waitFor((_e, m) => m?.method === 'notifications/subscriptions/acknowledged');
        const trigger = await call(
          single,
          request(42, 'tools/call', { name: 'test_trigger_tool_change', arguments: {} }),
        );
        expect(trigger.status, trigger.text).toBe(200);
        const changed = await tools.waitFor((_e, m) => m?.method === 'notifications/tools/list_changed');
        expect(JSON.parse(changed.data)).toMatchObject({
          params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 40 } },
        });
        await sleep(300);
        expect(prompts.messages().map((m) => m.method)).toEqual(['notifications/subscriptions/acknowledged']);
        for (const m of tools.messages())
          expect(String(m.method)).toMatch(/^notifications\/(subscriptions|tools)/);
      } finally {
        tools.abort();
        prompts.abort();
      }
    });
  });

  describe('logs, progress and cancellation', () => {
    it('sends no log messages without a log level, and those at or above it with one', async () => {
      const quiet = await call(
        single,
        request(50, 'tools/call', { name: 'test_logging_tool', arguments: {} }),
      );
      expect(messagesOf(quiet).filter((m) => m.method === 'notifications/message')).toEqual([]);
      const loud = await call(
        single,
        request(
          51,
          'tools/call',
          { name: 'test_logging_tool', arguments: {} },
          { 'io.modelcontextprotocol/logLevel': 'debug' },
        ),
      );
      expect(headerOf(loud, 'content-type')).toMatch(/^text\/event-stream/);
      expect(messagesOf(loud).filter((m) => m.method === 'notifications/message').length).toBeGreaterThan(0);
      const above = await call(
        single,
        request(
          52,
          'tools/call',
          { name: 'test_logging_tool', arguments: {} },
          { 'io.modelcontextprotocol/logLevel': 'emergency' },
        ),
      );
      expect(messagesOf(above).filter((m) => m.method === 'notifications/message')).toEqual([]);
    });

    it('streams progress before the result when the request has a progress token', async () => {
      const response = await call(
        url,
        request(
          53,
          'tools/call',
          { name: 'everything__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
          { progressToken: 'tok-53' },
        ),
      );
      const messages = messagesOf(response);
      const progress = messages.filter((m) => m.method === 'notifications/progress');
      expect(progress.map((p) => (p.params as Json).progress)).toEqual([1, 2, 3]);
      expect(progress.every((p) => (p.params as Json).progressToken === 'tok-53')).toBe(true);
      expect(messages.at(-1)).toMatchObject({ id: 53, result: { resultType: 'complete' } });
    });

    it('takes a closed response stream as a cancellation: upstream is told, the client gets nothing more', async () => {
      const stream = await openSse(
        url,
        'POST',
        {
          'content-type': 'application/json',
          ...modernHeaders('tools/call', 'everything__trigger-long-running-operation'),
        },
        JSON.stringify(
          request(
            'slow-1',
            'tools/call',
            { name: 'everything__trigger-long-running-operation', arguments: { duration: 3, steps: 6 } },
            { progressToken: 'tok-slow' },
          ),
        ),
      );
      await stream.waitFor((_e, m) => m?.method === 'notifications/progress');
      stream.abort();
      await waitUntil(
        async () => {
          const { envelopes } = await traceOf(serve);
          return envelopes.some(
            (e) => e.from === 'gateway' && e.payload.method === 'notifications/cancelled',
          );
        },
        10_000,
        'the cancellation in the trace',
      );
      const { envelopes } = await traceOf(serve);
      const upstreamCall = envelopes.find(
        (e) =>
          e.from === 'gateway' &&
          e.kind === 'mcp/request' &&
          (e.payload.params as Json | undefined)?.name === 'trigger-long-running-operation' &&
          ((e.payload.params as Json).arguments as Json).duration === 3,
      );
      const cancel = envelopes.find(
        (e) => e.from === 'gateway' && e.payload.method === 'notifications/cancelled',
      );
      expect(cancel?.payload.params?.requestId).toEqual(upstreamCall?.payload.id);
      // The gateway still serves the principal afterwards.
      expect(
        textOf(
          resultOf(
            await call(
              url,
              request(54, 'tools/call', { name: 'everything__echo', arguments: { message: 'after' } }),
            ),
          ),
        ),
      ).toBe('Echo: after');
    });
  });

  describe('input-required round trips with a legacy server', () => {
    it('turns the server request into input_required and resumes the call with the retry', async () => {
      const first = resultOf(
        await call(
          single,
          request(
            60,
            'tools/call',
            { name: 'test_elicitation', arguments: { message: 'Who?' } },
            {},
            { elicitation: {} },
          ),
        ),
      );
      expect(first.resultType).toBe('input_required');
      const inputs = first.inputRequests as Record<string, { method: string; params: Json }>;
      const [key, input] = Object.entries(inputs)[0]!;
      expect(input.method).toBe('elicitation/create');
      expect(typeof first.requestState).toBe('string');
      const retry = request(
        61,
        'tools/call',
        {
          name: 'test_elicitation',
          arguments: { message: 'Who?' },
          inputResponses: {
            [key]: { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } },
          },
          requestState: first.requestState,
        },
        {},
        { elicitation: {} },
      );
      const done = resultOf(await call(single, retry));
      expect(done.resultType).toBe('complete');
      expect(textOf(done)).toMatch(/ada/);
    });

    it('refuses a tampered requestState and one replayed for another tool', async () => {
      const first = resultOf(
        await call(
          single,
          request(
            62,
            'tools/call',
            { name: 'test_elicitation', arguments: { message: 'Who?' } },
            {},
            { elicitation: {} },
          ),
        ),
      );
      const state = String(first.requestState);
      const tampered = `${state.slice(0, -2)}${state.endsWith('A') ? 'B' : 'A'}A`;
      const bad = messagesOf(
        await call(
          single,
          request(
            63,
            'tools/call',
            {
              name: 'test_elicitation',
              arguments: { message: 'Who?' },
              inputResponses: {},
              requestState: tampered,
            },
            {},
            { elicitation: {} },
          ),
        ),
      );
      expect(bad.at(-1)).toMatchObject({ id: 63, error: { code: -32602 } });
      const other = messagesOf(
        await call(
          single,
          request(
            64,
            'tools/call',
            { name: 'test_sampling', arguments: { prompt: 'x' }, inputResponses: {}, requestState: state },
            {},
            { elicitation: {} },
          ),
        ),
      );
      expect(other.at(-1)).toMatchObject({ id: 64, error: { code: -32602 } });
    });

    it('refuses a requestState it did not issue before the legacy server sees it; inputResponses go on', async () => {
      // A retry of everything's echo carrying answers to an input request, and `extra`.
      const echoRetry = (id: number, message: string, extra: Json = {}) =>
        call(
          url,
          request(id, 'tools/call', {
            name: 'everything__echo',
            arguments: { message },
            inputResponses: { q: { action: 'accept' } },
            ...extra,
          }),
        );
      const foreign = messagesOf(
        await echoRetry(70, 'resume me', { requestState: 'issued-by-someone-else' }),
      );
      expect(foreign.at(-1)).toMatchObject({
        id: 70,
        error: { code: -32602, message: expect.stringMatching(/requestState: upstream everything /) },
      });
      // A stateless retry is a call like any other (a server speaking both eras reads the answers).
      const stateless = resultOf(await echoRetry(71, 'stateless retry'));
      expect(textOf(stateless)).toBe('Echo: stateless retry');
      await sleep(300);
      const upstreamCalls = (await traceOf(serve)).envelopes.filter(
        (e) => e.to?.includes('server-everything') && e.payload.method === 'tools/call',
      );
      const sent = (message: string) =>
        upstreamCalls.filter((e) => (e.payload.params?.arguments as Json | undefined)?.message === message);
      expect(sent('resume me')).toEqual([]);
      expect(sent('stateless retry').map((e) => e.payload.params?.inputResponses)).toEqual([
        { q: { action: 'accept' } },
      ]);
    });

    it('answers -32021 (HTTP 400) when the client lacks the capability the server needs', async () => {
      const response = await call(
        single,
        request(65, 'tools/call', { name: 'test_missing_capability', arguments: {} }),
      );
      const error = expectError(response, 400, -32021, 65);
      expect(error.error.data).toEqual({ requiredCapabilities: { sampling: {} } });
    });
  });

  describe('the trace', () => {
    it('roots modern traffic at the principal, each request in its own sub-context', async () => {
      await call(
        url,
        request('traced', 'tools/call', { name: 'everything__echo', arguments: { message: 'trace me' } }),
      );
      await sleep(300);
      const { key, envelopes } = await traceOf(serve);
      // The router knows the call as `<client id>#<n>` (two clients of one principal may share ids).
      const inbound = envelopes.find(
        (e) => String(e.payload.id).startsWith('traced#') && e.kind === 'mcp/request',
      );
      expect(inbound?.context).toMatch(new RegExp(`^${key}/`));
      const sessions = jsonLines<{ key: string; principal?: string; protocolVersion?: string }>(
        (await runCli(['trace', 'sessions', '--json', '--data-dir', serve.dataDir])).stdout,
      );
      expect(sessions.find((s) => s.key === key)).toMatchObject({
        principal: 'local',
        protocolVersion: MODERN,
      });
    });
  });

  it('still serves legacy clients their session-based protocol', async () => {
    const session = await initialize(url);
    const listed = await post(url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, session.headers);
    expect(listed.status, listed.text).toBe(200);
    expect(jsonOf<{ result: { tools: unknown[] } }>(listed).result.tools.length).toBeGreaterThan(0);
    const unsupported = await post(
      url,
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { ...session.headers, 'mcp-protocol-version': '1999-01-01' },
    );
    expectError(unsupported, 400, -32022, 3);
  });
});
