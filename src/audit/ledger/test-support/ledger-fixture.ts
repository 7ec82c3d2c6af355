/**
 * Helpers for the ledger's tests: temporary ledgers with predictable content, and the tools an
 * attacker would use (re-chaining records, re-signing checkpoints with a stolen key).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { compiledWorkerUrl } from '../../../test-support/worker-module.js';
import { leafHash, MerkleAccumulator } from '../../merkle.js';
import { parseSignerKey } from '../../signed-note.js';
import { type AppendFile, type LedgerIo, nodeLedgerIo } from '../append-file.js';
import type { AuditEvent } from '../audit-event.js';
import { AuditLedger, type AuditLedgerOptions } from '../audit-ledger.js';
import { CHECKPOINT_GENESIS, checkpointLineHash, formatCheckpointLine } from '../checkpoint-line.js';
import { CHECKPOINTS_FILE, ledgerFileName, SIGNER_KEY_FILE } from '../ledger-paths.js';
import { encodeRecordLine } from '../record-line.js';
import { type VerifyOptions, type VerifyReport, verifyLedger } from '../verify.js';
import type { VerifyWorkerModule } from '../verify-pool.js';

/** A fresh temporary directory, removed by `cleanup`. */
export function tempDir(prefix = 'sb-ledger-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A realistic event, different for each `i`. */
export function sampleEvent(i: number, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return {
    session_id: `session-${i % 3}`,
    client_id: 'alice',
    request_id: i,
    upstream: 'files',
    method: 'tools/call',
    target: 'read_file',
    tier: i % 5 === 0 ? 'T2' : 'T1',
    decision: 'allowed',
    args: { path: `/srv/data/${i}.txt`, lines: i % 7 },
    output: JSON.stringify({ content: [{ type: 'text', text: `content of file ${i}` }] }),
    duration_ms: 1.5 + i,
    trace_id: `env-${i}`,
    ...overrides,
  };
}

/**
 * The real file system, except that while `state.failing` every write of a ledger file fails as a
 * full disk does (ENOSPC), also the ledger's probe file; checkpoint writes go through.
 */
export function failingWritesIo(): { io: LedgerIo; state: { failing: boolean; writes: number } } {
  const state = { failing: false, writes: 0 };
  const io: LedgerIo = {
    syncDirectory: (path) => nodeLedgerIo.syncDirectory(path),
    async openAppend(path): Promise<AppendFile> {
      const file = await nodeLedgerIo.openAppend(path);
      return {
        async write(data) {
          if (state.failing && !path.endsWith(CHECKPOINTS_FILE))
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          state.writes++;
          await file.write(data);
        },
        sync: () => file.sync(),
        size: () => file.size(),
        truncate: (size) => file.truncate(size),
        close: () => file.close(),
      };
    },
  };
  return { io, state };
}

/** A deterministic clock: 2026-06-14T12:00:00.000Z plus 1 ms per call. */
export function steppingClock(start = Date.UTC(2026, 5, 14, 12)): () => number {
  let now = start;
  return () => now++;
}

/** Opens a ledger in `dir` with test-friendly defaults (no fsync, no timer, no automatic checkpoint). */
export function openLedger(dir: string, options: Partial<AuditLedgerOptions> = {}): Promise<AuditLedger> {
  return AuditLedger.open({
    dir,
    fsync: 'never',
    checkpoint: { everyRecords: 1_000_000, everyMs: 0 },
    clock: steppingClock(),
    ...options,
  });
}

/** How {@link writeLedger} writes. */
export interface WriteLedgerOptions {
  /** Ledger options (over {@link openLedger}'s defaults). */
  readonly ledger?: Partial<AuditLedgerOptions>;
  /** A checkpoint after every this many records; default 10 (0: none but the final one). */
  readonly checkpointEvery?: number;
  /** The event of record i (1-based); default {@link sampleEvent}. */
  readonly event?: (i: number) => AuditEvent;
}

/**
 * Appends `count` records to the ledger in `dir` (concurrently within each group of
 * `checkpointEvery`, with an explicit checkpoint after each group) and closes it, which writes the
 * final checkpoint. Resolves with the verifier key.
 */
export async function writeLedger(
  dir: string,
  count: number,
  options: WriteLedgerOptions = {},
): Promise<string> {
  const ledger = await openLedger(dir, options.ledger);
  const every = options.checkpointEvery ?? 10;
  const event = options.event ?? sampleEvent;
  const start = ledger.head.seq;
  for (let done = 0; done < count; ) {
    const group = every > 0 ? Math.min(every, count - done) : count - done;
    await Promise.all(Array.from({ length: group }, (_, i) => ledger.append(event(start + done + i + 1))));
    done += group;
    if (every > 0) await ledger.checkpoint();
  }
  await ledger.close();
  return ledger.verifierKey;
}

/** The lines (without newlines) of a file in the ledger directory. */
export function readLines(dir: string, file = ledgerFileName(1)): string[] {
  const text = readFileSync(join(dir, file), 'utf8');
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}

/** Replaces a file's content by `lines`, each followed by a newline. */
export function writeLines(dir: string, file: string, lines: readonly string[]): void {
  writeFileSync(join(dir, file), lines.map((line) => `${line}\n`).join(''));
}

/** The parsed record of a line. */
export function recordOf(line: string): Record<string, unknown> {
  return JSON.parse(line) as Record<string, unknown>;
}

/** Re-encodes a record (an edited one): recomputes its entry hash over whatever members it has. */
export function reencode(record: Record<string, unknown>): string {
  const { entry_hash: _drop, ...body } = record;
  return encodeRecordLine(body).line;
}

/** What an attacker without the key does after an edit: renumbers and re-chains every record. */
export function rechain(lines: readonly string[]): string[] {
  let prev = '0'.repeat(64);
  return lines.map((line, i) => {
    const { entry_hash: _drop, ...body } = recordOf(line);
    const encoded = encodeRecordLine({ ...body, seq: i + 1, prev_hash: prev });
    prev = encoded.entryHash;
    return encoded.line;
  });
}

/**
 * What an attacker holding the signing key does: writes a fresh, consistent checkpoint log over
 * `lines` at `sizes`, signed with the ledger's own key and origin.
 */
export function resignCheckpoints(dir: string, lines: readonly string[], sizes: readonly number[]): string[] {
  const signer = parseSignerKey(readFileSync(join(dir, SIGNER_KEY_FILE), 'utf8'));
  const tree = new MerkleAccumulator();
  const out: string[] = [];
  let prev = CHECKPOINT_GENESIS;
  for (const size of sizes) {
    while (tree.size < size) tree.append(leafHash(lines[tree.size] as string));
    const line = formatCheckpointLine(
      { origin: signer.name, size, root: tree.root(), prev, time: '2026-06-14T13:00:00.000Z' },
      signer,
    );
    out.push(line);
    prev = checkpointLineHash(line);
  }
  writeLines(dir, CHECKPOINTS_FILE, out);
  return out;
}

/** The verify worker compiled from the TypeScript sources (see src/test-support/worker-module.ts). */
export function testVerifyWorker(): VerifyWorkerModule {
  return { url: compiledWorkerUrl('audit/ledger/verify-worker.ts') };
}

/**
 * `verifyLedger` one thread at a time and with worker threads on every size of ledger (three
 * segments, so that there are two seams), asserting that both report exactly the same; resolves
 * the report. The tamper suites verify through it, so every tampering is also seen by segments.
 */
export async function verifyBothWays(options: VerifyOptions): Promise<VerifyReport> {
  const sequential = await verifyLedger({ ...options, threads: 1 });
  const parallel = await verifyLedger({
    ...options,
    threads: 3,
    parallelMinBytes: 0,
    worker: testVerifyWorker(),
  });
  expect(parallel).toEqual(sequential);
  return sequential;
}
