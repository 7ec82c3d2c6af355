/**
 * The router while the gateway shuts down (issue 18, item 8): `beginDrain` refuses new requests
 * and lets everything in flight go on; `whenNoCallsInFlight` says when the last answer went out;
 * `endCallsInFlight` answers what is left with an error under each request's own id and cancels it
 * upstream. A property test drives random traffic and checks that every request gets exactly one
 * answer and that the in-flight count always matches a model.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage, JsonRpcRequest, RequestId } from '../protocol/jsonrpc/types.js';
import type { Delivery, DownstreamPort, InboundMeta, UpstreamTransport } from './ports.js';
import { type Admission, type CallInterceptor, type RequestResolver, Router } from './router.js';

class Upstream implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  readonly received: JsonRpcMessage[] = [];
  async start(): Promise<void> {}
  send(_json: string, message: JsonRpcMessage): undefined {
    this.received.push(message);
  }
  async close(): Promise<void> {}
  inject(message: unknown): void {
    this.onmessage?.(JSON.stringify(message), { transport: { kind: 'memory' } });
  }
  requests(): JsonRpcRequest[] {
    return this.received.filter((m): m is JsonRpcRequest => 'method' in m && 'id' in m);
  }
  cancellations(): unknown[] {
    return this.received
      .filter((m) => 'method' in m && m.method === 'notifications/cancelled')
      .map((m) => (m as { params?: { requestId?: unknown } }).params?.requestId);
  }
}

class Client implements DownstreamPort {
  readonly received: { message: JsonRpcMessage; delivery: Delivery }[] = [];
  send(_json: string, message: JsonRpcMessage, delivery: Delivery): void {
    this.received.push({ message, delivery });
  }
  answersTo(id: RequestId): Record<string, unknown>[] {
    return this.received
      .map((r) => r.message)
      .filter((m) => !('method' in m) && m.id === id) as unknown as Record<string, unknown>[];
  }
}

const routers: Router[] = [];
afterEach(() => {
  for (const router of routers.splice(0)) router.close();
});

function setup(interceptors: readonly CallInterceptor[] = []) {
  const resolver: RequestResolver = {
    resolve: () => ({ kind: 'forward', link: 'L' }),
    notificationLinks: () => ['L'],
    sessionsFor: () => ['A'],
    notificationTargets: () => ['A'],
  };
  const metrics = new Metrics();
  const router = new Router({ resolver, logger: new MemoryLogger(), metrics, interceptors });
  routers.push(router);
  const upstream = new Upstream();
  router.addLink({ id: 'L', name: 'srv', transport: upstream, transportContext: { kind: 'memory' } });
  const client = new Client();
  router.openSession({ key: 'A', port: client, transport: 'memory', transportContext: { kind: 'memory' } });
  const send = (message: JsonRpcMessage) => router.handleClientMessage('A', message, { kind: 'memory' });
  const call = (id: RequestId, method = 'tools/call') => send({ jsonrpc: '2.0', id, method });
  /** Answers the upstream request that carries the client's request `n`-th (0-based). */
  const answer = (n: number, result: unknown = { ok: true }) =>
    upstream.inject({ jsonrpc: '2.0', id: upstream.requests()[n]!.id, result });
  return { router, metrics, upstream, client, send, call, answer };
}

const SHUTDOWN = gatewayError('SB_SHUTTING_DOWN', 'the gateway shut down before this request finished');

describe('Router drain', () => {
  it('refuses new requests with SB_SHUTTING_DOWN under their own id, and lets calls in flight finish', async () => {
    const h = setup();
    h.call(1);
    expect(h.router.callsInFlight).toBe(1);
    h.router.beginDrain();
    expect(h.router.draining).toBe(true);
    h.call('two');
    expect(h.client.answersTo('two')).toEqual([
      {
        jsonrpc: '2.0',
        id: 'two',
        error: {
          code: -32010,
          message: 'the gateway is shutting down and takes no new requests; send it again once it is back',
          data: { code: 'SB_SHUTTING_DOWN' },
        },
      },
    ]);
    expect(h.upstream.requests()).toHaveLength(1);
    expect(h.metrics.get('drain_refused_total')).toBe(1);
    const idle = h.router.whenNoCallsInFlight();
    h.answer(0, { content: [] });
    await idle;
    expect(h.client.answersTo(1)).toEqual([{ jsonrpc: '2.0', id: 1, result: { content: [] } }]);
    expect(h.router.callsInFlight).toBe(0);
  });

  it("lets a client's answer to a server request through while draining", () => {
    const h = setup();
    h.call(1);
    h.router.beginDrain();
    // The upstream asks the client something on behalf of call 1; the client answers.
    h.upstream.inject({ jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: {} });
    const asked = h.client.received.find((r) => 'method' in r.message && 'id' in r.message)!.message;
    h.send({ jsonrpc: '2.0', id: (asked as JsonRpcRequest).id, result: { role: 'assistant' } });
    expect(h.upstream.received.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'srv-1',
      result: { role: 'assistant' },
    });
  });

  it('ends what is left with the error, cancels it upstream, and drops the late answer', async () => {
    const h = setup();
    h.call(1);
    h.call(2);
    h.router.beginDrain();
    h.answer(0);
    expect(h.router.callsInFlight).toBe(1);
    expect(h.router.endCallsInFlight(SHUTDOWN, 'the gateway is shutting down')).toBe(1);
    expect(h.client.answersTo(2)).toEqual([{ jsonrpc: '2.0', id: 2, error: SHUTDOWN }]);
    expect(h.upstream.cancellations()).toEqual([h.upstream.requests()[1]!.id]);
    expect(h.router.callsInFlight).toBe(0);
    await h.router.whenNoCallsInFlight();
    h.answer(1, { late: true });
    expect(h.client.answersTo(2)).toHaveLength(1);
  });

  it('ends a call held by an interceptor, and the interceptor sees the error (the ledger records it)', async () => {
    const completed: unknown[] = [];
    const holding: CallInterceptor = {
      name: 'approvals',
      admit: () => new Promise<Admission>(() => {}),
      complete: (_call, response) => {
        completed.push(response);
        return undefined;
      },
    };
    const h = setup([holding]);
    h.call(7);
    h.router.beginDrain();
    expect(h.router.endCallsInFlight(SHUTDOWN, 'shutting down')).toBe(1);
    expect(h.client.answersTo(7)).toEqual([{ jsonrpc: '2.0', id: 7, error: SHUTDOWN }]);
    expect(completed).toEqual([{ jsonrpc: '2.0', id: 7, error: SHUTDOWN }]);
    expect(h.upstream.requests()).toEqual([]);
  });

  it('counts a call until its held answer is out (an audit record being made durable)', async () => {
    let release: () => void = () => {};
    const durable: CallInterceptor = {
      name: 'ledger',
      complete: () =>
        new Promise<undefined>((resolve) => {
          release = () => resolve(undefined);
        }),
    };
    const h = setup([durable]);
    h.call(1);
    h.answer(0);
    expect(h.client.answersTo(1)).toEqual([]);
    expect(h.router.callsInFlight).toBe(1);
    // Nothing left to end: the answer is on its way.
    expect(h.router.endCallsInFlight(SHUTDOWN, 'x')).toBe(0);
    let idle = false;
    void h.router.whenNoCallsInFlight().then(() => {
      idle = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    release();
    await vi.waitFor(() => expect(idle).toBe(true));
    expect(h.client.answersTo(1)).toEqual([{ jsonrpc: '2.0', id: 1, result: { ok: true } }]);
  });

  type Op =
    | { t: 'call'; id: number }
    | { t: 'answer'; pick: number }
    | { t: 'cancel'; pick: number }
    | { t: 'drain' }
    | { t: 'end' };

  const ops = fc.array(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ t: fc.constant('call' as const), id: fc.integer({ min: 0, max: 30 }) }),
      },
      { weight: 3, arbitrary: fc.record({ t: fc.constant('answer' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ t: fc.constant('cancel' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.constant({ t: 'drain' as const }) },
      { weight: 1, arbitrary: fc.constant({ t: 'end' as const }) },
    ),
    { maxLength: 60 },
  );

  it('property: each request gets exactly one answer unless its client cancelled it, and the count matches', () => {
    fc.assert(
      fc.property(ops, (script: Op[]) => {
        const h = setup();
        /** Requests in flight in the model: client id -> index of its upstream request. */
        const open = new Map<number, number>();
        /** How many answers each id must have got by the end. */
        const expected = new Map<number, number>();
        const owe = (id: number) => expected.set(id, (expected.get(id) ?? 0) + 1);
        let draining = false;
        for (const op of script) {
          if (op.t === 'call') {
            if (open.has(op.id)) continue; // a duplicate of an id in flight is not a new call
            const index = h.upstream.requests().length;
            h.call(op.id);
            if (draining) owe(op.id);
            else open.set(op.id, index);
          } else if (op.t === 'answer' && open.size > 0) {
            const [id, index] = [...open][op.pick % open.size]!;
            open.delete(id);
            owe(id);
            h.answer(index);
          } else if (op.t === 'cancel' && open.size > 0) {
            const [id] = [...open][op.pick % open.size]!;
            open.delete(id);
            h.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } });
          } else if (op.t === 'drain') {
            draining = true;
            h.router.beginDrain();
          } else if (op.t === 'end') {
            expect(h.router.endCallsInFlight(SHUTDOWN, 'end')).toBe(open.size);
            for (const id of open.keys()) owe(id);
            open.clear();
          }
          expect(h.router.callsInFlight).toBe(open.size);
        }
        const answers = new Map<number, number>();
        for (const { message } of h.client.received) {
          if ('method' in message) continue;
          const id = message.id as number;
          answers.set(id, (answers.get(id) ?? 0) + 1);
        }
        expect(answers).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });
});
