/**
 * OpenTelemetry end to end (issue 21): the built `switchboard serve` exports to a real OTLP/HTTP
 * receiver (test/support/otlp-receiver.ts, protobuf decoded with the official opentelemetry-proto
 * definitions, and JSON), in front of a stdio upstream and an HTTP upstream that report the `_meta`
 * and headers they received (test/fixtures/trace-context-server.mjs), driven by the official MCP
 * SDK client. Each encoding runs the same story: the span names, kinds and attributes of the MCP
 * semantic conventions; parentage client -> gateway -> upstream through `_meta.traceparent`
 * (SEP-414) and the HTTP `traceparent` header; a link for the client's HTTP header; an error span
 * and a `tool_error`; an aggregated `tools/list` fanned out to two upstreams as two CLIENT spans
 * under one SERVER span; a sampling request in the call's trace; and the duration histograms.
 */
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from './support/cli.js';
import {
  type OtlpReceiver,
  type ReceivedSpan,
  SPAN_KIND,
  startOtlpReceiver,
} from './support/otlp-receiver.js';
import { type StartedProcess, startProcess } from './support/peers.js';
import { type RunningServe, startServe } from './support/serve.js';

const FIXTURE = `${ROOT}/test/fixtures/trace-context-server.mjs`;
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

function configYaml(httpUrl: string, receiver: string, protocol: string): string {
  return [
    'upstreams:',
    '  s:',
    '    transport: stdio',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: ${JSON.stringify([FIXTURE, 'stdio'])}`,
    '  h:',
    '    transport: http',
    `    url: ${JSON.stringify(httpUrl)}`,
    '    era: legacy',
    'observe:',
    '  otel:',
    '    enabled: true',
    `    endpoint: ${JSON.stringify(receiver)}`,
    `    protocol: ${protocol}`,
    '    serviceName: switchboard-otel-test',
    '    resourceAttributes: { deployment.environment.name: test }',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
    '    headers: { x-collector-token: "${env:COLLECTOR_TOKEN}" }',
    // A T2 call: its ledger record is written (fsynced) before the answer goes out.
    'policy:',
    '  rules:',
    '    - { upstream: s, target: fail, tier: T2 }',
    '',
  ].join('\n');
}

/** The JSON a `report` tool answered with. */
function reported(result: unknown): {
  meta: Record<string, unknown> | null;
  headers: Record<string, string> | null;
} {
  const content = (result as { content: { text: string }[] }).content;
  return JSON.parse(content[0]!.text);
}

function traceparentOf(span: ReceivedSpan): string {
  return `00-${span.traceId}-${span.spanId}-01`;
}

describe.each(['http/protobuf', 'http/json'] as const)('OpenTelemetry over OTLP %s', (protocol) => {
  let receiver: OtlpReceiver;
  let upstream: StartedProcess & { url?: string };
  let httpUrl: string;
  let gateway: RunningServe;
  let client: Client;
  let transport: StreamableHTTPClientTransport;
  /** The client's own trace: its `_meta` context, and another one in the HTTP header. */
  const clientTrace = hex(16);
  const clientSpan = hex(8);
  const headerTrace = hex(16);
  const headerSpan = hex(8);
  const sampledMeta: Record<string, unknown>[] = [];
  const results: Record<string, unknown> = {};
  let sessionId = '';

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    upstream = await startProcess(process.execPath, [FIXTURE, 'http', '--port', '0'], {
      readyPattern: /^listening (\S+)$/m,
    });
    httpUrl = upstream.ready[1]!;
    gateway = await startServe({
      configYaml: configYaml(httpUrl, receiver.url, protocol),
      env: {
        ...process.env,
        COLLECTOR_TOKEN: 'secret-token',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_METRIC_EXPORT_INTERVAL: '300',
      },
    });
    client = new Client({ name: 'otel-it', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      sampledMeta.push((request.params._meta ?? {}) as Record<string, unknown>);
      return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'hi' } };
    });
    transport = new StreamableHTTPClientTransport(new URL(gateway.url), {
      requestInit: { headers: { traceparent: `00-${headerTrace}-${headerSpan}-01` } },
    });
    await client.connect(transport);

    results.list = await client.listTools();
    results.stdio = await client.callTool({
      name: 's__report',
      arguments: {},
      _meta: {
        traceparent: `00-${clientTrace}-${clientSpan}-01`,
        tracestate: 'client=1',
        baggage: 'user=alice',
      },
    });
    results.http = await client.callTool({ name: 'h__report', arguments: {} });
    results.fail = await client.callTool({ name: 's__fail', arguments: {} });
    results.unknown = await client
      .callTool({ name: 'nobody__report', arguments: {} })
      .catch((e: unknown) => e);
    results.ask = await client.callTool({ name: 's__ask', arguments: {} });
    sessionId = transport.sessionId ?? '';
    await transport.terminateSession().catch(() => undefined);
    await client.close();
    // Stopping the gateway flushes what it has not exported yet.
    await gateway.stop();
    await receiver.waitFor(
      () =>
        receiver.metrics.some((m) => m.name === 'mcp.server.session.duration') &&
        receiver.metrics.some((m) => m.name === 'mcp.client.session.duration'),
      15_000,
      'the session histograms',
    );
  }, 120_000);

  afterAll(async () => {
    await gateway?.stop().catch(() => undefined);
    await upstream?.stop().catch(() => undefined);
    await receiver?.close();
  });

  const spans = (): ReceivedSpan[] => receiver.spans;
  const serverSpan = (name: string): ReceivedSpan => {
    const found = spans().filter((s) => s.kind === SPAN_KIND.server && s.name === name);
    expect(found, `one SERVER span ${name}`).toHaveLength(1);
    return found[0]!;
  };
  const childrenOf = (parent: ReceivedSpan, kind: number): ReceivedSpan[] =>
    spans().filter(
      (s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId && s.kind === kind,
    );

  it(`arrives in ${protocol}, with the configured headers and resource`, () => {
    const encodings = new Set(receiver.requests.map((r) => r.encoding));
    expect([...encodings]).toEqual([protocol === 'http/json' ? 'json' : 'protobuf']);
    for (const request of receiver.requests)
      expect(request.headers['x-collector-token']).toBe('secret-token');
    const span = serverSpan('tools/call s__report');
    expect(span.resource['service.name']).toBe('switchboard-otel-test');
    expect(span.resource['deployment.environment.name']).toBe('test');
  });

  it("makes the client's _meta context the parent and links its HTTP traceparent header", () => {
    const server = serverSpan('tools/call s__report');
    expect(server.traceId).toBe(clientTrace);
    expect(server.parentSpanId).toBe(clientSpan);
    expect(server.links).toContainEqual({ traceId: headerTrace, spanId: headerSpan });
    expect(server.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 's__report',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': expect.any(String),
      'mcp.protocol.version': '2025-11-25',
      'mcp.session.id': expect.any(String),
      'network.transport': 'tcp',
      'client.address': '127.0.0.1',
      'switchboard.envelope.id': expect.any(String),
    });
    expect(server.attributes['error.type']).toBeUndefined();
    expect(server.statusCode).toBe(0);
  });

  it('sends a CLIENT child span to the stdio upstream and its context in _meta, without the baggage', () => {
    const server = serverSpan('tools/call s__report');
    const [client] = childrenOf(server, SPAN_KIND.client);
    expect(client?.name).toBe('tools/call report');
    expect(client?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'report',
      'network.transport': 'pipe',
      'switchboard.upstream': 's',
      'switchboard.envelope.id': server.attributes['switchboard.envelope.id'],
    });
    const { meta } = reported(results.stdio);
    expect(meta?.traceparent).toBe(traceparentOf(client!));
    expect(meta?.baggage).toBeUndefined();
    expect(meta?.tracestate).toBe('client=1');
  });

  it('sends the context to an HTTP upstream in _meta and in the traceparent header, with server.address', () => {
    const server = serverSpan('tools/call h__report');
    // No context from the client in _meta: a new trace, still linked to its HTTP header.
    expect(server.parentSpanId).toBe('');
    expect(server.links).toContainEqual({ traceId: headerTrace, spanId: headerSpan });
    const [client] = childrenOf(server, SPAN_KIND.client);
    const port = Number(new URL(httpUrl).port);
    expect(client?.attributes).toMatchObject({
      'server.address': '127.0.0.1',
      'server.port': port,
      'network.transport': 'tcp',
      'switchboard.upstream': 'h',
    });
    const { meta, headers } = reported(results.http);
    expect(meta?.traceparent).toBe(traceparentOf(client!));
    expect(headers?.traceparent).toBe(traceparentOf(client!));
  });

  it('marks a tool result with isError as tool_error, on both spans, with status ERROR', () => {
    const server = serverSpan('tools/call s__fail');
    expect(server.attributes['error.type']).toBe('tool_error');
    expect(server.statusCode).toBe(2);
    const [client] = childrenOf(server, SPAN_KIND.client);
    expect(client?.attributes['error.type']).toBe('tool_error');
    expect(client?.statusCode).toBe(2);
  });

  it("shows a T2 call's durable ledger write as a child span of its SERVER span", () => {
    const server = serverSpan('tools/call s__fail');
    const [write] = childrenOf(server, SPAN_KIND.internal);
    expect(write?.name).toBe('switchboard.ledger.write');
    expect(write?.attributes).toMatchObject({
      'switchboard.audit.tier': 'T2',
      'switchboard.envelope.id': server.attributes['switchboard.envelope.id'],
    });
    expect(write?.statusCode).toBe(0);
    // A T1 call's record is batched after the answer: not on the call's path, no span.
    expect(childrenOf(serverSpan('tools/call s__report'), SPAN_KIND.internal)).toEqual([]);
  });

  it('gives an error answer its JSON-RPC code as error.type and rpc.response.status_code', () => {
    const server = serverSpan('tools/call nobody__report');
    const code = server.attributes['rpc.response.status_code'];
    expect(code).toMatch(/^-32\d\d\d$/);
    expect(server.attributes['error.type']).toBe(code);
    expect(server.statusCode).toBe(2);
  });

  it('fans an aggregated tools/list out as one CLIENT span per upstream under its SERVER span', () => {
    const server = serverSpan('tools/list');
    const clients = childrenOf(server, SPAN_KIND.client).filter((s) => s.name === 'tools/list');
    expect(clients.map((c) => c.attributes['switchboard.upstream']).sort()).toEqual(['h', 's']);
  });

  it("puts a server's sampling request in the call's trace: SERVER span from the upstream, CLIENT span to the client", () => {
    const call = serverSpan('tools/call s__ask');
    const [toUpstream] = childrenOf(call, SPAN_KIND.client);
    const sampling = spans().find((s) => s.kind === SPAN_KIND.server && s.name === 'sampling/createMessage');
    expect(sampling?.traceId).toBe(call.traceId);
    // The fixture continued the call's context it received (as an instrumented server would).
    expect(sampling?.parentSpanId).toBe(toUpstream?.spanId);
    expect(sampling?.attributes['switchboard.upstream']).toBe('s');
    const [toClient] = childrenOf(sampling!, SPAN_KIND.client);
    expect(toClient?.name).toBe('sampling/createMessage');
    expect(sampledMeta[0]?.traceparent).toBe(traceparentOf(toClient!));
    expect(toClient?.attributes['switchboard.envelope.id']).toBe(call.attributes['switchboard.envelope.id']);
  });

  it('keeps the trace id and span id of each call in the MEUP trace, which trace show prints', async () => {
    const server = serverSpan('tools/call s__report');
    const envelope = String(server.attributes['switchboard.envelope.id']);
    const shown = await runCli(['trace', 'show', sessionId, '--data-dir', gateway.dataDir]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`  ${envelope}  ${server.traceId}  ${server.spanId}\n`);
    // The envelope id on the span is the one `trace follow` takes.
    const followed = await runCli(['trace', 'follow', envelope, '--json', '--data-dir', gateway.dataDir]);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toContain('"method":"tools/call"');
  });

  it('exports the four duration histograms of the conventions, in seconds, with their bucket advice', () => {
    for (const name of [
      'mcp.server.operation.duration',
      'mcp.client.operation.duration',
      'mcp.server.session.duration',
      'mcp.client.session.duration',
    ]) {
      const metric = receiver.metrics.filter((m) => m.name === name).at(-1);
      expect(metric, name).toBeDefined();
      expect(metric?.unit).toBe('s');
      const points = metric?.histogram ?? [];
      expect(points.length, name).toBeGreaterThan(0);
      for (const point of points) expect(point.explicitBounds).toEqual(DURATION_BUCKETS);
    }
    const server = receiver.metrics.filter((m) => m.name === 'mcp.server.operation.duration').at(-1)!;
    const calls = server.histogram.find(
      (p) =>
        p.attributes['mcp.method.name'] === 'tools/call' && p.attributes['gen_ai.tool.name'] === 's__fail',
    );
    expect(calls?.count).toBe(1);
    expect(calls?.attributes['error.type']).toBe('tool_error');
    const upstream = receiver.metrics.filter((m) => m.name === 'mcp.client.operation.duration').at(-1)!;
    const lists = upstream.histogram.filter((p) => p.attributes['mcp.method.name'] === 'tools/list');
    expect(lists.map((p) => p.attributes['switchboard.upstream']).sort()).toEqual(['h', 's']);
    const sessions = receiver.metrics.filter((m) => m.name === 'mcp.client.session.duration').at(-1)!;
    expect(sessions.histogram.map((p) => p.attributes['switchboard.upstream']).sort()).toEqual(['h', 's']);
    // Never a session id or a request id on a metric.
    for (const point of server.histogram) {
      expect(point.attributes['mcp.session.id']).toBeUndefined();
      expect(point.attributes['jsonrpc.request.id']).toBeUndefined();
    }
  });
});
