/**
 * The trace worker thread: owns the SQLite writer connection, so that building rows, SQLite's
 * inserts, commits and WAL checkpoints never run on the gateway's event loop. Started by
 * `WorkerTraceStore`, which describes the protocol; this side only executes it, in order:
 *
 * - `append` (slots of encoded hops): decoded into rows that wait, and are written in one
 *   transaction once {@link COMMIT_ROWS} rows wait or {@link COMMIT_DELAY_MS} after the first of
 *   them arrived, rather than one per message (fewer commits, and fewer WAL frames rewriting the
 *   same last pages of each index); the outcome is added to the shared counters, and a failure is
 *   also reported as a `write-error` message;
 * - `session`: written at once (an upsert, independent of the envelope rows' order);
 * - `call` (a read, or `prune`): the waiting rows written first, so that a read sees every write
 *   handed over before it; answered on the reply port, then the reply counter is bumped and the
 *   waiting thread woken;
 * - `close`: the waiting rows written, the database closed (checkpointing the WAL), answered like a
 *   call; then the worker ends.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { SqliteTraceStore, type SqliteTraceStoreOptions, type StoredEnvelope } from './sqlite-trace-store.js';
import { decodeHops } from './trace-wire.js';
import {
  type TraceWorkerCall,
  type TraceWorkerData,
  type TraceWorkerError,
  type TraceWorkerRequest,
  WorkerCounter,
} from './trace-worker-protocol.js';

/** Idle time after the last write before the worker checkpoints the WAL itself. */
const IDLE_CHECKPOINT_MS = 1000;

/** Rows that make a transaction worth committing at once. */
const COMMIT_ROWS = 2048;

/** How long rows wait at most for more to share their transaction. */
const COMMIT_DELAY_MS = 100;

function errorOf(err: unknown): TraceWorkerError {
  if (err instanceof SwitchboardError)
    return {
      message: err.message,
      code: err.code,
      ...(err.details === undefined ? {} : { details: err.details }),
    };
  return { message: err instanceof Error ? err.message : String(err) };
}

function run(data: TraceWorkerData, port: MessagePort): void {
  const flag = new Int32Array(data.shared, 0, 1);
  const counters = new BigInt64Array(data.shared, 8, 3);
  const reply = data.reply;
  const answer = (message: unknown): void => {
    reply.postMessage(message);
    Atomics.add(flag, 0, 1);
    Atomics.notify(flag, 0);
  };
  let store: SqliteTraceStore;
  try {
    const options: SqliteTraceStoreOptions = {
      ...(data.maxPayloadBytes === undefined ? {} : { maxPayloadBytes: data.maxPayloadBytes }),
      ...(data.payloads === undefined ? {} : { payloads: data.payloads }),
      ...(data.redact === undefined ? {} : { redact: data.redact }),
      ...(data.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: data.busyTimeoutMs }),
    };
    store = new SqliteTraceStore(data.path, options);
  } catch (err) {
    answer({ ok: false, error: errorOf(err) });
    reply.close();
    port.close();
    return;
  }
  answer({ ok: true });

  let idle: NodeJS.Timeout | undefined;
  const wrote = (): void => {
    if (idle !== undefined) clearTimeout(idle);
    idle = setTimeout(() => {
      idle = undefined;
      try {
        store.checkpoint();
      } catch {
        // A reader holding the WAL is not an error; the next checkpoint catches up.
      }
    }, IDLE_CHECKPOINT_MS);
    idle.unref();
  };
  const failed = (err: unknown, lost: number): void => {
    Atomics.add(counters, WorkerCounter.Failed, BigInt(lost));
    Atomics.add(counters, WorkerCounter.Errors, 1n);
    port.postMessage({ type: 'write-error', error: errorOf(err), lost });
  };

  /** Rows decoded and not yet written, and how many records they are. */
  let rows: StoredEnvelope[] = [];
  let records = 0;
  let commitTimer: NodeJS.Timeout | undefined;
  const commit = (): void => {
    if (commitTimer !== undefined) clearTimeout(commitTimer);
    commitTimer = undefined;
    if (records === 0) return;
    const batch = rows;
    const count = records;
    rows = [];
    records = 0;
    try {
      store.appendStored(batch);
      Atomics.add(counters, WorkerCounter.Written, BigInt(count));
    } catch (err) {
      failed(err, count);
    }
    wrote();
  };

  port.on('message', (request: TraceWorkerRequest) => {
    switch (request.op) {
      case 'append': {
        const before = rows.length;
        try {
          decodeHops(request.slots, store.payloads, rows);
          records += request.count;
        } catch (err) {
          rows.length = before;
          failed(err, request.count);
          return;
        }
        if (rows.length >= COMMIT_ROWS) commit();
        else if (commitTimer === undefined) commitTimer = setTimeout(commit, COMMIT_DELAY_MS);
        return;
      }
      case 'session':
        try {
          store.upsertSession(request.info);
        } catch (err) {
          failed(err, 0);
        }
        wrote();
        return;
      case 'call':
        commit();
        try {
          answer({ ok: true, value: call(store, request) });
        } catch (err) {
          answer({ ok: false, error: errorOf(err) });
        }
        return;
      case 'close':
        commit();
        if (idle !== undefined) clearTimeout(idle);
        try {
          store.close();
          answer({ ok: true });
        } catch (err) {
          answer({ ok: false, error: errorOf(err) });
        }
        reply.close();
        port.close();
        return;
    }
  });
}

function call(store: SqliteTraceStore, request: TraceWorkerCall): unknown {
  switch (request.method) {
    case 'sessions':
      return store.sessions(request.args[0]);
    case 'sessionInfo':
      return store.sessionInfo(request.args[0]);
    case 'session':
      return store.session(request.args[0]);
    case 'subtree':
      return store.subtree(request.args[0]);
    case 'get':
      return store.get(request.args[0]);
    case 'follow':
      return store.follow(request.args[0], request.args[1]);
    case 'prune':
      return store.prune(request.args[0]);
    case 'barrier':
      return undefined;
  }
}

if (parentPort) run(workerData as TraceWorkerData, parentPort);
