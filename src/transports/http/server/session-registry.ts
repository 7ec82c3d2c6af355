/**
 * The HTTP sessions of the gateway (seed 003's "future" section, built): ids bound to the
 * authenticated principal (the same `Mcp-Session-Id` from another principal is never the same
 * session), explicit lifetimes (idle timeout, maximum age), eviction, and limits in total and per
 * principal. Ended ids are remembered for a while so a client using one is told 404 and
 * re-initializes, in lenient mode too.
 *
 * At a limit, a new session is not refused while the principal asking for it holds an idle
 * session: its least recently active idle one is ended to make room (the caller ends it; see
 * {@link SessionRegistry.admit}). Idle means what the idle timeout means: no call of the session
 * waits for an answer and no stream of it is open, so ending it interrupts nothing; its client is
 * told 404 on its next request and initializes again, as the transport specifies. Only the
 * principal's own sessions are candidates, so one principal can never end another's, and a
 * principal whose sessions are all busy or streaming is refused (429, or 503 at the gateway's
 * total) as before.
 */
import type { SessionsConfig } from '../../../config/types.js';
import type { HttpSession } from './http-session.js';

/** What the registry reads of a session. */
export interface RegisteredSession {
  readonly principal: string;
  readonly mcpSessionId: string;
  readonly createdAt: number;
  /** When a request of it last arrived or a stream of it last closed (ms, `Date.now` clock). */
  readonly lastActivity: number;
  /** Whether requests of the session still wait for responses. */
  readonly busy: boolean;
  /** Its open connections (GET streams and POSTs still answering). */
  readonly openStreams: number;
}

/** Which limit a new session met: the principal's `maxSessionsPerPrincipal` or the gateway's `maxSessions`. */
export type SessionLimit = 'principal' | 'gateway';

export type AdmitResult<S extends RegisteredSession = HttpSession> =
  | { readonly ok: true }
  /** Admitted once `evict` (idle, the principal's least recently active) has been ended. */
  | { readonly ok: true; readonly evict: S; readonly limit: SessionLimit }
  | {
      readonly ok: false;
      readonly status: 429 | 503;
      readonly reason: string;
      readonly limit: SessionLimit;
    };

const ENDED_MEMORY = 50_000;

function bindingKey(principal: string, mcpSessionId: string): string {
  return `${principal}\u0000${mcpSessionId}`;
}

/** Whether ending `session` now would interrupt nothing (the idle timeout's notion of idle). */
export function isIdle(session: RegisteredSession): boolean {
  return !session.busy && session.openStreams === 0;
}

export class SessionRegistry<S extends RegisteredSession = HttpSession> {
  readonly #config: SessionsConfig;
  readonly #byBinding = new Map<string, S>();
  /** Each principal's sessions (only principals holding some). */
  readonly #byPrincipal = new Map<string, Set<S>>();
  /** Ended bindings, oldest first (Map keeps insertion order), bounded. */
  readonly #ended = new Map<string, number>();

  constructor(config: SessionsConfig) {
    this.#config = config;
  }

  get size(): number {
    return this.#byBinding.size;
  }

  get config(): SessionsConfig {
    return this.#config;
  }

  lookup(principal: string, mcpSessionId: string): S | undefined {
    return this.#byBinding.get(bindingKey(principal, mcpSessionId));
  }

  /** Whether this principal's session id was ended (deleted, evicted or expired). */
  wasEnded(principal: string, mcpSessionId: string): boolean {
    return this.#ended.has(bindingKey(principal, mcpSessionId));
  }

  /** How many sessions `principal` holds. */
  countOf(principal: string): number {
    return this.#byPrincipal.get(principal)?.size ?? 0;
  }

  /**
   * Whether one more session may be opened for `principal`: yes; yes once the returned idle
   * session of the principal has been ended (the caller ends it, which removes it here); or no,
   * with the HTTP status and why.
   */
  admit(principal: string): AdmitResult<S> {
    const { maxSessions, maxSessionsPerPrincipal } = this.#config;
    const principalFull = this.countOf(principal) >= maxSessionsPerPrincipal;
    if (!principalFull && this.#byBinding.size < maxSessions) return { ok: true };
    const limit: SessionLimit = principalFull ? 'principal' : 'gateway';
    const evict = this.#leastRecentlyActiveIdle(principal);
    if (evict !== undefined) return { ok: true, evict, limit };
    return principalFull
      ? {
          ok: false,
          status: 429,
          limit,
          reason: `principal ${principal} holds its maximum of ${maxSessionsPerPrincipal} sessions, none of them idle`,
        }
      : {
          ok: false,
          status: 503,
          limit,
          reason: `the gateway holds its maximum of ${maxSessions} sessions, none of them an idle one of principal ${principal}`,
        };
  }

  #leastRecentlyActiveIdle(principal: string): S | undefined {
    let oldest: S | undefined;
    for (const session of this.#byPrincipal.get(principal) ?? []) {
      if (!isIdle(session)) continue;
      if (oldest === undefined || session.lastActivity < oldest.lastActivity) oldest = session;
    }
    return oldest;
  }

  add(session: S): void {
    const key = bindingKey(session.principal, session.mcpSessionId);
    const previous = this.#byBinding.get(key);
    if (previous !== undefined) this.#byPrincipal.get(previous.principal)?.delete(previous);
    this.#byBinding.set(key, session);
    this.#ended.delete(key);
    let own = this.#byPrincipal.get(session.principal);
    if (own === undefined) {
      own = new Set();
      this.#byPrincipal.set(session.principal, own);
    }
    own.add(session);
  }

  remove(session: S): void {
    const key = bindingKey(session.principal, session.mcpSessionId);
    if (this.#byBinding.get(key) !== session) return;
    this.#byBinding.delete(key);
    const own = this.#byPrincipal.get(session.principal);
    own?.delete(session);
    if (own?.size === 0) this.#byPrincipal.delete(session.principal);
    this.#ended.set(key, Date.now());
    if (this.#ended.size > ENDED_MEMORY) {
      const oldest = this.#ended.keys().next();
      if (!oldest.done) this.#ended.delete(oldest.value);
    }
  }

  /**
   * Sessions to end now: idle longer than the idle timeout (no open stream, nothing pending) or
   * older than the maximum age (whatever they are doing).
   */
  expired(now: number): S[] {
    const out: S[] = [];
    const { idleTimeoutMs, maxAgeMs } = this.#config;
    for (const session of this.#byBinding.values()) {
      const tooOld = maxAgeMs > 0 && now - session.createdAt >= maxAgeMs;
      const idle = idleTimeoutMs > 0 && isIdle(session) && now - session.lastActivity >= idleTimeoutMs;
      if (tooOld || idle) out.push(session);
    }
    return out;
  }

  all(): IterableIterator<S> {
    return this.#byBinding.values();
  }
}
