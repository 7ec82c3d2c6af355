/**
 * What the router tells its observers (`observations.ts`): one start and one end per client call,
 * per upstream request (per upstream for a fan-out) and per session, however each ends; an
 * observer that throws never breaks forwarding. Observed at the ports with in-memory fakes.
 */
import { describe, expect, it } from 'vitest';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../protocol/jsonrpc/types.js';
import type {
  CallEnd,
  CallObserver,
  LinkChange,
  ObservedCall,
  ObservedUpstreamRequest,
  UpstreamEnd,
} from './observations.js';
import type { DownstreamPort, UpstreamTransport } from './ports.js';
import { type Resolution, Router } from './router.js';

class Upstream implements UpstreamTransport {
  readonly sent: JsonRpcMessage[] = [];
  onmessage?: UpstreamTransport['onmessage'];
  async start(): Promise<void> {}
  send(_json: string, message: JsonRpcMessage): undefined {
    this.sent.push(message);
    return undefined;
  }
  async close(): Promise<void> {}
  answer(result: unknown): void {
    const request = this.sent.filter((m): m is JsonRpcRequest => 'method' in m && 'id' in m).at(-1)!;
    this.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: request.id, result }), {
      transport: { kind: 'memory' },
    });
  }
  fail(code: number): void {
    const request = this.sent.filter((m): m is JsonRpcRequest => 'method' in m && 'id' in m).at(-1)!;
    this.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: request.id, error: { code, message: 'no' } }), {
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

type Event =
  | { kind: 'callStarted'; call: ObservedCall }
  | { kind: 'callEnded'; call: ObservedCall; end: CallEnd }
  | { kind: 'upstreamStarted'; request: ObservedUpstreamRequest }
  | { kind: 'upstreamEnded'; request: ObservedUpstreamRequest; end: UpstreamEnd }
  | { kind: 'sessionOpened'; key: string }
  | { kind: 'sessionClosed'; key: string; version: string; duration: number | undefined }
  | { kind: 'linkChanged'; upstream: string; change: LinkChange };

function recorder(): CallObserver & { events: Event[] } {
  const events: Event[] = [];
  return {
    name: 'recorder',
    events,
    callStarted: (call) => events.push({ kind: 'callStarted', call }),
    callEnded: (call, end) => events.push({ kind: 'callEnded', call, end }),
    upstreamStarted: (request) => events.push({ kind: 'upstreamStarted', request }),
    upstreamEnded: (request, end) => events.push({ kind: 'upstreamEnded', request, end }),
    sessionOpened: (s) => events.push({ kind: 'sessionOpened', key: s.key }),
    sessionClosed: (s, end) =>
      events.push({
        kind: 'sessionClosed',
        key: s.key,
        version: end.protocolVersion,
        duration: end.durationMs,
      }),
    linkChanged: (link, change) => events.push({ kind: 'linkChanged', upstream: link.upstream, change }),
  };
}

function setup(resolve: (request: JsonRpcRequest) => Resolution, observers: CallObserver[] = []) {
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const router = new Router({
    resolver: {
      resolve: (_s, r) => resolve(r),
      notificationLinks: () => ['a'],
      sessionsFor: () => ['S'],
      notificationTargets: () => ['S'],
    },
    logger,
    metrics,
    observers,
  });
  const a = new Upstream();
  const b = new Upstream();
  router.addLink({ id: 'a', name: 'alpha', transport: a, transportContext: { kind: 'memory' } });
  router.addLink({ id: 'b', name: 'beta', transport: b, transportContext: { kind: 'memory' } });
  const port = new Port();
  router.openSession({ key: 'S', port, transport: 'http', transportContext: { kind: 'memory' } });
  const call = (id: number, method: string, params?: Record<string, unknown>) =>
    router.handleClientMessage(
      'S',
      { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) },
      { kind: 'memory' },
    );
  return { router, a, b, port, call, logger, metrics };
}

const toA = (): Resolution => ({ kind: 'forward', link: 'a' });

describe('Router observations', () => {
  it('a forwarded call: started, one upstream request, ended with its outcome, upstream and duration', () => {
    const rec = recorder();
    const { a, call } = setup(toA, [rec]);
    call(1, 'tools/call', { name: 'echo' });
    a.answer({ content: [] });
    call(2, 'tools/call', { name: 'echo' });
    a.answer({ content: [], isError: true });
    call(3, 'tools/call', { name: 'echo' });
    a.fail(-32602);
    const kinds = rec.events.map((e) => e.kind);
    expect(kinds.filter((k) => k !== 'linkChanged')).toEqual([
      'sessionOpened',
      ...Array(3).fill(['callStarted', 'upstreamStarted', 'upstreamEnded', 'callEnded']).flat(),
    ]);
    const ends = rec.events.filter((e): e is Extract<Event, { kind: 'callEnded' }> => e.kind === 'callEnded');
    expect(ends.map((e) => [e.end.outcome, e.end.errorCode, e.end.upstream])).toEqual([
      ['ok', undefined, 'alpha'],
      ['tool_error', undefined, 'alpha'],
      ['error', -32602, 'alpha'],
    ]);
    expect(ends[0]!.call.request.params).toEqual({ name: 'echo' });
    expect(ends[0]!.call.session.transport).toBe('http');
    expect(ends[0]!.end.durationMs).toBeGreaterThanOrEqual(0);
    const ups = rec.events.filter(
      (e): e is Extract<Event, { kind: 'upstreamEnded' }> => e.kind === 'upstreamEnded',
    );
    expect(ups.map((e) => [e.request.upstream, e.request.method, e.end.outcome])).toEqual([
      ['alpha', 'tools/call', 'ok'],
      ['alpha', 'tools/call', 'tool_error'],
      ['alpha', 'tools/call', 'error'],
    ]);
    // The upstream request knows the client call it serves.
    expect(ups[0]!.request.call).toBe(ends[0]!.call);
  });

  it('a refusal by an interceptor ends the call as refused, with nothing sent upstream', () => {
    const rec = recorder();
    const { router, a, call } = setup(toA, [rec]);
    router.addInterceptor({
      name: 'policy',
      admit: () => ({ allow: false, error: gatewayError(SbErrorCode.PolicyDenied, 'denied') }),
    });
    call(1, 'tools/call', { name: 'rm' });
    expect(a.sent).toEqual([]);
    const end = rec.events.find((e) => e.kind === 'callEnded') as Extract<Event, { kind: 'callEnded' }>;
    expect(end.end.outcome).toBe('refused');
    expect(typeof end.end.errorCode).toBe('number');
    expect(rec.events.some((e) => e.kind === 'upstreamStarted')).toBe(false);
  });

  it('a cancelled call ends once as cancelled, and its upstream request too; a late answer adds nothing', () => {
    const rec = recorder();
    const { router, a, call } = setup(toA, [rec]);
    call(1, 'tools/call', { name: 'slow' });
    router.handleClientMessage(
      'S',
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { kind: 'memory' },
    );
    const request = a.sent.find((m) => 'method' in m && m.method === 'tools/call') as JsonRpcRequest;
    a.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: {} }), {
      transport: { kind: 'memory' },
    });
    const ends = rec.events.filter((e) => e.kind === 'callEnded' || e.kind === 'upstreamEnded');
    expect(ends.map((e) => [e.kind, (e as { end: CallEnd }).end.outcome]).sort()).toEqual([
      ['callEnded', 'cancelled'],
      ['upstreamEnded', 'cancelled'],
    ]);
  });

  it('an upstream that closes ends its request and the call with an error', () => {
    const rec = recorder();
    const { router, call } = setup(toA, [rec]);
    call(1, 'tools/call', { name: 'x' });
    router.linkClosed('a', { reason: 'crashed' });
    const outcomes = rec.events
      .filter((e) => e.kind === 'callEnded' || e.kind === 'upstreamEnded')
      .map((e) => [e.kind, (e as { end: CallEnd }).end.outcome]);
    expect(outcomes).toEqual([
      ['upstreamEnded', 'error'],
      ['callEnded', 'error'],
    ]);
  });

  it('a local answer with a fan-out: one upstream request per upstream, each tied to the client call', async () => {
    const rec = recorder();
    const { router, a, b, port, call } = setup(
      () => ({
        kind: 'local',
        handle: async (local) => {
          const [x, y] = await Promise.all([
            local.requestUpstream('a', 'tools/list'),
            local.requestUpstream('b', 'tools/list'),
          ]);
          return { result: { tools: [x.response, y.response] } };
        },
      }),
      [rec],
    );
    call(1, 'tools/list');
    a.answer({ tools: [] });
    b.answer({ tools: [] });
    await new Promise((r) => setImmediate(r));
    expect(port.messages).toHaveLength(1);
    const started = rec.events.filter(
      (e): e is Extract<Event, { kind: 'upstreamStarted' }> => e.kind === 'upstreamStarted',
    );
    expect(started.map((e) => e.request.upstream)).toEqual(['alpha', 'beta']);
    const callEnd = rec.events.find((e) => e.kind === 'callEnded') as Extract<Event, { kind: 'callEnded' }>;
    for (const s of started) expect(s.request.call).toBe(callEnd.call);
    expect(callEnd.end.outcome).toBe('ok');
    expect(callEnd.end.upstream).toBeUndefined();
    router.close();
  });

  it('a session: opened, closed with the version it ended with and how long it lasted; its calls end as cancelled', () => {
    const rec = recorder();
    const { router, call } = setup(toA, [rec]);
    router.setSessionProtocol('S', '2025-06-18');
    call(1, 'tools/call', { name: 'x' });
    router.closeSession('S', 'gone');
    const closed = rec.events.find((e) => e.kind === 'sessionClosed') as Extract<
      Event,
      { kind: 'sessionClosed' }
    >;
    expect(closed.version).toBe('2025-06-18');
    expect(closed.duration).toBeGreaterThanOrEqual(0);
    const ends = rec.events.filter((e) => e.kind === 'callEnded' || e.kind === 'upstreamEnded');
    expect(ends.map((e) => (e as { end: CallEnd }).end.outcome)).toEqual(['cancelled', 'cancelled']);
  });

  it('an observer that throws is counted and logged once; forwarding and the other observers go on', () => {
    const rec = recorder();
    const broken: CallObserver = {
      name: 'broken',
      callStarted: () => {
        throw new Error('boom');
      },
      callEnded: () => {
        throw new Error('boom');
      },
    };
    const { a, port, call, metrics, logger } = setup(toA, [broken, rec]);
    call(1, 'tools/call', { name: 'x' });
    a.answer({});
    expect(port.messages).toHaveLength(1);
    expect(rec.events.filter((e) => e.kind === 'callEnded')).toHaveLength(1);
    expect(metrics.get('observer_errors_total', { observer: 'broken' })).toBe(2);
    expect(logger.entries.filter((e) => e.message.includes('an observer failed'))).toHaveLength(1);
  });

  it('without observers nothing is observed; one added later hears calls from then on', () => {
    const { router, a, call } = setup(toA);
    expect(router.observations.active).toBe(false);
    call(1, 'tools/call', { name: 'x' });
    const rec = recorder();
    router.observations.add(rec);
    a.answer({});
    expect(rec.events).toEqual([]);
    call(2, 'tools/call', { name: 'x' });
    a.answer({});
    expect(rec.events.map((e) => e.kind)).toEqual([
      'callStarted',
      'upstreamStarted',
      'upstreamEnded',
      'callEnded',
    ]);
  });

  it('links: attached, ready, restarting (saying how long it was ready), ready again, down', () => {
    const rec = recorder();
    const { router } = setup(toA, [rec]);
    router.linkClosed('a', { reason: 'exited' }, { restarting: true });
    router.addLink({
      id: 'a',
      name: 'alpha',
      transport: new Upstream(),
      transportContext: { kind: 'memory' },
      state: 'starting',
    });
    router.setLinkReady('a');
    router.setLinkReady('a');
    router.linkClosed('a', { reason: 'gave up' });
    const alpha = rec.events.filter(
      (e): e is Extract<Event, { kind: 'linkChanged' }> => e.kind === 'linkChanged' && e.upstream === 'alpha',
    );
    expect(alpha.map((e) => [e.change.phase, e.change.reason, typeof e.change.readyMs])).toEqual([
      ['ready', undefined, 'undefined'],
      ['restarting', 'exited', 'number'],
      ['starting', undefined, 'undefined'],
      ['ready', undefined, 'undefined'],
      ['down', 'gave up', 'number'],
    ]);
  });

  it('an observer of links alone hears every link change and leaves the per-request path off', () => {
    const changes: string[] = [];
    const links: CallObserver = {
      name: 'links-only',
      linkChanged: (link, change) => changes.push(`${link.upstream}:${change.phase}`),
    };
    const { router, a, call, port } = setup(toA, [links]);
    expect(router.observations.active).toBe(false);
    expect(router.observations.watchesLinks).toBe(true);
    call(1, 'tools/call', { name: 'x' });
    a.answer({});
    expect(port.messages).toHaveLength(1);
    router.linkClosed('a', { reason: 'exited' }, { restarting: true });
    expect(changes).toEqual(['alpha:ready', 'beta:ready', 'alpha:restarting']);
    // An observer of traffic turns the per-request path on; removing it turns it off again.
    const rec = recorder();
    router.observations.add(rec);
    expect(router.observations.active).toBe(true);
    router.observations.remove(rec);
    expect(router.observations.active).toBe(false);
    expect(router.observations.watchesLinks).toBe(true);
    router.observations.remove(links);
    expect(router.observations.watchesLinks).toBe(false);
  });
});
