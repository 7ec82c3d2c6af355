import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { createIdGenerator } from '../meup/ids.js';
import { MemoryLogger } from '../observe/logger.js';
import { SqliteTraceStore, TRACE_SCHEMA_VERSION } from './sqlite-trace-store.js';
import { testTraceWorker } from './test-support/trace-worker-module.js';
import { traceHopOf } from './trace-hop.js';
import { TraceRecorder } from './trace-recorder.js';
import { toolCallChain, traceRecord, traceStoreContract } from './trace-store.contract.js';
import { WorkerTraceStore, type WorkerTraceStoreOptions } from './worker-trace-store.js';

const root = mkdtempSync(join(tmpdir(), 'sb-trace-worker-'));
let files = 0;
const tempDb = (): string => join(root, `trace-${++files}.db`);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const open = (path: string, options: WorkerTraceStoreOptions = {}): WorkerTraceStore =>
  new WorkerTraceStore(path, { worker: testTraceWorker(), ...options });

traceStoreContract('WorkerTraceStore (:memory:)', (options) => open(':memory:', options));
traceStoreContract('WorkerTraceStore (file)', (options) => open(tempDb(), options));

describe('WorkerTraceStore', () => {
  const closing: { close(): void }[] = [];
  const track = <T extends { close(): void }>(c: T): T => {
    closing.push(c);
    return c;
  };
  afterEach(() => {
    for (const c of closing.splice(0).reverse()) c.close();
  });

  it('hands writes over without waiting, and counts them once the worker has written them', () => {
    const store = track(open(tempDb()));
    const chain = toolCallChain(createIdGenerator());
    store.appendHops(chain.records.map(traceHopOf));
    expect(store.queued + store.written).toBe(5);
    store.barrier();
    expect(store.queued).toBe(0);
    expect(store.written).toBe(5);
    expect(store.failed).toBe(0);
  });

  it('derives the envelope timestamp from sentAt (else receivedAt) when a hop has none', () => {
    const store = track(open(':memory:'));
    const sent = Date.UTC(2026, 5, 1, 12, 0, 0, 250);
    const { ts: _a, ...withoutTs } = traceHopOf(traceRecord({ id: 'A', receivedAt: sent - 5, sentAt: sent }));
    const { ts: _b, ...receivedOnly } = traceHopOf(traceRecord({ id: 'B', receivedAt: sent - 5 }));
    store.appendHops([withoutTs, receivedOnly]);
    expect(store.get('A')?.envelope.ts).toBe('2026-06-01T12:00:00.250Z');
    expect(store.get('B')?.envelope.ts).toBe('2026-06-01T12:00:00.245Z');
  });

  it('loses nothing on close: what was handed over is on disk for the next reader', () => {
    const path = tempDb();
    const store = open(path);
    const next = createIdGenerator();
    const ids: string[] = [];
    for (let batch = 0; batch < 20; batch++) {
      const records = Array.from({ length: 50 }, () => traceRecord({ id: next() }));
      ids.push(...records.map((r) => r.envelope.id));
      store.append(records);
    }
    store.upsertSession({ key: 's1', mcpSessionId: 'm1', transport: 'stdio', upstreams: [], startedAt: 1 });
    store.close();
    const reader = track(new SqliteTraceStore(path, { readonly: true }));
    expect(reader.session('m1').map((r) => r.envelope.id)).toEqual(ids);
  });

  it('stores a message that cannot be cloned as its JSON text instead of failing the batch', () => {
    const store = track(open(':memory:'));
    const next = createIdGenerator();
    const odd = traceRecord({
      id: next(),
      payload: { jsonrpc: '2.0', id: 3, method: 'x', params: { f: () => 1, n: 1 } },
    });
    const plain = traceRecord({ id: next() });
    store.append([odd, plain]);
    expect(store.get(odd.envelope.id)?.envelope.payload).toEqual({
      jsonrpc: '2.0',
      id: 3,
      method: 'x',
      params: { n: 1 },
    });
    expect(store.get(plain.envelope.id)).toEqual(plain);
  });

  it('refuses a database from a newer schema at construction, with the worker’s error', () => {
    const path = tempDb();
    const db = new Database(path);
    db.pragma(`user_version = ${TRACE_SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => open(path)).toThrow(/newer than this switchboard understands/);
    try {
      open(path);
    } catch (err) {
      expect(err).toBeInstanceOf(SwitchboardError);
      expect((err as SwitchboardError).code).toBe('SB_TRACE_STORE');
    }
  });

  it('counts and reports a failed write, and keeps working after it', async () => {
    const path = tempDb();
    const store = track(open(path));
    const errors: [Error, number][] = [];
    store.onWriteError = (err, lost) => errors.push([err, lost]);
    const next = createIdGenerator();
    store.append([traceRecord({ id: next() })]);
    store.barrier();
    const other = track(new Database(path));
    other.exec(
      "CREATE TRIGGER refuse BEFORE INSERT ON envelopes BEGIN SELECT RAISE(ABORT, 'disk full'); END",
    );
    store.append([traceRecord({ id: next() }), traceRecord({ id: next() })]);
    store.barrier();
    expect(store.failed).toBe(2);
    expect(store.writeErrors).toBe(1);
    other.exec('DROP TRIGGER refuse');
    store.append([traceRecord({ id: next() })]);
    store.barrier();
    expect(store.written).toBe(2);
    expect(store.session('s1')).toHaveLength(2);
    await vi.waitFor(() => expect(errors).toHaveLength(1));
    expect(errors[0]?.[0].message).toMatch(/disk full/);
    expect(errors[0]?.[1]).toBe(2);
  });
});

describe('TraceRecorder over a WorkerTraceStore', () => {
  it('bounds what waits for a stalled worker, drops the rest with a count and a warning, and never blocks', () => {
    const path = tempDb();
    const store = open(path, { busyTimeoutMs: 60_000 });
    const logger = new MemoryLogger();
    const recorder = new TraceRecorder(store, { batchSize: 10, maxBuffered: 40, logger });
    const blocker = new Database(path);
    try {
      // Another connection holds the write lock: the worker waits on it, and nothing it is given settles.
      blocker.exec('BEGIN IMMEDIATE');
      const next = createIdGenerator();
      const started = performance.now();
      for (let round = 0; round < 10; round++) {
        for (let i = 0; i < 10; i++) recorder.recordHop(traceHopOf(traceRecord({ id: next() })));
        recorder.flush();
      }
      const elapsed = performance.now() - started;
      // 100 records offered, at most 40 held (buffered or waiting in the worker); the rest dropped.
      const dropped = recorder.metrics.get('trace_records_dropped_total', { reason: 'overflow' });
      expect(dropped).toBeGreaterThanOrEqual(60);
      expect(store.queued).toBeLessThanOrEqual(40);
      expect(logger.entries.filter((e) => e.level === 'warn' && /buffer full/.test(e.message))).toHaveLength(
        1,
      );
      // Handing over never waited for the stalled worker (its busy timeout is a minute).
      expect(elapsed).toBeLessThan(30_000);
      blocker.exec('COMMIT');
      recorder.close();
      expect(recorder.metrics.get('trace_records_written_total')).toBe(100 - dropped);
      const reader = new SqliteTraceStore(path, { readonly: true });
      expect(reader.session('s1')).toHaveLength(100 - dropped);
      reader.close();
    } finally {
      blocker.close();
      recorder.close();
    }
  });
});
