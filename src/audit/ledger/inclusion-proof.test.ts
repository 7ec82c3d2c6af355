import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SbErrorCode } from '../../errors/switchboard-error.js';
import { inclusionProof, leafHash } from '../merkle.js';
import { generateNoteKey } from '../signed-note.js';
import {
  checkInclusionProof,
  type InclusionProofDocument,
  proofRanges,
  proveInclusion,
} from './inclusion-proof.js';
import { CHECKPOINTS_FILE, ledgerFileName, VERIFIER_KEY_FILE } from './ledger-paths.js';
import {
  readLines,
  recordOf,
  reencode,
  tempDir,
  writeLedger,
  writeLines,
} from './test-support/ledger-fixture.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

async function ledger(count: number, checkpointEvery = 10) {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  const key = await writeLedger(dir, count, { checkpointEvery, ledger: { rotateBytes: 3000 } });
  const lines = readdirLines(dir);
  return { dir, key, lines };
}

/** Every record line, across the rotated files. */
function readdirLines(dir: string): string[] {
  const out: string[] = [];
  for (let i = 1; ; i++) {
    try {
      out.push(...readLines(dir, ledgerFileName(i)));
    } catch {
      return out;
    }
  }
}

describe('proofRanges', () => {
  it('names the subtrees whose roots are the RFC 9162 audit path', () => {
    expect(proofRanges(0, 1)).toEqual([]);
    expect(proofRanges(0, 2)).toEqual([[1, 2]]);
    expect(proofRanges(2, 7)).toEqual([
      [3, 4],
      [0, 2],
      [4, 7],
    ]);
    expect(proofRanges(6, 7)).toEqual([
      [4, 6],
      [0, 4],
    ]);
  });
});

describe('proveInclusion and checkInclusionProof', () => {
  it('proves every record of a rotated ledger in its latest checkpoint, with the same path as merkle.ts', async () => {
    const l = await ledger(37);
    const leaves = l.lines.map((line) => leafHash(line));
    for (let seq = 1; seq <= 37; seq++) {
      const doc = await proveInclusion({ dir: l.dir, seq });
      expect(doc).toMatchObject({ v: 1, seq, index: seq - 1, tree_size: 37, line: l.lines[seq - 1] });
      expect(doc.leaf_hash).toBe(leaves[seq - 1]?.toString('hex'));
      expect(doc.proof).toEqual(inclusionProof(leaves, seq - 1, 37).map((h) => h.toString('hex')));
      expect(checkInclusionProof(doc, l.key)).toEqual({
        ok: true,
        origin: l.key.split('+')[0],
        seq,
        treeSize: 37,
      });
    }
  });

  it('proves against an earlier or a later checkpoint on request', async () => {
    const l = await ledger(37);
    for (const treeSize of [10, 20, 30, 37]) {
      const doc = await proveInclusion({ dir: l.dir, seq: 3, treeSize });
      expect(doc.tree_size).toBe(treeSize);
      expect(checkInclusionProof(doc, l.key)).toMatchObject({ ok: true, treeSize });
    }
    await expect(proveInclusion({ dir: l.dir, seq: 13, treeSize: 10 })).rejects.toMatchObject({
      code: SbErrorCode.UsageError,
    });
    await expect(proveInclusion({ dir: l.dir, seq: 38 })).rejects.toMatchObject({
      code: SbErrorCode.UsageError,
      message: 'There is no record 38: the ledger holds records 1 to 37',
      details: { reason: 'no_record', records: 37 },
    });
    await expect(proveInclusion({ dir: l.dir, seq: 0 })).rejects.toMatchObject({
      code: SbErrorCode.UsageError,
    });
  });

  it('tells a record not covered yet from one that does not exist, and says when the next checkpoint is due', async () => {
    const l = await ledger(37);
    // Drop the checkpoint of size 37: records 31 to 37 exist, no checkpoint covers them yet.
    const checkpoints = readLines(l.dir, CHECKPOINTS_FILE);
    writeLines(l.dir, CHECKPOINTS_FILE, checkpoints.slice(0, -1));
    const error = await proveInclusion({ dir: l.dir, seq: 31 }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: SbErrorCode.UsageError,
      details: { reason: 'not_covered', records: 37, lastCheckpointSize: 30 },
    });
    expect((error as Error).message).toMatch(
      /^Record 31 exists but is not covered by a checkpoint yet \(the last one covers 30 records, signed at \d{4}-/,
    );
    expect((error as Error).message).toContain('audit.checkpoint.interval (default 60s)');
    await expect(proveInclusion({ dir: l.dir, seq: 38 })).rejects.toMatchObject({
      details: { reason: 'no_record' },
    });
    expect((await proveInclusion({ dir: l.dir, seq: 30 })).tree_size).toBe(30);
  });

  it('refuses to prove from a log that does not match the checkpoint', async () => {
    const l = await ledger(12);
    const lines = readLines(l.dir);
    lines[1] = reencode({ ...recordOf(lines[1] as string), tier: 'T0' });
    writeLines(l.dir, ledgerFileName(1), lines);
    await expect(proveInclusion({ dir: l.dir, seq: 5 })).rejects.toMatchObject({
      code: SbErrorCode.AuditUnavailable,
      details: { reason: 'cp_root' },
    });
  });

  it('says why a doctored document or a wrong key fails', async () => {
    const l = await ledger(20);
    const doc = await proveInclusion({ dir: l.dir, seq: 5 });
    const check = (changed: Partial<InclusionProofDocument> | unknown, key = l.key) =>
      checkInclusionProof({ ...doc, ...(changed as object) } as InclusionProofDocument, key);
    const otherKey = generateNoteKey(l.key.split('+')[0] as string).verifierKey;
    const rehashed = reencode({ ...recordOf(doc.line), tier: 'T0' });
    const forgedLine = `${doc.line.slice(0, -66)}${'0'.repeat(64)}"}`;
    expect(check({}, otherKey)).toMatchObject({ ok: false, reason: 'cp_sig' });
    expect(check({}, 'garbage')).toMatchObject({ ok: false, reason: 'bad_key' });
    expect(check({ v: 2 })).toMatchObject({ ok: false, reason: 'bad_document' });
    expect(check({ tree_size: 19 })).toMatchObject({ ok: false, reason: 'size_mismatch' });
    expect(check({ line: rehashed })).toMatchObject({ ok: false, reason: 'leaf_mismatch' });
    expect(check({ line: forgedLine, leaf_hash: leafHash(forgedLine).toString('hex') })).toMatchObject({
      ok: false,
      reason: 'hash_mismatch',
    });
    expect(check({ line: rehashed, leaf_hash: leafHash(rehashed).toString('hex') })).toMatchObject({
      ok: false,
      reason: 'bad_proof',
    });
    expect(check({ proof: [...doc.proof].reverse() })).toMatchObject({ ok: false, reason: 'bad_proof' });
    expect(check({ seq: 6, index: 5 })).toMatchObject({ ok: false, reason: 'seq_mismatch' });
    expect(check({ checkpoint: doc.checkpoint.replace('\n20\n', '\n21\n') })).toMatchObject({
      reason: 'cp_sig',
    });
    expect(checkInclusionProof(null as unknown as InclusionProofDocument, l.key)).toMatchObject({
      reason: 'bad_document',
    });
  });

  it('reads the verifier key from a file as written (with its newline)', async () => {
    const l = await ledger(10);
    const doc = await proveInclusion({ dir: l.dir, seq: 10 });
    expect(checkInclusionProof(doc, readFileSync(join(l.dir, VERIFIER_KEY_FILE), 'utf8')).ok).toBe(true);
  });
});
