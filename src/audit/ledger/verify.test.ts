import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SbErrorCode } from '../../errors/switchboard-error.js';
import { canonicalize } from '../canonical-json.js';
import { generateNoteKey, parseSignerKey } from '../signed-note.js';
import { CHECKPOINT_GENESIS, formatCheckpointLine } from './checkpoint-line.js';
import { CHECKPOINTS_FILE, ledgerFileName, SIGNER_KEY_FILE, VERIFIER_KEY_FILE } from './ledger-paths.js';
import { LedgerTree } from './ledger-tree.js';
import { ENTRY_HASH_SUFFIX_LENGTH, entryHashOf } from './record-line.js';
import {
  openLedger,
  readLines,
  recordOf,
  reencode,
  tempDir,
  writeLedger,
  writeLines,
} from './test-support/ledger-fixture.js';
import { verifyLedger } from './verify.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

async function ledger(count: number, checkpointEvery = 10) {
  const { dir: root, cleanup } = tempDir();
  cleanups.push(cleanup);
  const dir = join(root, 'audit');
  const anchor = join(root, 'anchor.jsonl');
  const key = await writeLedger(dir, count, { checkpointEvery, ledger: { anchor: { path: anchor } } });
  return { root, dir, anchor, key };
}

describe('verifyLedger', () => {
  it('treats an empty ledger as intact only against an (empty) anchor', async () => {
    const { dir: root, cleanup } = tempDir();
    cleanups.push(cleanup);
    const anchor = join(root, 'anchor.jsonl');
    writeFileSync(anchor, '');
    expect(await verifyLedger({ dir: root, anchor })).toMatchObject({ status: 'intact', records: 0 });
    expect(await verifyLedger({ dir: root })).toMatchObject({ status: 'unanchored', records: 0 });
  });

  it('reports records after the last checkpoint as unanchored, and as uncovered_tail when strict', async () => {
    const l = await ledger(25);
    writeLines(l.dir, CHECKPOINTS_FILE, readLines(l.dir, CHECKPOINTS_FILE).slice(0, 2));
    writeLines(l.anchor, '', readLines(l.dir, CHECKPOINTS_FILE));
    const lax = await verifyLedger({ dir: l.dir, anchor: l.anchor });
    expect(lax).toMatchObject({ status: 'unanchored', records: 25, anchored: 20, lastCheckpointSize: 20 });
    expect(lax.unanchoredBecause).toBe(
      'records 21 to 25 are not anchored; records 21 to 25 are not covered by any checkpoint',
    );
    const strict = await verifyLedger({ dir: l.dir, anchor: l.anchor, strict: true });
    expect(strict.firstBreak).toMatchObject({
      seq: 21,
      reason: 'uncovered_tail',
      file: 'ledger-000001.jsonl',
      line: 21,
    });
  });

  it('needs a verifier key once there are checkpoints, and refuses a malformed one', async () => {
    const l = await ledger(10);
    rmSync(join(l.dir, VERIFIER_KEY_FILE));
    await expect(verifyLedger({ dir: l.dir })).rejects.toMatchObject({ code: SbErrorCode.UsageError });
    await expect(verifyLedger({ dir: l.dir, verifierKey: 'nope' })).rejects.toMatchObject({
      code: SbErrorCode.ConfigInvalid,
    });
    expect(await verifyLedger({ dir: l.dir, verifierKey: l.key })).toMatchObject({
      status: 'unanchored',
      checkpoints: 1,
    });
    await expect(verifyLedger({ dir: join(l.root, 'nowhere') })).rejects.toMatchObject({
      code: SbErrorCode.UsageError,
    });
  });

  it('refuses an anchor signed by another key or for another origin, and a broken checkpoint chain', async () => {
    const l = await ledger(20);
    const other = await ledger(20);
    expect((await verifyLedger({ dir: l.dir, anchor: other.anchor })).firstBreak).toMatchObject({
      reason: 'cp_sig',
      file: other.anchor,
      line: 1,
    });
    const lines = readLines(l.dir, CHECKPOINTS_FILE);
    writeLines(l.dir, CHECKPOINTS_FILE, [lines[1] as string, lines[0] as string]);
    expect((await verifyLedger({ dir: l.dir })).firstBreak).toMatchObject({ reason: 'cp_chain', line: 1 });
    // A key of the same name that verifies neither.
    const foreign = generateNoteKey(l.key.split('+')[0] as string).verifierKey;
    writeLines(l.dir, CHECKPOINTS_FILE, lines);
    expect((await verifyLedger({ dir: l.dir, verifierKey: foreign })).firstBreak).toMatchObject({
      reason: 'cp_sig',
    });
  });

  it('reports a torn last checkpoint line and a non-JSON checkpoint line', async () => {
    const l = await ledger(20);
    const path = join(l.dir, CHECKPOINTS_FILE);
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.slice(0, -20));
    expect((await verifyLedger({ dir: l.dir })).firstBreak).toMatchObject({
      reason: 'torn_tail',
      file: CHECKPOINTS_FILE,
    });
    writeFileSync(path, `nonsense\n${text}`);
    expect((await verifyLedger({ dir: l.dir })).firstBreak).toMatchObject({ reason: 'bad_json', line: 1 });
  });

  it('refuses a record whose entry_hash is not its last member, even with every value right', async () => {
    const l = await ledger(12);
    const lines = readLines(l.dir, ledgerFileName(1));
    // The fully canonical form of the whole record puts entry_hash among the others.
    lines[4] = canonicalize(JSON.parse(lines[4] as string));
    writeLines(l.dir, ledgerFileName(1), lines);
    expect((await verifyLedger({ dir: l.dir })).firstBreak).toMatchObject({
      seq: 5,
      reason: 'schema',
      detail: 'the line does not end with its entry_hash member',
    });
  });

  it('refuses a record line that is not canonical even when its bytes hash right (the last one, so no link breaks)', async () => {
    const l = await ledger(12, 0);
    const lines = readLines(l.dir, ledgerFileName(1));
    const last = lines[11] as string;
    // White space after the first member, then the entry hash recomputed over those bytes.
    const hashed = `${last.slice(0, -ENTRY_HASH_SUFFIX_LENGTH).replace('},"', '}, "')}}`;
    expect(hashed).toContain(', "');
    lines[11] = `${hashed.slice(0, -1)},"entry_hash":"${entryHashOf(hashed)}"}`;
    // The same record, parsed: only its bytes (and so its hash) differ.
    expect({ ...recordOf(lines[11] as string), entry_hash: '' }).toEqual({
      ...recordOf(last),
      entry_hash: '',
    });
    writeLines(l.dir, ledgerFileName(1), lines);
    expect((await verifyLedger({ dir: l.dir })).firstBreak).toMatchObject({
      seq: 12,
      reason: 'schema',
      detail: 'the line is not the RFC 8785 canonical form of its record',
      line: 12,
    });
    expect((await verifyLedger({ dir: l.dir })).firstBreak?.also).toBeUndefined();
  });

  it('verifies records the fast path leaves to the general one (escapes, exponents, U+E000 and above in names)', async () => {
    const l = await ledger(3, 0);
    const writer = await openLedger(l.dir);
    await writer.append({
      method: 'tools/call',
      tier: 'T1',
      decision: 'allowed',
      duration_ms: 1e-7,
      args: { 'tab\there': 'quote " and \\ backslash', '\ue000': 1, '\u{1f600}': 2e21, n: -0.5 },
    });
    await writer.close();
    const report = await verifyLedger({ dir: l.dir });
    expect(report).toMatchObject({ records: 4 });
    expect(report.firstBreak).toBeUndefined();
  });

  it('finds a renumbered record (re-hashed, so its own hash and link are right) at its position', async () => {
    const l = await ledger(12);
    const lines = readLines(l.dir, ledgerFileName(1));
    lines[4] = reencode({ ...recordOf(lines[4] as string), seq: 99 });
    writeLines(l.dir, ledgerFileName(1), lines);
    expect((await verifyLedger({ dir: l.dir })).firstBreak).toMatchObject({ seq: 5, reason: 'seq_gap' });
  });

  it('refuses an anchored checkpoint for another origin, even signed by the right key', async () => {
    const l = await ledger(10);
    const signer = parseSignerKey(readFileSync(join(l.dir, SIGNER_KEY_FILE), 'utf8'));
    const tree = new LedgerTree();
    for (const line of readLines(l.dir, ledgerFileName(1))) tree.appendLine(Buffer.from(line));
    const line = formatCheckpointLine(
      {
        origin: 'example.com/other-log',
        size: 10,
        root: tree.root(),
        prev: CHECKPOINT_GENESIS,
        time: '2026-06-14T13:00:00.000Z',
      },
      signer,
    );
    writeLines(l.anchor, '', [line]);
    expect((await verifyLedger({ dir: l.dir, anchor: l.anchor })).firstBreak).toMatchObject({
      reason: 'anchor_root_mismatch',
      detail: expect.stringContaining('origin "example.com/other-log"'),
    });
  });

  it('verifies a ledger with no ledger file yet', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    mkdirSync(join(dir, 'keys'));
    expect(await verifyLedger({ dir })).toMatchObject({ status: 'unanchored', records: 0, checkpoints: 0 });
  });
});
