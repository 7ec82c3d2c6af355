/**
 * Reading records for people (`switchboard audit tail` and `show`): the latest records, read
 * backwards from the end, and one record by seq, found through the first seq of each file so that
 * only one file is scanned. Nothing here verifies; lines that are not records are returned as text.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import type { AuditRecord } from './audit-event.js';
import { listLedgerFiles } from './ledger-paths.js';
import { scanLines } from './line-scanner.js';
import { readTailLines } from './tail-reader.js';

/** One stored line and, when it parses as an object, the record. */
export interface StoredRecord {
  /** The parsed line, or `undefined` when it is not a JSON object. */
  readonly record: AuditRecord | undefined;
  readonly text: string;
  readonly file: string;
  /** 1-based line number within `file`, when known (`tail` reads backwards and does not count). */
  readonly line?: number;
}

function parse(text: string): AuditRecord | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as AuditRecord)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The last `count` complete lines of the ledger, oldest first. */
export async function lastRecords(dir: string, count: number): Promise<StoredRecord[]> {
  const files = await listLedgerFiles(dir);
  const out: StoredRecord[] = [];
  for (let i = files.length - 1; i >= 0 && out.length < count; i--) {
    const file = files[i] as string;
    const tail = await readTailLines(join(dir, file), count - out.length);
    const records = tail.lines.map((bytes) => {
      const text = bytes.toString('utf8');
      return { record: parse(text), text, file };
    });
    out.unshift(...records);
  }
  return out;
}

/** The seq of a file's first line, or `undefined` (empty, unreadable). */
async function firstSeq(path: string): Promise<number | undefined> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const end = buffer.subarray(0, bytesRead).indexOf(10);
    const seq = end < 0 ? undefined : parse(buffer.subarray(0, end).toString('utf8'))?.seq;
    return typeof seq === 'number' ? seq : undefined;
  } finally {
    await handle.close();
  }
}

async function findIn(dir: string, files: readonly string[], seq: number): Promise<StoredRecord | undefined> {
  let found: StoredRecord | undefined;
  await scanLines(dir, files, (line) => {
    const text = line.text ?? line.bytes.toString('utf8');
    const record = parse(text);
    if (record?.seq !== seq) return true;
    found = { record, text, file: line.file, line: line.lineNo };
    return false;
  });
  return found;
}

/** The first line whose record has `seq`, with where it is; `undefined` when there is none. */
export async function findRecord(dir: string, seq: number): Promise<StoredRecord | undefined> {
  const files = await listLedgerFiles(dir);
  // The file to look in: the last whose first seq is at most `seq` (the chain runs across files).
  let candidate: string | undefined;
  for (const file of files) {
    const first = await firstSeq(join(dir, file));
    if (first !== undefined && first <= seq) candidate = file;
  }
  const quick = candidate === undefined ? undefined : await findIn(dir, [candidate], seq);
  // A damaged ledger (seams, replays) may put the record elsewhere: fall back to every file.
  return quick ?? (await findIn(dir, files, seq));
}
