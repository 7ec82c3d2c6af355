import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLedgerFiles } from './ledger-paths.js';
import { tempDir, writeLedger } from './test-support/ledger-fixture.js';
import { ledgerSizes, segmentStarts } from './verify-split.js';

let dir: string;
let cleanup: () => void;
let files: string[];

beforeAll(async () => {
  ({ dir, cleanup } = tempDir('sb-split-'));
  await writeLedger(dir, 120, { ledger: { rotateBytes: 16 * 1024 } });
  files = await listLedgerFiles(dir);
});
afterAll(() => cleanup());

/** Whether `offset` in `file` is where a line starts (the file's start, or after a newline). */
function lineStart(file: string, offset: number): boolean {
  const bytes = readFileSync(join(dir, file));
  return offset < bytes.length && (offset === 0 || bytes[offset - 1] === 10);
}

describe('segmentStarts', () => {
  it('cuts at line starts, in order, spread over the files', async () => {
    for (const segments of [2, 3, 4, 8]) {
      const weights = [0.8, ...new Array<number>(segments - 1).fill(1)];
      const starts = await segmentStarts(dir, files, await ledgerSizes(dir, files), weights);
      expect(starts).toHaveLength(segments - 1);
      let last = -1;
      for (const { file, offset, index } of starts) {
        expect(lineStart(file, offset)).toBe(true);
        expect(index).toBeGreaterThan(0);
        const place = files.indexOf(file) * 1e9 + offset;
        expect(place).toBeGreaterThan(last);
        last = place;
      }
    }
  });

  it('gives the first segment its share of the bytes', async () => {
    const [start] = await segmentStarts(dir, files, await ledgerSizes(dir, files), [1, 3]);
    const sizes = files.map((f) => readFileSync(join(dir, f)).length);
    const total = sizes.reduce((a, b) => a + b, 0);
    const index = files.indexOf(start?.file as string);
    const before = sizes.slice(0, index).reduce((a, b) => a + b, 0) + (start?.offset as number);
    expect(before / total).toBeGreaterThanOrEqual(0.25);
    expect(before / total).toBeLessThan(0.27);
  });

  it('leaves out a cut with no line start after it (one long line)', async () => {
    const { dir: one, cleanup: done } = tempDir('sb-split-one-');
    try {
      writeFileSync(join(one, 'ledger-000001.jsonl'), `${'x'.repeat(10_000)}\n`);
      const names = ['ledger-000001.jsonl'];
      expect(await segmentStarts(one, names, await ledgerSizes(one, names), [1, 1, 1, 1])).toEqual([]);
    } finally {
      done();
    }
  });
});
