/**
 * The tamper-evident audit ledger (docs/audit-ledger.md): one record per completed audited call,
 * hash-chained, in append-only JSONL files under the ledger directory, with signed RFC 6962
 * checkpoints every N records, every T ms and at close, optionally copied to an anchor.
 *
 * One ordered writer. `append` takes the event's timestamp and queues it; a single flush loop
 * builds the queued records in order (redaction, seq, hash chain), writes them in one write per
 * batch, fsyncs per the policy, then resolves the batch's appends (a backlog `BUILD_CHUNK` records
 * per turn of the event loop). The Merkle accumulator advances only over lines that were written,
 * so checkpoints never re-read the log.
 *
 * Why the record is built in the flush loop and not in `append`: `append` runs on the answer's path
 * (the governance layer records a call as it completes), and building costs redaction, canonical
 * JSON and hashing. A durable append starts the loop at once; others wait up to `flushDelayMs`, so
 * that calls completing one after another share a write instead of each paying a thread-pool round
 * trip (the "batched otherwise"). The order of records is the order of `append` calls.
 *
 * Fail closed: when a batch cannot be written (or synced when it had to be), its appends and every
 * append queued behind it reject with `SB_AUDIT_UNAVAILABLE`, the chain head goes back to the last
 * record written, the ledger turns unhealthy, and the failure is logged and counted
 * (`audit_write_errors_total`). The governance layer refuses calls of tier T1 and above whose
 * record cannot be written. The next append tries again (cutting off any fragment the failed
 * write left), and a success makes the ledger healthy again.
 *
 * A write that hangs instead of failing (an `fdatasync` on a dying disk or a stuck mount) stops the
 * flush loop while the calls go on: once `maxQueued` appends wait, or their events hold about
 * `maxQueuedBytes` (an event keeps the output text it will hash until its record is built; a result
 * object is serialised when it is appended, so that its size is known), the
 * ledger is unhealthy too (T1+ refused), further appends reject at once, and the backlog is logged
 * and counted (`audit_backlog_rejections_total`); it is healthy again once the loop has brought the
 * queue down to half of both. Memory stays bounded whatever the disk does.
 *
 * Known before a write fails: while the free space of the ledger's file system is below
 * `minFreeBytes` (`free-space-watch.ts`: asked at open, on a timer, after a failure, and when the
 * bytes written since could have used up the margin), the ledger is unhealthy too, so that T1+ calls
 * are refused before they run rather than run and lose their record. It still writes what it is
 * given while it can: the margin is for the records of calls already admitted.
 */
import { mkdir } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { AuditConfig, FsyncPolicy } from '../../config/types.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { isoTimestamp } from '../../meup/iso-timestamp.js';
import { type Logger, silentLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { NoteSigner } from '../signed-note.js';
import { type AnchorOptions, createAnchorSink } from './anchor-sink.js';
import { type LedgerIo, nodeLedgerIo } from './append-file.js';
import type { AuditEvent } from './audit-event.js';
import { loadCheckpointSigner } from './checkpoint-key.js';
import { CheckpointWriter } from './checkpoint-writer.js';
import { type FreeSpace, FreeSpaceWatch, nodeFreeSpace } from './free-space-watch.js';
import { LedgerFileWriter } from './ledger-file-writer.js';
import { acquireLedgerLock, type LedgerLock } from './ledger-lock.js';
import { SIGNER_KEY_FILE, VERIFIER_KEY_FILE } from './ledger-paths.js';
import { type LedgerHead, type LinePosition, recoverLedger } from './ledger-recovery.js';
import type { LedgerTree } from './ledger-tree.js';
import type { LedgerUnavailable } from './ledger-unavailable.js';
import { type EncodedLine, RecordEncoder } from './record-encoder.js';
import { eventOutput } from './record-fields.js';

/** Counter names the ledger keeps in its `Metrics`. */
export const AuditLedgerMetric = {
  RecordsWritten: 'audit_records_written_total',
  WriteErrors: 'audit_write_errors_total',
  Checkpoints: 'audit_checkpoints_total',
  CheckpointErrors: 'audit_checkpoint_errors_total',
  BacklogRejections: 'audit_backlog_rejections_total',
} as const;

/** Options of {@link AuditLedger.open}; see `auditLedgerOptions` to derive them from the config. */
export interface AuditLedgerOptions {
  /** The ledger directory (created 0700 if missing). */
  readonly dir: string;
  /** `critical` (default): fsync before resolving a durable append; `always`: every append; `never`. */
  readonly fsync?: FsyncPolicy;
  /** Start a new ledger file past this size; default 64 MiB. */
  readonly rotateBytes?: number;
  /**
   * Checkpoint after `everyRecords` records, but not sooner than `minIntervalMs` after the previous
   * checkpoint (the count then asks for one that late), and every `everyMs` (0: no timer); default
   * 1000 records, no minimum, 60 s. (The configuration's default minimum is 1 s.)
   */
  readonly checkpoint?: {
    readonly everyRecords: number;
    readonly everyMs: number;
    readonly minIntervalMs?: number;
  };
  /** The signer key file; default `<dir>/keys/checkpoint.key`, created when missing. */
  readonly keyFile?: string;
  readonly anchor?: AnchorOptions;
  /** Extra redaction: member names (substrings, any case) and regular expressions over values. */
  readonly redact?: { readonly keys?: readonly string[]; readonly patterns?: readonly string[] };
  /** `error` texts are cut to this many characters; default 1024. */
  readonly maxErrorLength?: number;
  /** The checkpoint origin line; default the signing key's name (`switchboard/audit/<16 hex>`). */
  readonly origin?: string;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** Milliseconds since the epoch, for `ts` and checkpoint times; default `Date.now`. */
  readonly clock?: () => number;
  /** The file system port (tests inject failures). */
  readonly io?: LedgerIo;
  /** While unhealthy, probe the file system this often (ms) to recover without an append; default 1000. */
  readonly probeIntervalMs?: number;
  /**
   * How long a non-durable append may wait for others to share its write (ms); default 20. A durable
   * append, a checkpoint and `close` flush at once. 0: every append starts the flush loop at once.
   */
  readonly flushDelayMs?: number;
  /** Once this many appends wait, they are written without waiting out `flushDelayMs`; default 64. */
  readonly flushRecords?: number;
  /**
   * Appends that may wait for the flush loop (queued, not yet written) before the ledger refuses
   * more and reports itself unhealthy; default 100,000 (see the module comment).
   */
  readonly maxQueued?: number;
  /**
   * The same bound in bytes the waiting events hold (their output text, plus 512 each); default
   * 64 MiB. One event is always taken when nothing waits, whatever its size.
   */
  readonly maxQueuedBytes?: number;
  /**
   * Below this many free bytes on the ledger's file system the ledger reports itself unhealthy
   * (see the module comment); default 64 MiB, 0: not watched.
   */
  readonly minFreeBytes?: number;
  /** How often the free space is asked (ms) when nothing else asks; default 1000. */
  readonly spaceCheckIntervalMs?: number;
  /** The free-space port (tests inject one); default `statfs`. */
  readonly freeSpace?: FreeSpace;
}

/** What `append` resolves with: the record's place in the chain. */
export interface AppendResult {
  readonly seq: number;
  readonly entryHash: string;
}

interface CheckpointWaiter {
  /** The last seq built when the checkpoint was asked for. */
  readonly upTo: number;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** What an unawaited append does with its result. */
function ignore(): void {}

/** A queued append: its event until the flush loop builds its line (queue order = chain order). */
interface Pending {
  event: AuditEvent | undefined;
  /** Milliseconds since the epoch when `append` was called: the record's `ts`. */
  readonly ts: number;
  /** {@link heldBytes} of the event, counted in `#queuedBytes` until the line is built. */
  readonly held: number;
  /** The built line (bytes, hashes), once built. */
  line: EncodedLine | undefined;
  /** Bytes of the line with its newline; 0 until built. */
  bytes: number;
  head: LedgerHead;
  readonly durable: boolean;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: unknown) => void;
}

/** Most lines and bytes written in one batch (bounds latency and memory under a burst). */
const MAX_BATCH_LINES = 4096;
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
/**
 * Most records built in one turn of the event loop. Building costs some microseconds a record, all
 * of it on the event loop: a backlog (the queue a slow `fdatasync` or a burst leaves) is built and
 * written this many at a time, with the event loop free to serve requests in between, instead of
 * stalling it for the whole backlog (100,000 records would be most of a second). The usual batch
 * is far smaller, and then nothing changes.
 */
const BUILD_CHUNK = 256;

const DEFAULTS = {
  fsync: 'critical',
  rotateBytes: 64 * 1024 * 1024,
  everyRecords: 1000,
  everyMs: 60_000,
  maxErrorLength: 1024,
  flushDelayMs: 20,
  flushRecords: 64,
  maxQueued: 100_000,
  maxQueuedBytes: 64 * 1024 * 1024,
  minFreeBytes: 64 * 1024 * 1024,
  spaceCheckIntervalMs: 1000,
} as const;

/** Resolves in the event loop's next check phase, after the I/O that is ready now is served. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** What a waiting event is counted as holding, besides its output text. */
const EVENT_OVERHEAD_BYTES = 512;

/**
 * `event` with its `result` serialised into `output` now, as the record would hash it (an event
 * that has an `output`, or neither, is returned as it is). An append takes the result's text at
 * once: the queue then holds a string whose size {@link heldBytes} can count, not an object graph of
 * unknown size, and the caller changing the result afterwards changes nothing.
 */
function withOutputText(event: AuditEvent): AuditEvent {
  if (
    typeof event !== 'object' ||
    event === null ||
    event.output !== undefined ||
    event.result === undefined
  ) {
    return event;
  }
  const { result: _serialised, ...rest } = event;
  const output = eventOutput(event);
  // Not serialisable (a cycle, a BigInt): no output to hash, as when the record is built.
  return typeof output === 'string' ? { ...rest, output } : rest;
}

/** Roughly the memory an event holds until its record is built (the output dominates). */
function heldBytes(event: AuditEvent): number {
  // An event that is not even an object is refused when it is built, not here.
  const output = typeof event === 'object' && event !== null ? event.output : undefined;
  return EVENT_OVERHEAD_BYTES + (typeof output === 'string' ? output.length : 0);
}

function unavailable(message: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError(
    SbErrorCode.AuditUnavailable,
    message,
    cause === undefined ? undefined : { cause },
  );
}

/** The options of {@link AuditLedger.open} for the configuration's `audit` section. */
export function auditLedgerOptions(config: AuditConfig, dataDir: string): AuditLedgerOptions {
  const dir = config.dir === undefined ? join(dataDir, 'audit') : resolve(dataDir, config.dir);
  return {
    dir,
    fsync: config.fsync,
    flushDelayMs: config.flushDelayMs,
    rotateBytes: config.rotateBytes,
    checkpoint: config.checkpoint,
    redact: config.redact,
    maxErrorLength: config.maxErrorLength,
    minFreeBytes: config.minFreeBytes,
    ...(config.key === undefined
      ? {}
      : { keyFile: isAbsolute(config.key) ? config.key : resolve(dataDir, config.key) }),
    ...(config.anchor === undefined ? {} : { anchor: config.anchor }),
  };
}

/** The ledger; see the module comment. Open with {@link AuditLedger.open}. */
export class AuditLedger {
  readonly #fsync: FsyncPolicy;
  readonly #everyRecords: number;
  readonly #encoder: RecordEncoder;
  readonly #clock: () => number;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #signer: NoteSigner;
  readonly #files: LedgerFileWriter;
  readonly #checkpoints: CheckpointWriter;
  readonly #tree: LedgerTree;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #lock: LedgerLock;
  readonly #probeIntervalMs: number;
  readonly #flushDelayMs: number;
  readonly #flushRecords: number;
  readonly #minIntervalMs: number;
  /** `performance.now()` when the last checkpoint was written in this run. */
  #lastCheckpointAt = Number.NEGATIVE_INFINITY;
  /** Set while a checkpoint the count asked for waits out `minIntervalMs`. */
  #deferredCheckpoint: NodeJS.Timeout | undefined;
  readonly #maxQueued: number;
  readonly #maxQueuedBytes: number;
  /** What the queued events not yet built hold ({@link heldBytes}). */
  #queuedBytes = 0;
  /** Set once the queue was full (see `#full`), until it is down to half of both bounds. */
  #backlogged = false;
  /** Set while non-durable appends wait to share a write. */
  #flushTimer: NodeJS.Timeout | undefined;
  /** Runs while the ledger is unhealthy: see {@link AuditLedger.healthy}. */
  #probeTimer: NodeJS.Timeout | undefined;
  #probeWanted = false;
  /** The last record built (queued or written). */
  #head: LedgerHead;
  /** The last record written. */
  #committed: LedgerHead;
  #lastLine: LinePosition | undefined;
  #queue: Pending[] = [];
  /** How many of the queue's first entries have their line built (always a prefix of the queue). */
  #built = 0;
  /** `checkpoint()` and `close()` calls: each waits for a checkpoint covering the records built before it. */
  #checkpointWaiters: CheckpointWaiter[] = [];
  /** The count or the timer asks for a checkpoint: it goes before the next batch, so load cannot starve it. */
  #checkpointDue = false;
  #loop: Promise<void> | undefined;
  #healthy = true;
  /** What the last failed write said (`unavailable`'s detail). */
  #lastFailure = '';
  readonly #space: FreeSpaceWatch;
  #failures = 0;
  #closing = false;
  #closed: Promise<void> | undefined;

  private constructor(parts: {
    options: AuditLedgerOptions;
    signer: NoteSigner;
    files: LedgerFileWriter;
    checkpoints: CheckpointWriter;
    recovered: Awaited<ReturnType<typeof recoverLedger>>;
    lock: LedgerLock;
    logger: Logger;
    metrics: Metrics;
  }) {
    const { options } = parts;
    this.#fsync = options.fsync ?? DEFAULTS.fsync;
    this.#everyRecords = options.checkpoint?.everyRecords ?? DEFAULTS.everyRecords;
    this.#encoder = new RecordEncoder({
      redact: {
        extraKeyPatterns: options.redact?.keys ?? [],
        extraValuePatterns: (options.redact?.patterns ?? []).map((pattern) => new RegExp(pattern, 'g')),
      },
      maxErrorLength: options.maxErrorLength ?? DEFAULTS.maxErrorLength,
    });
    this.#clock = options.clock ?? Date.now;
    this.#logger = parts.logger;
    this.#metrics = parts.metrics;
    this.#signer = parts.signer;
    this.#files = parts.files;
    this.#checkpoints = parts.checkpoints;
    this.#tree = parts.recovered.tree;
    this.#head = parts.recovered.head;
    this.#committed = parts.recovered.head;
    this.#lastLine = parts.recovered.lastLine;
    this.#lock = parts.lock;
    this.#probeIntervalMs = options.probeIntervalMs ?? 1000;
    this.#flushDelayMs = options.flushDelayMs ?? DEFAULTS.flushDelayMs;
    this.#flushRecords = Math.max(1, options.flushRecords ?? DEFAULTS.flushRecords);
    this.#maxQueued = Math.max(1, options.maxQueued ?? DEFAULTS.maxQueued);
    this.#maxQueuedBytes = Math.max(1, options.maxQueuedBytes ?? DEFAULTS.maxQueuedBytes);
    this.#minIntervalMs = Math.max(0, options.checkpoint?.minIntervalMs ?? 0);
    this.#space = new FreeSpaceWatch({
      dir: options.dir,
      minFreeBytes: Math.max(0, options.minFreeBytes ?? DEFAULTS.minFreeBytes),
      intervalMs: Math.max(1, options.spaceCheckIntervalMs ?? DEFAULTS.spaceCheckIntervalMs),
      freeSpace: options.freeSpace ?? nodeFreeSpace,
      logger: parts.logger,
      metrics: parts.metrics,
    });
    const everyMs = options.checkpoint?.everyMs ?? DEFAULTS.everyMs;
    if (everyMs > 0) {
      this.#timer = setInterval(() => this.#requestCheckpoint(), everyMs);
      this.#timer.unref();
    }
  }

  /**
   * Opens (creating) the ledger in `options.dir`: takes its writer lock (one writer per ledger),
   * loads or creates the signing key, recovers the chain head and the accumulator (from
   * `state.json`, or by reading the log once), opens the file to append to, and checkpoints the
   * records a previous run left uncovered.
   *
   * @throws SwitchboardError `SB_AUDIT_UNAVAILABLE` when the directory or files cannot be created or
   *   read, or another live process writes this ledger; `SB_CONFIG_INVALID` for an unusable key
   *   file or origin.
   */
  static async open(options: AuditLedgerOptions): Promise<AuditLedger> {
    const logger = (options.logger ?? silentLogger).child({ component: 'audit' });
    const metrics = options.metrics ?? new Metrics();
    const io = options.io ?? nodeLedgerIo;
    const { dir } = options;
    const sync = (options.fsync ?? DEFAULTS.fsync) !== 'never';
    let lock: LedgerLock | undefined;
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      lock = await acquireLedgerLock(dir, logger);
      const signer = await loadCheckpointSigner({
        keyFile: options.keyFile ?? join(dir, SIGNER_KEY_FILE),
        verifierFile: join(dir, VERIFIER_KEY_FILE),
        ...(options.origin === undefined ? {} : { name: options.origin }),
        logger,
      });
      const recovered = await recoverLedger(dir, logger);
      const files = new LedgerFileWriter({
        dir,
        io,
        rotateBytes: options.rotateBytes ?? DEFAULTS.rotateBytes,
        syncOnRotate: sync,
        logger,
      });
      await files.open(recovered.appendTo.index, recovered.appendTo.size);
      const checkpoints = new CheckpointWriter({
        dir,
        io,
        signer,
        origin: options.origin ?? signer.name,
        sync,
        anchor: createAnchorSink(options.anchor, logger, metrics),
        logger,
        clock: options.clock ?? Date.now,
        last: recovered.checkpoint,
      });
      const ledger = new AuditLedger({
        options,
        signer,
        files,
        checkpoints,
        recovered,
        lock,
        logger,
        metrics,
      });
      if (recovered.tree.size > recovered.checkpoint.size) ledger.#requestCheckpoint();
      // Known before the first call is admitted.
      await ledger.#space.check();
      ledger.#space.start();
      return ledger;
    } catch (error) {
      await lock?.release();
      if (error instanceof SwitchboardError) throw error;
      throw unavailable(`Cannot open the audit ledger in ${dir}: ${(error as Error).message}`, error);
    }
  }

  /**
   * False once a write failed, until a write succeeds again. While unhealthy the ledger also probes
   * the file system every second (reopening and syncing its file, writing a probe file beside it),
   * so that it recovers even when the governance layer, refusing audited calls, appends nothing.
   * Also false while the queue is full because writes hang, and while the file system's free space
   * is below `minFreeBytes` (see the module comment). `unavailable` says why.
   */
  get healthy(): boolean {
    return this.#healthy && !this.#backlogged && this.#space.low === undefined;
  }

  /** Why the ledger is not {@link healthy}, the first reason that holds; undefined while it is. */
  get unavailable(): LedgerUnavailable | undefined {
    if (!this.#healthy) return { reason: 'write-failed', detail: this.#lastFailure };
    if (this.#backlogged)
      return {
        reason: 'backlog',
        detail: `${this.#queue.length} records wait for writes that do not complete`,
      };
    const free = this.#space.low;
    if (free !== undefined)
      return {
        reason: 'low-space',
        detail: `${free} bytes free on its file system, below audit.minFreeBytes (${this.#space.minFreeBytes})`,
      };
    return undefined;
  }

  /** Records waiting in the queue to be written (`switchboard_audit_queue_records`). */
  get queued(): number {
    return this.#queue.length;
  }

  /** The checkpoint verifier key (a signed-note verifier key string), for publishing. */
  get verifierKey(): string {
    return this.#signer.verifierKey;
  }

  /** The last record written: seq 0 and 64 zeros for an empty ledger. */
  get head(): AppendResult {
    return { seq: this.#committed.seq, entryHash: this.#committed.entryHash };
  }

  /**
   * Records `event`. Resolves once its line is written, and fsynced when `durable` is set under the
   * `critical` policy or always under `always` (`never` ignores `durable`). The record's `ts` is
   * taken now; the line is built by the flush loop (see the module comment).
   *
   * @throws (rejects) SwitchboardError `SB_AUDIT_UNAVAILABLE` when the line cannot be written or
   *   the ledger is closed; `SB_INTERNAL` for an invalid event (unknown tier or decision, no method).
   */
  append(raw: AuditEvent, options: { durable?: boolean } = {}): Promise<AppendResult> {
    if (this.#closing) return Promise.reject(unavailable('The audit ledger is closed'));
    const event = withOutputText(raw);
    const held = heldBytes(event);
    if (this.#full(held)) return Promise.reject(this.#backlog());
    const durable = this.#fsync === 'always' || (this.#fsync === 'critical' && options.durable === true);
    return new Promise<AppendResult>((resolve, reject) =>
      this.#enqueue(event, held, durable, resolve, reject),
    );
  }

  /**
   * {@link append} for a caller that does not wait for the write (a T0/T1 call, answered before its
   * record is written): no promise, which costs hooks with the request scope's `AsyncLocalStorage`
   * on. `failed` is called, once, with what `append` would have rejected with; never `durable`.
   */
  appendUnawaited(raw: AuditEvent, failed: (error: unknown) => void): void {
    if (this.#closing) {
      failed(unavailable('The audit ledger is closed'));
      return;
    }
    const event = withOutputText(raw);
    const held = heldBytes(event);
    if (this.#full(held)) {
      failed(this.#backlog());
      return;
    }
    this.#enqueue(event, held, this.#fsync === 'always', ignore, failed);
  }

  /** Queues an accepted append, stamped now, and schedules the flush loop. */
  #enqueue(
    event: AuditEvent,
    held: number,
    durable: boolean,
    resolve: (result: AppendResult) => void,
    reject: (error: unknown) => void,
  ): void {
    const ts = this.#clock();
    this.#queue.push({
      event,
      ts,
      held,
      line: undefined,
      bytes: 0,
      head: this.#head,
      durable,
      resolve,
      reject,
    });
    this.#queuedBytes += held;
    this.#schedule(durable);
  }

  /** Whether an append holding `held` bytes must be refused (see `maxQueued`, `maxQueuedBytes`). */
  #full(held: number): boolean {
    if (this.#queue.length >= this.#maxQueued) return true;
    return this.#queue.length > 0 && this.#queuedBytes + held > this.#maxQueuedBytes;
  }

  /** An append refused because the queue is full: the first one of a backlog is logged. */
  #backlog(): SwitchboardError {
    this.#metrics.inc(AuditLedgerMetric.BacklogRejections);
    if (!this.#backlogged) {
      this.#backlogged = true;
      this.#logger.error(
        { queued: this.#queue.length, queuedBytes: this.#queuedBytes, committedSeq: this.#committed.seq },
        'audit ledger: writes are not completing and the queue is full; audited calls are refused until it drains',
      );
    }
    return unavailable(
      `The audit ledger is ${this.#queue.length} records behind its writes; audited calls are refused until it catches up`,
    );
  }

  /** After a batch is written: a backlog is over once the queue is down to half of both bounds. */
  #drained(): void {
    if (!this.#backlogged) return;
    if (this.#queue.length > this.#maxQueued / 2 || this.#queuedBytes > this.#maxQueuedBytes / 2) return;
    this.#backlogged = false;
    this.#logger.info({ queued: this.#queue.length }, 'audit ledger: the queue has drained; writable again');
  }

  /**
   * Starts the flush loop now (durable, or `flushRecords` waiting), or within `flushDelayMs` unless
   * it runs or is due already.
   */
  #schedule(now: boolean): void {
    if (now || this.#flushDelayMs === 0 || this.#queue.length >= this.#flushRecords) {
      this.#cancelFlushTimer();
      this.#kick();
      return;
    }
    // A running loop takes what is queued when its batch is done.
    if (this.#loop !== undefined || this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      this.#kick();
    }, this.#flushDelayMs);
  }

  #cancelFlushTimer(): void {
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
  }

  /**
   * Builds the lines of the queued appends (at most `limit` of them), in queue order, extending the
   * chain head. An event that cannot be encoded (a bug of the caller) is rejected and leaves the
   * chain as it was.
   */
  #buildQueued(limit: number): void {
    let stop = Math.min(this.#queue.length, this.#built + limit);
    while (this.#built < stop) {
      const pending = this.#queue[this.#built] as Pending;
      const event = pending.event as AuditEvent;
      try {
        const seq = this.#head.seq + 1;
        const line = this.#encoder.encode(event, seq, isoTimestamp(pending.ts), this.#head.entryHash);
        pending.line = line;
        pending.bytes = line.bytes;
        pending.head = { seq, entryHash: line.entryHash };
        pending.event = undefined;
        this.#queuedBytes -= pending.held;
        this.#head = pending.head;
        this.#built++;
      } catch (error) {
        this.#queue.splice(this.#built, 1);
        stop--;
        this.#queuedBytes -= pending.held;
        pending.reject(error);
      }
    }
  }

  /** Writes a checkpoint of everything written so far (nothing when nothing is new). */
  checkpoint(): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    return this.#checkpointNow();
  }

  /**
   * Flushes, writes a final checkpoint, closes the files, waits for the anchor and releases the
   * writer lock. Idempotent.
   */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    this.#closing = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    if (this.#deferredCheckpoint !== undefined) clearTimeout(this.#deferredCheckpoint);
    this.#cancelFlushTimer();
    this.#stopProbing();
    this.#space.stop();
    try {
      await this.#checkpointNow();
    } catch {
      // Logged by the checkpoint step; closing goes on.
    }
    await this.#files.close(this.#fsync !== 'never').catch((error: unknown) => {
      this.#logger.error({ err: (error as Error).message }, 'audit ledger: cannot close the ledger file');
    });
    await this.#checkpoints.close();
    await this.#lock.release();
  }

  #checkpointNow(): Promise<void> {
    // The appends made before now take the next seqs in queue order, so the waiter's `upTo` covers
    // every one of them without building them here (a backlog is built a chunk at a time). An event
    // that fails to build takes no seq: then `upTo` is one past the last of them, and the waiter is
    // served by a later record or once the queue is empty, covering them all the same.
    const unbuilt = this.#queue.length - this.#built;
    this.#cancelFlushTimer();
    return new Promise<void>((resolve, reject) => {
      this.#checkpointWaiters.push({ upTo: this.#head.seq + unbuilt, resolve, reject });
      this.#kick();
    });
  }

  #requestCheckpoint(): void {
    if (this.#closing || this.#tree.size <= this.#checkpoints.lastSize) return;
    this.#checkpointDue = true;
    this.#kick();
  }

  /** A checkpoint is due, or a waiter's records are all written (or nothing more is queued). */
  #checkpointReady(): boolean {
    if (this.#checkpointDue) return true;
    if (this.#checkpointWaiters.length === 0) return false;
    return this.#queue.length === 0 || this.#checkpointWaiters.some((w) => w.upTo <= this.#committed.seq);
  }

  /** Starts the flush loop unless it runs; it drains the queue, then any checkpoint asked for. */
  #kick(): void {
    if (this.#loop !== undefined) return;
    this.#loop = Promise.resolve()
      .then(() => this.#drain())
      .finally(() => {
        this.#loop = undefined;
        if (this.#queue.length > 0 || this.#checkpointReady() || this.#probeWanted) this.#kick();
      });
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#checkpointReady()) await this.#writeCheckpoint();
      else if (this.#queue.length > 0) {
        await this.#writeBatch();
        // More than one chunk was queued: the rest waits for the next turn of the event loop.
        if (this.#queue.length > 0) await nextTurn();
      } else if (this.#probeWanted) await this.#probe();
      else return;
    }
  }

  #startProbing(): void {
    if (this.#probeTimer !== undefined || this.#closing) return;
    this.#probeTimer = setInterval(() => {
      this.#probeWanted = true;
      this.#kick();
    }, this.#probeIntervalMs);
    this.#probeTimer.unref();
  }

  #stopProbing(): void {
    if (this.#probeTimer !== undefined) clearInterval(this.#probeTimer);
    this.#probeTimer = undefined;
    this.#probeWanted = false;
  }

  #recovered(how: string): void {
    if (!this.#healthy) this.#logger.info({ failures: this.#failures, how }, 'audit ledger: writable again');
    this.#healthy = true;
    this.#failures = 0;
    this.#stopProbing();
  }

  /** While unhealthy: is the file system writable again? (No record is written.) */
  async #probe(): Promise<void> {
    this.#probeWanted = false;
    if (this.#healthy) return;
    try {
      await this.#files.probe();
      this.#recovered('a probe succeeded');
    } catch {
      // Still failing: the next probe or append tries again.
    }
  }

  /**
   * Takes the lines that fit the current file (rotating first when the first does not fit a file
   * that has lines already), up to the batch limits, and lie one after another in one arena (so the
   * batch is one slice of it); at least one line.
   */
  async #takeBatch(): Promise<Pending[]> {
    const first = this.#queue[0] as Pending;
    // Entries queued while a rotation below is awaited are not built yet: only the built prefix goes.
    if (first.bytes > this.#files.room && this.#files.size > 0) await this.#files.rotate();
    const room = Math.min(Math.max(this.#files.room, first.bytes), MAX_BATCH_BYTES);
    const arena = (first.line as EncodedLine).buffer;
    let bytes = first.bytes;
    let count = 1;
    while (count < this.#built && count < MAX_BATCH_LINES) {
      const next = (this.#queue[count] as Pending).line as EncodedLine;
      if (
        bytes + next.bytes > room ||
        next.buffer !== arena ||
        next.start !== (first.line as EncodedLine).start + bytes
      ) {
        break;
      }
      bytes += next.bytes;
      count++;
    }
    this.#built -= count;
    return this.#queue.splice(0, count);
  }

  async #writeBatch(): Promise<void> {
    let batch: Pending[] = [];
    try {
      this.#buildQueued(BUILD_CHUNK);
      if (this.#built === 0) return;
      batch = await this.#takeBatch();
      let durable = false;
      for (const pending of batch) durable ||= pending.durable;
      const first = (batch[0] as Pending).line as EncodedLine;
      const last = batch[batch.length - 1] as Pending;
      const lastLine = last.line as EncodedLine;
      const data = first.buffer.subarray(first.start, lastLine.start + lastLine.bytes);
      const offset = await this.#files.write(data, durable);
      // The leaves were hashed from these bytes when they were built.
      for (const pending of batch) this.#tree.append((pending.line as EncodedLine).leaf);
      this.#encoder.written(first.buffer);
      this.#committed = last.head;
      this.#lastLine = {
        file: this.#files.file,
        lineStart: offset + (lastLine.start - first.start),
        offset: offset + data.length,
      };
      this.#metrics.inc(AuditLedgerMetric.RecordsWritten, undefined, batch.length);
      this.#space.wrote(data.length);
      this.#recovered('a write succeeded');
      this.#drained();
      for (const pending of batch)
        pending.resolve({ seq: pending.head.seq, entryHash: pending.head.entryHash });
      if (this.#tree.size - this.#checkpoints.lastSize >= this.#everyRecords) this.#countReached();
    } catch (error) {
      this.#fail(batch, error);
    }
  }

  /** `everyRecords` are uncovered: a checkpoint now, or once `minIntervalMs` has passed. */
  #countReached(): void {
    const wait = this.#lastCheckpointAt + this.#minIntervalMs - performance.now();
    if (wait <= 0) {
      this.#checkpointDue = true;
      return;
    }
    if (this.#deferredCheckpoint !== undefined) return;
    this.#deferredCheckpoint = setTimeout(() => {
      this.#deferredCheckpoint = undefined;
      this.#requestCheckpoint();
    }, wait);
    this.#deferredCheckpoint.unref();
  }

  #fail(batch: Pending[], error: unknown): void {
    const rejected = [...batch, ...this.#queue.splice(0)];
    this.#built = 0;
    this.#head = this.#committed;
    this.#healthy = false;
    // The queue is empty now: the failure, not the backlog, is what keeps the ledger unhealthy.
    this.#queuedBytes = 0;
    this.#backlogged = false;
    this.#failures++;
    this.#startProbing();
    this.#metrics.inc(AuditLedgerMetric.WriteErrors);
    const message = error instanceof Error ? error.message : String(error);
    this.#lastFailure = message;
    // A full disk is the usual cause: knowing it keeps the ledger unhealthy until there is room.
    void this.#space.check();
    const fields = { err: message, code: (error as NodeJS.ErrnoException).code, refused: rejected.length };
    const text = 'audit ledger: cannot write records; audited calls are refused until a write succeeds';
    if (this.#failures === 1) this.#logger.error(fields, text);
    else this.#logger.warn({ ...fields, failures: this.#failures }, text);
    const failure = unavailable(`The audit ledger cannot be written: ${message}`, error);
    for (const pending of rejected) pending.reject(failure);
  }

  async #writeCheckpoint(): Promise<void> {
    // Served: the waiters whose records are written, or all of them when nothing more is queued.
    const all = this.#queue.length === 0;
    const waiters = this.#checkpointWaiters.filter((w) => all || w.upTo <= this.#committed.seq);
    this.#checkpointWaiters = this.#checkpointWaiters.filter((w) => !waiters.includes(w));
    this.#checkpointDue = false;
    const lastLine = this.#lastLine;
    try {
      if (this.#tree.size > this.#checkpoints.lastSize && lastLine !== undefined) {
        // The records must be durable before a checkpoint covers them.
        if (this.#fsync !== 'never') await this.#files.sync();
        await this.#checkpoints.write(this.#tree, this.#committed, lastLine);
        this.#lastCheckpointAt = performance.now();
        this.#metrics.inc(AuditLedgerMetric.Checkpoints);
      }
      for (const waiter of waiters) waiter.resolve();
    } catch (error) {
      this.#metrics.inc(AuditLedgerMetric.CheckpointErrors);
      this.#logger.error({ err: (error as Error).message }, 'audit ledger: cannot write a checkpoint');
      void this.#space.check();
      const failure = unavailable(`Cannot write an audit checkpoint: ${(error as Error).message}`, error);
      for (const waiter of waiters) waiter.reject(failure);
    }
  }
}
