/**
 * The SQLite trace store in a worker thread: an adapter of the `TraceStore` port whose writes
 * never run on the caller's event loop. The worker (`trace-worker.ts`) owns the writer connection;
 * this side only hands it work:
 *
 * - `append`, `appendHops` and `upsertSession` post a message and return (a batch of hops is one
 *   flat array, see `trace-wire.ts`); their outcome shows in `written`, `failed` and `queued`,
 *   counters the worker keeps in shared memory, and failures also through `onWriteError`.
 * - Reads and `prune` are synchronous, as the port says: the request is posted behind every write
 *   already handed over, and the caller sleeps (`Atomics.wait`) until the answer is on the reply
 *   port. They are for tools and tests; the gateway itself never reads its trace.
 * - `close` waits the same way until the worker has written everything and closed the database,
 *   so that nothing handed over is lost on a clean shutdown.
 *
 * Bounding memory is the caller's part (`TraceRecorder` counts `queued` against its limit).
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import type { SqliteTraceStoreOptions } from './sqlite-trace-store.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from './stored-payload.js';
import { type TraceHop, traceHopOf } from './trace-hop.js';
import { cloneSafeHops, encodeHops } from './trace-wire.js';
import {
  SHARED_BYTES,
  type TraceWorkerCall,
  type TraceWorkerData,
  type TraceWorkerError,
  type TraceWorkerNotice,
  type TraceWorkerReply,
  type TraceWorkerRequest,
  WorkerCounter,
} from './trace-worker-protocol.js';
import type {
  CorrelationGraph,
  DeferredTraceStore,
  ManagedTraceStore,
  TracePruneOptions,
  TraceRecord,
  TraceSessionInfo,
  TraceSessionSummary,
} from './types.js';

/** Where the worker's code is, and how to start it (tests start it from the TypeScript sources). */
export interface TraceWorkerModule {
  readonly url: URL;
  readonly execArgv?: readonly string[];
}

export interface WorkerTraceStoreOptions extends Omit<SqliteTraceStoreOptions, 'readonly'> {
  /** Default: `trace-worker.js` next to this module. */
  readonly worker?: TraceWorkerModule;
  /**
   * How long the caller waits for the worker to open the database, to answer a read, or to finish
   * writing on `close`. Default 30 s.
   */
  readonly timeoutMs?: number;
}

const DEFAULT_WORKER: TraceWorkerModule = { url: new URL('./trace-worker.js', import.meta.url) };

export class WorkerTraceStore implements ManagedTraceStore, DeferredTraceStore {
  readonly path: string;
  onWriteError: ((error: Error, lost: number) => void) | undefined;
  readonly #worker: Worker;
  readonly #reply: MessagePort;
  readonly #flag: Int32Array;
  readonly #counters: BigInt64Array;
  readonly #timeoutMs: number;
  readonly #maxPayloadBytes: number;
  /** Reply counter value last seen. */
  #seen = 0;
  /** Records handed to the worker. */
  #posted = 0;
  /** Records the worker will never settle (it died with them). */
  #abandoned = 0;
  #closed = false;
  /** Why the worker is gone, when it ended without being closed. */
  #broken: Error | undefined;

  /**
   * Starts the worker and waits until it has opened (creating and migrating) the database at
   * `path`; throws `SB_TRACE_STORE` when it cannot.
   */
  constructor(path: string, options: WorkerTraceStoreOptions = {}) {
    this.path = path;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    const shared = new SharedArrayBuffer(SHARED_BYTES);
    this.#flag = new Int32Array(shared, 0, 1);
    this.#counters = new BigInt64Array(shared, 8, 3);
    const { port1, port2 } = new MessageChannel();
    this.#reply = port1;
    // Never started: answers are taken from it synchronously, with receiveMessageOnPort.
    port1.unref();
    const module = options.worker ?? DEFAULT_WORKER;
    const data: TraceWorkerData = {
      path,
      shared,
      reply: port2,
      ...(options.maxPayloadBytes === undefined ? {} : { maxPayloadBytes: options.maxPayloadBytes }),
      ...(options.payloads === undefined ? {} : { payloads: options.payloads }),
      ...(options.redact === undefined ? {} : { redact: options.redact }),
      ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
    };
    this.#worker = new Worker(module.url, {
      workerData: data,
      transferList: [port2],
      // The gateway's own Node flags (a --cpu-prof, say) apply to the worker too.
      ...(module.execArgv === undefined ? {} : { execArgv: [...process.execArgv, ...module.execArgv] }),
      // The worker logs nothing of its own; its stdout must never mix into a stdio gateway's output.
      stdout: true,
      stderr: false,
    });
    this.#worker.stdout.resume();
    // The trace must never keep a finished process alive; `close()` is how to write the tail.
    this.#worker.unref();
    this.#worker.on('message', (notice: TraceWorkerNotice) => this.#notice(notice));
    this.#worker.on('error', (err) => this.#gone(err));
    this.#worker.on('exit', (code) => {
      if (!this.#closed) this.#gone(new Error(`the trace worker exited with code ${code}`));
    });
    try {
      this.#await('open');
    } catch (err) {
      this.#closed = true;
      void this.#worker.terminate();
      throw err;
    }
  }

  /** Records handed over whose write is not settled yet. */
  get queued(): number {
    return Math.max(0, this.#posted - this.written - this.failed);
  }

  /** Records written since the store opened (a duplicate id counts: it was accepted and ignored). */
  get written(): number {
    return Number(Atomics.load(this.#counters, WorkerCounter.Written));
  }

  /** Records lost since the store opened: to write errors, or with a worker that died. */
  get failed(): number {
    return Number(Atomics.load(this.#counters, WorkerCounter.Failed)) + this.#abandoned;
  }

  /** Failed writes (batches and session upserts) since the store opened. */
  get writeErrors(): number {
    return Number(Atomics.load(this.#counters, WorkerCounter.Errors));
  }

  append(records: readonly TraceRecord[]): void {
    this.appendHops(records.map(traceHopOf));
  }

  /** Hands a batch to the worker and returns at once. Throws `SB_TRACE_STORE` once closed or broken. */
  appendHops(hops: readonly TraceHop[]): void {
    this.#usable();
    if (hops.length === 0) return;
    try {
      this.#post({ op: 'append', slots: encodeHops(hops), count: hops.length });
    } catch (err) {
      if (!(err instanceof Error && err.name === 'DataCloneError')) throw this.#error('append to', err);
      this.#post({
        op: 'append',
        slots: encodeHops(cloneSafeHops(hops, this.#maxPayloadBytes)),
        count: hops.length,
      });
    }
    this.#posted += hops.length;
  }

  upsertSession(info: TraceSessionInfo): void {
    this.#usable();
    try {
      this.#post({ op: 'session', info });
    } catch (err) {
      throw this.#error('record a session in', err);
    }
  }

  sessions(options: { readonly limit?: number } = {}): TraceSessionSummary[] {
    return this.#call({ op: 'call', method: 'sessions', args: [options] }) as TraceSessionSummary[];
  }

  sessionInfo(keyOrMcpSessionId: string): TraceSessionSummary | undefined {
    return this.#call({ op: 'call', method: 'sessionInfo', args: [keyOrMcpSessionId] }) as
      | TraceSessionSummary
      | undefined;
  }

  session(keyOrMcpSessionId: string): TraceRecord[] {
    return this.#call({ op: 'call', method: 'session', args: [keyOrMcpSessionId] }) as TraceRecord[];
  }

  subtree(context: string): TraceRecord[] {
    return this.#call({ op: 'call', method: 'subtree', args: [context] }) as TraceRecord[];
  }

  get(id: string): TraceRecord | undefined {
    return this.#call({ op: 'call', method: 'get', args: [id] }) as TraceRecord | undefined;
  }

  follow(id: string, options: { readonly maxDepth?: number } = {}): CorrelationGraph | undefined {
    return this.#call({ op: 'call', method: 'follow', args: [id, options] }) as CorrelationGraph | undefined;
  }

  prune(options: TracePruneOptions): number {
    return this.#call({ op: 'call', method: 'prune', args: [options] }) as number;
  }

  /** Waits until everything handed over so far is written (or failed). */
  barrier(): void {
    this.#call({ op: 'call', method: 'barrier', args: [] });
  }

  /**
   * Waits until the worker has written everything handed over and closed the database, then ends
   * it. Idempotent. Throws `SB_TRACE_STORE` when the worker does not finish in time.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#broken !== undefined) return;
    let finished = false;
    try {
      this.#post({ op: 'close' });
      this.#await('close');
      finished = true;
    } finally {
      // A worker that answered ends by itself (and writes its CPU profile when asked to); one that
      // did not is stopped.
      if (!finished) void this.#worker.terminate();
    }
  }

  #usable(): void {
    if (this.#closed)
      throw new SwitchboardError(SbErrorCode.TraceStore, `the trace store ${this.path} is closed`);
    if (this.#broken !== undefined)
      throw new SwitchboardError(
        SbErrorCode.TraceStore,
        `the trace worker for ${this.path} is gone: ${this.#broken.message}`,
        { cause: this.#broken, details: { path: this.path } },
      );
  }

  #post(request: TraceWorkerRequest): void {
    this.#worker.postMessage(request);
  }

  #call(request: TraceWorkerCall): unknown {
    this.#usable();
    this.#post(request);
    return this.#await(request.method);
  }

  /** Sleeps until the worker's next answer is on the reply port; returns its value or throws its error. */
  #await(what: string): unknown {
    const deadline = Date.now() + this.#timeoutMs;
    for (;;) {
      const received = receiveMessageOnPort(this.#reply);
      if (received !== undefined) {
        this.#seen = Atomics.load(this.#flag, 0);
        const reply = received.message as TraceWorkerReply;
        if (reply.ok) return reply.value;
        throw fromWorker(reply.error, this.path);
      }
      const left = deadline - Date.now();
      if (left <= 0)
        throw new SwitchboardError(
          SbErrorCode.TraceStore,
          `the trace worker for ${this.path} did not answer ${what} within ${this.#timeoutMs} ms`,
          { details: { path: this.path } },
        );
      Atomics.wait(this.#flag, 0, this.#seen, Math.min(left, 1000));
      this.#seen = Atomics.load(this.#flag, 0);
    }
  }

  #notice(notice: TraceWorkerNotice): void {
    if (notice?.type !== 'write-error') return;
    this.onWriteError?.(fromWorker(notice.error, this.path), notice.lost);
  }

  #gone(err: Error): void {
    if (this.#broken !== undefined) return;
    this.#broken = err;
    const lost = this.queued;
    this.#abandoned += lost;
    this.onWriteError?.(
      new SwitchboardError(
        SbErrorCode.TraceStore,
        `the trace worker for ${this.path} failed: ${err.message}`,
        {
          cause: err,
          details: { path: this.path },
        },
      ),
      lost,
    );
  }

  #error(what: string, cause: unknown): SwitchboardError {
    return new SwitchboardError(
      SbErrorCode.TraceStore,
      `cannot ${what} the trace ${this.path}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, details: { path: this.path } },
    );
  }
}

function fromWorker(error: TraceWorkerError, path: string): SwitchboardError {
  const known = Object.values(SbErrorCode) as string[];
  const code =
    error.code !== undefined && known.includes(error.code) ? (error.code as SbErrorCode) : undefined;
  return new SwitchboardError(code ?? SbErrorCode.TraceStore, error.message, {
    details: { path, ...(error.details ?? {}) },
  });
}
