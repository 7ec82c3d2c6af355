/**
 * audit.md §7, tamper tests 1-22: what each kind of tampering with the log, the checkpoints or
 * the anchor looks like to `verifyLedger`. Tests 23-31 are in tamper-records.test.ts, test 32 (the
 * CLI's exit codes) in src/cli/commands/audit.test.ts.
 */
import { appendFileSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryLogger } from '../../observe/logger.js';
import { generateNoteKey, parseSignerKey } from '../signed-note.js';
import { CHECKPOINT_GENESIS, checkpointLineHash, formatCheckpointLine } from './checkpoint-line.js';
import { CHECKPOINTS_FILE, ledgerFileName, SIGNER_KEY_FILE, STATE_FILE } from './ledger-paths.js';
import { LedgerTree } from './ledger-tree.js';
import {
  openLedger,
  readLines,
  rechain,
  recordOf,
  reencode,
  resignCheckpoints,
  sampleEvent,
  tempDir,
  verifyBothWays,
  writeLedger,
  writeLines,
} from './test-support/ledger-fixture.js';

const FILE = ledgerFileName(1);
let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

/** A ledger of `count` records with checkpoints every 10, copied to an anchor file beside it. */
async function ledger(count = 30, options: Parameters<typeof writeLedger>[2] = {}) {
  const { dir: root, cleanup } = tempDir();
  cleanups.push(cleanup);
  const dir = join(root, 'audit');
  const anchor = join(root, 'anchor.jsonl');
  await writeLedger(dir, count, { ...options, ledger: { anchor: { path: anchor }, ...options.ledger } });
  return {
    dir,
    anchor,
    lines: readLines(dir),
    checkpoints: readLines(dir, CHECKPOINTS_FILE),
    verify: (extra: { anchor?: string | false; strict?: boolean } = {}) =>
      verifyBothWays({
        dir,
        ...(extra.anchor === false ? {} : { anchor: extra.anchor ?? anchor }),
        ...(extra.strict === undefined ? {} : { strict: extra.strict }),
      }),
  };
}

/** A signed checkpoint line over the first `size` of `lines` (or the given root), chained to `prev`. */
function checkpointLine(
  dir: string,
  lines: readonly string[],
  size: number,
  prev: string,
  root?: Buffer,
): string {
  const signer = parseSignerKey(readFileSync(join(dir, SIGNER_KEY_FILE), 'utf8'));
  const tree = new LedgerTree();
  for (const line of lines.slice(0, size)) tree.appendLine(Buffer.from(line));
  return formatCheckpointLine(
    { origin: signer.name, size, root: root ?? tree.root(), prev, time: '2026-06-14T13:00:00.000Z' },
    signer,
  );
}

describe('tamper tests 1-22 (audit.md §7)', () => {
  it('tamper 01: an honest log of N records verifies and reports N', async () => {
    const l = await ledger(30);
    expect(await l.verify()).toEqual({
      status: 'intact',
      records: 30,
      checkpoints: 3,
      lastCheckpointSize: 30,
      anchored: 30,
    });
    // Without the anchor the log still verifies, but truncation cannot be ruled out.
    expect(await l.verify({ anchor: false })).toMatchObject({ status: 'unanchored', records: 30 });
  });

  it('tamper 02: flipping one byte in any member of a middle record is hash_mismatch at its seq', async () => {
    const l = await ledger(30);
    const line = l.lines[14] as string;
    const members = Object.keys(recordOf(line)).filter((name) => name !== 'entry_hash');
    expect(members.length).toBeGreaterThan(15);
    for (const name of members) {
      // The first letter or digit of the member's value, changed to another of its kind.
      const at = line.indexOf(`"${name}":`) + name.length + 3;
      const index = line.slice(at).search(/[0-9a-zA-Z]/) + at;
      const char = line[index] as string;
      const flipped = /[0-9]/.test(char) ? String((Number(char) + 1) % 10) : char === 'a' ? 'b' : 'a';
      const lines = [...l.lines];
      lines[14] = line.slice(0, index) + flipped + line.slice(index + 1);
      writeLines(l.dir, FILE, lines);
      const report = await l.verify();
      expect(report.status, name).toBe('tampered');
      expect(report.firstBreak, name).toMatchObject({
        seq: 15,
        reason: 'hash_mismatch',
        file: FILE,
        line: 15,
      });
    }
  });

  it('tamper 03: editing a member and recomputing its entry_hash is prev_mismatch at seq + 1', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    lines[14] = reencode({ ...recordOf(l.lines[14] as string), decision: 'denied' });
    writeLines(l.dir, FILE, lines);
    expect((await l.verify()).firstBreak).toMatchObject({ seq: 16, reason: 'prev_mismatch', line: 16 });
  });

  it('tamper 04: deleting a middle record is seq_gap (and prev_mismatch) where it was', async () => {
    const l = await ledger(30);
    writeLines(
      l.dir,
      FILE,
      l.lines.filter((_, i) => i !== 14),
    );
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 15,
      reason: 'seq_gap',
      also: ['prev_mismatch'],
    });
  });

  it('tamper 05: swapping two adjacent records fails at the first swapped seq', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    [lines[14], lines[15]] = [lines[15] as string, lines[14] as string];
    writeLines(l.dir, FILE, lines);
    expect((await l.verify()).firstBreak).toMatchObject({ seq: 15, reason: 'seq_gap' });
  });

  it('tamper 06: replaying (duplicating) a record fails', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    lines.splice(15, 0, l.lines[14] as string);
    writeLines(l.dir, FILE, lines);
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 16,
      reason: 'seq_gap',
      also: ['prev_mismatch'],
    });
  });

  it('tamper 07: a forged record inserted with a correct hash makes the next record fail', async () => {
    const l = await ledger(30);
    const before = recordOf(l.lines[14] as string);
    const forged = reencode({
      ...recordOf(l.lines[15] as string),
      target: 'delete_everything',
      prev_hash: before.entry_hash,
    });
    const lines = [...l.lines];
    lines.splice(15, 0, forged);
    writeLines(l.dir, FILE, lines);
    expect((await l.verify()).firstBreak).toMatchObject({ seq: 17, reason: 'seq_gap', line: 17 });
  });

  it('tamper 08: re-chaining the whole log after an edit (no key) is a checkpoint root mismatch', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    lines[14] = reencode({ ...recordOf(l.lines[14] as string), decision: 'denied' });
    writeLines(l.dir, FILE, rechain(lines));
    // The chain itself is consistent again; the first checkpoint covering seq 15 is not.
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 20,
      reason: 'cp_root',
      file: CHECKPOINTS_FILE,
      line: 2,
    });
  });

  it('tamper 09: truncating the tail of a log without checkpoints passes, but is reported unanchored', async () => {
    const l = await ledger(30);
    rmSync(join(l.dir, CHECKPOINTS_FILE));
    rmSync(join(l.dir, STATE_FILE));
    writeLines(l.dir, FILE, l.lines.slice(0, 25));
    const report = await l.verify({ anchor: false });
    expect(report).toMatchObject({ status: 'unanchored', records: 25, checkpoints: 0 });
    expect(report.firstBreak).toBeUndefined();
    expect(report.unanchoredBecause).toContain('truncation cannot be ruled out');
  });

  it('tamper 10: truncating the tail below the last checkpoint fails (cp_root)', async () => {
    const l = await ledger(30);
    writeLines(l.dir, FILE, l.lines.slice(0, 25));
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 26,
      reason: 'cp_root',
      file: CHECKPOINTS_FILE,
      line: 3,
    });
  });

  it('tamper 11: truncating the log and its checkpoints consistently passes without the anchor, not with it', async () => {
    const l = await ledger(30);
    writeLines(l.dir, FILE, l.lines.slice(0, 20));
    writeLines(l.dir, CHECKPOINTS_FILE, l.checkpoints.slice(0, 2));
    expect(await l.verify({ anchor: false })).toMatchObject({
      status: 'unanchored',
      records: 20,
      checkpoints: 2,
    });
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 21,
      reason: 'truncated_below_anchor',
      file: l.anchor,
      line: 3,
    });
  });

  it('tamper 12: a forged log with re-signed checkpoints of the same sizes is anchor_root_mismatch', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    lines[4] = reencode({ ...recordOf(l.lines[4] as string), decision: 'denied' });
    const forged = rechain(lines);
    writeLines(l.dir, FILE, forged);
    resignCheckpoints(l.dir, forged, [10, 20, 30]);
    // The attacker held the key: nothing in the ledger directory can tell.
    expect(await l.verify({ anchor: false })).toMatchObject({
      status: 'unanchored',
      records: 30,
      checkpoints: 3,
    });
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 10,
      reason: 'anchor_root_mismatch',
      file: l.anchor,
      line: 1,
    });
  });

  it('tamper 13: a checkpoint signed with another key is cp_sig', async () => {
    const l = await ledger(30);
    const signer = parseSignerKey(readFileSync(join(l.dir, SIGNER_KEY_FILE), 'utf8'));
    // Same key name, different key: the note's signature is by a key the verifier does not trust.
    writeFileSync(join(l.dir, SIGNER_KEY_FILE), generateNoteKey(signer.name).signerKey);
    resignCheckpoints(l.dir, l.lines, [10, 20, 30]);
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 10,
      reason: 'cp_sig',
      line: 1,
    });
  });

  it('tamper 14: tampering with the bytes of a checkpoint body is cp_sig', async () => {
    const l = await ledger(30);
    const checkpoints = [...l.checkpoints];
    checkpoints[1] = (checkpoints[1] as string).replace('time 2026', 'time 2027');
    writeLines(l.dir, CHECKPOINTS_FILE, checkpoints);
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 20,
      reason: 'cp_sig',
      line: 2,
    });
    // The unsigned copies of size and root must agree with the note as well.
    checkpoints[1] = (l.checkpoints[1] as string).replace('"size":20', '"size":21');
    writeLines(l.dir, CHECKPOINTS_FILE, checkpoints);
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({ reason: 'cp_sig', line: 2 });
  });

  it('tamper 15: a checkpoint larger than the log, or of size 0 over a non-empty log, fails', async () => {
    const l = await ledger(30);
    const prev = checkpointLineHash(l.checkpoints[2] as string);
    const beyond = checkpointLine(l.dir, l.lines, 40, prev, Buffer.alloc(32, 7));
    writeLines(l.dir, CHECKPOINTS_FILE, [...l.checkpoints, beyond]);
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 31,
      reason: 'cp_root',
      line: 4,
    });
    writeLines(l.dir, CHECKPOINTS_FILE, [checkpointLine(l.dir, l.lines, 0, CHECKPOINT_GENESIS)]);
    const empty = await l.verify({ anchor: false });
    expect(empty.status).toBe('tampered');
    expect(empty.firstBreak).toMatchObject({ reason: 'cp_root', line: 1 });
  });

  it('tamper 16: checkpoint sizes that decrease are cp_chain', async () => {
    const l = await ledger(30);
    resignCheckpoints(l.dir, l.lines, [20, 10, 30]);
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 10,
      reason: 'cp_chain',
      line: 2,
    });
  });

  it('tamper 17: a missing or empty anchor while checkpoints exist never verifies as intact', async () => {
    const l = await ledger(30);
    for (const prepare of [() => rmSync(l.anchor), () => writeFileSync(l.anchor, '')]) {
      prepare();
      const lax = await l.verify();
      expect(lax.status).toBe('unanchored');
      expect(lax.unanchoredBecause).toMatch(/the anchor (does not exist|is empty)/);
      const strict = await l.verify({ strict: true });
      expect(strict).toMatchObject({ status: 'tampered', firstBreak: { reason: 'unanchored' } });
    }
  });

  it('tamper 18: a file mixing records without and with request_id/client_id verifies', async () => {
    const l = await ledger(30, {
      event: (i) => {
        const { request_id: _r, client_id: _c, ...old } = sampleEvent(i);
        return i <= 15 ? old : sampleEvent(i);
      },
    });
    expect(recordOf(l.lines[0] as string)).not.toHaveProperty('request_id');
    expect(recordOf(l.lines[0] as string)).not.toHaveProperty('client_id');
    expect(recordOf(l.lines[29] as string)).toMatchObject({ request_id: '30', client_id: 'alice' });
    expect(await l.verify()).toMatchObject({ status: 'intact', records: 30 });
  });

  it('tamper 19: stripping request_id from a new record is hash_mismatch', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    lines[14] = (lines[14] as string).replace('"request_id":"15",', '');
    expect(lines[14]).not.toContain('request_id');
    writeLines(l.dir, FILE, lines);
    expect((await l.verify()).firstBreak).toMatchObject({ seq: 15, reason: 'hash_mismatch' });
  });

  it('tamper 20: an unknown member is a schema failure and a hash mismatch', async () => {
    const l = await ledger(30);
    const lines = [...l.lines];
    lines[14] = (lines[14] as string).replace('"method":', '"note":"added","method":');
    writeLines(l.dir, FILE, lines);
    const report = await l.verify();
    expect(report.firstBreak).toMatchObject({ seq: 15, reason: 'hash_mismatch', also: ['schema'] });
    // Re-hashed, it is still refused by the schema.
    lines[14] = reencode({ ...recordOf(l.lines[14] as string), note: 'added' });
    writeLines(l.dir, FILE, lines);
    expect((await l.verify()).firstBreak).toMatchObject({ seq: 15, reason: 'schema' });
    expect((await l.verify()).firstBreak?.detail).toContain('"note"');
  });

  it('tamper 21: a torn last line is torn_tail, a broken one bad_json; the writer resumes with a seam verify flags', async () => {
    const l = await ledger(20);
    // A crash mid-write: the last line loses its end.
    const text = readFileSync(join(l.dir, FILE), 'utf8');
    truncateSync(join(l.dir, FILE), Buffer.byteLength(text) - 40);
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 20,
      reason: 'torn_tail',
      line: 20,
    });
    // The writer leaves the torn line alone, says so, and continues in a new file from seq 19.
    const logger = new MemoryLogger();
    const reopened = await openLedger(l.dir, { logger });
    expect(reopened.head.seq).toBe(19);
    expect((await reopened.append(sampleEvent(99))).seq).toBe(20);
    await reopened.close();
    expect(logger.entries.some((e) => e.level === 'error' && e.message.includes('torn line'))).toBe(true);
    expect(readFileSync(join(l.dir, FILE), 'utf8').endsWith('\n')).toBe(false);
    expect(recordOf(readLines(l.dir, ledgerFileName(2))[0] as string)).toMatchObject({ seq: 20 });
    expect((await l.verify({ anchor: false })).firstBreak).toMatchObject({
      seq: 20,
      reason: 'torn_tail',
      file: FILE,
    });
    // A complete line that is not JSON.
    const other = await ledger(20);
    const lines = [...other.lines];
    lines[9] = (lines[9] as string).slice(0, 50);
    writeLines(other.dir, FILE, lines);
    expect((await other.verify()).firstBreak).toMatchObject({ seq: 10, reason: 'bad_json', line: 10 });
  });

  it('tamper 22: invalid UTF-8 or a byte order mark fails cleanly (bad_json)', async () => {
    const l = await ledger(20);
    const path = join(l.dir, FILE);
    const original = readFileSync(path);
    const broken = Buffer.from(original);
    const lineTen = l.lines.slice(0, 9).reduce((at, line) => at + Buffer.byteLength(line) + 1, 0);
    broken[original.indexOf('"target":"', lineTen) + 10] = 0xff;
    writeFileSync(path, broken);
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 10,
      reason: 'bad_json',
      detail: 'the line is not valid UTF-8',
    });
    writeFileSync(path, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), original]));
    expect((await l.verify()).firstBreak).toMatchObject({
      seq: 1,
      reason: 'bad_json',
      detail: 'the line starts with a byte order mark',
    });
    writeFileSync(path, original);
    appendFileSync(path, Buffer.from([0xc3, 0x28, 0x0a]));
    expect((await l.verify()).firstBreak).toMatchObject({ seq: 21, reason: 'bad_json' });
  });
});
