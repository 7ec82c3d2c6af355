import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SbErrorCode } from '../../errors/switchboard-error.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { parseSignerKey } from '../signed-note.js';
import { type AppendFile, type LedgerIo, nodeLedgerIo } from './append-file.js';
import type { AuditEvent } from './audit-event.js';
import { auditLedgerOptions } from './audit-ledger.js';
import { readCheckpointLine } from './checkpoint-line.js';
import { LOCK_FILE } from './ledger-lock.js';
import { CHECKPOINTS_FILE, ledgerFileName, SIGNER_KEY_FILE, VERIFIER_KEY_FILE } from './ledger-paths.js';
import {
  openLedger,
  readLines,
  recordOf,
  sampleEvent,
  tempDir,
  writeLedger,
} from './test-support/ledger-fixture.js';
import { verifyLedger } from './verify.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

function dir(): string {
  const made = tempDir();
  cleanups.push(made.cleanup);
  return made.dir;
}

/** The file system, with every write and sync recorded in order. */
function recordingIo(): { io: LedgerIo; events: string[] } {
  const events: string[] = [];
  const io: LedgerIo = {
    syncDirectory: (path) => nodeLedgerIo.syncDirectory(path),
    async openAppend(path): Promise<AppendFile> {
      const file = await nodeLedgerIo.openAppend(path);
      const name = path.slice(path.lastIndexOf('/') + 1);
      return {
        write: async (data) => {
          await file.write(data);
          events.push(`write ${name} ${data.toString().split('\n').length - 1}`);
        },
        sync: async () => {
          await file.sync();
          events.push(`sync ${name}`);
        },
        size: () => file.size(),
        truncate: (size) => file.truncate(size),
        close: () => file.close(),
      };
    },
  };
  return { io, events };
}

/**
 * The file system, with `fdatasync` hanging (a dying disk, a stuck mount) until `release`: the
 * flush loop waits on it.
 */
function hangingSyncIo(): { io: LedgerIo; hung: () => Promise<void>; release: () => void } {
  let held = true;
  const waiting: (() => void)[] = [];
  const io: LedgerIo = {
    syncDirectory: (path) => nodeLedgerIo.syncDirectory(path),
    async openAppend(path): Promise<AppendFile> {
      const file = await nodeLedgerIo.openAppend(path);
      return {
        write: (data) => file.write(data),
        sync: async () => {
          if (held) await new Promise<void>((resolve) => waiting.push(resolve));
          await file.sync();
        },
        size: () => file.size(),
        truncate: (size) => file.truncate(size),
        close: () => file.close(),
      };
    },
  };
  const release = () => {
    held = false;
    for (const resolve of waiting.splice(0)) resolve();
  };
  /** Resolves once exactly one sync hangs (the flush loop is stuck on it). */
  const hung = () => vi.waitFor(() => expect(waiting).toHaveLength(1));
  return { io, hung, release };
}

const checkpointSizes = (d: string): number[] =>
  (existsSync(join(d, CHECKPOINTS_FILE)) ? readLines(d, CHECKPOINTS_FILE) : []).map((line) => {
    const read = readCheckpointLine(line, undefined);
    return read.ok ? read.entry.size : -1;
  });

describe('AuditLedger: writing', () => {
  it('gives concurrent appends consecutive seqs in call order, written in one batch', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io });
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => ledger.append(sampleEvent(i + 1))),
    );
    expect(results.map((r) => r.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(events).toEqual([`write ${ledgerFileName(1)} 100`]);
    expect(ledger.head).toEqual(results[99]);
    await ledger.close();
    const lines = readLines(d);
    expect(lines.map((line) => recordOf(line).request_id)).toEqual(results.map((_, i) => String(i + 1)));
    expect(lines.map((line) => recordOf(line).entry_hash)).toEqual(results.map((r) => r.entryHash));
  });

  it('writes a backlog a chunk at a time, serving the event loop in between', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io, flushDelayMs: 60_000, flushRecords: 100_000 });
    const order: string[] = [];
    const appends = Array.from({ length: 1000 }, (_, i) => ledger.append(sampleEvent(i + 1)));
    void appends[0]?.then(() => order.push('first written'));
    void appends[999]?.then(() => order.push('last written'));
    // A checkpoint asked for now covers the 1,000 queued appends, though none is built yet.
    const checkpoint = ledger.checkpoint().then(() => order.push('checkpoint'));
    setImmediate(() => order.push('event loop'));
    await Promise.all([...appends, checkpoint]);
    // 256 records per turn: the first chunk is written before the event loop turns, the last after.
    expect(order).toEqual(['first written', 'event loop', 'last written', 'checkpoint']);
    expect(events.filter((e) => e.startsWith(`write ${ledgerFileName(1)}`))).toEqual([
      `write ${ledgerFileName(1)} 256`,
      `write ${ledgerFileName(1)} 256`,
      `write ${ledgerFileName(1)} 256`,
      `write ${ledgerFileName(1)} 232`,
    ]);
    expect(checkpointSizes(d)).toEqual([1000]);
    await ledger.close();
    expect(await verifyLedger({ dir: d })).toMatchObject({ status: 'unanchored', records: 1000 });
  });

  it('lets appends made one after another within flushDelayMs share one write', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io, flushDelayMs: 50 });
    const first = ledger.append(sampleEvent(1));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = ledger.append(sampleEvent(2));
    expect(events).toEqual([]);
    expect((await Promise.all([first, second])).map((r) => r.seq)).toEqual([1, 2]);
    expect(events).toEqual([`write ${ledgerFileName(1)} 2`]);
    await ledger.close();
  });

  it('writes as soon as flushRecords appends wait, without waiting out flushDelayMs', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io, flushDelayMs: 60_000, flushRecords: 4 });
    const failed: unknown[] = [];
    for (let i = 1; i <= 3; i++) ledger.appendUnawaited(sampleEvent(i), (error) => failed.push(error));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(events).toEqual([]);
    const fourth = ledger.append(sampleEvent(4));
    expect(await fourth).toMatchObject({ seq: 4 });
    expect(events).toEqual([`write ${ledgerFileName(1)} 4`]);
    // Fewer than four wait for the delay (here: for close), once the flush loop is done (a running
    // loop takes what is queued when its batch is done).
    await new Promise((resolve) => setTimeout(resolve, 10));
    ledger.appendUnawaited(sampleEvent(5), (error) => failed.push(error));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(events).toEqual([`write ${ledgerFileName(1)} 4`]);
    await ledger.close();
    expect(readLines(d).map((line) => recordOf(line).seq)).toEqual([1, 2, 3, 4, 5]);
    expect(failed).toEqual([]);
  });

  it('writes a durable append at once, taking the waiting ones along, and close writes what waits', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io, flushDelayMs: 60_000, fsync: 'critical' });
    const waiting = ledger.append(sampleEvent(1));
    const durable = await ledger.append(sampleEvent(2), { durable: true });
    expect(durable.seq).toBe(2);
    expect(await waiting).toMatchObject({ seq: 1 });
    expect(events).toEqual([`write ${ledgerFileName(1)} 2`, `sync ${ledgerFileName(1)}`]);
    const last = ledger.append(sampleEvent(3));
    await ledger.close();
    expect(await last).toMatchObject({ seq: 3 });
    expect(readLines(d).map((line) => recordOf(line).seq)).toEqual([1, 2, 3]);
  });

  it('timestamps a record when it is appended, not when it is written', async () => {
    const d = dir();
    let now = Date.parse('2026-01-01T00:00:00.000Z');
    const ledger = await openLedger(d, { flushDelayMs: 20, clock: () => now });
    const appended = ledger.append(sampleEvent(1));
    now += 60_000;
    await appended;
    await ledger.close();
    expect(recordOf(readLines(d)[0] as string).ts).toBe('2026-01-01T00:00:00.000Z');
  });

  it('rotates files by size and the chain continues across them', async () => {
    const d = dir();
    await writeLedger(d, 40, { ledger: { rotateBytes: 4000 } });
    const files = readdirSync(d).filter((name) => name.startsWith('ledger-'));
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const file of files) expect(statSync(join(d, file)).size).toBeLessThanOrEqual(4000);
    const first = recordOf(readLines(d, ledgerFileName(2))[0] as string);
    const before = readLines(d, ledgerFileName(1));
    expect(first.prev_hash).toBe(recordOf(before[before.length - 1] as string).entry_hash);
    expect(await verifyLedger({ dir: d })).toMatchObject({
      status: 'unanchored',
      records: 40,
      checkpoints: 4,
    });
  });

  it('restarts where it stopped: seq, prev_hash, the accumulator and the checkpoint chain', async () => {
    const d = dir();
    await writeLedger(d, 23, { ledger: { rotateBytes: 5000 } });
    await writeLedger(d, 14, { ledger: { rotateBytes: 5000 } });
    const report = await verifyLedger({ dir: d });
    // 23 records (checkpoints 10, 20, 23), then 14 more (33, 37): every root matches the log.
    expect(report).toMatchObject({
      status: 'unanchored',
      records: 37,
      checkpoints: 5,
      lastCheckpointSize: 37,
    });
    expect(checkpointSizes(d)).toEqual([10, 20, 23, 33, 37]);
  });

  it('checkpoints the records a previous run left uncovered as soon as it opens', async () => {
    const d = dir();
    const first = await openLedger(d);
    await first.append(sampleEvent(1));
    await first.append(sampleEvent(2));
    // A crash: no close, no final checkpoint, a lock left behind (by a process that is gone).
    expect(checkpointSizes(d)).toEqual([]);
    writeFileSync(join(d, LOCK_FILE), '999999999\n');
    const second = await openLedger(d);
    await second.checkpoint();
    expect(checkpointSizes(d)).toEqual([2]);
    await second.close();
  });

  it('reopens a ledger that never held a record without warning about state.json (issue 22)', async () => {
    const d = dir();
    await (await openLedger(d)).close();
    expect(existsSync(join(d, 'state.json'))).toBe(false);
    const logger = new MemoryLogger();
    const again = await openLedger(d, { logger });
    expect(logger.entries.filter((e) => e.message.includes('state.json'))).toEqual([]);
    // A ledger with records and no state still says it reads the whole log.
    await again.append(sampleEvent(1));
    await again.close();
    rmSync(join(d, 'state.json'), { force: true });
    const third = await openLedger(d, { logger });
    expect(logger.entries.some((e) => e.message.includes('state.json is missing'))).toBe(true);
    await third.close();
  });

  it('refuses a second writer while the first is open, and takes over a stale lock', async () => {
    const d = dir();
    const first = await openLedger(d);
    await expect(openLedger(d)).rejects.toMatchObject({
      code: SbErrorCode.AuditUnavailable,
      message: expect.stringContaining(`pid ${process.pid}`),
    });
    await first.close();
    expect(existsSync(join(d, LOCK_FILE))).toBe(false);
    writeFileSync(join(d, LOCK_FILE), '999999999\n');
    const logger = new MemoryLogger();
    const second = await openLedger(d, { logger });
    expect(logger.entries.some((e) => e.message.includes('taking over the lock'))).toBe(true);
    await second.close();
  });

  it('under "critical", a durable append resolves only after an fsync that covers it; others are not synced', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io, fsync: 'critical' });
    await ledger.append(sampleEvent(1));
    expect(events).toEqual([`write ${ledgerFileName(1)} 1`]);
    const order: string[] = [];
    const durable = ledger.append(sampleEvent(2), { durable: true }).then(() => order.push('resolved'));
    const plain = ledger.append(sampleEvent(3));
    await Promise.all([durable, plain]);
    expect(events.slice(1)).toEqual([`write ${ledgerFileName(1)} 2`, `sync ${ledgerFileName(1)}`]);
    await ledger.close();
  });

  it('bounds its queue when a sync hangs: refuses, reports unhealthy and logs once, then recovers', async () => {
    const d = dir();
    const { io, hung, release } = hangingSyncIo();
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const ledger = await openLedger(d, {
      io,
      fsync: 'always',
      flushDelayMs: 0,
      maxQueued: 10,
      logger,
      metrics,
    });
    const failures: unknown[] = [];
    const failed = (error: unknown) => failures.push(error);
    ledger.appendUnawaited(sampleEvent(1), failed);
    await hung();
    // Record 1 is written and its sync hangs; ten more wait, which is the bound.
    for (let i = 2; i <= 11; i++) ledger.appendUnawaited(sampleEvent(i), failed);
    expect(ledger.healthy).toBe(true);
    expect(failures).toEqual([]);
    ledger.appendUnawaited(sampleEvent(12), failed);
    await expect(ledger.append(sampleEvent(13), { durable: true })).rejects.toMatchObject({
      code: SbErrorCode.AuditUnavailable,
      message: expect.stringContaining('10 records behind its writes'),
    });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ code: SbErrorCode.AuditUnavailable });
    expect(ledger.healthy).toBe(false);
    expect(metrics.get('audit_backlog_rejections_total')).toBe(2);
    expect(logger.entries.filter((e) => e.level === 'error' && /queue is full/.test(e.message))).toHaveLength(
      1,
    );
    // The disk answers again: the queue drains and the ledger is healthy; the chain is intact (no
    // anchor is configured, hence "unanchored").
    release();
    await vi.waitFor(() => expect(ledger.healthy).toBe(true));
    expect(ledger.head.seq).toBe(11);
    expect(logger.entries.some((e) => /queue has drained/.test(e.message))).toBe(true);
    await ledger.append(sampleEvent(12));
    await ledger.close();
    expect(await verifyLedger({ dir: d })).toMatchObject({ status: 'unanchored', records: 12 });
  });

  it('bounds the bytes waiting events hold too (their output texts), taking one event whatever its size', async () => {
    const d = dir();
    const { io, hung, release } = hangingSyncIo();
    const ledger = await openLedger(d, { io, fsync: 'always', flushDelayMs: 0, maxQueuedBytes: 5000 });
    const failures: unknown[] = [];
    const failed = (error: unknown) => failures.push(error);
    const big = (i: number) => sampleEvent(i, { output: 'x'.repeat(4000) });
    ledger.appendUnawaited(big(1), failed);
    await hung();
    // Record 1's sync hangs. One big event waits (4,512 bytes counted, over nothing else); a second
    // would take the waiting events past 5,000.
    ledger.appendUnawaited(big(2), failed);
    expect(failures).toEqual([]);
    ledger.appendUnawaited(big(3), failed);
    expect(failures).toHaveLength(1);
    expect(ledger.healthy).toBe(false);
    release();
    await vi.waitFor(() => expect(ledger.healthy).toBe(true));
    expect(ledger.head.seq).toBe(2);
    await ledger.close();
    expect(await verifyLedger({ dir: d })).toMatchObject({ status: 'unanchored', records: 2 });
  });

  it("takes a result's text when the event is appended: later changes to it change nothing, and it counts as held", async () => {
    const d = dir();
    const { io, hung, release } = hangingSyncIo();
    const ledger = await openLedger(d, { io, fsync: 'always', flushDelayMs: 0, maxQueuedBytes: 5000 });
    const result = { content: [{ type: 'text', text: 'x'.repeat(3000) }] };
    const expected = JSON.stringify(result);
    const { output: _none, ...withoutOutput } = sampleEvent(1);
    const first = ledger.append({ ...withoutOutput, result });
    await hung();
    // Record 1's sync hangs; record 2 waits holding its result's 3,000-odd characters of text...
    const second = ledger.append({ ...withoutOutput, request_id: 2, result });
    result.content[0]!.text = 'changed after the append';
    // ...so a third as large would take the waiting events past 5,000 bytes.
    const large = { content: [{ type: 'text', text: 'y'.repeat(3000) }] };
    await expect(ledger.append({ ...withoutOutput, request_id: 3, result: large })).rejects.toMatchObject({
      code: SbErrorCode.AuditUnavailable,
    });
    release();
    await Promise.all([first, second]);
    await ledger.close();
    const records = readLines(d).map((line) => JSON.parse(line) as Record<string, unknown>);
    const sha = createHash('sha256').update(expected).digest('hex');
    expect(records.map((r) => [r.output_len, r.output_sha256])).toEqual([
      [expected.length, sha],
      [expected.length, sha],
    ]);
  });

  it('syncs every batch under "always", never under "never" (even for durable appends)', async () => {
    for (const [fsync, syncs] of [
      ['always', 2],
      ['never', 0],
    ] as const) {
      const d = dir();
      const { io, events } = recordingIo();
      const ledger = await openLedger(d, { io, fsync });
      await ledger.append(sampleEvent(1));
      await ledger.append(sampleEvent(2), { durable: true });
      expect(events.filter((e) => e === `sync ${ledgerFileName(1)}`).length, fsync).toBe(syncs);
      await ledger.close();
    }
  });

  it('makes the records durable before a checkpoint covers them', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io, fsync: 'critical' });
    await ledger.append(sampleEvent(1));
    await ledger.checkpoint();
    expect(events).toEqual([
      `write ${ledgerFileName(1)} 1`,
      `sync ${ledgerFileName(1)}`,
      `write ${CHECKPOINTS_FILE} 1`,
      `sync ${CHECKPOINTS_FILE}`,
    ]);
    await ledger.close();
  });

  it('writes unawaited appends in order with awaited ones, and reports a failed one to its callback', async () => {
    const d = dir();
    const { io, events } = recordingIo();
    const ledger = await openLedger(d, { io });
    const failures: unknown[] = [];
    ledger.appendUnawaited(sampleEvent(1), (err) => failures.push(err));
    ledger.appendUnawaited({ ...sampleEvent(2), tier: 'T9' } as unknown as AuditEvent, (err) =>
      failures.push(err),
    );
    const last = await ledger.append(sampleEvent(3));
    // One batch: the invalid one took no seq.
    expect(last.seq).toBe(2);
    expect(events).toEqual([`write ${ledgerFileName(1)} 2`]);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ code: SbErrorCode.Internal });
    await ledger.close();
    expect(readLines(d).map((line) => recordOf(line).request_id)).toEqual(['1', '3']);
    const after: unknown[] = [];
    ledger.appendUnawaited(sampleEvent(4), (err) => after.push(err));
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ code: SbErrorCode.AuditUnavailable });
  });

  it('rejects an invalid event without using a seq, and every append after close', async () => {
    const d = dir();
    const ledger = await openLedger(d);
    const invalid = [
      { ...sampleEvent(1), tier: 'T9' },
      { ...sampleEvent(1), decision: 'maybe' },
      { ...sampleEvent(1), method: '' },
    ] as unknown as AuditEvent[];
    for (const event of invalid) {
      await expect(ledger.append(event)).rejects.toMatchObject({ code: SbErrorCode.Internal });
    }
    expect((await ledger.append(sampleEvent(1))).seq).toBe(1);
    const closing = ledger.close();
    expect(ledger.close()).toBe(closing);
    await closing;
    await expect(ledger.append(sampleEvent(2))).rejects.toMatchObject({ code: SbErrorCode.AuditUnavailable });
  });
});

describe('AuditLedger: checkpoints, keys and anchors', () => {
  it('checkpoints every N records, at close, never twice at one size', async () => {
    const d = dir();
    const metrics = new Metrics();
    const ledger = await openLedger(d, { checkpoint: { everyRecords: 5, everyMs: 0 }, metrics });
    for (let i = 1; i <= 12; i++) await ledger.append(sampleEvent(i));
    await ledger.checkpoint();
    await ledger.checkpoint();
    await ledger.close();
    expect(checkpointSizes(d)).toEqual([5, 10, 12]);
    expect(metrics.get('audit_checkpoints_total')).toBe(3);
    expect(metrics.get('audit_records_written_total')).toBe(12);
  });

  it('checkpoints every N records but not sooner than minIntervalMs after the last, then catches up', async () => {
    const d = dir();
    const ledger = await openLedger(d, { checkpoint: { everyRecords: 5, everyMs: 0, minIntervalMs: 300 } });
    // The first one is not held back: there was none before it in this run.
    for (let i = 1; i <= 5; i++) await ledger.append(sampleEvent(i));
    await vi.waitFor(() => expect(checkpointSizes(d)).toEqual([5]));
    // Twelve more at once are two counts' worth, but within 300 ms of the last: none yet...
    for (let i = 6; i <= 17; i++) await ledger.append(sampleEvent(i));
    await new Promise((r) => setTimeout(r, 50));
    expect(checkpointSizes(d)).toEqual([5]);
    // ...then one covering everything written by then, without a further append.
    await vi.waitFor(() => expect(checkpointSizes(d)).toEqual([5, 17]), { timeout: 2000 });
    await ledger.close();
    expect(checkpointSizes(d)).toEqual([5, 17]);
  });

  it('checkpoints every T ms', async () => {
    const d = dir();
    const ledger = await openLedger(d, { checkpoint: { everyRecords: 1000, everyMs: 20 } });
    await ledger.append(sampleEvent(1));
    for (let i = 0; i < 100 && checkpointSizes(d).length === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(checkpointSizes(d)).toEqual([1]);
    await ledger.close();
  });

  it('creates the key pair on first start (key 0600, verifier published) and reuses it', async () => {
    const d = dir();
    const first = await openLedger(d);
    await first.close();
    expect(statSync(join(d, SIGNER_KEY_FILE)).mode & 0o777).toBe(0o600);
    const verifier = readFileSync(join(d, VERIFIER_KEY_FILE), 'utf8').trim();
    expect(first.verifierKey).toBe(verifier);
    expect(verifier).toMatch(/^switchboard\/audit\/[0-9a-f]{16}\+[0-9a-f]{8}\+/);
    const second = await openLedger(d);
    await second.close();
    expect(second.verifierKey).toBe(verifier);
  });

  it('uses a configured key file and origin', async () => {
    const d = dir();
    const keyFile = join(dir(), 'elsewhere.key');
    const ledger = await openLedger(d, { keyFile, origin: 'example.com/gateway/audit' });
    await ledger.append(sampleEvent(1));
    await ledger.close();
    expect(parseSignerKey(readFileSync(keyFile, 'utf8')).name).toBe('example.com/gateway/audit');
    expect(readLines(d, CHECKPOINTS_FILE)[0]).toContain('"note":"example.com/gateway/audit\\n1\\n');
    expect(await verifyLedger({ dir: d })).toMatchObject({ status: 'unanchored', checkpoints: 1 });
  });

  it('copies every checkpoint to an anchor file', async () => {
    const d = dir();
    const anchor = join(dir(), 'anchor.jsonl');
    await writeLedger(d, 25, { ledger: { anchor: { path: anchor } } });
    expect(readLines(d, CHECKPOINTS_FILE)).toEqual(readFileSync(anchor, 'utf8').trimEnd().split('\n'));
    expect(statSync(anchor).mode & 0o777).toBe(0o600);
  });

  it('POSTs every checkpoint to an anchor URL; a failing anchor is logged and counted, never blocking', async () => {
    const received: { body: string; auth: string | undefined }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({ body, auth: req.headers.authorization });
        res.writeHead(received.length === 1 ? 204 : 500).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/anchor`;
    const d = dir();
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const ledger = await openLedger(d, {
      anchor: { url, headers: { authorization: 'Bearer anchor-token' } },
      logger,
      metrics,
    });
    await ledger.append(sampleEvent(1));
    await ledger.checkpoint();
    await ledger.append(sampleEvent(2));
    await ledger.close();
    expect(received.map((r) => r.body)).toEqual(readLines(d, CHECKPOINTS_FILE).map((line) => `${line}\n`));
    expect(received[0]?.auth).toBe('Bearer anchor-token');
    expect(metrics.get('audit_anchor_pushes_total')).toBe(1);
    expect(metrics.get('audit_anchor_errors_total')).toBe(1);
    expect(logger.entries.find((e) => e.level === 'error')?.fields).toMatchObject({
      err: 'the anchor answered HTTP 500',
    });
  });

  it('derives its options from the configuration section', () => {
    const options = auditLedgerOptions(
      {
        enabled: true,
        fsync: 'always',
        flushDelayMs: 7,
        rotateBytes: 1024,
        checkpoint: { everyRecords: 5, everyMs: 0, minIntervalMs: 250 },
        key: 'keys/mine.key',
        anchor: { path: '/mnt/worm/anchor.jsonl', headers: {} },
        redact: { keys: ['ref'], patterns: [] },
        maxErrorLength: 100,
        minFreeBytes: 4096,
      },
      '/var/lib/switchboard',
    );
    expect(options).toEqual({
      dir: '/var/lib/switchboard/audit',
      fsync: 'always',
      flushDelayMs: 7,
      rotateBytes: 1024,
      checkpoint: { everyRecords: 5, everyMs: 0, minIntervalMs: 250 },
      keyFile: '/var/lib/switchboard/keys/mine.key',
      anchor: { path: '/mnt/worm/anchor.jsonl', headers: {} },
      redact: { keys: ['ref'], patterns: [] },
      maxErrorLength: 100,
      minFreeBytes: 4096,
    });
  });

  it('writes a new checkpoint on its own line when the checkpoint log ends torn', async () => {
    const d = dir();
    await writeLedger(d, 10);
    writeFileSync(join(d, CHECKPOINTS_FILE), '{"torn', { flag: 'a' });
    const logger = new MemoryLogger();
    await writeLedger(d, 5, { ledger: { logger } });
    expect(logger.entries.some((e) => e.message.includes('checkpoint log ends with a torn line'))).toBe(true);
    const lines = readLines(d, CHECKPOINTS_FILE);
    expect(lines[1]).toBe('{"torn');
    expect(readCheckpointLine(lines[2], undefined).ok).toBe(true);
    expect((await verifyLedger({ dir: d })).firstBreak).toMatchObject({
      reason: 'bad_json',
      file: CHECKPOINTS_FILE,
      line: 2,
    });
  });

  it('cuts the error text and stores durations with microsecond precision', async () => {
    const d = dir();
    const ledger = await openLedger(d, { maxErrorLength: 64 });
    await ledger.append({ ...sampleEvent(1), error: 'x'.repeat(500), duration_ms: 1.23456789 });
    await ledger.append({ ...sampleEvent(2), duration_ms: Number.NaN });
    await ledger.close();
    const [first, second] = readLines(d).map(recordOf);
    expect(first?.error).toBe(`${'x'.repeat(63)}…`);
    expect(first?.duration_ms).toBe(1.235);
    expect(second?.duration_ms).toBe(0);
  });
});
