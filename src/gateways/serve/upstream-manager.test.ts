/**
 * The upstream manager across the life of a real supervised `node -e` child: what `linkFor` answers
 * while the child restarts (issue 18, item 2: it handed back the first start's promise, already
 * settled, and the router spun on it), when the restarts give up, and when a restart takes longer
 * than the ready timeout.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Delivery } from '../../core/ports.js';
import { type RequestResolver, Router } from '../../core/router.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { nodeUpstreamConfig, supervisedNodeChild } from './test-support/node-upstream.js';
import { type LinkLookup, UpstreamManager } from './upstream-manager.js';

/**
 * Answers every request with its pid; `crash` exits. When the file named by argv[1] exists it
 * exits as soon as it starts (a restart that cannot succeed).
 */
const SERVER = `
if (process.argv[1] && require('node:fs').existsSync(process.argv[1])) process.exit(7);
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  if (m.method === 'crash') process.exit(3);
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { pid: process.pid, method: m.method } }) + '\\n');
});
rl.on('close', () => process.exit(0));
`;

const SESSION = 'S';
const managers: UpstreamManager[] = [];
const routers: Router[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(managers.splice(0).map((m) => m.close()));
  for (const r of routers.splice(0)) r.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function make(
  options: {
    maxRestarts?: number;
    initialDelayMs?: number;
    readyTimeoutMs?: number;
    sharing?: 'shared' | 'per-session';
  } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'sb-manager-'));
  dirs.push(dir);
  const doomed = join(dir, 'doomed');
  const config = nodeUpstreamConfig(SERVER, {
    sharing: options.sharing ?? 'shared',
    scriptArgs: [doomed],
    ...(options.initialDelayMs === undefined ? {} : { initialDelayMs: options.initialDelayMs }),
    ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
  });
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  let manager: UpstreamManager | undefined;
  // Routes every call to the shared upstream through the manager, as `ServeResolver` does.
  const resolver: RequestResolver = {
    resolve: (session) => {
      const lookup = manager!.linkFor('up', session.key);
      if (lookup.kind === 'ready') return { kind: 'forward', link: lookup.link };
      if (lookup.kind === 'pending') return { kind: 'pending', ready: lookup.ready };
      return { kind: 'error', error: gatewayError('SB_UPSTREAM_UNAVAILABLE', lookup.reason) };
    },
    notificationLinks: () => [],
    sessionsFor: () => [SESSION],
    notificationTargets: () => [SESSION],
  };
  const router = new Router({ resolver, logger, metrics });
  routers.push(router);
  const delivered: JsonRpcMessage[] = [];
  router.openSession({
    key: SESSION,
    port: { send: (_json: string, message: JsonRpcMessage, _d: Delivery) => delivered.push(message) },
    transport: 'memory',
    transportContext: { kind: 'memory' },
  });
  manager = new UpstreamManager({
    upstreams: [config],
    router,
    logger,
    metrics,
    gatewayVersion: '0.0.0-test',
    ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
    makeLink: (params) => supervisedNodeChild(config, params, params.host, logger, metrics),
  });
  managers.push(manager);
  const call = (id: number, method: string) =>
    router.handleClientMessage(SESSION, { jsonrpc: '2.0', id, method }, { kind: 'memory' });
  const answer = (id: number) => delivered.find((m) => 'id' in m && m.id === id && !('method' in m));
  /** Makes every later start of the child exit at once. */
  const doom = () => writeFileSync(doomed, '');
  return { manager, router, metrics, call, answer, doom };
}

/** Whether a promise has settled, seen after the turns of the event loop that settle it. */
async function settledState(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  promise.then(
    () => {
      state = 'resolved';
    },
    () => {
      state = 'rejected';
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
}

function pendingWait(lookup: LinkLookup): Promise<unknown> {
  if (lookup.kind !== 'pending') throw new Error(`expected a pending lookup, got ${lookup.kind}`);
  return lookup.ready;
}

describe('UpstreamManager across a restart', () => {
  it('answers pending with a wait that settles only once the restarted link is ready', async () => {
    const h = make();
    await h.manager.start();
    expect(h.manager.linkFor('up', SESSION)).toEqual({ kind: 'ready', link: 'up' });
    h.call(1, 'crash');
    await vi.waitFor(() => expect(h.answer(1)).toBeDefined());
    expect(h.router.linkState('up')).toBe('starting');
    const wait = pendingWait(h.manager.linkFor('up', SESSION));
    // The first start's promise settled long ago; the wait for this restart has not.
    expect(await settledState(wait)).toBe('pending');
    await wait;
    expect(h.router.linkState('up')).toBe('ready');
    expect(h.manager.linkFor('up', SESSION)).toEqual({ kind: 'ready', link: 'up' });
  });

  it('a call that arrives during the restart is answered by the new child', async () => {
    const h = make();
    await h.manager.start();
    h.call(1, 'ping');
    await vi.waitFor(() => expect(h.answer(1)).toBeDefined());
    const firstPid = (h.answer(1) as { result: { pid: number } }).result.pid;
    h.call(2, 'crash');
    await vi.waitFor(() => expect(h.answer(2)).toBeDefined());
    h.call(3, 'tools/list');
    await vi.waitFor(() => expect(h.answer(3)).toMatchObject({ result: { method: 'tools/list' } }), {
      timeout: 8_000,
    });
    expect((h.answer(3) as { result: { pid: number } }).result.pid).not.toBe(firstPid);
    expect(h.metrics.get('route_unresolved_total')).toBe(0);
  });

  it('rejects the wait when the restarts give up, and the call gets SB_UPSTREAM_UNAVAILABLE', async () => {
    const h = make({ maxRestarts: 1 });
    await h.manager.start();
    h.doom();
    h.call(1, 'crash');
    await vi.waitFor(() => expect(h.answer(1)).toBeDefined());
    const wait = pendingWait(h.manager.linkFor('up', SESSION));
    h.call(2, 'tools/list');
    await expect(wait).rejects.toMatchObject({ data: { code: 'SB_UPSTREAM_UNAVAILABLE' } });
    await vi.waitFor(() =>
      expect(h.answer(2)).toMatchObject({
        error: { code: -32000, data: { code: 'SB_UPSTREAM_UNAVAILABLE' } },
      }),
    );
    expect(h.manager.linkFor('up', SESSION).kind).toBe('down');
  });

  it('bounds the wait by the ready timeout when a restart takes longer', async () => {
    const h = make({ initialDelayMs: 8_000, readyTimeoutMs: 200 });
    await h.manager.start();
    h.call(1, 'crash');
    await vi.waitFor(() => expect(h.answer(1)).toBeDefined());
    h.call(2, 'tools/list');
    await vi.waitFor(
      () =>
        expect(h.answer(2)).toMatchObject({
          error: { code: -32000, message: 'upstream up did not become ready within 200 ms' },
        }),
      { timeout: 5_000 },
    );
  });
});

describe('UpstreamManager.status (what /ready reports)', () => {
  it('follows a shared upstream through a crash and its restart: ready, restarting with why, ready again', async () => {
    const h = make({ initialDelayMs: 400 });
    const before = Date.now();
    await h.manager.start();
    const first = h.manager.status();
    expect(first).toEqual([
      { name: 'up', required: false, state: 'ready', era: 'legacy', restarts: 0, since: expect.any(Number) },
    ]);
    expect(first[0]!.since).toBeGreaterThanOrEqual(before);
    h.call(1, 'crash');
    await vi.waitFor(() => expect(h.answer(1)).toBeDefined());
    const restarting = h.manager.status()[0]!;
    expect(restarting).toMatchObject({ state: 'restarting', lastError: expect.stringMatching(/3/) });
    expect(restarting.since).toBeGreaterThanOrEqual(first[0]!.since!);
    await vi.waitFor(() => expect(h.manager.status()[0]?.state).toBe('ready'), { timeout: 8_000 });
    // The reason of the last close stays for the operator; the restart is counted.
    expect(h.manager.status()[0]).toMatchObject({ restarts: 1, lastError: restarting.lastError });
  });

  it('says down, with why, once the restarts give up', async () => {
    const h = make({ maxRestarts: 1, initialDelayMs: 50 });
    await h.manager.start();
    h.doom();
    h.call(1, 'crash');
    await vi.waitFor(() => expect(h.manager.status()[0]?.state).toBe('down'), { timeout: 8_000 });
    expect(h.manager.status()[0]?.lastError).toMatch(/exit|code/);
  });

  it("says idle for a per-session upstream with no session, and follows a session's connection", async () => {
    const h = make({ sharing: 'per-session' });
    await h.manager.start();
    expect(h.manager.status()).toEqual([{ name: 'up', required: false, state: 'idle', restarts: 0 }]);
    const lookup = h.manager.linkFor('up', SESSION);
    expect(lookup.kind).toBe('pending');
    expect(h.manager.status()[0]?.state).toBe('starting');
    await pendingWait(lookup);
    expect(h.manager.status()[0]).toMatchObject({ state: 'ready', era: 'legacy' });
    await h.manager.closeSession(SESSION);
    expect(h.manager.status()[0]?.state).toBe('idle');
  });
});
