/**
 * A `sharing: pooled` upstream under a real router and the real `ServeResolver`, with real
 * supervised `node -e` children: each session's calls go to the child it holds, a request a child
 * sends reaches the session holding it even while both sessions have calls in flight, a held
 * child's log message reaches its holder only, a call that finds every child held waits (or gets
 * -32007), and a child that crashes fails only the calls on it, restarts once (the supervisor's
 * backoff), and serves again, with no route spinning.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Delivery } from '../../core/ports.js';
import { Router } from '../../core/router.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { PoolLeaseInterceptor } from './pool-lease-interceptor.js';
import { ServeResolver } from './serve-resolver.js';
import { nodeUpstreamConfig, supervisedNodeChild } from './test-support/node-upstream.js';
import { UpstreamManager } from './upstream-manager.js';

/**
 * `slow` answers after 600 ms with the child's pid; `ask` first asks its client (a server request,
 * as sampling is) and answers with what the client said; `log` sends a log message (no request
 * named: stdio cannot) and then answers; `crash` exits; anything else is answered at once with the
 * pid.
 */
const SERVER = `
const rl = require('node:readline').createInterface({ input: process.stdin });
const asked = new Map();
const answer = (id, result) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === undefined && asked.has(m.id)) {
    answer(asked.get(m.id), { pid: process.pid, client: m.result });
    asked.delete(m.id);
    return;
  }
  if (m.id === undefined || m.method === undefined) return;
  if (m.method === 'crash') process.exit(3);
  if (m.method === 'log') {
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'from ' + process.pid } }) + '\\n');
    return void setTimeout(() => answer(m.id, { pid: process.pid }), 50);
  }
  if (m.method === 'slow') return void setTimeout(() => answer(m.id, { pid: process.pid }), 600);
  if (m.method === 'ask') {
    asked.set('q' + m.id, m.id);
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: 'q' + m.id, method: 'sampling/createMessage', params: {} }) + '\\n');
    return;
  }
  answer(m.id, { pid: process.pid });
});
rl.on('close', () => process.exit(0));
`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

type Answer = { id: number; result?: { pid: number; client?: { by: string } }; error?: { code: number } };

function make(bounds: { max?: number; queueTimeoutMs?: number } = {}) {
  const config = nodeUpstreamConfig(SERVER, {
    sharing: 'pooled',
    pool: {
      max: bounds.max ?? 2,
      idleTimeoutMs: 60_000,
      queueTimeoutMs: bounds.queueTimeoutMs ?? 5_000,
      maxQueued: 10,
    },
  });
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  let resolver: ServeResolver | undefined;
  // The real serve routing, created once the manager exists (as `ServeGateway` wires it).
  const router = new Router({
    resolver: {
      resolve: (s, r) => resolver!.resolve(s, r),
      notificationLinks: (s, n) => resolver!.notificationLinks(s, n),
      sessionsFor: (l) => resolver!.sessionsFor(l),
      notificationTargets: (l, n) => resolver!.notificationTargets(l, n),
    },
    logger,
    metrics,
  });
  const got = new Map<string, JsonRpcMessage[]>();
  for (const key of ['S1', 'S2']) {
    got.set(key, []);
    router.openSession({
      key,
      port: {
        send: (_json: string, message: JsonRpcMessage, _d: Delivery) => {
          got.get(key)!.push(message);
          // Answer a server request as this session's client, naming itself.
          if ('method' in message && 'id' in message)
            router.handleClientMessage(
              key,
              { jsonrpc: '2.0', id: message.id, result: { by: key } },
              { kind: 'memory' },
            );
        },
      },
      transport: 'memory',
      transportContext: { kind: 'memory' },
    });
  }
  const manager = new UpstreamManager({
    upstreams: [config],
    router,
    logger,
    metrics,
    gatewayVersion: '0.0.0-test',
    makeLink: (params) => supervisedNodeChild(config, params, router, logger, metrics),
  });
  resolver = new ServeResolver({
    manager,
    router,
    logger,
    metrics,
    gatewayVersion: '0.0.0-test',
    revisions: ['2025-11-25'],
  });
  for (const key of ['S1', 'S2']) resolver.openSession(key, { kind: 'single', upstream: 'up' });
  router.addInterceptor(new PoolLeaseInterceptor(manager));
  const m = manager;
  cleanups.push(async () => {
    await m.close();
    router.close();
  });
  const call = (session: string, id: number, method: string) =>
    router.handleClientMessage(session, { jsonrpc: '2.0', id, method }, { kind: 'memory' });
  const answer = (session: string, id: number) =>
    got.get(session)!.find((msg) => 'id' in msg && msg.id === id && !('method' in msg)) as Answer | undefined;
  const answered = async (session: string, id: number, timeout = 8_000) => {
    await vi.waitFor(() => expect(answer(session, id)).toBeDefined(), { timeout });
    return answer(session, id)!;
  };
  return { manager, router, metrics, got, call, answered };
}

describe('UpstreamManager, sharing: pooled', () => {
  it('gives each session its own child while its calls are in flight, and each child asks its own session', async () => {
    const h = make();
    await h.manager.start();
    h.call('S1', 1, 'slow');
    h.call('S2', 1, 'slow');
    h.call('S1', 2, 'ask');
    h.call('S2', 2, 'ask');
    const [a1, b1, a2, b2] = await Promise.all([
      h.answered('S1', 1),
      h.answered('S2', 1),
      h.answered('S1', 2),
      h.answered('S2', 2),
    ]);
    expect(a1.result!.pid).not.toBe(b1.result!.pid);
    expect(a2.result).toEqual({ pid: a1.result!.pid, client: { by: 'S1' } });
    expect(b2.result).toEqual({ pid: b1.result!.pid, client: { by: 'S2' } });
    expect(h.metrics.get('server_requests_unattributed_total')).toBe(0);
    expect(h.metrics.get('pool_children_started_total', { upstream: 'up' })).toBe(2);
  });

  it('reuses a free child instead of starting another', async () => {
    const h = make();
    await h.manager.start();
    h.call('S1', 1, 'whoami');
    const first = await h.answered('S1', 1);
    h.call('S2', 1, 'whoami');
    const second = await h.answered('S2', 1);
    expect(second.result!.pid).toBe(first.result!.pid);
    expect(h.metrics.get('pool_children_started_total', { upstream: 'up' })).toBe(1);
  });

  it('a crashed child fails only its own calls, restarts once, and serves again', async () => {
    const h = make();
    await h.manager.start();
    h.call('S1', 1, 'slow');
    h.call('S2', 1, 'slow');
    // S1's child exits while S1's slow call is on it; S2's child is not touched.
    h.call('S1', 2, 'crash');
    const [crashed, other] = await Promise.all([h.answered('S1', 1), h.answered('S2', 1)]);
    expect(crashed.error).toMatchObject({ code: -32000 });
    expect(other.result?.pid).toEqual(expect.any(Number));
    h.call('S1', 3, 'whoami');
    const after = await h.answered('S1', 3);
    expect(after.result?.pid).toEqual(expect.any(Number));
    expect(h.metrics.get('route_unresolved_total')).toBe(0);
    // Two children were ever started: the crashed one was restarted by its supervisor, not replaced
    // in a loop.
    expect(h.metrics.get('pool_children_started_total', { upstream: 'up' })).toBe(2);
  });

  it('with every child held, a call waits for the first one freed and then runs on it', async () => {
    const h = make({ max: 1 });
    await h.manager.start();
    h.call('S1', 1, 'slow');
    h.call('S2', 1, 'ask');
    const [slow, asked] = await Promise.all([h.answered('S1', 1), h.answered('S2', 1)]);
    expect(asked.result).toEqual({ pid: slow.result!.pid, client: { by: 'S2' } });
    expect(h.metrics.get('route_unresolved_total')).toBe(0);
    expect(h.metrics.get('pool_children_started_total', { upstream: 'up' })).toBe(1);
  });

  it('answers -32007 to a call that waited pool.queueTimeout for a child', async () => {
    const h = make({ max: 1, queueTimeoutMs: 100 });
    await h.manager.start();
    h.call('S1', 1, 'slow');
    h.call('S2', 1, 'whoami');
    const refused = await h.answered('S2', 1);
    expect(refused.error).toMatchObject({
      code: -32007,
      data: { code: 'SB_LIMIT_EXCEEDED', upstream: 'up', max: 1 },
    });
    expect((await h.answered('S1', 1)).result?.pid).toEqual(expect.any(Number));
  });

  it("a held child's log message reaches its holder only", async () => {
    const h = make();
    await h.manager.start();
    h.call('S2', 1, 'slow');
    h.call('S1', 1, 'log');
    await h.answered('S1', 1);
    await h.answered('S2', 1);
    const logs = (key: string) =>
      h.got.get(key)!.filter((m) => 'method' in m && m.method === 'notifications/message');
    expect(logs('S1')).toHaveLength(1);
    expect(logs('S2')).toEqual([]);
  });
});
