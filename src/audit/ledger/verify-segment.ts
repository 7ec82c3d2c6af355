/**
 * One segment of a parallel `verifyLedger`: the record lines from a line boundary to the next
 * segment's first line, checked by the fast path alone (written-line.ts) in a worker thread
 * (verify-worker.ts) while the caller walks the lines before it.
 *
 * A segment cannot know the seq and prev_hash its first record must have (they are the end of the
 * walk before it), so it takes them from that record and reports them: the caller accepts the
 * segment only when they are exactly where its own walk ended (the seam). From there every line
 * must chain as in the sequential walk. A segment never judges: at the first line the fast path
 * cannot prove (tampering, or merely a line some other writer produced) or a torn line it stops and
 * says where, and the caller's sequential walk, which names every failure, goes on from that line.
 * So a parallel verification reports exactly what a sequential one does.
 *
 * The records' Merkle leaves go into a compact range (compact-range.ts), handed back with a copy
 * taken at each checkpoint size inside it: the caller adds the segment to its tree, and compares
 * its checkpoints' roots, with a few node hashes instead of one per record.
 */
import { type CompactRange, RangeBuilder } from './compact-range.js';
import { scanLines } from './line-scanner.js';
import { EntryHasher, verifyWrittenLine, writtenLineLeaf } from './written-line.js';

/** A place in the ledger: a line's first byte. */
export interface LinePlace {
  /** The ledger file's name. */
  readonly file: string;
  /** Byte offset in that file. */
  readonly offset: number;
}

/** What a segment covers. */
export interface SegmentTask {
  readonly dir: string;
  /** The files from the one holding `start` to the one holding `stop` (or the last file). */
  readonly files: readonly string[];
  /** The segment's first line (in `files[0]`). */
  readonly startOffset: number;
  /** The next segment's first line: this one ends before it. Absent: at the end of the ledger. */
  readonly stop?: LinePlace;
  /** Seqs whose line numbers the caller wants (for its report). */
  readonly watch: readonly number[];
  /** Tree sizes (ascending) at which the caller compares roots: the range is copied at each (once). */
  readonly targets: readonly number[];
}

/**
 * Line numbers here count from 1 at the segment's start in its first file (the caller, which knows
 * the real number of that line, adds it); in later files they are the files' own.
 */
export interface SegmentResult {
  /** The first record's seq and prev_hash, as it states them; absent when it could not be read. */
  readonly first?: { readonly seq: number; readonly prev: string };
  /** Records proven, from the first, one after another. */
  readonly records: number;
  /** The entry hash of the last record proven (the first's prev_hash when none). */
  readonly last: string;
  /** Their Merkle leaves, as the compact range from the first record's leaf index (seq - 1) on. */
  readonly range: CompactRange;
  /** The range as it was at each of `task.targets` it reached (ending at that size), ascending. */
  readonly atTargets: readonly CompactRange[];
  /**
   * Where the segment stopped before its end: the first line it could not prove, or a torn line.
   * Absent when every line up to the stop (or the end of the ledger) was proven.
   */
  readonly stoppedAt?: LinePlace & { readonly lineNo: number };
  /** The line number of `task.stop`'s line, when the segment reached it. */
  readonly stopLineNo?: number;
  /** [seq, file, lineNo] of each watched seq proven here. */
  readonly positions: readonly (readonly [number, string, number])[];
}

/** The seq and prev_hash a record line states, read loosely (the fast path then proves them). */
function statedChain(text: string | undefined): { seq: number; prev: string } | undefined {
  if (text === undefined) return undefined;
  try {
    const record = JSON.parse(text) as { seq?: unknown; prev_hash?: unknown } | null;
    const seq = record?.seq;
    // Any other seq fails the fast path anyway; this one starts the range at leaf seq - 1.
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return undefined;
    if (typeof record?.prev_hash !== 'string') return undefined;
    return { seq, prev: record.prev_hash };
  } catch {
    return undefined;
  }
}

/** Checks the segment `task`; see the module comment. Throws only for I/O errors. */
export async function verifySegment(task: SegmentTask): Promise<SegmentResult> {
  const hasher = new EntryHasher();
  const positions: [number, string, number][] = [];
  const { targets } = task;
  let range: RangeBuilder | undefined;
  const atTargets: CompactRange[] = [];
  /** The next of `targets` the range may reach. */
  let target = 0;
  let records = 0;
  let first: { seq: number; prev: string } | undefined;
  let expected = 0;
  let prev = '';
  let stoppedAt: SegmentResult['stoppedAt'];
  let stopLineNo: number | undefined;
  const { stop } = task;
  await scanLines(
    task.dir,
    task.files,
    (line) => {
      if (stop !== undefined && line.file === stop.file && line.offset >= stop.offset) {
        stopLineNo = line.lineNo;
        return false;
      }
      if (first === undefined) {
        first = statedChain(line.text);
        if (first === undefined) {
          stoppedAt = { file: line.file, offset: line.offset, lineNo: line.lineNo };
          return false;
        }
        expected = first.seq;
        prev = first.prev;
        range = new RangeBuilder(first.seq - 1);
        while (target < targets.length && (targets[target] as number) < first.seq) target++;
      }
      const entryHash = verifyWrittenLine(hasher, line.data, line.start, line.end, line.utf8, expected, prev);
      if (entryHash === undefined) {
        stoppedAt = { file: line.file, offset: line.offset, lineNo: line.lineNo };
        return false;
      }
      if (task.watch.includes(expected)) positions.push([expected, line.file, line.lineNo]);
      (range as RangeBuilder).append(writtenLineLeaf);
      // The tree size after record `expected` is `expected`.
      if (targets[target] === expected) atTargets.push((range as RangeBuilder).range());
      while (target < targets.length && (targets[target] as number) <= expected) target++;
      records++;
      expected++;
      prev = entryHash;
      return true;
    },
    {
      startOffset: task.startOffset,
      onTorn: (torn) => {
        // A torn line at or past the stop belongs to the next segment (which reports it).
        if (stop !== undefined && torn.file === stop.file && torn.offset >= stop.offset) {
          stopLineNo = torn.lineNo;
          return false;
        }
        stoppedAt = { file: torn.file, offset: torn.offset, lineNo: torn.lineNo };
        return false;
      },
      decode: false,
    },
  );
  return {
    ...(first === undefined ? {} : { first }),
    records,
    last: records === 0 ? (first?.prev ?? '') : prev,
    range: range?.range() ?? { begin: 0, end: 0, nodes: [] },
    atTargets,
    ...(stoppedAt === undefined ? {} : { stoppedAt }),
    ...(stopLineNo === undefined ? {} : { stopLineNo }),
    positions,
  };
}
