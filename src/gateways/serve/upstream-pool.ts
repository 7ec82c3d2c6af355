/**
 * The children of a `sharing: pooled` upstream: a bounded pool of processes of the same server, in
 * which a child serves one client session's calls at a time, so that every request the server sends
 * (sampling, elicitation) names its session by the link it comes on.
 *
 * Why: a stdio server cannot say which call a request of its own belongs to. On a `shared` child the
 * gateway guesses from the calls in flight, and when calls of several sessions overlap it cannot
 * tell, so it answers -32008 (`SB_UNROUTABLE`). Here a child is *leased* to a session while that
 * session has calls routed to it (a lease per in-flight period, not per session life): all calls in
 * flight on a child belong to its one holder, and the router's attribution (`UpstreamInbound.#attribute`)
 * is never ambiguous. Several clients share fewer children than `per-session` would need, and the
 * pool never holds more than `max`.
 *
 * The contract:
 * - `acquire(session, hold)` takes a hold (one per call: `holdKey`) on the child the session holds,
 *   else on an idle child (the one the session held last first), else on a new child (below `max`),
 *   else the call waits in a queue; a waiter is handed the first child freed, or is refused with
 *   `SB_LIMIT_EXCEEDED` (-32007) after `queueTimeoutMs`. Idempotent per hold key.
 * - `release(session, hold, tainted)` drops a hold; a child with no hold left is free again. A
 *   tainted release (a call the server may still be working on: cancelled, timed out, cut by the
 *   end of its session) retires the child instead, so nothing it says later can reach another
 *   session.
 * - A free child other than the first one (the anchor, which the gateway's own requests and the
 *   upstream's capabilities come from) is retired after `idleTimeoutMs` unleased.
 * - A child that stopped for good is forgotten (`childStopped`), and its place is offered to the
 *   queue; calls on it fail on their own (the router closes the link). A restarting child keeps its
 *   lease: the supervisor's backoff paces it, the pool never respawns in a loop.
 *
 * It knows nothing of the router: children are opaque (`C`), started and closed by the caller.
 */
import type { LinkId, SessionKey } from '../../core/correlation-table.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import type { RequestId } from '../../protocol/jsonrpc/types.js';

/** What the pool needs of a child: the router link it is. */
export interface PoolChild {
  readonly link: LinkId;
}

export interface UpstreamPoolOptions<C extends PoolChild> {
  /** The upstream's name (for messages). */
  readonly name: string;
  /** Children at most (at least 1). */
  readonly max: number;
  /** A free child (not the anchor) is retired after this long without a lease. */
  readonly idleTimeoutMs: number;
  /** A call waits this long for a child when all `max` are leased, then gets -32007. */
  readonly queueTimeoutMs: number;
  /** Calls that may wait at once; one more is refused at once with -32007. */
  readonly maxQueued: number;
  /** Starts a child (its handshake is the caller's business). */
  readonly spawn: () => C;
  /** Closes a child the pool no longer wants (idle, tainted, or the pool closing). */
  readonly retire: (child: C) => void;
  /**
   * The anchor left (retired or stopped) and `child` took its place: what the gateway keeps on the
   * anchor (subscriptions) must be sent to it.
   */
  readonly onAnchor?: (child: C) => void;
}

/** The key of one call's hold: its session and its client id (unique while it is in flight). */
export function holdKey(session: SessionKey, id: RequestId): string {
  return `${session}\u0000${typeof id}:${String(id)}`;
}

export type PoolLease<C> =
  | { readonly kind: 'child'; readonly child: C }
  /** All children are leased: settles once one was handed to the session (or rejects: -32007). */
  | { readonly kind: 'queued'; readonly ready: Promise<void> };

interface Slot<C> {
  readonly child: C;
  lease?: SessionKey;
  /** The session that held it last, for affinity. */
  last?: SessionKey;
  readonly holds: Set<string>;
  idle?: NodeJS.Timeout | undefined;
  /** A call on it ended while the server may still work on it: retired once free. */
  tainted?: boolean;
}

interface Waiter {
  readonly session: SessionKey;
  readonly hold: string;
  resolve(): void;
  reject(error: unknown): void;
  readonly timer: NodeJS.Timeout;
}

export class UpstreamPool<C extends PoolChild> {
  readonly #o: UpstreamPoolOptions<C>;
  /** Oldest first: `#slots[0]` is the anchor. */
  #slots: Slot<C>[] = [];
  #queue: Waiter[] = [];
  #closed = false;

  constructor(options: UpstreamPoolOptions<C>) {
    this.#o = { ...options, max: Math.max(1, options.max) };
  }

  /** Children now, oldest first. */
  get children(): readonly C[] {
    return this.#slots.map((s) => s.child);
  }

  /** Calls waiting for a child. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * The first child, started if there is none: the one the gateway's own requests (log levels,
   * subscriptions, the upstream's capabilities) go to, and the only one never retired for idling.
   */
  anchor(): C | undefined {
    if (this.#closed) return undefined;
    if (this.#slots.length === 0) this.#spawn();
    return this.#slots[0]?.child;
  }

  /** The child `session` holds now, if any. */
  childOf(session: SessionKey): C | undefined {
    return this.#slots.find((s) => s.lease === session)?.child;
  }

  /** The session holding the child on `link`, if it is leased. */
  holderOf(link: LinkId): SessionKey | undefined {
    return this.#slots.find((s) => s.child.link === link)?.lease;
  }

  isAnchor(link: LinkId): boolean {
    return this.#slots[0]?.child.link === link;
  }

  /** Takes a hold for one call of `session` (see the contract above). */
  acquire(session: SessionKey, hold: string): PoolLease<C> {
    if (this.#closed) {
      return {
        kind: 'queued',
        ready: Promise.reject(
          new SwitchboardError(SbErrorCode.UpstreamUnavailable, `upstream ${this.#o.name} is closed`),
        ),
      };
    }
    const held = this.#slots.find((s) => s.lease === session);
    if (held) {
      held.holds.add(hold);
      return { kind: 'child', child: held.child };
    }
    const free =
      this.#slots.find((s) => s.lease === undefined && s.last === session) ??
      this.#slots.find((s) => s.lease === undefined);
    const slot = free ?? (this.#slots.length < this.#o.max ? this.#spawn() : undefined);
    if (slot) {
      this.#lease(slot, session, hold);
      return { kind: 'child', child: slot.child };
    }
    if (this.#queue.length >= this.#o.maxQueued) {
      return {
        kind: 'queued',
        ready: Promise.reject(this.#exhausted(`and ${this.#queue.length} calls wait already`)),
      };
    }
    let settle: Pick<Waiter, 'resolve' | 'reject'> = { resolve() {}, reject() {} };
    const ready = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    const timer = setTimeout(() => {
      this.#queue = this.#queue.filter((w) => w !== waiter);
      waiter.reject(this.#exhausted(`and none was free within ${this.#o.queueTimeoutMs} ms`));
    }, this.#o.queueTimeoutMs);
    timer.unref();
    const waiter: Waiter = { session, hold, timer, ...settle };
    this.#queue.push(waiter);
    return { kind: 'queued', ready };
  }

  /**
   * Drops a hold. `tainted`: the server may still be working on that call, so the child is retired
   * once its last hold is gone rather than handed to another session.
   */
  release(session: SessionKey, hold: string, tainted: boolean): void {
    const waiting = this.#queue.find((w) => w.hold === hold);
    if (waiting) {
      clearTimeout(waiting.timer);
      this.#queue = this.#queue.filter((w) => w !== waiting);
      waiting.resolve();
      return;
    }
    const slot = this.#slots.find((s) => s.lease === session && s.holds.has(hold));
    if (!slot) return;
    slot.holds.delete(hold);
    // Remembered until the child is free: a later clean release must not undo it.
    if (tainted) slot.tainted = true;
    if (slot.holds.size > 0) return;
    slot.lease = undefined;
    slot.last = session;
    if (slot.tainted) {
      this.#remove(slot, true);
      this.#serveQueue();
      return;
    }
    this.#free(slot);
  }

  /** Everything `session` holds is released as tainted (it ended with calls in flight). */
  closeSession(session: SessionKey): void {
    for (const waiter of this.#queue.filter((w) => w.session === session)) {
      clearTimeout(waiter.timer);
      waiter.reject(new SwitchboardError(SbErrorCode.Cancelled, 'the session ended'));
    }
    this.#queue = this.#queue.filter((w) => w.session !== session);
    for (const slot of this.#slots.filter((s) => s.lease === session))
      for (const hold of [...slot.holds]) this.release(session, hold, true);
  }

  /** A child stopped for good: it is forgotten, and its place offered to a waiting call. */
  childStopped(child: C): void {
    const slot = this.#slots.find((s) => s.child === child);
    if (!slot) return;
    this.#remove(slot, false);
    this.#serveQueue();
  }

  /** Rejects every waiting call and clears the timers; the caller closes the children. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#queue) {
      clearTimeout(waiter.timer);
      waiter.reject(new SwitchboardError(SbErrorCode.ShuttingDown, `upstream ${this.#o.name} is closing`));
    }
    this.#queue = [];
    for (const slot of this.#slots) clearTimeout(slot.idle);
  }

  /** -32007 (`SB_LIMIT_EXCEEDED`): every child serves another session. */
  #exhausted(why: string): SwitchboardError {
    return new SwitchboardError(
      SbErrorCode.LimitExceeded,
      `all ${this.#o.max} children of upstream ${this.#o.name} are serving other sessions ${why} ` +
        '(raise pool.max, pool.queueTimeout or pool.maxQueued)',
      { details: { upstream: this.#o.name, max: this.#o.max } },
    );
  }

  #spawn(): Slot<C> {
    const slot: Slot<C> = { child: this.#o.spawn(), holds: new Set() };
    this.#slots.push(slot);
    return slot;
  }

  #lease(slot: Slot<C>, session: SessionKey, hold: string): void {
    clearTimeout(slot.idle);
    slot.idle = undefined;
    slot.lease = session;
    slot.holds.add(hold);
  }

  /** A child with no hold: handed to the first waiting session, else left idle (with its timer). */
  #free(slot: Slot<C>): void {
    const first = this.#queue[0];
    if (first) {
      this.#handTo(slot, first.session);
      return;
    }
    if (slot === this.#slots[0]) return;
    slot.idle = setTimeout(() => {
      // Not if it became the anchor meanwhile (the one before it left).
      if (slot.lease === undefined && this.#slots.includes(slot) && slot !== this.#slots[0])
        this.#remove(slot, true);
    }, this.#o.idleTimeoutMs);
    slot.idle.unref();
  }

  /** Leases `slot` to `session` with the holds of all its waiting calls, and wakes them. */
  #handTo(slot: Slot<C>, session: SessionKey): void {
    const mine = this.#queue.filter((w) => w.session === session);
    this.#queue = this.#queue.filter((w) => w.session !== session);
    for (const waiter of mine) {
      clearTimeout(waiter.timer);
      this.#lease(slot, session, waiter.hold);
      waiter.resolve();
    }
  }

  /** After a child left: the first waiter gets a free child, or a new one. */
  #serveQueue(): void {
    const first = this.#queue[0];
    if (!first || this.#closed) return;
    const free = this.#slots.find((s) => s.lease === undefined);
    const slot = free ?? (this.#slots.length < this.#o.max ? this.#spawn() : undefined);
    if (slot) this.#handTo(slot, first.session);
  }

  #remove(slot: Slot<C>, retire: boolean): void {
    clearTimeout(slot.idle);
    const wasAnchor = slot === this.#slots[0];
    this.#slots = this.#slots.filter((s) => s !== slot);
    if (retire) this.#o.retire(slot.child);
    const next = this.#slots[0];
    if (wasAnchor && next && !this.#closed) {
      clearTimeout(next.idle);
      next.idle = undefined;
      this.#o.onAnchor?.(next.child);
    }
  }
}
