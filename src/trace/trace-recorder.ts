/**
 * The tap between the forwarding path and the trace store. The gateway calls `recordHop` (or
 * `record`) for every message it reads or writes; that call only pushes into a buffer, and the
 * buffer goes to the store in one `append` per batch, later: on `setImmediate` once `batchSize`
 * records wait, or after `flushIntervalMs` otherwise. With a store that writes in a worker thread
 * (a `DeferredTraceStore`), a flush only posts the batch; records posted and not yet written count
 * against the same bound as the buffer. The trace is an observer: a slow or broken store costs
 * records (logged and counted), never a message, an exception or unbounded memory.
 */
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { type Logger, silentLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import { mergeSessionInfo } from './session-info-merge.js';
import { type TraceHop, traceHopOf, traceRecordOf } from './trace-hop.js';
import {
  type DeferredTraceStore,
  isDeferredTraceStore,
  type TraceRecord,
  type TraceSessionInfo,
  type TraceStore,
} from './types.js';

/** Counter names the recorder keeps in its `Metrics`. */
export const TraceRecorderMetric = {
  /** Store calls (`append`, `upsertSession`, `close`) that threw. */
  WriteErrors: 'trace_write_errors_total',
  /** Records that never reached the store, by `reason`: `store_error`, `overflow`, `closed`. */
  RecordsDropped: 'trace_records_dropped_total',
  /** Records the store accepted. */
  RecordsWritten: 'trace_records_written_total',
} as const;

/** Why a record was dropped (the `reason` label of `trace_records_dropped_total`). */
export type TraceDropReason = 'store_error' | 'overflow' | 'closed';

/** What `TraceRecorder.health` says (see there). */
export interface TraceHealth {
  readonly consecutiveFailures: number;
  readonly lastFailureAt: number | undefined;
  readonly overflowing: boolean;
}

/** Options of {@link TraceRecorder}; the defaults suit a busy gateway. */
export interface TraceRecorderOptions {
  /** Flush (on the next `setImmediate`) once this many records wait. Default 256. */
  readonly batchSize?: number;
  /** Flush this long after the first record of a batch arrives, at the latest. Default 50 ms. */
  readonly flushIntervalMs?: number;
  /**
   * Records held at most while the store catches up (waiting here, or handed to a deferred store
   * and not yet written); more are dropped and counted. Default 100,000.
   */
  readonly maxBuffered?: number;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
}

/**
 * Buffers trace records and session info and writes them to a `TraceStore` in batches.
 * `record` and `session` are O(1) and never throw; `flush` writes now; `close` flushes and closes
 * the store. After `close`, records are dropped (and counted) rather than written.
 */
export class TraceRecorder {
  /** The counters this recorder increments (the injected ones, or its own). */
  readonly metrics: Metrics;
  readonly #store: TraceStore;
  readonly #deferred: DeferredTraceStore | undefined;
  readonly #logger: Logger;
  readonly #batchSize: number;
  readonly #flushIntervalMs: number;
  readonly #maxBuffered: number;
  #buffer: (TraceRecord | TraceHop)[] = [];
  /** Room left in the buffer: `maxBuffered` less what a deferred store still held at the last flush. */
  #room: number;
  /** The deferred store's counters as last reported in the metrics. */
  #seen = { written: 0, failed: 0, errors: 0 };
  #sessions = new Map<string, TraceSessionInfo>();
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #closed = false;
  #overflowing = false;
  /** Consecutive failed writes: only the first of a streak is logged as an error. */
  #failures = 0;
  /** When the last write failed (ms since the epoch). */
  #lastFailureAt: number | undefined;

  constructor(store: TraceStore, options: TraceRecorderOptions = {}) {
    this.#store = store;
    this.#logger = options.logger ?? silentLogger;
    this.metrics = options.metrics ?? new Metrics();
    this.#batchSize = positive('batchSize', options.batchSize ?? 256);
    this.#flushIntervalMs = Math.max(0, options.flushIntervalMs ?? 50);
    this.#maxBuffered = positive('maxBuffered', options.maxBuffered ?? 100_000);
    this.#room = this.#maxBuffered;
    this.#deferred = isDeferredTraceStore(store) ? store : undefined;
    if (this.#deferred) this.#deferred.onWriteError = (err, lost) => this.#deferredFailed(err, lost);
  }

  /**
   * How the store is doing, for readiness (`observe/readiness.ts`): failed writes in a row (0 once
   * one succeeded), when the last failed, and whether the buffer is full and records are dropped.
   * With a deferred store, what it reported since the last flush is taken into account first.
   */
  get health(): TraceHealth {
    if (this.#deferred) this.#settle(this.#deferred);
    return {
      consecutiveFailures: this.#failures,
      lastFailureAt: this.#lastFailureAt,
      overflowing: this.#overflowing,
    };
  }

  /** Records waiting for the next flush. */
  get pending(): number {
    return this.#buffer.length;
  }

  /** Queues one record. O(1); never throws; never writes synchronously. */
  record(r: TraceRecord): void {
    this.#queue(r);
  }

  /** Queues one hop (the store derives its timestamp and payload text). Like `record`. */
  recordHop(hop: TraceHop): void {
    this.#queue(hop);
  }

  #queue(item: TraceRecord | TraceHop): void {
    try {
      if (this.#closed) {
        this.#drop(1, 'closed');
      } else if (this.#buffer.length >= this.#room) {
        this.#overflow();
      } else {
        this.#buffer.push(item);
        if (this.#buffer.length >= this.#batchSize) this.#flushSoon();
        else if (this.#timer === undefined) this.#flushLater();
      }
    } catch {
      // A throwing logger or metrics sink must not reach the forwarding path.
    }
  }

  /**
   * Queues a session upsert, written before the next batch. Reports of one session that wait
   * together are merged as the store merges them (a later one never blanks what an earlier said).
   */
  session(info: TraceSessionInfo): void {
    try {
      if (this.#closed) return;
      this.#sessions.set(info.key, mergeSessionInfo(this.#sessions.get(info.key), info));
      if (this.#timer === undefined && this.#immediate === undefined) this.#flushLater();
    } catch {
      // As in `record`.
    }
  }

  /**
   * Writes every queued session and record now, in one `append`. Returns how many records the
   * store accepted (0 when it failed: they are dropped, logged and counted, not retried, so that a
   * broken store cannot make memory grow); for a deferred store, how many were handed over.
   */
  flush(): number {
    const count = this.#flush();
    if (this.#deferred) this.#settle(this.#deferred);
    return count;
  }

  #flush(): number {
    this.#cancelSchedule();
    if (this.#sessions.size > 0) {
      const sessions = this.#sessions;
      this.#sessions = new Map();
      for (const info of sessions.values()) {
        try {
          this.#store.upsertSession(info);
        } catch (err) {
          this.#failed(err, 'upsertSession', 0);
        }
      }
    }
    const batch = this.#buffer;
    if (batch.length === 0) return 0;
    this.#buffer = [];
    try {
      if (this.#deferred) this.#deferred.appendHops(batch.map(asHop));
      else this.#store.append(batch.map(asRecord));
    } catch (err) {
      this.#failed(err, 'append', batch.length);
      return 0;
    }
    if (this.#deferred) return batch.length;
    this.metrics.inc(TraceRecorderMetric.RecordsWritten, undefined, batch.length);
    this.#overflowing = false;
    if (this.#failures > 0) {
      this.#log('info', { failures: this.#failures }, 'trace store writes recovered');
      this.#failures = 0;
    }
    return batch.length;
  }

  /**
   * Flushes everything queued, then closes the store (a deferred store finishes writing first).
   * Idempotent; never throws.
   */
  close(): void {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
    try {
      this.#store.close();
    } catch (err) {
      this.metrics.inc(TraceRecorderMetric.WriteErrors);
      this.#log('error', { err }, 'closing the trace store failed');
    }
    if (this.#deferred) this.#settle(this.#deferred);
  }

  /**
   * Brings the metrics up to date with what a deferred store reports (written, lost, failed
   * writes), and the room in the buffer with what it still holds.
   */
  #settle(store: DeferredTraceStore): void {
    try {
      const now = { written: store.written, failed: store.failed, errors: store.writeErrors };
      const written = now.written - this.#seen.written;
      const failed = now.failed - this.#seen.failed;
      const errors = now.errors - this.#seen.errors;
      this.#seen = now;
      if (written > 0) {
        this.metrics.inc(TraceRecorderMetric.RecordsWritten, undefined, written);
        this.#overflowing = false;
        if (this.#failures > 0 && failed === 0) {
          this.#log('info', { failures: this.#failures }, 'trace store writes recovered');
          this.#failures = 0;
        }
      }
      if (failed > 0) this.#drop(failed, 'store_error');
      if (errors > 0) this.metrics.inc(TraceRecorderMetric.WriteErrors, undefined, errors);
      this.#room = Math.max(0, this.#maxBuffered - store.queued);
    } catch {
      // As in `record`.
    }
  }

  /** A deferred store's failed write: logged here; the counts come with the next `#settle`. */
  #deferredFailed(err: Error, lost: number): void {
    this.#failures++;
    this.#lastFailureAt = Date.now();
    const fields = { err, operation: 'append', dropped: lost, failures: this.#failures };
    if (this.#failures === 1) this.#log('error', fields, 'trace store write failed; records dropped');
    else this.#log('debug', fields, 'trace store write failed again');
  }

  #flushSoon(): void {
    if (this.#immediate !== undefined) return;
    this.#immediate = setImmediate(() => {
      this.#immediate = undefined;
      this.flush();
    });
  }

  #flushLater(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.flush();
    }, this.#flushIntervalMs);
    // The trace must never keep a finished process alive; `close()` is how to write the tail.
    this.#timer.unref();
  }

  #cancelSchedule(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }

  #overflow(): void {
    this.#drop(1, 'overflow');
    if (this.#overflowing) return;
    this.#overflowing = true;
    this.#log(
      'warn',
      { maxBuffered: this.#maxBuffered, buffered: this.#buffer.length },
      'trace buffer full: dropping records until the store catches up',
    );
  }

  #drop(count: number, reason: TraceDropReason): void {
    this.metrics.inc(TraceRecorderMetric.RecordsDropped, { reason }, count);
  }

  #failed(err: unknown, operation: 'append' | 'upsertSession', lost: number): void {
    this.metrics.inc(TraceRecorderMetric.WriteErrors);
    if (lost > 0) this.#drop(lost, 'store_error');
    this.#failures++;
    this.#lastFailureAt = Date.now();
    const fields = { err, operation, dropped: lost, failures: this.#failures };
    if (this.#failures === 1) this.#log('error', fields, 'trace store write failed; records dropped');
    else this.#log('debug', fields, 'trace store write failed again');
  }

  /** Logging that cannot throw: flushes run from timers, where an exception would end the process. */
  #log(level: 'debug' | 'info' | 'warn' | 'error', fields: Record<string, unknown>, message: string): void {
    try {
      this.#logger[level](fields, message);
    } catch {
      // Nothing sensible is left to report to.
    }
  }
}

function isHop(item: TraceRecord | TraceHop): item is TraceHop {
  return !('envelope' in item);
}

function asHop(item: TraceRecord | TraceHop): TraceHop {
  return isHop(item) ? item : traceHopOf(item);
}

function asRecord(item: TraceRecord | TraceHop): TraceRecord {
  return isHop(item) ? traceRecordOf(item) : item;
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new SwitchboardError(
      SbErrorCode.TraceStore,
      `TraceRecorder: ${name} must be a positive integer, not ${value}`,
    );
  }
  return value;
}
