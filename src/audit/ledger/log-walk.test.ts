/**
 * The parallel record pass: segments checked in worker threads must be taken when honest and change
 * nothing in the report, whatever was done to the files (compared with the sequential walk on
 * random tamperings of a ledger spread over several files).
 */
import { appendFileSync, cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKPOINTS_FILE, listLedgerFiles } from './ledger-paths.js';
import { LedgerTree } from './ledger-tree.js';
import { LogWalk, segmentCount } from './log-walk.js';
import { encodeRecordLine } from './record-line.js';
import { tempDir, testVerifyWorker, writeLedger } from './test-support/ledger-fixture.js';
import { verifyLedger } from './verify.js';
import type { RootTarget } from './verify-checkpoints.js';
import { ledgerSizes, segmentStarts } from './verify-split.js';

let root: string;
let honest: string;
let cleanup: () => void;
let files: string[];

beforeAll(async () => {
  ({ dir: root, cleanup } = tempDir('sb-walk-'));
  honest = join(root, 'honest');
  // About 480 bytes a record and 24 KiB a file: 300 records in 6 files, a checkpoint every 10.
  await writeLedger(honest, 300, {
    ledger: { rotateBytes: 24 * 1024, anchor: { path: join(root, 'anchor.jsonl') } },
  });
  files = await listLedgerFiles(honest);
});
afterAll(() => cleanup());

const parallel = (threads: number, maxSegmentBytes = 1 << 30) => ({
  threads,
  minBytes: 0,
  maxSegmentBytes,
  worker: testVerifyWorker(),
});

describe('LogWalk in segments', () => {
  it('spreads over several files, as the tests below need', () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
  });

  it('takes every segment of an honest ledger, with the sequential walk’s count and positions', async () => {
    const watch = [1, 150, 299, 300];
    const sequential = await new LogWalk(honest, files, [], watch).run();
    for (const threads of [2, 3, 5]) {
      const walk = await new LogWalk(honest, files, [], watch).run(parallel(threads));
      // The workers take segments from the back, one each to start with, more as they finish.
      expect(walk.segments.planned).toBeGreaterThanOrEqual(threads - 1);
      expect(walk.segments.accepted).toBe(walk.segments.planned);
      expect(walk.records).toBe(300);
      expect(walk.failure).toBeUndefined();
      expect(walk.positions).toEqual(sequential.positions);
    }
    expect(sequential.segments).toEqual({ planned: 0, accepted: 0 });
  });

  it('cuts more segments than the threads want when segments are small, and still takes all it hands out', async () => {
    const total = (await ledgerSizes(honest, files)).reduce((a, b) => a + b, 0);
    expect(segmentCount(total, { threads: 3, maxSegmentBytes: 1 << 30 })).toBe(24);
    expect(segmentCount(total, { threads: 3, maxSegmentBytes: 2 * 1024 })).toBe(Math.ceil(total / 2048));
    const walk = await new LogWalk(honest, files, [], [1, 300]).run(parallel(3, 2 * 1024));
    expect(walk.segments.planned).toBeGreaterThanOrEqual(2);
    expect(walk.segments.accepted).toBe(walk.segments.planned);
    expect(walk.records).toBe(300);
  });

  it('compares the checkpoint roots inside the workers’ segments, and takes them when they hold', async () => {
    // A root target every 7 records (sizes that fall anywhere in the segments), computed here.
    const tree = new LedgerTree();
    const targets: RootTarget[] = [];
    for (const file of files) {
      for (const line of linesOf(honest, file).slice(0, -1)) {
        tree.appendLine(Buffer.from(line, 'latin1'));
        if (tree.size % 7 === 0)
          targets.push({
            size: tree.size,
            root: tree.root(),
            origin: 'test',
            file: CHECKPOINTS_FILE,
            line: tree.size / 7,
          });
      }
    }
    expect(tree.size).toBe(300);
    for (const threads of [2, 3]) {
      const walk = await new LogWalk(honest, files, targets, []).run(parallel(threads));
      expect(walk.failure).toBeUndefined();
      expect(walk.segments.planned).toBeGreaterThanOrEqual(threads - 1);
      expect(walk.segments.accepted).toBe(walk.segments.planned);
    }
    // One wrong root, late (inside a worker's segment): the failure the sequential walk reports.
    const wrong = targets.map((t) => (t.size === 294 ? { ...t, root: Buffer.alloc(32) } : t));
    const sequential = await new LogWalk(honest, files, wrong, []).run();
    expect(sequential.failure).toMatchObject({ seq: 294, reason: 'cp_root', line: 42 });
    const walk = await new LogWalk(honest, files, wrong, []).run(parallel(3));
    expect(walk.segments.accepted).toBe(walk.segments.planned);
    expect(walk.failure).toEqual(sequential.failure);
    expect(walk.records).toBe(sequential.records);
  });

  it('stays sequential below the size limit', async () => {
    const walk = await new LogWalk(honest, files, [], []).run({ ...parallel(3), minBytes: 1 << 30 });
    expect(walk.segments.planned).toBe(0);
    expect(walk.records).toBe(300);
  });

  it('walks on by itself when a worker cannot start', async () => {
    const missing = { url: new URL('./no-such-worker.js', import.meta.url) };
    const walk = await new LogWalk(honest, files, [], []).run({ ...parallel(3), worker: missing });
    expect(walk.segments).toEqual({ planned: 2, accepted: 0 });
    expect(walk.records).toBe(300);
    expect(walk.failure).toBeUndefined();
  });

  it('verifyLedger through segments reports what one thread reports (intact ledger)', async () => {
    const one = await verifyLedger({ dir: honest, threads: 1 });
    const many = await verifyLedger({
      dir: honest,
      threads: 4,
      parallelMinBytes: 0,
      worker: testVerifyWorker(),
    });
    expect(one.records).toBe(300);
    expect(many).toEqual(one);
  });
});

/**
 * Forges record `seq` with `prev_hash` set to `prev` (a rewritten target, too) and re-chains every
 * record after it, as an attacker without the checkpoint key would, keeping the file layout.
 */
function forgeFrom(dir: string, names: readonly string[], seq: number, prev: (real: string) => string): void {
  let chain: string | undefined;
  for (const name of names) {
    const lines = linesOf(dir, name);
    for (let i = 0; i < lines.length - 1; i++) {
      const { entry_hash: _, ...body } = JSON.parse(lines[i] as string) as Record<string, unknown>;
      if ((body.seq as number) < seq) continue;
      const forged =
        body.seq === seq
          ? { ...body, target: 'forged', prev_hash: prev(body.prev_hash as string) }
          : { ...body, prev_hash: chain };
      const encoded = encodeRecordLine(forged);
      lines[i] = encoded.line;
      chain = encoded.entryHash;
    }
    writeLinesOf(dir, name, lines);
  }
}

describe('seams', () => {
  /** The seq of the first record of the last segment (a worker's first) with three threads. */
  async function lastSegmentSeq(): Promise<number> {
    const sizes = await ledgerSizes(honest, files);
    const count = segmentCount(
      sizes.reduce((a, b) => a + b, 0),
      { threads: 3, maxSegmentBytes: 1 << 30 },
    );
    const start = (await segmentStarts(honest, files, sizes, new Array<number>(count).fill(1))).at(-1);
    const { file, offset } = start as { file: string; offset: number };
    const before = readFileSync(join(honest, file)).subarray(0, offset);
    return JSON.parse(linesOf(honest, file)[before.toString('latin1').split('\n').length - 1] as string).seq;
  }

  it('a segment whose first record does not chain to the walk is not taken: prev_mismatch, as one thread says', async () => {
    const seq = await lastSegmentSeq();
    const dir = join(root, 'forged-prev');
    cpSync(honest, dir, { recursive: true });
    forgeFrom(dir, files, seq, () => 'f'.repeat(64));
    const one = await verifyLedger({ dir, threads: 1 });
    expect(one.firstBreak).toMatchObject({ seq, reason: 'prev_mismatch' });
    const walk = await new LogWalk(dir, files, [], []).run(parallel(3));
    // All the workers' segments before it are taken; it is not.
    expect(walk.segments.accepted).toBe(walk.segments.planned - 1);
    expect(walk.failure).toMatchObject({ seq, reason: 'prev_mismatch' });
    expect(await verifyLedger({ dir, threads: 3, parallelMinBytes: 0, worker: testVerifyWorker() })).toEqual(
      one,
    );
  });

  it('a re-chained segment that does chain is taken, and the checkpoint roots still catch it', async () => {
    const seq = await lastSegmentSeq();
    const dir = join(root, 'forged-chained');
    cpSync(honest, dir, { recursive: true });
    forgeFrom(dir, files, seq, (real) => real);
    const one = await verifyLedger({ dir, threads: 1 });
    expect(one.firstBreak).toMatchObject({ seq: Math.ceil(seq / 10) * 10, reason: 'cp_root' });
    const walk = await new LogWalk(dir, files, [], []).run(parallel(3));
    expect(walk.segments.accepted).toBe(walk.segments.planned);
    expect(await verifyLedger({ dir, threads: 3, parallelMinBytes: 0, worker: testVerifyWorker() })).toEqual(
      one,
    );
  });
});

/** A tampering of the ledger files: what it does to the copy in `dir`. */
type Tamper = (dir: string, names: readonly string[]) => void;

const linesOf = (dir: string, file: string): string[] => readFileSync(join(dir, file), 'latin1').split('\n');
const writeLinesOf = (dir: string, file: string, lines: readonly string[]): void =>
  writeFileSync(join(dir, file), lines.join('\n'), 'latin1');

/** Picks file `f` and line `l` of it (modulo their counts); `edit` rewrites its lines. */
const atLine =
  (f: number, l: number, edit: (lines: string[], at: number) => void): Tamper =>
  (dir, names) => {
    const file = names[f % names.length] as string;
    const lines = linesOf(dir, file);
    // The last element is the empty string after the final newline.
    edit(lines, l % Math.max(1, lines.length - 1));
    writeLinesOf(dir, file, lines);
  };

const tamper: fc.Arbitrary<Tamper> = fc.oneof(
  fc.tuple(fc.nat(), fc.nat(), fc.nat(), fc.integer({ min: 0x20, max: 0x7e })).map(([f, l, c, byte]) =>
    atLine(f, l, (lines, at) => {
      const line = lines[at] as string;
      const i = c % line.length;
      lines[at] = line.slice(0, i) + String.fromCharCode(byte) + line.slice(i + 1);
    }),
  ),
  fc.tuple(fc.nat(), fc.nat()).map(([f, l]) => atLine(f, l, (lines, at) => void lines.splice(at, 1))),
  fc
    .tuple(fc.nat(), fc.nat())
    .map(([f, l]) => atLine(f, l, (lines, at) => void lines.splice(at, 0, lines[at] as string))),
  fc.tuple(fc.nat(), fc.nat()).map(([f, l]) =>
    atLine(f, l, (lines, at) => {
      if (at + 1 >= lines.length - 1) return;
      [lines[at], lines[at + 1]] = [lines[at + 1] as string, lines[at] as string];
    }),
  ),
  fc.tuple(fc.nat(), fc.nat()).map(([f, l]) => atLine(f, l, (lines, at) => void lines.splice(at, 0, ''))),
  fc.tuple(fc.nat(), fc.nat()).map(([f, l]) =>
    atLine(f, l, (lines, at) => {
      lines[at] = `${lines[at]}\u00ff`;
    }),
  ),
  // A torn tail: the last file cut inside its last line.
  fc.nat().map(
    (cut): Tamper =>
      (dir, names) => {
        const last = join(dir, names[names.length - 1] as string);
        const bytes = readFileSync(last);
        writeFileSync(last, bytes.subarray(0, bytes.length - 1 - (cut % 400)));
      },
  ),
  // Bytes appended to a middle file (a torn line where the next file begins).
  fc.nat().map(
    (f): Tamper =>
      (dir, names) => {
        appendFileSync(join(dir, names[f % (names.length - 1)] as string), '{"v":1');
      },
  ),
  // A whole file removed.
  fc.nat().map(
    (f): Tamper =>
      (dir, names) => {
        writeFileSync(join(dir, names[f % names.length] as string), '');
      },
  ),
);

describe('segments change nothing in the report', () => {
  it('for random tamperings (or none), verifyLedger with 2 to 4 threads (one round or several) reports what one thread reports', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(tamper, { minLength: 0, maxLength: 2 }),
        fc.integer({ min: 2, max: 4 }),
        fc.constantFrom(4 * 1024, 16 * 1024, 1 << 30),
        // The verdict's options, and checkpoints dropped from the end of the log and of the anchor
        // (records left uncovered or unanchored: `--strict` then names a record by its position).
        fc.record({
          anchor: fc.boolean(),
          strict: fc.boolean(),
          dropLocal: fc.nat(12),
          dropAnchor: fc.nat(12),
        }),
        async (edits, threads, segmentBytes, verdict) => {
          const dir = join(root, `run-${run++}`);
          cpSync(honest, dir, { recursive: true });
          const anchor = join(root, `run-${run}-anchor.jsonl`);
          const dropLast = (file: string, count: number): void => {
            const lines = readFileSync(file, 'utf8')
              .split('\n')
              .filter((line) => line !== '');
            writeFileSync(
              file,
              lines
                .slice(0, Math.max(0, lines.length - count))
                .map((l) => `${l}\n`)
                .join(''),
            );
          };
          cpSync(join(root, 'anchor.jsonl'), anchor);
          dropLast(join(dir, CHECKPOINTS_FILE), verdict.dropLocal);
          dropLast(anchor, verdict.dropAnchor);
          const names = readdirSync(dir)
            .filter((name) => name.startsWith('ledger-'))
            .sort();
          for (const edit of edits) edit(dir, names);
          const options = { dir, strict: verdict.strict, ...(verdict.anchor ? { anchor } : {}) };
          const one = await verifyLedger({ ...options, threads: 1 });
          const many = await verifyLedger({
            ...options,
            threads,
            parallelMinBytes: 0,
            parallelSegmentBytes: segmentBytes,
            worker: testVerifyWorker(),
          });
          expect(many).toEqual(one);
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
