import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SwitchboardError } from '../../errors/switchboard-error.js';
import { toJsonRpcError } from '../../errors/to-jsonrpc-error.js';
import { JsonRpcCode } from '../../protocol/jsonrpc/codes.js';
import { holdKey, type PoolLease, UpstreamPool } from './upstream-pool.js';

/** A refusal is thrown as the gateway's one error class (its stack kept); this is what the client gets. */
function onWire(error: unknown) {
  expect(error).toBeInstanceOf(SwitchboardError);
  return toJsonRpcError(error);
}

interface Child {
  readonly link: string;
}

/** A pool of plain children (the pool only needs their link), with what it spawned and retired. */
function makePool(
  bounds: { max?: number; idleTimeoutMs?: number; queueTimeoutMs?: number; maxQueued?: number } = {},
) {
  const spawned: Child[] = [];
  const retired: string[] = [];
  const pool = new UpstreamPool<Child>({
    name: 'everything',
    max: bounds.max ?? 2,
    idleTimeoutMs: bounds.idleTimeoutMs ?? 60_000,
    queueTimeoutMs: bounds.queueTimeoutMs ?? 5_000,
    maxQueued: bounds.maxQueued ?? 10,
    spawn: () => {
      const child = { link: `everything#${spawned.length + 1}` };
      spawned.push(child);
      return child;
    },
    retire: (child) => retired.push(child.link),
  });
  return { pool, spawned, retired };
}

function linkOf(lease: PoolLease<Child>): string {
  if (lease.kind !== 'child') throw new Error(`expected a child, got ${lease.kind}`);
  return lease.child.link;
}

const h = (session: string, id: number | string) => holdKey(session, id);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('UpstreamPool', () => {
  it('leases one child to a session for all its calls in flight, and another to another session', () => {
    const { pool, spawned } = makePool();
    expect(linkOf(pool.acquire('A', h('A', 1)))).toBe('everything#1');
    expect(linkOf(pool.acquire('A', h('A', 2)))).toBe('everything#1');
    expect(linkOf(pool.acquire('B', h('B', 1)))).toBe('everything#2');
    expect(spawned).toHaveLength(2);
    expect(pool.holderOf('everything#1')).toBe('A');
    expect(pool.holderOf('everything#2')).toBe('B');
    expect(pool.childOf('A')?.link).toBe('everything#1');
  });

  it('keys holds by id type: the ids 1 and "1" are two calls', () => {
    expect(h('A', 1)).not.toBe(h('A', '1'));
  });

  it('frees a child when its last call ends, and reuses it before growing', () => {
    const { pool, spawned } = makePool();
    pool.acquire('A', h('A', 1));
    pool.acquire('A', h('A', 2));
    pool.release('A', h('A', 1), false);
    expect(pool.holderOf('everything#1')).toBe('A');
    pool.release('A', h('A', 2), false);
    expect(pool.holderOf('everything#1')).toBeUndefined();
    expect(linkOf(pool.acquire('B', h('B', 1)))).toBe('everything#1');
    expect(spawned).toHaveLength(1);
  });

  it('gives a session back the child it held last when that one is free', () => {
    const { pool } = makePool({ max: 3 });
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    pool.release('A', h('A', 1), false);
    pool.release('B', h('B', 1), false);
    expect(linkOf(pool.acquire('B', h('B', 2)))).toBe('everything#2');
    expect(linkOf(pool.acquire('A', h('A', 2)))).toBe('everything#1');
  });

  it('never runs more than max: a call waits for the first child freed, and then holds it', async () => {
    const { pool, spawned } = makePool({ max: 2 });
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    const queued = pool.acquire('C', h('C', 1));
    const alsoC = pool.acquire('C', h('C', 2));
    expect(queued.kind).toBe('queued');
    expect(alsoC.kind).toBe('queued');
    expect(pool.queued).toBe(2);
    pool.release('B', h('B', 1), false);
    await (queued.kind === 'queued' ? queued.ready : undefined);
    await (alsoC.kind === 'queued' ? alsoC.ready : undefined);
    expect(pool.holderOf('everything#2')).toBe('C');
    expect(linkOf(pool.acquire('C', h('C', 1)))).toBe('everything#2');
    expect(spawned).toHaveLength(2);
    expect(pool.queued).toBe(0);
  });

  it('answers a call that waited queueTimeout with -32007, and one beyond maxQueued at once', async () => {
    const { pool } = makePool({ max: 1, queueTimeoutMs: 1000, maxQueued: 1 });
    pool.acquire('A', h('A', 1));
    const waiting = pool.acquire('B', h('B', 1));
    const refused = pool.acquire('C', h('C', 1));
    if (waiting.kind !== 'queued' || refused.kind !== 'queued') throw new Error('expected queued');
    await expect(refused.ready.catch(onWire)).resolves.toMatchObject({
      code: JsonRpcCode.LimitExceeded,
      data: { code: 'SB_LIMIT_EXCEEDED', upstream: 'everything', max: 1 },
    });
    const outcome = waiting.ready.then(() => 'resolved', onWire);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await outcome).toMatchObject({
      code: JsonRpcCode.LimitExceeded,
      message: expect.stringContaining('none was free within 1000 ms'),
    });
    expect(pool.queued).toBe(0);
  });

  it('retires a free child after idleTimeout, but never the first (the anchor)', async () => {
    const { pool, retired } = makePool({ idleTimeoutMs: 1000 });
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    pool.release('A', h('A', 1), false);
    pool.release('B', h('B', 1), false);
    await vi.advanceTimersByTimeAsync(999);
    expect(retired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(retired).toEqual(['everything#2']);
    expect(pool.children.map((c) => c.link)).toEqual(['everything#1']);
    expect(pool.isAnchor('everything#1')).toBe(true);
  });

  it('does not retire a child leased again before its idle timer ran out', async () => {
    const { pool, retired } = makePool({ idleTimeoutMs: 1000 });
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    pool.release('B', h('B', 1), false);
    await vi.advanceTimersByTimeAsync(500);
    expect(linkOf(pool.acquire('C', h('C', 1)))).toBe('everything#2');
    await vi.advanceTimersByTimeAsync(5000);
    expect(retired).toEqual([]);
  });

  it('promotes the next child when the anchor leaves, and never retires the new anchor for idling', async () => {
    const anchors: string[] = [];
    const retired: string[] = [];
    let n = 0;
    const pool = new UpstreamPool<Child>({
      name: 'everything',
      max: 2,
      idleTimeoutMs: 1000,
      queueTimeoutMs: 5000,
      maxQueued: 10,
      spawn: () => ({ link: `everything#${++n}` }),
      retire: (child) => retired.push(child.link),
      onAnchor: (child) => anchors.push(child.link),
    });
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    pool.release('B', h('B', 1), false);
    // A's call was cancelled: the anchor is retired, and the idle child takes its place.
    pool.release('A', h('A', 1), true);
    expect(retired).toEqual(['everything#1']);
    expect(anchors).toEqual(['everything#2']);
    expect(pool.isAnchor('everything#2')).toBe(true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(retired).toEqual(['everything#1']);
  });

  it('retires a tainted child once free (a cancelled call may still be running) and never hands it on', () => {
    const { pool, retired, spawned } = makePool({ max: 1 });
    pool.acquire('A', h('A', 1));
    pool.acquire('A', h('A', 2));
    pool.release('A', h('A', 1), true);
    expect(retired).toEqual([]);
    // A later clean end of the other call does not undo the taint.
    pool.release('A', h('A', 2), false);
    expect(retired).toEqual(['everything#1']);
    expect(linkOf(pool.acquire('B', h('B', 1)))).toBe('everything#2');
    expect(spawned).toHaveLength(2);
  });

  it('a tainted child retired makes room for a waiting call', async () => {
    const { pool } = makePool({ max: 1 });
    pool.acquire('A', h('A', 1));
    const waiting = pool.acquire('B', h('B', 1));
    pool.release('A', h('A', 1), true);
    if (waiting.kind !== 'queued') throw new Error('expected queued');
    await waiting.ready;
    expect(pool.holderOf('everything#2')).toBe('B');
  });

  it('forgets a child that stopped for good and gives its place to a waiting call, without spinning', async () => {
    const { pool, spawned, retired } = makePool({ max: 1 });
    const first = pool.acquire('A', h('A', 1));
    const waiting = pool.acquire('B', h('B', 1));
    if (first.kind !== 'child' || waiting.kind !== 'queued') throw new Error('unexpected');
    pool.childStopped(first.child);
    await waiting.ready;
    expect(spawned).toHaveLength(2);
    expect(pool.holderOf('everything#2')).toBe('B');
    // The crashed child's calls end later: releasing them touches nothing.
    pool.release('A', h('A', 1), true);
    expect(retired).toEqual([]);
    expect(spawned).toHaveLength(2);
  });

  it('a session that ends gives back its child as tainted and drops its waiting calls', async () => {
    const { pool, retired } = makePool({ max: 1 });
    pool.acquire('A', h('A', 1));
    const waiting = pool.acquire('A2', h('A2', 1));
    pool.closeSession('A');
    expect(retired).toEqual(['everything#1']);
    if (waiting.kind !== 'queued') throw new Error('expected queued');
    await waiting.ready;
    pool.closeSession('A2');
    expect(retired).toEqual(['everything#1', 'everything#2']);
  });

  it('a call that ends while waiting leaves the queue', () => {
    const { pool } = makePool({ max: 1 });
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    pool.release('B', h('B', 1), true);
    expect(pool.queued).toBe(0);
    pool.release('A', h('A', 1), false);
    expect(pool.holderOf('everything#1')).toBeUndefined();
  });

  it('starts the anchor on demand and refuses everything once closed', async () => {
    const { pool, spawned } = makePool();
    expect(pool.anchor()?.link).toBe('everything#1');
    expect(pool.anchor()?.link).toBe('everything#1');
    expect(spawned).toHaveLength(1);
    pool.acquire('A', h('A', 1));
    pool.acquire('B', h('B', 1));
    const waiting = pool.acquire('C', h('C', 1));
    pool.close();
    if (waiting.kind !== 'queued') throw new Error('expected queued');
    await expect(waiting.ready.catch(onWire)).resolves.toMatchObject({ data: { code: 'SB_SHUTTING_DOWN' } });
    const after = pool.acquire('D', h('D', 1));
    if (after.kind !== 'queued') throw new Error('expected queued');
    await expect(after.ready.catch(onWire)).resolves.toMatchObject({
      data: { code: 'SB_UPSTREAM_UNAVAILABLE' },
    });
    expect(pool.anchor()).toBeUndefined();
  });
});
