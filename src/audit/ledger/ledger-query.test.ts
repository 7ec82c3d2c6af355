import { afterEach, describe, expect, it } from 'vitest';
import { ledgerFileName } from './ledger-paths.js';
import { findRecord, lastRecords } from './ledger-query.js';
import { readLines, tempDir, writeLedger, writeLines } from './test-support/ledger-fixture.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

async function ledger(count: number) {
  const { dir, cleanup } = tempDir();
  cleanups.push(cleanup);
  await writeLedger(dir, count, { ledger: { rotateBytes: 3000 } });
  return dir;
}

describe('lastRecords and findRecord', () => {
  it('read the latest records across rotated files, oldest first', async () => {
    const dir = await ledger(23);
    const last = await lastRecords(dir, 9);
    expect(last.map((r) => r.record?.seq)).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23]);
    expect(new Set(last.map((r) => r.file)).size).toBeGreaterThan(1);
    expect((await lastRecords(dir, 100)).length).toBe(23);
  });

  it('find a record by seq with its file and line, even in a damaged ledger', async () => {
    const dir = await ledger(23);
    for (const seq of [1, 5, 6, 12, 23]) {
      const found = await findRecord(dir, seq);
      expect(found?.record?.seq).toBe(seq);
      expect(readLines(dir, found?.file)[(found?.line ?? 0) - 1]).toBe(found?.text);
    }
    expect(await findRecord(dir, 24)).toBeUndefined();
    const lines = readLines(dir, ledgerFileName(2));
    writeLines(dir, ledgerFileName(2), ['not json', ...lines.slice(1)]);
    expect((await findRecord(dir, 8))?.record?.seq).toBe(8);
    expect((await lastRecords(dir, 30)).some((r) => r.record === undefined)).toBe(true);
  });
});
