/**
 * The MCP bridge on a real router: a participant's call goes through routing and interceptors as
 * an MCP client's would (its own session, principal and request scope), its answer comes back with
 * the participant's id and the router's trace id, and a server's request to it is refused at once.
 * The upstream is an in-memory MCP server implementing the transport port.
 */
import { describe, expect, it } from 'vitest';
import { currentRequestScope } from '../audit/request-scope.js';
import type { InboundMeta, UpstreamTransport } from '../core/ports.js';
import { type CallInfo, Router } from '../core/router.js';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage, JsonRpcNotification, JsonRpcResponse } from '../protocol/jsonrpc/types.js';
import { McpBridge } from './mcp-bridge.js';

/** An MCP server in memory: `echo` answers at once; `ask` first asks its client for sampling. */
class MemoryServer implements UpstreamTransport {
  readonly received: JsonRpcMessage[] = [];
  onmessage?: (text: string, meta: InboundMeta) => void;
  async start(): Promise<void> {}
  async close(): Promise<void> {}

  send(_json: string, message: JsonRpcMessage): undefined {
    this.received.push(message);
    if (!('method' in message) || !('id' in message)) return;
    const params = (message.params ?? {}) as { name?: string; arguments?: { message?: string } };
    const reply = (m: unknown, meta: Partial<InboundMeta> = {}) =>
      queueMicrotask(() => this.onmessage?.(JSON.stringify(m), { transport: { kind: 'memory' }, ...meta }));
    if (params.name === 'ask') {
      reply(
        { jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: {} },
        { relatedUpstreamId: message.id },
      );
      reply(
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
        { relatedUpstreamId: message.id },
      );
    }
    reply({
      jsonrpc: '2.0',
      id: message.id,
      result: { content: [{ type: 'text', text: params.arguments?.message ?? '' }] },
    });
  }
}

function setup() {
  const metrics = new Metrics();
  const logger = new MemoryLogger();
  const sessions: string[] = [];
  const router = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'L' }),
      notificationLinks: () => ['L'],
      sessionsFor: () => sessions,
      notificationTargets: () => [],
    },
    logger,
    metrics,
  });
  const server = new MemoryServer();
  router.addLink({ id: 'L', name: 'everything', transport: server, transportContext: { kind: 'memory' } });
  const opened: string[] = [];
  const closed: string[] = [];
  const bridge = new McpBridge({
    router,
    hooks: {
      opened: (key) => {
        opened.push(key);
        sessions.push(key);
      },
      closed: (key) => closed.push(key),
    },
    logger,
    metrics,
  });
  const admitted: { scope: ReturnType<typeof currentRequestScope>; call: CallInfo }[] = [];
  router.addInterceptor({
    name: 'probe',
    admit: (call) => {
      admitted.push({ scope: currentRequestScope(), call });
      return { allow: true };
    },
    complete: (call) => {
      if (bridge.owns(call.session.key)) bridge.noteTraceId(call.session.key, call.request.id, call.traceId);
      return undefined;
    },
  });
  return { router, server, bridge, opened, closed, admitted, metrics };
}

function call(bridge: McpBridge, name: string, clientId: string | number = 'c-1') {
  const responses: { response: JsonRpcResponse; traceId: string | undefined }[] = [];
  const notifications: JsonRpcNotification[] = [];
  const key = bridge.call({
    participant: 'alice',
    roles: ['approver'],
    upstream: 'everything',
    method: 'tools/call',
    params: { name, arguments: { message: 'hello' } },
    clientId,
    envelopeId: 'ENV-1',
    onResponse: (response, traceId) => responses.push({ response, traceId }),
    onNotification: (n) => notifications.push(n),
  });
  return { key, responses, notifications };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('McpBridge', () => {
  it('runs the call as the participant, in its request scope, and answers with its id and the trace id', async () => {
    const { bridge, admitted, opened, router } = setup();
    const { key, responses } = call(bridge, 'echo', 'c-1');
    await settle();
    expect(opened).toEqual([key]);
    expect(router.session(key)).toMatchObject({
      principal: 'alice',
      roles: ['approver'],
      transport: 'websocket',
    });
    expect(admitted[0]!.scope).toEqual({ requestId: 'ENV-1', clientId: 'alice' });
    expect(responses).toEqual([
      {
        response: { jsonrpc: '2.0', id: 'c-1', result: { content: [{ type: 'text', text: 'hello' }] } },
        traceId: admitted[0]!.call.traceId,
      },
    ]);
  });

  it('counts a method a participant invented as other: a participant cannot grow the counters', async () => {
    const { bridge, metrics } = setup();
    for (let i = 0; i < 50; i++)
      bridge.call({
        participant: 'alice',
        roles: [],
        upstream: 'everything',
        method: `x/invented-${i}`,
        clientId: i,
        envelopeId: `ENV-${i}`,
        onResponse: () => undefined,
        onNotification: () => undefined,
      });
    call(bridge, 'echo');
    await settle();
    expect(metrics.get('space_mcp_requests_total', { method: 'other' })).toBe(50);
    expect(metrics.get('space_mcp_requests_total', { method: 'tools/call' })).toBe(1);
    expect(metrics.snapshot().filter((s) => s.labels.method?.startsWith('x/'))).toEqual([]);
  });

  it('uses one session per participant and upstream', async () => {
    const { bridge, opened } = setup();
    const a = call(bridge, 'echo');
    const b = call(bridge, 'echo', 7);
    await settle();
    expect(a.key).toBe(b.key);
    expect(opened).toHaveLength(1);
    expect(b.responses[0]!.response.id).toBe(7);
  });

  it("refuses a server's request to the participant at once and passes the call's notifications on", async () => {
    const { bridge, server } = setup();
    const { responses, notifications } = call(bridge, 'ask');
    await settle();
    const refusal = server.received.find((m) => !('method' in m) && m.id !== undefined && 'error' in m);
    expect(refusal).toMatchObject({ error: { code: -32601 } });
    expect(notifications.map((n) => n.method)).toEqual(['notifications/message']);
    expect(responses).toHaveLength(1);
  });

  it("ends a participant's sessions when it leaves, once their calls are answered", async () => {
    const { bridge, closed, router } = setup();
    const { key, responses } = call(bridge, 'echo');
    bridge.release('alice');
    expect(closed).toEqual([]);
    await settle();
    expect(responses).toHaveLength(1);
    expect(closed).toEqual([key]);
    expect(router.session(key)).toBeUndefined();
    expect(bridge.owns(key)).toBe(false);
  });
});
