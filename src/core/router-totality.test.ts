/**
 * Issue 18, item 1: every path that handles a request is total. A fault is injected at each point
 * where the router hands work to something else (a transport that throws, a message that cannot
 * be serialised, an interceptor or local handler whose continuation fails, a deep upstream
 * answer), and each time: the call is answered under its own id, released (nothing in flight, the
 * id usable again at once), counted, and nothing escapes to the caller or as an unhandled
 * rejection.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type {
  JsonRpcErrorObject,
  JsonRpcMessage,
  JsonRpcRequest,
  JsonRpcResponse,
  RequestId,
} from '../protocol/jsonrpc/types.js';
import type { Wire } from '../protocol/mcp/reserved-meta.js';
import type { Delivery, DownstreamPort, InboundMeta, UpstreamTransport } from './ports.js';
import { type CallInterceptor, type LocalAnswer, type Resolution, Router } from './router.js';

class FaultyUpstream implements UpstreamTransport {
  readonly sent: JsonRpcMessage[] = [];
  onmessage?: (text: string, meta: InboundMeta) => void;
  /** Thrown by `send` while set. */
  sendFault: Error | undefined;
  /** Thrown by `refuse` while set. */
  refuseFault: Error | undefined;

  async start(): Promise<void> {}
  async close(): Promise<void> {}

  refuse(_request: JsonRpcRequest): JsonRpcErrorObject | undefined {
    if (this.refuseFault) throw this.refuseFault;
    return undefined;
  }

  send(_json: string, message: JsonRpcMessage): Wire | undefined {
    if (this.sendFault) throw this.sendFault;
    this.sent.push(message);
    return undefined;
  }

  inject(text: string): void {
    this.onmessage?.(text, { transport: { kind: 'memory' } });
  }

  lastRequest(): JsonRpcRequest {
    const request = this.sent.filter((m): m is JsonRpcRequest => 'method' in m && 'id' in m).at(-1);
    if (!request) throw new Error('nothing was sent upstream');
    return request;
  }
}

class Port implements DownstreamPort {
  readonly responses: JsonRpcResponse[] = [];
  send(_json: string, message: JsonRpcMessage, delivery: Delivery): void {
    if (delivery.kind === 'response') this.responses.push(message as JsonRpcResponse);
  }
  to(id: RequestId): JsonRpcResponse[] {
    return this.responses.filter((r) => r.id === id);
  }
}

/** `depth` nested arrays: JSON.stringify overflows the stack on such a value. */
function nested(depth: number): unknown {
  let value: unknown = [];
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
const routers: Router[] = [];

beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
});

afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  for (const router of routers.splice(0)) router.close();
});

function setup(
  options: {
    resolve?: (request: JsonRpcRequest) => Resolution;
    interceptors?: CallInterceptor[];
    linkState?: 'ready' | 'starting';
    maxJsonDepth?: number;
  } = {},
) {
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const router = new Router({
    resolver: {
      resolve: (_session, request) => options.resolve?.(request) ?? { kind: 'forward', link: 'L' },
      notificationLinks: () => ['L'],
      sessionsFor: () => ['A'],
      notificationTargets: () => ['A'],
    },
    logger,
    metrics,
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    ...(options.maxJsonDepth === undefined ? {} : { maxJsonDepth: options.maxJsonDepth }),
  });
  routers.push(router);
  const upstream = new FaultyUpstream();
  router.addLink({
    id: 'L',
    name: 'srv',
    transport: upstream,
    transportContext: { kind: 'memory' },
    state: options.linkState ?? 'ready',
  });
  const port = new Port();
  router.openSession({ key: 'A', port, transport: 'memory', transportContext: { kind: 'memory' } });
  const call = (id: RequestId, params: Record<string, unknown> = { name: 't', arguments: {} }) =>
    router.handleClientMessage('A', { jsonrpc: '2.0', id, method: 'tools/call', params }, { kind: 'memory' });
  return { router, upstream, port, logger, metrics, call };
}

type Harness = ReturnType<typeof setup>;

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** The call `id` got exactly one answer, an error with `code`, and left nothing behind. */
function expectAnsweredAndReleased(h: Harness, id: RequestId, code = -32603): JsonRpcErrorObject {
  const answers = h.port.to(id);
  expect(answers).toHaveLength(1);
  const answer = answers[0] as { error?: JsonRpcErrorObject };
  expect(answer.error?.code).toBe(code);
  expect(h.router.pendingRequests).toBe(0);
  expect(h.router.hasCall('A', id)).toBe(false);
  expect(unhandled).toEqual([]);
  return answer.error as JsonRpcErrorObject;
}

/** The same id works again at once, end to end. */
function expectIdUsable(h: Harness, id: RequestId): void {
  h.upstream.sendFault = undefined;
  h.upstream.refuseFault = undefined;
  const before = h.port.to(id).length;
  h.call(id, { name: 't', arguments: { ok: true } });
  const sent = h.upstream.lastRequest();
  h.upstream.inject(JSON.stringify({ jsonrpc: '2.0', id: sent.id, result: { content: [] } }));
  expect(h.port.to(id).slice(before)).toEqual([{ jsonrpc: '2.0', id, result: { content: [] } }]);
}

describe('Router: every path that handles a request is total', () => {
  it('a transport whose send throws: the call is answered -32603 under its id and released', () => {
    const h = setup();
    h.upstream.sendFault = new Error('socket exploded');
    expect(() => h.call(1)).not.toThrow();
    const error = expectAnsweredAndReleased(h, 1);
    expect(error.message).toBe('the gateway could not send this request to upstream srv');
    expect(h.metrics.get('upstream_send_errors_total', { upstream: 'srv' })).toBe(1);
    expectIdUsable(h, 1);
  });

  it('a message that cannot be serialised (nested past the stack): answered, released, never sent', () => {
    const h = setup();
    expect(() => h.call('deep', { name: 't', arguments: nested(20_000) as object })).not.toThrow();
    expectAnsweredAndReleased(h, 'deep');
    expect(h.upstream.sent).toEqual([]);
    expect(h.logger.entries.some((e) => e.message.includes('could not be serialised'))).toBe(true);
    expectIdUsable(h, 'deep');
  });

  it('a transport whose refuse throws: caught by the step guard, counted by stage', () => {
    const h = setup();
    h.upstream.refuseFault = new Error('refuse exploded');
    expect(() => h.call(2)).not.toThrow();
    const error = expectAnsweredAndReleased(h, 2);
    expect(error.message).toBe('the gateway failed while handling this request');
    expect(h.metrics.get('request_failures_total', { stage: 'route' })).toBe(1);
    expectIdUsable(h, 2);
  });

  it('after an asynchronous admission: a throwing send ends the call, not the process', async () => {
    const admit: CallInterceptor = { name: 'slow-admit', admit: async () => ({ allow: true }) };
    const h = setup({ interceptors: [admit] });
    h.upstream.refuseFault = new Error('refuse exploded after admission');
    h.call(3);
    await tick();
    const error = expectAnsweredAndReleased(h, 3);
    expect(error.message).toBe('the gateway failed while handling this request');
    expect(h.metrics.get('request_failures_total', { stage: 'admit' })).toBe(1);
    h.upstream.refuseFault = undefined;
    h.call(3, { name: 't', arguments: {} });
    await tick();
    h.upstream.inject(JSON.stringify({ jsonrpc: '2.0', id: h.upstream.lastRequest().id, result: {} }));
    expect(h.port.to(3).at(-1)).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
  });

  it('after a pending route: a deep message is refused once the route is ready, nothing escapes', async () => {
    let ready = false;
    const h = setup({
      resolve: () => (ready ? { kind: 'forward', link: 'L' } : { kind: 'pending', ready: Promise.resolve() }),
    });
    h.call(4, { name: 't', arguments: nested(20_000) as object });
    ready = true;
    // The route is asked again in a later turn of the event loop (never in the same one).
    await vi.waitFor(() => expectAnsweredAndReleased(h, 4));
  });

  it('a local answer that cannot be serialised: the client gets an error in its place, under its id', async () => {
    const h = setup({
      resolve: () => ({
        kind: 'local',
        handle: async (): Promise<LocalAnswer> => ({ result: { big: 10n } }),
      }),
    });
    h.call(5);
    await tick();
    const error = expectAnsweredAndReleased(h, 5);
    expect(error.message).toBe('the gateway could not serialise the response to this request');
    expect(h.metrics.get('request_failures_total', { stage: 'serialise' })).toBe(1);
  });

  it("an interceptor's asynchronous replacement that cannot be serialised: answered with an error", async () => {
    const delivered: (string | undefined)[] = [];
    const replace: CallInterceptor = {
      name: 'replacer',
      complete: async (_call, response) => ({ ...response, result: nested(20_000) }) as JsonRpcResponse,
      delivered: (_call, text) => delivered.push(text),
    };
    const h = setup({ interceptors: [replace] });
    h.call(6);
    h.upstream.inject(JSON.stringify({ jsonrpc: '2.0', id: h.upstream.lastRequest().id, result: {} }));
    await tick();
    expectAnsweredAndReleased(h, 6);
    // The interceptors are told once, that no result went out.
    expect(delivered).toEqual([undefined]);
  });

  it('an upstream answer deeper than the limit fails the call it answers, precisely', () => {
    const h = setup({ maxJsonDepth: 32 });
    h.call(7);
    const id = h.upstream.lastRequest().id;
    const deep = `${'['.repeat(4500)}${']'.repeat(4500)}`;
    expect(() =>
      h.upstream.inject(`{"jsonrpc":"2.0","id":${id},"result":{"content":${deep}}}`),
    ).not.toThrow();
    const error = expectAnsweredAndReleased(h, 7);
    expect(error.message).toBe(
      'upstream srv sent an invalid response: Invalid Request: the message nests 4502 levels of objects and arrays; the gateway accepts at most 32 (maxJsonDepth)',
    );
    expect((error.data as { code?: string }).code).toBe('SB_UPSTREAM_PROTOCOL');
  });

  it('a queued request whose send throws when the link becomes ready: answered and released', () => {
    const h = setup({ linkState: 'starting' });
    h.call(8);
    expect(h.router.pendingRequests).toBe(1);
    h.upstream.sendFault = new Error('socket exploded on flush');
    expect(() => h.router.setLinkReady('L')).not.toThrow();
    expectAnsweredAndReleased(h, 8);
  });

  it("the gateway's own request whose send throws: rejected, released", async () => {
    const h = setup();
    h.upstream.sendFault = new Error('socket exploded');
    await expect(h.router.requestUpstream('L', 'ping', undefined)).rejects.toMatchObject({
      code: -32603,
      message: 'the gateway could not send ping to upstream srv',
    });
    expect(h.router.pendingRequests).toBe(0);
  });

  it('a throwing transport on notifications and responses is logged and counted, never thrown', () => {
    const h = setup();
    h.upstream.sendFault = new Error('socket exploded');
    expect(() =>
      h.router.handleClientMessage('A', { jsonrpc: '2.0', method: 'notifications/x' }, { kind: 'memory' }),
    ).not.toThrow();
    expect(h.metrics.get('upstream_send_errors_total', { upstream: 'srv' })).toBe(1);
    expect(unhandled).toEqual([]);
  });
});
