/**
 * Supervision of a real `node -e` child attached to a real router: restarts with backoff, the
 * initialize hook, giving up, and what happens to client traffic meanwhile.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PassthroughResolver } from '../../core/passthrough-resolver.js';
import type { Delivery, UpstreamClose } from '../../core/ports.js';
import { Router } from '../../core/router.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { childEnvironment } from './child-env.js';
import { SupervisedUpstream, type SupervisedUpstreamOptions } from './supervised-upstream.js';

/** Answers every request with its pid; `crash` exits with the given code; exits on stdin EOF. */
const SERVER = `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  if (m.method === 'crash') process.exit(m.params.code);
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { pid: process.pid, method: m.method } }) + '\\n');
});
rl.on('close', () => process.exit(0));
`;

/** Exits with code 1 shortly after starting, every time. */
const FLAKY = 'setTimeout(() => process.exit(1), 30);';

const LINK = 'up';
const SESSION = 'S';

interface Harness {
  readonly supervisor: SupervisedUpstream;
  readonly router: Router;
  readonly metrics: Metrics;
  readonly logger: MemoryLogger;
  readonly delivered: JsonRpcMessage[];
  readonly stops: UpstreamClose[];
  readonly inits: { restart: number; at: number; linkState: string | undefined }[];
  request(id: number, method: string, params?: Record<string, unknown>): void;
}

const supervisors: SupervisedUpstream[] = [];
const routers: Router[] = [];

afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
  for (const r of routers.splice(0)) r.close();
});

function make(
  script: string,
  options: Partial<Pick<SupervisedUpstreamOptions, 'restart' | 'maxRestarts' | 'backoff' | 'initialize'>> & {
    command?: string;
  } = {},
): Harness {
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const router = new Router({ resolver: new PassthroughResolver(LINK, SESSION), logger, metrics });
  routers.push(router);
  const delivered: JsonRpcMessage[] = [];
  router.openSession({
    key: SESSION,
    port: { send: (_json: string, message: JsonRpcMessage, _delivery: Delivery) => delivered.push(message) },
    transport: 'memory',
    transportContext: { kind: 'memory' },
  });
  const stops: UpstreamClose[] = [];
  const inits: Harness['inits'] = [];
  const supervisor = new SupervisedUpstream({
    router,
    link: LINK,
    child: {
      name: 'fixture',
      command: options.command ?? process.execPath,
      args: ['-e', script],
      env: childEnvironment({}),
      maxMessageBytes: 64 * 1024,
      shutdownGraceMs: 500,
    },
    logger,
    metrics,
    restart: options.restart ?? true,
    backoff: options.backoff ?? { initialMs: 40, maxMs: 1000, stableMs: 60_000 },
    ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
    initialize:
      options.initialize ??
      (async (restart) => {
        inits.push({ restart, at: performance.now(), linkState: router.linkState(LINK) });
      }),
    onstop: (close) => stops.push(close),
  });
  supervisors.push(supervisor);
  return {
    supervisor,
    router,
    metrics,
    logger,
    delivered,
    stops,
    inits,
    request: (id, method, params) =>
      router.handleClientMessage(
        SESSION,
        params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
        { kind: 'memory' },
      ),
  };
}

const responseTo = (h: Harness, id: number) =>
  h.delivered.find((m) => 'id' in m && m.id === id && !('method' in m));

describe('SupervisedUpstream', () => {
  it('runs the initialize hook before the link is ready, then lets traffic through', async () => {
    const h = make(SERVER);
    await h.supervisor.start();
    expect(h.inits).toEqual([{ restart: 0, at: expect.any(Number), linkState: 'starting' }]);
    expect(h.router.linkState(LINK)).toBe('ready');
    expect(h.supervisor.pid).toBeGreaterThan(0);
    h.request(1, 'tools/list');
    await vi.waitFor(() => expect(responseTo(h, 1)).toMatchObject({ result: { pid: h.supervisor.pid } }));
  });

  it('restarts a child that exits, with the restart count, and fails what was in flight at once', async () => {
    const h = make(SERVER);
    await h.supervisor.start();
    const firstPid = h.supervisor.pid;
    h.request(1, 'crash', { code: 5 });
    await vi.waitFor(() => expect(responseTo(h, 1)).toBeDefined());
    expect(responseTo(h, 1)).toMatchObject({
      error: { code: -32000, data: { code: 'SB_UPSTREAM_EXITED', exitCode: 5, upstream: 'fixture' } },
    });
    await vi.waitFor(() => expect(h.router.linkState(LINK)).toBe('ready'));
    expect(h.inits.map((i) => [i.restart, i.linkState])).toEqual([
      [0, 'starting'],
      [1, 'starting'],
    ]);
    expect(h.supervisor.restarts).toBe(1);
    expect(h.supervisor.pid).not.toBe(firstPid);
    expect(h.metrics.get('upstream_restarts_total', { upstream: 'fixture' })).toBe(1);
    expect(h.stops).toEqual([]);
    h.request(2, 'tools/list');
    await vi.waitFor(() => expect(responseTo(h, 2)).toMatchObject({ result: { pid: h.supervisor.pid } }));
  });

  it('backs off exponentially between restarts and gives up after maxRestarts, calling onstop', async () => {
    const h = make(FLAKY, { maxRestarts: 3, backoff: { initialMs: 60, maxMs: 1000, stableMs: 60_000 } });
    await h.supervisor.start();
    await vi.waitFor(() => expect(h.stops).toHaveLength(1), { timeout: 8000 });
    expect(h.stops[0]).toMatchObject({ code: 1, signal: null });
    expect(h.inits.map((i) => i.restart)).toEqual([0, 1, 2, 3]);
    expect(h.supervisor.restarts).toBe(3);
    expect(h.metrics.get('upstream_exits_total', { upstream: 'fixture' })).toBe(4);
    expect(h.router.linkState(LINK)).toBe('down');
    // Each gap is at least the backoff delay (60, 120, 240 ms) on top of the child's own 30 ms life.
    const gaps = h.inits.slice(1).map((init, i) => init.at - h.inits[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(60);
    expect(gaps[1]).toBeGreaterThanOrEqual(120);
    expect(gaps[2]).toBeGreaterThanOrEqual(240);
    // Nobody restarts it any more.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(h.inits).toHaveLength(4);
    h.request(9, 'tools/list');
    expect(responseTo(h, 9)).toMatchObject({
      error: { code: -32000, data: { code: 'SB_UPSTREAM_UNAVAILABLE' } },
    });
  });

  it('without restart, a child exit stops the upstream at once', async () => {
    const h = make(SERVER, { restart: false });
    await h.supervisor.start();
    h.request(1, 'crash', { code: 3 });
    await vi.waitFor(() => expect(h.stops).toHaveLength(1));
    expect(h.stops[0]).toEqual({ reason: 'exited with code 3', code: 3, signal: null });
    expect(responseTo(h, 1)).toMatchObject({ error: { code: -32000, data: { exitCode: 3 } } });
    expect(h.router.linkState(LINK)).toBe('down');
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(h.inits).toHaveLength(1);
  });

  it('a failing initialize on restart counts as a failed start: the child is shut down and retried', async () => {
    let calls = 0;
    const inits: number[] = [];
    const h = make(SERVER, {
      initialize: async (restart) => {
        calls++;
        inits.push(restart);
        if (restart === 1) throw new Error('re-initialize failed');
      },
    });
    await h.supervisor.start();
    h.request(1, 'crash', { code: 1 });
    await vi.waitFor(() => expect(responseTo(h, 1)).toBeDefined());
    await vi.waitFor(() => expect(inits).toEqual([0, 1, 2]), { timeout: 8000 });
    await vi.waitFor(() => expect(h.router.linkState(LINK)).toBe('ready'));
    expect(calls).toBe(3);
    expect(h.logger.entries.some((e) => e.level === 'error' && /restart failed/.test(e.message))).toBe(true);
    h.request(2, 'ping');
    await vi.waitFor(() => expect(responseTo(h, 2)).toMatchObject({ result: { method: 'ping' } }));
  });

  it('close() stops supervising: the child is shut down, onstop is called, nothing restarts', async () => {
    const h = make(SERVER);
    await h.supervisor.start();
    await h.supervisor.close();
    await vi.waitFor(() => expect(h.stops).toHaveLength(1));
    expect(h.stops[0]).toMatchObject({ code: 0 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(h.inits).toHaveLength(1);
    expect(h.router.linkState(LINK)).toBe('down');
  });

  it('start() rejects when the first child cannot be spawned, and does not restart', async () => {
    const h = make(SERVER, { command: '/nonexistent/switchboard-no-such-server' });
    await expect(h.supervisor.start()).rejects.toMatchObject({ code: 'SB_UPSTREAM_SPAWN' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(h.inits).toEqual([]);
    expect(h.supervisor.restarts).toBe(0);
  });

  it('a request sent during the restart backoff is delivered to the new child', async () => {
    const h = make(SERVER, { backoff: { initialMs: 300, maxMs: 1000, stableMs: 60_000 } });
    await h.supervisor.start();
    h.request(1, 'crash', { code: 1 });
    await vi.waitFor(() => expect(responseTo(h, 1)).toBeDefined());
    expect(h.router.linkState(LINK)).toBe('starting');
    h.request(2, 'tools/list');
    await vi.waitFor(() => expect(h.router.linkState(LINK)).toBe('ready'));
    await vi.waitFor(() => expect(responseTo(h, 2)).toMatchObject({ result: { method: 'tools/list' } }), {
      timeout: 2000,
    });
  });
});
