/**
 * Exponential restart backoff: `initialMs`, doubling up to `maxMs`; the streak resets once a child
 * has stayed up for `stableMs`, so a server that crashes once a day restarts at once.
 */
export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly stableMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 30_000, stableMs: 30_000 };

export class Backoff {
  readonly #o: BackoffOptions;
  #streak = 0;

  constructor(options: BackoffOptions = DEFAULT_BACKOFF) {
    this.#o = options;
  }

  /** The delay before the next restart, given how long the last child ran. */
  next(uptimeMs: number): number {
    if (uptimeMs >= this.#o.stableMs) this.#streak = 0;
    const delay = Math.min(this.#o.initialMs * 2 ** this.#streak, this.#o.maxMs);
    this.#streak++;
    return delay;
  }

  get streak(): number {
    return this.#streak;
  }
}
