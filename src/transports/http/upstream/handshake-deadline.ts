/**
 * The bound on an HTTP upstream's handshake. While the `initialize` (and, on Streamable HTTP, the
 * POST of the first `notifications/initialized`) waits for the server, requests sent behind it
 * wait too; a server that accepts the connection and never answers would otherwise hold them
 * until each one's own deadline, and keep the link `starting` with no restart. The deadline turns
 * that silence into a dead upstream: when it passes, the transport fails what waits with
 * `SB_UPSTREAM_UNAVAILABLE` and closes, so the supervisor reconnects with backoff.
 *
 * One deadline per handshake step: `arm` when the step starts, `settle` when it ends (answered or
 * failed either way); the deadline fires only while some step is still open, and never after
 * `dispose`.
 */

/** `upstreams.<name>.handshakeTimeout`'s default: generous for a cold server, short of any call. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 30_000;

/** Tracks the open handshake steps and calls `expired` once when one outlives the bound. */
export class HandshakeDeadline {
  readonly #ms: number;
  readonly #expired: (step: string) => void;
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #done = false;

  /** `ms` 0 turns the bound off (the steps wait as long as their requests' own deadlines). */
  constructor(ms: number, expired: (step: string) => void) {
    this.#ms = ms;
    this.#expired = expired;
  }

  /** The bound, in milliseconds (0: none). */
  get ms(): number {
    return this.#ms;
  }

  /** Step `step` (e.g. `initialize`) starts waiting for the server. Arming it again restarts nothing. */
  arm(step: string): void {
    if (this.#done || this.#ms <= 0 || this.#timers.has(step)) return;
    const timer = setTimeout(() => {
      this.#timers.delete(step);
      if (this.#done) return;
      this.dispose();
      this.#expired(step);
    }, this.#ms);
    // A handshake alone never keeps the process alive.
    timer.unref();
    this.#timers.set(step, timer);
  }

  /** Step `step` has its answer (or failed): it no longer counts. */
  settle(step: string): void {
    const timer = this.#timers.get(step);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#timers.delete(step);
  }

  /** Stops every timer for good (the transport closes, or the deadline fired). */
  dispose(): void {
    this.#done = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
