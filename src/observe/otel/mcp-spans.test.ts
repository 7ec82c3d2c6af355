/**
 * `McpSpans` on a real router (in-process ports, as the router's own tests use) with the real SDK
 * (a `BasicTracerProvider` exporting to its in-memory exporter): what the end-to-end test over OTLP
 * (test/otel-traces.test.ts) cannot reach cheaply: cancellations, baggage forwarding, approval
 * events, the bound on open spans, and the ids the MEUP trace keeps.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { DownstreamPort, UpstreamTransport } from '../../core/ports.js';
import { Router } from '../../core/router.js';
import { type HopEvent, TapBus } from '../../core/taps.js';
import { ApprovalRegistry } from '../../policy/approvals.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { MemoryLogger } from '../logger.js';
import { Metrics } from '../metrics.js';
import { traceApprovals } from './governance-spans.js';
import { McpSpans } from './mcp-spans.js';

class Upstream implements UpstreamTransport {
  readonly sent: JsonRpcMessage[] = [];
  onmessage?: UpstreamTransport['onmessage'];
  async start(): Promise<void> {}
  send(_json: string, message: JsonRpcMessage): undefined {
    this.sent.push(message);
    return undefined;
  }
  async close(): Promise<void> {}
  lastRequest(): JsonRpcRequest {
    return this.sent.filter((m): m is JsonRpcRequest => 'method' in m && 'id' in m).at(-1)!;
  }
  answer(result: unknown): void {
    this.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: this.lastRequest().id, result }), {
      transport: { kind: 'memory' },
    });
  }
}

class Port implements DownstreamPort {
  readonly messages: JsonRpcMessage[] = [];
  send(_json: string, message: JsonRpcMessage): void {
    this.messages.push(message);
  }
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const providers: BasicTracerProvider[] = [];

function setup(options: { forwardBaggage?: boolean; maxOpen?: number } = {}) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  providers.push(provider);
  const spans = new McpSpans({
    tracer: provider.getTracer('test'),
    forwardBaggage: options.forwardBaggage ?? false,
    ...(options.maxOpen === undefined ? {} : { maxOpen: options.maxOpen }),
  });
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const hops: HopEvent[] = [];
  const taps = new TapBus(logger, metrics, [spans, { name: 'hops', observe: (e) => hops.push(e) }]);
  const router = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'a' }),
      notificationLinks: () => ['a'],
      sessionsFor: () => ['S'],
      notificationTargets: () => ['S'],
    },
    logger,
    metrics,
    taps,
    traceContext: spans,
  });
  const upstream = new Upstream();
  router.addLink({ id: 'a', name: 'alpha', transport: upstream, transportContext: { kind: 'stdio' } });
  const port = new Port();
  router.openSession({ key: 'S', port, transport: 'stdio', transportContext: { kind: 'stdio' } });
  const send = (message: Record<string, unknown>) =>
    router.handleClientMessage('S', { jsonrpc: '2.0', ...message } as JsonRpcMessage, { kind: 'stdio' });
  const finished = (): ReadableSpan[] => exporter.getFinishedSpans();
  return { spans, router, upstream, port, send, finished, hops };
}

afterEach(async () => {
  for (const provider of providers.splice(0)) await provider.shutdown();
});

describe('McpSpans on a router', () => {
  it('parents the call on the client context and hands the upstream its CLIENT span, baggage stripped', () => {
    const { upstream, send, finished, spans, hops } = setup();
    send({
      id: 1,
      method: 'tools/call',
      params: {
        name: 'echo',
        _meta: {
          traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
          baggage: 'user=alice',
          progressToken: 7,
        },
      },
    });
    const meta = (upstream.lastRequest().params as { _meta: Record<string, unknown> })._meta;
    expect(meta.baggage).toBeUndefined();
    expect(meta.progressToken).toBeDefined();
    upstream.answer({ content: [] });
    const [client, server] = finished();
    expect(server?.kind).toBe(SpanKind.SERVER);
    expect(server?.name).toBe('tools/call echo');
    expect(server?.spanContext().traceId).toBe(CLIENT_TRACE);
    expect(server?.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    expect(server?.attributes['network.transport']).toBe('pipe');
    expect(client?.kind).toBe(SpanKind.CLIENT);
    expect(client?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(meta.traceparent).toBe(`00-${CLIENT_TRACE}-${client?.spanContext().spanId}-01`);
    expect(spans.openSpans).toBe(0);
    // Every hop of the call maps to the call's SERVER span, its final answer (recorded after the
    // span ended) included.
    for (const hop of hops)
      expect(spans.callIds(hop)).toEqual({ traceId: CLIENT_TRACE, spanId: server?.spanContext().spanId });
  });

  it('takes hostile trace context in _meta (wrong types, malformed, huge, invalid ids) as none: a root span, the call answered, a valid traceparent upstream', () => {
    const hostile = fc.oneof(
      fc.string(),
      fc.string({ minLength: 60_000, maxLength: 70_000 }),
      fc.constantFrom(
        `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01`,
        `00-${CLIENT_TRACE}-${'0'.repeat(16)}-01`,
        `ff-${CLIENT_TRACE}-${CLIENT_SPAN}-01`,
        `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01`,
        `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01-extra`,
      ),
      fc.anything(),
    );
    fc.assert(
      fc.property(hostile, fc.anything(), (traceparent, tracestate) => {
        const { upstream, send, finished, spans } = setup();
        send({ id: 'x', method: 'tools/call', params: { name: 'echo', _meta: { traceparent, tracestate } } });
        const meta = (upstream.lastRequest().params as { _meta: Record<string, unknown> })._meta;
        expect(meta.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
        upstream.answer({ content: [] });
        const server = finished().find((span) => span.kind === SpanKind.SERVER);
        expect(server?.parentSpanContext).toBeUndefined();
        expect(spans.openSpans).toBe(0);
      }),
      { numRuns: 200 },
    );
  });

  it("forwards the client's baggage when configured", () => {
    const { upstream, send } = setup({ forwardBaggage: true });
    send({ id: 1, method: 'tools/call', params: { name: 'echo', _meta: { baggage: 'user=alice' } } });
    const meta = (upstream.lastRequest().params as { _meta: Record<string, unknown> })._meta;
    expect(meta.baggage).toBe('user=alice');
    expect(typeof meta.traceparent).toBe('string');
  });

  it('ends both spans of a call the client cancels, as cancelled', () => {
    const { send, finished, spans } = setup();
    send({ id: 1, method: 'tools/call', params: { name: 'slow' } });
    send({ method: 'notifications/cancelled', params: { requestId: 1 } });
    const ended = finished();
    expect(ended.map((s) => [s.kind, s.attributes['error.type'], s.status.code])).toEqual([
      [SpanKind.SERVER, 'cancelled', SpanStatusCode.ERROR],
      [SpanKind.CLIENT, 'cancelled', SpanStatusCode.ERROR],
    ]);
    expect(spans.openSpans).toBe(0);
  });

  it('shows a hold for approval as two events on the SERVER span', async () => {
    const { upstream, send, finished, spans, hops } = setup();
    const registry = new ApprovalRegistry({ timeoutMs: 60_000 });
    traceApprovals(registry, spans);
    send({ id: 1, method: 'tools/call', params: { name: 'delete' } });
    const traceId = hops[0]!.id;
    const held = registry.request({
      principal: 'local',
      upstream: 'alpha',
      method: 'tools/call',
      target: 'delete',
      tier: 'T2',
      traceId,
    });
    registry.decide(held.id, { approve: false, by: 'carol' });
    await held.outcome;
    upstream.answer({ content: [] });
    const server = finished().find((s) => s.kind === SpanKind.SERVER);
    expect(server?.events.map((e) => [e.name, e.attributes?.['switchboard.approval.id']])).toEqual([
      ['switchboard.approval.requested', held.id],
      ['switchboard.approval.decided', held.id],
    ]);
    expect(server?.events[1]?.attributes).toMatchObject({
      'switchboard.approval.approved': false,
      'switchboard.approval.why': 'rejected',
    });
  });

  it('keeps at most maxOpen spans open, ending the oldest as abandoned', () => {
    const { send, finished, spans } = setup({ maxOpen: 2 });
    send({ id: 1, method: 'tools/call', params: { name: 'a' } });
    send({ id: 2, method: 'tools/call', params: { name: 'b' } });
    expect(spans.openSpans).toBe(2);
    expect(finished().map((s) => [s.name, s.attributes['error.type']])).toEqual([
      ['tools/call a', 'abandoned'],
      ['tools/call a', 'abandoned'],
    ]);
  });
});
