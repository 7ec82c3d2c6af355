/**
 * The HTTP sessions of the gateway (seed 003's "future" section, built): ids bound to the
 * authenticated principal (the same `Mcp-Session-Id` from another principal is never the same
 * session), explicit lifetimes (idle timeout, maximum age), eviction, and limits in total and per
 * principal. Ended ids are remembered for a while so a client using one is told 404 and
 * re-initializes, in lenient mode too.
 */
import type { SessionsConfig } from '../../../config/types.js';
import type { HttpSession } from './http-session.js';

export type AdmitResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly status: 429 | 503; readonly reason: string };

const ENDED_MEMORY = 50_000;

function bindingKey(principal: string, mcpSessionId: string): string {
  return `${principal}\u0000${mcpSessionId}`;
}

export class SessionRegistry {
  readonly #config: SessionsConfig;
  readonly #byBinding = new Map<string, HttpSession>();
  readonly #perPrincipal = new Map<string, number>();
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

  lookup(principal: string, mcpSessionId: string): HttpSession | undefined {
    return this.#byBinding.get(bindingKey(principal, mcpSessionId));
  }

  /** Whether this principal's session id was ended (deleted, evicted or expired). */
  wasEnded(principal: string, mcpSessionId: string): boolean {
    return this.#ended.has(bindingKey(principal, mcpSessionId));
  }

  /** Whether one more session may be opened for `principal`. */
  admit(principal: string): AdmitResult {
    if (this.#byBinding.size >= this.#config.maxSessions) {
      return {
        ok: false,
        status: 503,
        reason: `the gateway holds its maximum of ${this.#config.maxSessions} sessions`,
      };
    }
    if ((this.#perPrincipal.get(principal) ?? 0) >= this.#config.maxSessionsPerPrincipal) {
      return {
        ok: false,
        status: 429,
        reason: `principal ${principal} holds its maximum of ${this.#config.maxSessionsPerPrincipal} sessions`,
      };
    }
    return { ok: true };
  }

  add(session: HttpSession): void {
    const key = bindingKey(session.principal, session.mcpSessionId);
    this.#byBinding.set(key, session);
    this.#ended.delete(key);
    this.#perPrincipal.set(session.principal, (this.#perPrincipal.get(session.principal) ?? 0) + 1);
  }

  remove(session: HttpSession): void {
    const key = bindingKey(session.principal, session.mcpSessionId);
    if (this.#byBinding.get(key) !== session) return;
    this.#byBinding.delete(key);
    const count = (this.#perPrincipal.get(session.principal) ?? 1) - 1;
    if (count <= 0) this.#perPrincipal.delete(session.principal);
    else this.#perPrincipal.set(session.principal, count);
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
  expired(now: number): HttpSession[] {
    const out: HttpSession[] = [];
    const { idleTimeoutMs, maxAgeMs } = this.#config;
    for (const session of this.#byBinding.values()) {
      const tooOld = maxAgeMs > 0 && now - session.createdAt >= maxAgeMs;
      const idle =
        idleTimeoutMs > 0 &&
        !session.busy &&
        session.openStreams === 0 &&
        now - session.lastActivity >= idleTimeoutMs;
      if (tooOld || idle) out.push(session);
    }
    return out;
  }

  all(): IterableIterator<HttpSession> {
    return this.#byBinding.values();
  }
}
