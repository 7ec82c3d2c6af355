/**
 * The correlation table: every request in flight through the gateway, in both directions, and the
 * id mappings that let many client sessions share one upstream connection.
 *
 * It is a pure, synchronous data structure: no I/O, no timers (time is passed in), no callbacks.
 * The router asks it questions ("which client request does upstream id 17 answer?") and acts on
 * the answers. Contract, for any interleaving of operations:
 *   - each upstream response resolves exactly the client request it answers, at most once;
 *   - each progress notification maps to the request that carried its token while it is pending;
 *   - each `notifications/cancelled` maps to the request it names, in the right direction;
 *   - each server->client request gets a per-session id and its response maps back to it, and its
 *     progress token (the server's own, not rewritten) tells which link a client's progress is for;
 *   - after completion, cancellation, expiry, `closeSession` or `closeLink`, nothing is left behind.
 *
 * Ids: the gateway gives every forwarded client request a fresh upstream id (a number unique per
 * link) and, when the request carries a progress token, a fresh upstream token (the same number).
 * Colliding downstream ids from different sessions (`1` here, `1` there, `"1"` elsewhere) can
 * therefore never mix upstream. Server->client requests get a fresh id per session, so two
 * upstreams behind one session cannot collide downstream either.
 */
import { idKey, type RequestId } from '../protocol/jsonrpc/types.js';
import type { ProgressToken } from '../protocol/mcp/progress.js';

/** A client session's internal key (`core/session-key.ts`). */
export type SessionKey = string;
/**
 * A link's id: the router's handle on one connection to an upstream, kept across restarts (a
 * restarted connection is attached under the same id). One upstream (a configured server, by name)
 * may have several links: one per session (`per-session`), one per child (`pooled`).
 */
export type LinkId = string;

/** The table's time limits, in milliseconds; `DEFAULT_TIMEOUTS` fills what a caller leaves out. */
export interface CorrelationTimeouts {
  /** Milliseconds a client request may wait for its response; 0 disables the timeout. */
  readonly requestTimeoutMs: number;
  /** Whether a progress notification restarts the request timeout (MCP allows it). */
  readonly resetOnProgress: boolean;
  /** Upper bound on a request's lifetime even with progress; 0 disables it. */
  readonly maxTotalTimeoutMs: number;
  /** How long a cancelled request waits for a late response before it is forgotten. */
  readonly cancelGraceMs: number;
  /** Milliseconds a server->client request may wait for the client; 0 disables the timeout. */
  readonly serverRequestTimeoutMs: number;
}

/**
 * Ten minutes for a request in either direction (a client request's restarted by progress), an
 * hour at most in all, 30 s of grace for a late response after a cancellation.
 */
export const DEFAULT_TIMEOUTS: CorrelationTimeouts = {
  requestTimeoutMs: 600_000,
  resetOnProgress: true,
  maxTotalTimeoutMs: 3_600_000,
  cancelGraceMs: 30_000,
  serverRequestTimeoutMs: 600_000,
};

/** A client->server request waiting for the server's response. `T` is the router's own data. */
export interface ClientRequestEntry<T> {
  /** The client session that sent it. */
  readonly session: SessionKey;
  /** The id the client gave it; its response goes back under this id. */
  readonly downstreamId: RequestId;
  /** The link it was forwarded on. */
  readonly link: LinkId;
  /** The id the gateway gave it upstream: a number unique on `link` while the link lives. */
  readonly upstreamId: number;
  /** The request's JSON-RPC method. */
  readonly method: string;
  /** The progress token the client put on it, if any; progress goes back under this token. */
  readonly downstreamProgressToken?: ProgressToken;
  /** The token sent upstream in its place (equal to `upstreamId`); set only with the one above. */
  readonly upstreamProgressToken?: ProgressToken;
  /** When it was opened (the caller's clock, as passed to `openClientRequest`). */
  readonly openedAt: number;
  /**
   * When it times out: `requestTimeoutMs` after opening or the last progress, or, once cancelled,
   * when its grace ends. Infinity when the timeout is disabled.
   */
  readonly deadline: number;
  /** `maxTotalTimeoutMs` after opening, which progress never moves; Infinity when disabled. */
  readonly hardDeadline: number;
  /** Set once the client cancelled it; the entry then only waits for a late response. */
  readonly cancelled: boolean;
  /** The router's own data, given at opening; the table never reads it. */
  readonly tag: T;
}

/** A server->client request waiting for the client's response. */
export interface ServerRequestEntry<T> {
  /** The link the server spoke on; the client's response goes back there. */
  readonly link: LinkId;
  /** The id the server gave it. */
  readonly upstreamId: RequestId;
  /** The client session it was routed to. */
  readonly session: SessionKey;
  /** The id the gateway gave it toward the client (unique per session). */
  readonly downstreamId: number;
  /** The request's JSON-RPC method. */
  readonly method: string;
  /** The progress token the server put on it (kept as is: the client reports progress with it). */
  readonly progressToken?: ProgressToken;
  /** When it was opened (the caller's clock, as passed to `openServerRequest`). */
  readonly openedAt: number;
  /** `serverRequestTimeoutMs` after opening (progress does not move it); Infinity when disabled. */
  readonly deadline: number;
  /** The router's own data, given at opening; the table never reads it. */
  readonly tag: T;
}

type MutableClientEntry<T> = {
  -readonly [K in keyof ClientRequestEntry<T>]: ClientRequestEntry<T>[K];
};

/** `openClientRequest`'s answer: the new entry, or a refusal of a downstream id in flight. */
export type OpenClientResult<T> =
  | { readonly ok: true; readonly entry: ClientRequestEntry<T> }
  | { readonly ok: false; readonly reason: 'duplicate-id' };

/** `openServerRequest`'s answer: the new entry, or a refusal of a server id in flight on the link. */
export type OpenServerResult<T> =
  | { readonly ok: true; readonly entry: ServerRequestEntry<T> }
  | { readonly ok: false; readonly reason: 'duplicate-id' };

/** What `expire` removed, by why; each entry is in one list only. */
export interface Expired<C, S> {
  /** Requests whose timeout passed: the client must get an error, the server a cancellation. */
  readonly timedOut: readonly ClientRequestEntry<C>[];
  /** Cancelled requests whose grace period passed without a late response. */
  readonly forgotten: readonly ClientRequestEntry<C>[];
  /** Server->client requests the client never answered. */
  readonly serverTimedOut: readonly ServerRequestEntry<S>[];
}

/** What `closeSession` or `closeLink` removed: every entry of it, cancelled ones included. */
export interface Released<C, S> {
  /** Client->server requests, the cancelled ones awaiting a late response included. */
  readonly clientRequests: readonly ClientRequestEntry<C>[];
  /** Server->client requests still waiting for the client. */
  readonly serverRequests: readonly ServerRequestEntry<S>[];
}

const SEP = '\u0000';

function tokenKey(token: ProgressToken): string {
  return typeof token === 'number' ? `n${token}` : `s${token}`;
}

function serverTokenKey(session: SessionKey, link: LinkId, token: ProgressToken): string {
  return session + SEP + link + SEP + tokenKey(token);
}

/**
 * The table itself (contract above). `C` is the type of the router's tag on a client request, `S`
 * on a server request. An unknown id is an answer (undefined), never a throw.
 */
export class CorrelationTable<C = unknown, S = unknown> {
  readonly #timeouts: CorrelationTimeouts;
  readonly #clientByDownstream = new Map<string, MutableClientEntry<C>>();
  readonly #clientByUpstream = new Map<string, MutableClientEntry<C>>();
  readonly #clientByToken = new Map<string, MutableClientEntry<C>>();
  readonly #serverByUpstream = new Map<string, ServerRequestEntry<S>>();
  readonly #serverByDownstream = new Map<string, ServerRequestEntry<S>>();
  /** Server requests in flight by `(session, link, progress token)`: how many carry that token. */
  readonly #serverTokens = new Map<string, number>();
  readonly #linkCounters = new Map<LinkId, number>();
  readonly #sessionCounters = new Map<SessionKey, number>();

  /** An empty table with `timeouts`, each one left out taken from `DEFAULT_TIMEOUTS`. */
  constructor(timeouts: Partial<CorrelationTimeouts> = {}) {
    this.#timeouts = { ...DEFAULT_TIMEOUTS, ...timeouts };
  }

  /** The timeouts in force, defaults filled in. */
  get timeouts(): CorrelationTimeouts {
    return this.#timeouts;
  }

  /** Number of client requests in flight (cancelled ones awaiting a late response included). */
  get clientRequestCount(): number {
    return this.#clientByUpstream.size;
  }

  /** Number of server->client requests waiting for the client. */
  get serverRequestCount(): number {
    return this.#serverByUpstream.size;
  }

  /**
   * Registers a client request about to be forwarded on `link`, allocating its upstream id and,
   * when it carries one, its upstream progress token. A downstream id still in flight in the same
   * session is refused: JSON-RPC ids must be unique among a sender's pending requests.
   */
  openClientRequest(params: {
    readonly session: SessionKey;
    readonly downstreamId: RequestId;
    readonly link: LinkId;
    readonly method: string;
    readonly progressToken?: ProgressToken;
    readonly now: number;
    readonly tag: C;
  }): OpenClientResult<C> {
    const downKey = params.session + SEP + idKey(params.downstreamId);
    if (this.#clientByDownstream.has(downKey)) return { ok: false, reason: 'duplicate-id' };
    const upstreamId = (this.#linkCounters.get(params.link) ?? 0) + 1;
    this.#linkCounters.set(params.link, upstreamId);
    const t = this.#timeouts;
    const entry: MutableClientEntry<C> = {
      session: params.session,
      downstreamId: params.downstreamId,
      link: params.link,
      upstreamId,
      method: params.method,
      openedAt: params.now,
      deadline: t.requestTimeoutMs > 0 ? params.now + t.requestTimeoutMs : Number.POSITIVE_INFINITY,
      hardDeadline: t.maxTotalTimeoutMs > 0 ? params.now + t.maxTotalTimeoutMs : Number.POSITIVE_INFINITY,
      cancelled: false,
      tag: params.tag,
    };
    if (params.progressToken !== undefined) {
      entry.downstreamProgressToken = params.progressToken;
      entry.upstreamProgressToken = upstreamId;
      this.#clientByToken.set(params.link + SEP + tokenKey(upstreamId), entry);
    }
    this.#clientByDownstream.set(downKey, entry);
    this.#clientByUpstream.set(params.link + SEP + upstreamId, entry);
    return { ok: true, entry };
  }

  /**
   * The client request answered by the response `upstreamId` from `link`, removed from the table.
   * Undefined for an orphan (unknown or already answered id). A cancelled entry is returned too,
   * with `cancelled` set, so the caller can drop the late response knowingly.
   */
  takeServerResponse(link: LinkId, upstreamId: RequestId): ClientRequestEntry<C> | undefined {
    if (typeof upstreamId !== 'number') return undefined;
    const entry = this.#clientByUpstream.get(link + SEP + upstreamId);
    if (!entry) return undefined;
    this.#removeClient(entry);
    return entry;
  }

  /**
   * The client request a progress notification from `link` belongs to, while it is pending. A
   * cancelled request is returned too (with `cancelled` set) so the caller can record the late
   * progress where it belongs; it must not deliver it.
   */
  routeProgress(link: LinkId, upstreamToken: ProgressToken, now: number): ClientRequestEntry<C> | undefined {
    const entry = this.#clientByToken.get(link + SEP + tokenKey(upstreamToken));
    if (!entry) return undefined;
    if (entry.cancelled) return entry;
    if (this.#timeouts.resetOnProgress && this.#timeouts.requestTimeoutMs > 0) {
      entry.deadline = Math.min(now + this.#timeouts.requestTimeoutMs, entry.hardDeadline);
    }
    return entry;
  }

  /** The pending client request `downstreamId` of `session`, if any (not removed). */
  findClientRequest(session: SessionKey, downstreamId: RequestId): ClientRequestEntry<C> | undefined {
    return this.#clientByDownstream.get(session + SEP + idKey(downstreamId));
  }

  /**
   * Marks the client request `downstreamId` of `session` cancelled by its client. Returns the entry
   * the first time (so the caller sends `notifications/cancelled` upstream once), undefined for an
   * unknown id or a repeated cancellation (MCP: unknown ids are ignored). The entry stays until the
   * late response arrives or `cancelGraceMs` passes, so a late response is recognised, not orphaned.
   */
  cancelClientRequest(
    session: SessionKey,
    downstreamId: RequestId,
    now: number,
  ): ClientRequestEntry<C> | undefined {
    const entry = this.#clientByDownstream.get(session + SEP + idKey(downstreamId));
    if (!entry || entry.cancelled) return undefined;
    entry.cancelled = true;
    entry.deadline = now + this.#timeouts.cancelGraceMs;
    // The downstream id may be reused at once; the upstream token stays until the entry goes, so
    // late progress is recognised (and not delivered) instead of being unknown.
    this.#clientByDownstream.delete(session + SEP + idKey(downstreamId));
    return entry;
  }

  /**
   * Registers a server->client request from `link` routed to `session`, allocating its downstream
   * id. A server id still pending on the same link is refused.
   */
  openServerRequest(params: {
    readonly link: LinkId;
    readonly upstreamId: RequestId;
    readonly session: SessionKey;
    readonly method: string;
    readonly progressToken?: ProgressToken;
    readonly now: number;
    readonly tag: S;
  }): OpenServerResult<S> {
    const upKey = params.link + SEP + idKey(params.upstreamId);
    if (this.#serverByUpstream.has(upKey)) return { ok: false, reason: 'duplicate-id' };
    const downstreamId = (this.#sessionCounters.get(params.session) ?? 0) + 1;
    this.#sessionCounters.set(params.session, downstreamId);
    const timeout = this.#timeouts.serverRequestTimeoutMs;
    const entry: ServerRequestEntry<S> = {
      link: params.link,
      upstreamId: params.upstreamId,
      session: params.session,
      downstreamId,
      method: params.method,
      ...(params.progressToken === undefined ? {} : { progressToken: params.progressToken }),
      openedAt: params.now,
      deadline: timeout > 0 ? params.now + timeout : Number.POSITIVE_INFINITY,
      tag: params.tag,
    };
    this.#serverByUpstream.set(upKey, entry);
    this.#serverByDownstream.set(params.session + SEP + idKey(downstreamId), entry);
    if (params.progressToken !== undefined) {
      const key = serverTokenKey(params.session, params.link, params.progressToken);
      this.#serverTokens.set(key, (this.#serverTokens.get(key) ?? 0) + 1);
    }
    return { ok: true, entry };
  }

  /** The server request answered by the client's response `downstreamId`, removed from the table. */
  takeClientResponse(session: SessionKey, downstreamId: RequestId): ServerRequestEntry<S> | undefined {
    const entry = this.#serverByDownstream.get(session + SEP + idKey(downstreamId));
    if (!entry) return undefined;
    this.#removeServer(entry);
    return entry;
  }

  /** The server cancelled its own request `upstreamId`: returns and removes it. */
  cancelServerRequest(link: LinkId, upstreamId: RequestId): ServerRequestEntry<S> | undefined {
    const entry = this.#serverByUpstream.get(link + SEP + idKey(upstreamId));
    if (!entry) return undefined;
    this.#removeServer(entry);
    return entry;
  }

  /**
   * Whether a server request from `link` to `session` is in flight with progress token `token`: the
   * client's progress with that token goes to that link (server tokens are not rewritten).
   */
  hasServerProgressToken(session: SessionKey, link: LinkId, token: ProgressToken): boolean {
    return this.#serverTokens.has(serverTokenKey(session, link, token));
  }

  /** Sessions with client requests in flight (not cancelled) on `link`, in no particular order. */
  sessionsWaitingOn(link: LinkId): SessionKey[] {
    const sessions = new Set<SessionKey>();
    for (const entry of this.#clientByUpstream.values()) {
      if (entry.link === link && !entry.cancelled) sessions.add(entry.session);
    }
    return [...sessions];
  }

  /** The client request behind upstream id `upstreamId` on `link`, if pending (not removed). */
  findByUpstreamId(link: LinkId, upstreamId: RequestId): ClientRequestEntry<C> | undefined {
    return typeof upstreamId === 'number' ? this.#clientByUpstream.get(link + SEP + upstreamId) : undefined;
  }

  /** Server requests of `link` still waiting for the client's answer. */
  serverRequestsOn(link: LinkId): ServerRequestEntry<S>[] {
    const out: ServerRequestEntry<S>[] = [];
    for (const entry of this.#serverByUpstream.values()) if (entry.link === link) out.push(entry);
    return out;
  }

  /** Client requests of `session` still pending (cancelled ones excluded). */
  clientRequestsOf(session: SessionKey): ClientRequestEntry<C>[] {
    const out: ClientRequestEntry<C>[] = [];
    for (const entry of this.#clientByUpstream.values())
      if (entry.session === session && !entry.cancelled) out.push(entry);
    return out;
  }

  /**
   * Removes and returns everything whose deadline is at or before `now`. Timed-out client requests
   * leave the table at once: the caller answers the client and cancels upstream.
   */
  expire(now: number): Expired<C, S> {
    const timedOut: ClientRequestEntry<C>[] = [];
    const forgotten: ClientRequestEntry<C>[] = [];
    const serverTimedOut: ServerRequestEntry<S>[] = [];
    for (const entry of this.#clientByUpstream.values()) {
      if (Math.min(entry.deadline, entry.hardDeadline) <= now)
        (entry.cancelled ? forgotten : timedOut).push(entry);
    }
    for (const entry of [...timedOut, ...forgotten]) this.#removeClient(entry as MutableClientEntry<C>);
    for (const entry of this.#serverByUpstream.values())
      if (entry.deadline <= now) serverTimedOut.push(entry);
    for (const entry of serverTimedOut) this.#removeServer(entry);
    return { timedOut, forgotten, serverTimedOut };
  }

  /** The earliest deadline in the table, to schedule the next `expire` (Infinity when none). */
  nextDeadline(): number {
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.#clientByUpstream.values())
      next = Math.min(next, entry.deadline, entry.hardDeadline);
    for (const entry of this.#serverByUpstream.values()) next = Math.min(next, entry.deadline);
    return next;
  }

  /** Removes and returns everything belonging to `session` (its client went away). */
  closeSession(session: SessionKey): Released<C, S> {
    const clientRequests = [...this.#clientByUpstream.values()].filter((e) => e.session === session);
    const serverRequests = [...this.#serverByUpstream.values()].filter((e) => e.session === session);
    for (const entry of clientRequests) this.#removeClient(entry);
    for (const entry of serverRequests) this.#removeServer(entry);
    this.#sessionCounters.delete(session);
    return { clientRequests, serverRequests };
  }

  /**
   * Removes and returns everything in flight on `link` (its connection died). Its id
   * counter restarts, since a new connection is a new id space.
   */
  closeLink(link: LinkId): Released<C, S> {
    const clientRequests = [...this.#clientByUpstream.values()].filter((e) => e.link === link);
    const serverRequests = [...this.#serverByUpstream.values()].filter((e) => e.link === link);
    for (const entry of clientRequests) this.#removeClient(entry);
    for (const entry of serverRequests) this.#removeServer(entry);
    this.#linkCounters.delete(link);
    return { clientRequests, serverRequests };
  }

  #removeClient(entry: MutableClientEntry<C>): void {
    this.#clientByUpstream.delete(entry.link + SEP + entry.upstreamId);
    const downKey = entry.session + SEP + idKey(entry.downstreamId);
    // A cancelled entry's downstream id may already belong to a newer request: only remove our own.
    if (this.#clientByDownstream.get(downKey) === entry) this.#clientByDownstream.delete(downKey);
    if (entry.upstreamProgressToken !== undefined) {
      const key = entry.link + SEP + tokenKey(entry.upstreamProgressToken);
      if (this.#clientByToken.get(key) === entry) this.#clientByToken.delete(key);
    }
  }

  #removeServer(entry: ServerRequestEntry<S>): void {
    this.#serverByUpstream.delete(entry.link + SEP + idKey(entry.upstreamId));
    this.#serverByDownstream.delete(entry.session + SEP + idKey(entry.downstreamId));
    if (entry.progressToken !== undefined) {
      const key = serverTokenKey(entry.session, entry.link, entry.progressToken);
      const left = (this.#serverTokens.get(key) ?? 1) - 1;
      if (left > 0) this.#serverTokens.set(key, left);
      else this.#serverTokens.delete(key);
    }
  }
}
