/**
 * At most one log line per key and interval, counting what was left out in between. For conditions
 * a client can cause at will (a session limit met, a connection refused, a timeout): the operator
 * must see them in the log, and a client must not be able to flood it. The counters (`Metrics`)
 * still count every occurrence.
 */
export class LogThrottle {
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #maxKeys: number;
  /** Per key: when a line was last let through, and the occurrences held back since. */
  readonly #keys = new Map<string, { at: number; held: number }>();

  /**
   * @param intervalMs the least time between two lines of one key
   * @param maxKeys keys remembered at most (they may come from clients): past it, it starts over
   */
  constructor(intervalMs = 60_000, now: () => number = Date.now, maxKeys = 1024) {
    this.#intervalMs = intervalMs;
    this.#now = now;
    this.#maxKeys = maxKeys;
  }

  /**
   * Whether to log an occurrence of `key` now: the number of occurrences held back since the last
   * line (0 for the first), or undefined to stay silent.
   */
  take(key: string): number | undefined {
    const now = this.#now();
    const state = this.#keys.get(key);
    if (state !== undefined && now - state.at < this.#intervalMs) {
      state.held++;
      return undefined;
    }
    const held = state?.held ?? 0;
    if (state === undefined && this.#keys.size >= this.#maxKeys) this.#keys.clear();
    this.#keys.set(key, { at: now, held: 0 });
    return held;
  }
}
