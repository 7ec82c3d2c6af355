import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import { MemoryTraceStore } from './memory-trace-store.js';
import { TraceRecorder } from './trace-recorder.js';
import { toolCallChain, traceRecord } from './trace-store.contract.js';
import type { TraceRecord, TraceSessionInfo, TraceStore } from './types.js';

/** A store that only remembers the calls it got, and can be told to fail. */
class FakeStore implements TraceStore {
  readonly calls: string[] = [];
  readonly batches: TraceRecord[][] = [];
  readonly upserts: TraceSessionInfo[] = [];
  failing = false;
  closed = 0;

  append(records: readonly TraceRecord[]): void {
    this.calls.push(`append:${records.length}`);
    if (this.failing) throw new Error('disk full');
    this.batches.push([...records]);
  }
  upsertSession(info: TraceSessionInfo): void {
    this.calls.push(`session:${info.key}`);
    if (this.failing) throw new Error('disk full');
    this.upserts.push(info);
  }
  close(): void {
    this.closed++;
    if (this.failing) throw new Error('disk full');
  }
  sessions(): never[] {
    return [];
  }
  session(): never[] {
    return [];
  }
  subtree(): never[] {
    return [];
  }
  get(): undefined {
    return undefined;
  }
  follow(): undefined {
    return undefined;
  }
}

let n = 0;
const rec = (): TraceRecord => traceRecord({ id: `R${String(++n).padStart(25, '0')}` });
const info = (key: string, startedAt = 1): TraceSessionInfo => ({
  key,
  transport: 'stdio',
  upstreams: [],
  startedAt,
});

describe('TraceRecorder', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('buffers records and writes them in one append after flushIntervalMs', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store, { flushIntervalMs: 50 });
    for (let i = 0; i < 10; i++) recorder.record(rec());
    expect(store.calls).toEqual([]);
    expect(recorder.pending).toBe(10);
    vi.advanceTimersByTime(49);
    expect(store.calls).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(store.calls).toEqual(['append:10']);
    expect(recorder.pending).toBe(0);
    expect(recorder.metrics.get('trace_records_written_total')).toBe(10);
  });

  it('measures the interval from the first record of a batch, not the last', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store, { flushIntervalMs: 50 });
    recorder.record(rec());
    vi.advanceTimersByTime(30);
    recorder.record(rec());
    vi.advanceTimersByTime(20);
    expect(store.calls).toEqual(['append:2']);
    recorder.record(rec());
    vi.advanceTimersByTime(50);
    expect(store.calls).toEqual(['append:2', 'append:1']);
  });

  it('schedules a flush with setImmediate once batchSize records wait, never inside record()', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store, { batchSize: 4, flushIntervalMs: 1000 });
    for (let i = 0; i < 6; i++) recorder.record(rec());
    expect(store.calls).toEqual([]);
    expect(vi.getTimerCount()).toBe(2);
    vi.advanceTimersToNextTimer();
    // Everything waiting goes in the one append; the interval timer is cancelled.
    expect(store.calls).toEqual(['append:6']);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(2000);
    expect(store.calls).toEqual(['append:6']);
  });

  it('defaults to batches of 256 and a 50 ms interval', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store);
    for (let i = 0; i < 255; i++) recorder.record(rec());
    vi.advanceTimersByTime(0);
    expect(store.calls).toEqual([]);
    recorder.record(rec());
    vi.advanceTimersByTime(0);
    expect(store.calls).toEqual(['append:256']);
    recorder.record(rec());
    vi.advanceTimersByTime(50);
    expect(store.calls).toEqual(['append:256', 'append:1']);
  });

  it('writes queued sessions (one merged report per key) before the records, on the same schedule', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store);
    recorder.session({ ...info('a', 1), mcpSessionId: 'mcp-a', principal: 'alice', protocolVersion: 'v1' });
    recorder.record(rec());
    recorder.session(info('b'));
    // The end of session a, reported by someone who no longer knows its facts: it adds, never blanks.
    recorder.session({ ...info('a', 2), endedAt: 3, protocolVersion: 'v2' });
    vi.advanceTimersByTime(50);
    expect(store.calls).toEqual(['session:a', 'session:b', 'append:1']);
    expect(store.upserts[0]).toEqual({
      key: 'a',
      transport: 'stdio',
      upstreams: [],
      startedAt: 1,
      endedAt: 3,
      mcpSessionId: 'mcp-a',
      principal: 'alice',
      protocolVersion: 'v2',
    });
    recorder.session(info('c'));
    vi.advanceTimersByTime(50);
    expect(store.calls.at(-1)).toBe('session:c');
  });

  it('flush() writes now and says how many records were written', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store);
    recorder.record(rec());
    recorder.record(rec());
    expect(recorder.flush()).toBe(2);
    expect(recorder.flush()).toBe(0);
    expect(store.calls).toEqual(['append:2']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('loses nothing on close: it flushes, closes the store once, then drops and counts late records', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store);
    for (let i = 0; i < 3; i++) recorder.record(rec());
    recorder.session(info('s'));
    recorder.close();
    recorder.close();
    expect(store.calls).toEqual(['session:s', 'append:3']);
    expect(store.closed).toBe(1);
    recorder.record(rec());
    recorder.session(info('late'));
    vi.runAllTimers();
    expect(store.calls).toHaveLength(2);
    expect(recorder.metrics.get('trace_records_dropped_total', { reason: 'closed' })).toBe(1);
  });

  it('logs and counts a failing store, drops that batch, and never throws into the caller', () => {
    const store = new FakeStore();
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const recorder = new TraceRecorder(store, { batchSize: 2, logger, metrics });
    store.failing = true;
    expect(() => {
      recorder.record(rec());
      recorder.record(rec());
      vi.advanceTimersToNextTimer();
      recorder.record(rec());
      vi.advanceTimersByTime(50);
      recorder.session(info('x'));
      recorder.flush();
    }).not.toThrow();
    expect(metrics.get('trace_write_errors_total')).toBe(3);
    expect(metrics.get('trace_records_dropped_total', { reason: 'store_error' })).toBe(3);
    // One error for the streak, then quieter entries.
    expect(logger.entries.filter((e) => e.level === 'error')).toHaveLength(1);
    expect(logger.entries[0]?.fields).toMatchObject({ operation: 'append', dropped: 2 });
    expect(logger.entries[0]?.fields.err).toBeInstanceOf(Error);

    store.failing = false;
    recorder.record(rec());
    expect(recorder.flush()).toBe(1);
    expect(logger.entries.at(-1)).toMatchObject({ level: 'info', fields: { failures: 3 } });
    store.failing = true;
    expect(() => recorder.close()).not.toThrow();
    expect(metrics.get('trace_write_errors_total')).toBe(4);
  });

  it('says in health how the store is doing: failures in a row and when, a full buffer', () => {
    const store = new FakeStore();
    const recorder = new TraceRecorder(store, { batchSize: 1000, maxBuffered: 2 });
    expect(recorder.health).toEqual({ consecutiveFailures: 0, lastFailureAt: undefined, overflowing: false });
    store.failing = true;
    recorder.record(rec());
    recorder.flush();
    const failedAt = Date.now();
    vi.advanceTimersByTime(1_000);
    recorder.record(rec());
    recorder.flush();
    expect(recorder.health).toEqual({
      consecutiveFailures: 2,
      lastFailureAt: failedAt + 1_000,
      overflowing: false,
    });
    // A write that succeeds ends the streak; when the last failure was stays known.
    store.failing = false;
    recorder.record(rec());
    recorder.flush();
    expect(recorder.health).toMatchObject({ consecutiveFailures: 0, lastFailureAt: failedAt + 1_000 });
    for (let i = 0; i < 3; i++) recorder.record(rec());
    expect(recorder.health.overflowing).toBe(true);
    recorder.flush();
    expect(recorder.health.overflowing).toBe(false);
  });

  it('drops and counts records beyond maxBuffered instead of growing without bound', () => {
    const store = new FakeStore();
    const logger = new MemoryLogger();
    const recorder = new TraceRecorder(store, { batchSize: 1000, maxBuffered: 5, logger });
    for (let i = 0; i < 8; i++) recorder.record(rec());
    expect(recorder.pending).toBe(5);
    expect(recorder.metrics.get('trace_records_dropped_total', { reason: 'overflow' })).toBe(3);
    expect(logger.entries.filter((e) => e.level === 'warn')).toHaveLength(1);
    vi.advanceTimersByTime(50);
    expect(store.calls).toEqual(['append:5']);
    for (let i = 0; i < 6; i++) recorder.record(rec());
    expect(recorder.metrics.total('trace_records_dropped_total')).toBe(4);
    expect(logger.entries.filter((e) => e.level === 'warn')).toHaveLength(2);
  });

  it('survives a logger that throws', () => {
    const store = new FakeStore();
    store.failing = true;
    const throwing = new MemoryLogger();
    throwing.error = () => {
      throw new Error('log sink gone');
    };
    throwing.warn = throwing.error;
    const recorder = new TraceRecorder(store, { logger: throwing, maxBuffered: 1 });
    expect(() => {
      recorder.record(rec());
      recorder.record(rec());
      vi.advanceTimersByTime(50);
    }).not.toThrow();
    expect(recorder.metrics.total('trace_records_dropped_total')).toBe(2);
  });

  it('rejects nonsensical sizes at construction', () => {
    expect(() => new TraceRecorder(new FakeStore(), { batchSize: 0 })).toThrow(/batchSize/);
    expect(() => new TraceRecorder(new FakeStore(), { maxBuffered: 1.5 })).toThrow(/maxBuffered/);
  });

  it('feeds a real store: a request chain recorded one by one is queryable after the flush', () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder(store);
    const chain = toolCallChain(() => `C${String(++n).padStart(25, '0')}`);
    recorder.session({ ...info('s1'), mcpSessionId: 'mcp-1' });
    for (const r of chain.records) recorder.record(r);
    expect(store.session('s1')).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(store.session('mcp-1').map((r) => r.envelope.id)).toEqual(chain.records.map((r) => r.envelope.id));
    expect(store.follow(chain.R)?.answers).toHaveLength(3);
    recorder.close();
    expect(() => store.get(chain.R)).toThrow(/closed/);
  });
});

describe('TraceRecorder timers (real)', () => {
  it('unrefs its interval timer so that the trace never keeps the process alive', () => {
    const spy = vi.spyOn(globalThis, 'setTimeout');
    try {
      const recorder = new TraceRecorder(new FakeStore());
      recorder.record(rec());
      const timer = spy.mock.results.at(-1)?.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
      recorder.close();
    } finally {
      spy.mockRestore();
    }
  });
});
