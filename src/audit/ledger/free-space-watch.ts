/**
 * Whether the ledger's file system still has room, known before a write fails. A write that fails
 * (ENOSPC) tells the ledger too late for a T2+ call: that call has already run upstream by the time
 * its record is written, and all the gateway can do then is withhold the result. So the ledger
 * watches the free space of its file system and turns unable to write, refusing T1+ calls before
 * they are forwarded, while it is below `audit.minFreeBytes`; what is left below the threshold is
 * headroom for the records of calls already admitted (and T0 records, denials, checkpoints).
 *
 * `statfs` is asked on a timer (not on every call: it is a thread-pool round trip), once at open,
 * after any failed write, and as soon as what the ledger wrote since the last answer could have
 * taken the free space below the threshold (an estimate that costs nothing). Another process may
 * fill the disk between two ticks; that window, and what closes it, is in docs/audit-ledger.md.
 */
import { statfs } from 'node:fs/promises';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';

/** The bytes this process may still write on the file system that holds `path`. */
export type FreeSpace = (path: string) => Promise<number>;

/** `statfs`: the blocks available to unprivileged users (`bavail`), in bytes. */
export const nodeFreeSpace: FreeSpace = async (path) => {
  const stats = await statfs(path, { bigint: true });
  const bytes = stats.bavail * stats.bsize;
  return bytes > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(bytes);
};

/** Counter names the watch keeps in the ledger's `Metrics`. */
export const FreeSpaceMetric = {
  /** Times the free space was found below the threshold (each time it went below, not each check). */
  LowSpace: 'audit_low_space_total',
} as const;

export interface FreeSpaceWatchOptions {
  /** A directory on the watched file system (the ledger directory). */
  readonly dir: string;
  /** Below this many free bytes the ledger is unable to write; 0 disables the watch. */
  readonly minFreeBytes: number;
  /** How often to ask while nothing else asks (ms). */
  readonly intervalMs: number;
  readonly freeSpace: FreeSpace;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** See the module comment. */
export class FreeSpaceWatch {
  readonly #o: FreeSpaceWatchOptions;
  /** The free bytes of the last answer that was below the threshold; undefined while above. */
  #low: number | undefined;
  /** The last answer, and the bytes written since it (the estimate). */
  #lastFree = Number.POSITIVE_INFINITY;
  #writtenSince = 0;
  #checking: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Set after a failed `statfs` was logged, until one succeeds (so it is logged once). */
  #failing = false;

  constructor(options: FreeSpaceWatchOptions) {
    this.#o = options;
  }

  get minFreeBytes(): number {
    return this.#o.minFreeBytes;
  }

  /** The free bytes found below the threshold, while they are; undefined otherwise. */
  get low(): number | undefined {
    return this.#low;
  }

  /** Starts the timer (no-op when the watch is disabled). */
  start(): void {
    if (this.#o.minFreeBytes <= 0 || this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.check(), this.#o.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Asks the file system now (one question at a time: a call while one is out shares it). Never
   * rejects: when `statfs` itself fails, what was known stays, and the failure is logged once.
   */
  check(): Promise<void> {
    if (this.#o.minFreeBytes <= 0) return Promise.resolve();
    this.#checking ??= this.#ask().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /** `bytes` were written: asks now if the estimate of what is left falls below the threshold. */
  wrote(bytes: number): void {
    if (this.#o.minFreeBytes <= 0) return;
    this.#writtenSince += bytes;
    if (this.#low === undefined && this.#lastFree - this.#writtenSince < this.#o.minFreeBytes)
      void this.check();
  }

  async #ask(): Promise<void> {
    const { minFreeBytes, dir, logger, metrics } = this.#o;
    let free: number;
    try {
      free = await this.#o.freeSpace(dir);
    } catch (error) {
      if (!this.#failing)
        logger.warn(
          { err: error instanceof Error ? error.message : String(error), dir },
          'audit ledger: cannot read the free space of its file system; going by the last answer',
        );
      this.#failing = true;
      return;
    }
    this.#failing = false;
    this.#lastFree = free;
    this.#writtenSince = 0;
    if (free < minFreeBytes) {
      if (this.#low === undefined) {
        metrics.inc(FreeSpaceMetric.LowSpace);
        logger.error(
          { free, minFreeBytes, dir },
          'audit ledger: free space is below audit.minFreeBytes; audited calls of tier T1 and above are refused until there is more',
        );
      }
      this.#low = free;
    } else if (this.#low !== undefined) {
      this.#low = undefined;
      logger.info({ free, minFreeBytes }, 'audit ledger: free space is above audit.minFreeBytes again');
    }
  }
}
