/**
 * The record pass of `verifyLedger` (verify.ts, step 2): every line in order, the fast path
 * (written-line.ts) for lines the writer produced and the general path for any other, which names
 * the failure; a Merkle accumulator runs along and its root is compared at every checkpoint's size.
 *
 * Parallel: with `threads > 1` and a ledger large enough, the lines are cut into segments (at line
 * boundaries) of equal size, several per thread. This thread walks them from the front while the
 * worker threads (verify-segment.ts) take them from the back, one at a time each, the last segment
 * not yet taken whenever a worker is idle, never the one this thread is in. Where they meet depends
 * only on how fast each goes, so no thread waits for long: at most for the one segment a worker is
 * still checking when this thread reaches it. A worker hands back its records' Merkle leaves as a
 * compact range, with a copy at each checkpoint size inside it (compact-range.ts), so what waits in
 * memory is a few digests per segment, however large the ledger.
 *
 * This thread takes the workers' results in order, when it reaches them: one is accepted only when
 * it starts exactly where the walk stands (seq and prev_hash); the checkpoint roots inside it are
 * compared (the tree so far plus the range at that size) and the walk jumps past the lines it
 * proved, adding the range to the tree. At the first segment that is not accepted, or at the first
 * line a segment could not prove, the walk goes on line by line from there to the end, and the
 * workers are stopped. So the report, break and line numbers included, is the sequential walk's,
 * whatever the segments saw.
 */

import { canonicalJson } from './canonical-record.js';
import { appendRange, type CompactRange, rootWithRange } from './compact-range.js';
import { CHECKPOINTS_FILE } from './ledger-paths.js';
import { LedgerTree, leafDigest } from './ledger-tree.js';
import { type ScannedLine, scanLines } from './line-scanner.js';
import { ENTRY_HASH_SUFFIX_HEAD, ENTRY_HASH_SUFFIX_LENGTH, GENESIS_HASH } from './record-line.js';
import { recordSchemaProblem } from './record-schema.js';
import type { RootTarget } from './verify-checkpoints.js';
import { VerifyPool, type VerifyWorkerModule } from './verify-pool.js';
import type { VerifyBreak, VerifyReason } from './verify-report.js';
import type { LinePlace, SegmentResult, SegmentTask } from './verify-segment.js';
import { ledgerSizes, segmentStarts } from './verify-split.js';
import { EntryHasher, verifyWrittenLine, writtenLineLeaf } from './written-line.js';

/** Where a record is. */
export interface Position {
  readonly file: string;
  readonly lineNo: number;
}

/** Where a line starts, with its line number. */
type Place = LinePlace & Position;

/**
 * A line number a segment reported (counted from 1 at its start in its first file) as the file's
 * own, given the real number of the segment's first line.
 */
function segmentLineNo(task: SegmentTask, startLineNo: number, file: string, lineNo: number): number {
  return file === task.files[0] ? startLineNo + lineNo - 1 : lineNo;
}

/** What the walk found. */
export interface WalkResult {
  readonly records: number;
  readonly failure: VerifyBreak | undefined;
  readonly positions: Map<number, Position>;
  /** Segments handed to worker threads, and those whose result the walk took (for tests and tuning). */
  readonly segments: { readonly planned: number; readonly accepted: number };
}

/** How the walk may use worker threads. */
export interface WalkParallelism {
  /** Threads, this one included; 1 walks sequentially. */
  readonly threads: number;
  /** Below this many bytes of ledger files the walk stays sequential (starting workers costs more). */
  readonly minBytes: number;
  /** Segments hold at most about this many bytes (more segments than the threads want, then). */
  readonly maxSegmentBytes: number;
  readonly worker: VerifyWorkerModule;
}

/**
 * Segments per thread. More make the meeting point finer (the last wait is one segment at most) and
 * cost a file open and a message each.
 */
const SEGMENTS_PER_THREAD = 8;

/** How many segments a parallel walk over `totalBytes` of ledger files cuts (see the module comment). */
export function segmentCount(
  totalBytes: number,
  parallel: Pick<WalkParallelism, 'threads' | 'maxSegmentBytes'>,
): number {
  return Math.max(parallel.threads * SEGMENTS_PER_THREAD, Math.ceil(totalBytes / parallel.maxSegmentBytes));
}

/**
 * The hash a line states in its suffix, or undefined when the line does not end with an
 * `entry_hash` member. Not checked for hex here: a non-hex value never equals a computed hash, and
 * the schema check names it.
 */
function statedHash(text: string): string | undefined {
  const at = text.length - ENTRY_HASH_SUFFIX_LENGTH;
  if (at < 1 || !text.startsWith(ENTRY_HASH_SUFFIX_HEAD, at) || !text.endsWith('"}')) return undefined;
  return text.slice(at + ENTRY_HASH_SUFFIX_HEAD.length, text.length - 2);
}

/**
 * Why the record (parsed from `text`, which passed every other check) is not in the canonical form
 * the writer produces, or `undefined` when it is: the general path's re-encoding, for the lines the
 * fast path could not prove canonical.
 */
function canonicalProblem(record: Record<string, unknown>, text: string): string | undefined {
  const { entry_hash: _, ...body } = record;
  let canonical: string;
  try {
    canonical = canonicalJson(body);
  } catch {
    return 'the record has no RFC 8785 canonical form';
  }
  return canonical === `${text.slice(0, text.length - ENTRY_HASH_SUFFIX_LENGTH)}}`
    ? undefined
    : 'the line is not the RFC 8785 canonical form of its record';
}

/** A segment of a parallel walk: its task and result once a worker took it. */
interface Segment {
  readonly start: LinePlace;
  readonly stop: LinePlace | undefined;
  handedOut?: { readonly task: SegmentTask; readonly result: Promise<SegmentResult | undefined> };
}

/** The record pass; see the module comment. */
export class LogWalk {
  readonly #dir: string;
  readonly #files: readonly string[];
  readonly #targets: readonly RootTarget[];
  /** The targets' sizes, ascending, each once (what a segment copies its range at). */
  readonly #targetSizes: readonly number[];
  readonly #watch: readonly number[];
  readonly #hasher = new EntryHasher();
  readonly #tree = new LedgerTree();
  readonly #positions = new Map<number, Position>();
  #expected = 1;
  #prev = GENESIS_HASH;
  /** The next root target to compare. */
  #next = 0;
  #failure: VerifyBreak | undefined;
  #planned = 0;
  #accepted = 0;

  constructor(
    dir: string,
    files: readonly string[],
    targets: readonly RootTarget[],
    watch: readonly number[],
  ) {
    this.#dir = dir;
    this.#files = files;
    this.#targets = targets;
    this.#targetSizes = [...new Set(targets.map((t) => t.size))].sort((a, b) => a - b);
    this.#watch = watch;
  }

  /** Walks every record, in parallel segments when `parallel` allows; see the module comment. */
  async run(parallel?: WalkParallelism): Promise<WalkResult> {
    if (this.#files.length === 0) return this.#result();
    const segments = parallel !== undefined && parallel.threads > 1 ? await this.#plan(parallel) : [];
    if (segments.length < 2) await this.#scan({ file: this.#files[0] as string, offset: 0, lineNo: 1 });
    else await this.#runSegments(segments, parallel as WalkParallelism);
    return this.#result();
  }

  #result(): WalkResult {
    return {
      records: this.#expected - 1,
      failure: this.#failure,
      positions: this.#positions,
      segments: { planned: this.#planned, accepted: this.#accepted },
    };
  }

  /** The segments, in order (none when the ledger is too small to be worth it). */
  async #plan(parallel: WalkParallelism): Promise<Segment[]> {
    const sizes = await ledgerSizes(this.#dir, this.#files);
    const total = sizes.reduce((a, b) => a + b, 0);
    if (total < parallel.minBytes) return [];
    const weights = new Array<number>(segmentCount(total, parallel)).fill(1);
    const starts: LinePlace[] = [
      { file: this.#files[0] as string, offset: 0 },
      ...(await segmentStarts(this.#dir, this.#files, sizes, weights)),
    ];
    return starts.map((start, i) => ({ start, stop: starts[i + 1] }));
  }

  #task(segment: Segment): SegmentTask {
    const { start, stop } = segment;
    const from = this.#files.indexOf(start.file);
    const to = stop === undefined ? this.#files.length : this.#files.indexOf(stop.file) + 1;
    return {
      dir: this.#dir,
      files: this.#files.slice(from, to),
      startOffset: start.offset,
      ...(stop === undefined ? {} : { stop: { file: stop.file, offset: stop.offset } }),
      watch: this.#watch,
      targets: this.#targetSizes,
    };
  }

  async #runSegments(segments: readonly Segment[], parallel: WalkParallelism): Promise<void> {
    const pool = new VerifyPool(parallel.worker, parallel.threads - 1);
    /** The segment this thread is in; the workers have taken those from `back` on. */
    let current = 0;
    let back = segments.length;
    let walking = true;
    const handOut = (): void => {
      while (walking && pool.idle > 0 && back - 1 > current) {
        const segment = segments[--back] as Segment;
        const task = this.#task(segment);
        const result = pool.run(task);
        segment.handedOut = { task, result };
        this.#planned++;
        // That worker is idle again: the next segment from the back, if this thread is not there yet.
        void result.then(handOut);
      }
    };
    try {
      let at: Place | undefined = { file: this.#files[0] as string, offset: 0, lineNo: 1 };
      for (; current < segments.length && at !== undefined; current++) {
        handOut();
        const segment = segments[current] as Segment;
        const { handedOut: worker } = segment;
        at = worker === undefined ? await this.#scan(at, segment.stop) : await this.#take(worker, at);
      }
    } finally {
      walking = false;
      await pool.close();
    }
  }

  /**
   * A worker's segment starting at `at`: its records taken when its result is accepted, the rest
   * walked here otherwise. Resolves where the next segment starts, `undefined` when the walk is over.
   */
  async #take(
    { task, result: pending }: NonNullable<Segment['handedOut']>,
    at: Place,
  ): Promise<Place | undefined> {
    const result = await pending;
    if (result === undefined || !this.#accepts(task, result)) {
      await this.#scan(at);
      return undefined;
    }
    this.#accepted++;
    this.#absorb(task, result, at.lineNo);
    if (this.#failure !== undefined) return undefined;
    if (result.stoppedAt !== undefined) {
      // Line by line from the line the segment could not prove, to the end.
      const { file, offset, lineNo } = result.stoppedAt;
      await this.#scan({ file, offset, lineNo: segmentLineNo(task, at.lineNo, file, lineNo) });
      return undefined;
    }
    const stop = task.stop;
    if (stop === undefined) return undefined;
    return { ...stop, lineNo: segmentLineNo(task, at.lineNo, stop.file, result.stopLineNo as number) };
  }

  /**
   * Whether a segment's result continues the walk exactly (its first record is the next seq and
   * chains to the last, its range continues the tree) and was proven to its end or to a line it
   * stopped at.
   */
  #accepts(task: SegmentTask, result: SegmentResult): boolean {
    const { first, range } = result;
    if (first === undefined || first.seq !== this.#expected || first.prev !== this.#prev) return false;
    // Its range continues the tree, with a copy at every root target inside it.
    const begin = this.#tree.size;
    const end = begin + result.records;
    if (range.begin !== begin || range.end !== end) return false;
    for (const size of this.#targetSizes) {
      if (size > begin && size <= end && !result.atTargets.some((r) => r.begin === begin && r.end === size))
        return false;
    }
    return result.stoppedAt !== undefined || task.stop === undefined || result.stopLineNo !== undefined;
  }

  /**
   * Takes an accepted segment's records: the roots of the checkpoints inside it compared (as
   * {@link LogWalk.#appendLeaf} would, record by record), then its range added to the tree.
   */
  #absorb(task: SegmentTask, result: SegmentResult, startLineNo: number): void {
    for (const [seq, file, lineNo] of result.positions)
      this.#positions.set(seq, { file, lineNo: segmentLineNo(task, startLineNo, file, lineNo) });
    const tree = this.#tree;
    const begin = tree.size;
    const end = begin + result.records;
    const targets = this.#targets;
    // A target at or below the tree's size is never reached (the walk compares at equality).
    while (this.#next < targets.length) {
      const target = targets[this.#next] as RootTarget;
      if (target.size <= begin || target.size > end) break;
      const range = result.atTargets.find((r) => r.end === target.size) as CompactRange;
      if (!rootWithRange(tree, range).equals(target.root)) {
        this.#expected = target.size + 1;
        this.#rootFailure(target);
        return;
      }
      this.#next++;
    }
    appendRange(tree, result.range);
    this.#expected = end + 1;
    this.#prev = result.last;
  }

  /**
   * Visits each line from `from` to the end, or, given `stop`, up to the line at `stop`: resolves
   * that line's place then, `undefined` when the walk is over (a break, or the end of the ledger:
   * should the stop's line be gone, the walk goes on through the files after it).
   */
  async #scan(from: Place, stop?: LinePlace): Promise<Place | undefined> {
    let reached: Place | undefined;
    const fromIndex = this.#files.indexOf(from.file);
    const stopIndex = stop === undefined ? this.#files.length - 1 : this.#files.indexOf(stop.file);
    const atStop = (file: string, offset: number): boolean =>
      stop !== undefined && file === stop.file && offset >= stop.offset;
    const completed = await scanLines(
      this.#dir,
      this.#files.slice(fromIndex, stopIndex + 1),
      (line) => {
        if (atStop(line.file, line.offset)) {
          reached = { file: line.file, offset: line.offset, lineNo: line.lineNo };
          return false;
        }
        return this.#visit(line);
      },
      {
        startOffset: from.offset,
        startLineNo: from.lineNo,
        onTorn: (torn) => {
          if (atStop(torn.file, torn.offset)) {
            reached = { file: torn.file, offset: torn.offset, lineNo: torn.lineNo };
            return false;
          }
          this.#failure = {
            seq: this.#expected,
            reason: 'torn_tail',
            detail: `the file ends with an incomplete line (${torn.bytes.length} bytes, no newline)`,
            file: torn.file,
            line: torn.lineNo,
          };
          return false;
        },
        decode: false,
      },
    );
    if (completed && stop !== undefined && stopIndex + 1 < this.#files.length) {
      await this.#scan({ file: this.#files[stopIndex + 1] as string, offset: 0, lineNo: 1 });
    }
    return reached;
  }

  /** One line: the fast path, else the general path; then the tree. `false` stops the walk. */
  #visit(line: ScannedLine): boolean {
    const expected = this.#expected;
    if (this.#watch.includes(expected))
      this.#positions.set(expected, { file: line.file, lineNo: line.lineNo });
    const { data, start, end } = line;
    let entryHash = verifyWrittenLine(this.#hasher, data, start, end, line.utf8, expected, this.#prev);
    let leaf = writtenLineLeaf;
    if (entryHash === undefined) {
      entryHash = this.#general(line);
      if (entryHash === undefined) return false;
      leaf = leafDigest(data, start, end);
    }
    this.#prev = entryHash;
    return this.#appendLeaf(leaf);
  }

  /** The next record's leaf: into the tree, and the roots compared at the sizes checkpoints name. */
  #appendLeaf(leaf: string): boolean {
    const tree = this.#tree;
    tree.append(leaf);
    this.#expected++;
    const targets = this.#targets;
    while (this.#next < targets.length && (targets[this.#next] as RootTarget).size === tree.size) {
      const target = targets[this.#next] as RootTarget;
      if (!tree.root().equals(target.root)) {
        this.#rootFailure(target);
        return false;
      }
      this.#next++;
    }
    return true;
  }

  #rootFailure(target: RootTarget): void {
    const anchored = target.file !== CHECKPOINTS_FILE;
    this.#failure = {
      seq: target.size,
      reason: anchored ? 'anchor_root_mismatch' : 'cp_root',
      detail: `the root of the first ${target.size} records is not the ${anchored ? 'anchored ' : ''}checkpoint's`,
      file: target.file,
      line: target.line,
    };
  }

  #lineFailure(line: ScannedLine, problems: [VerifyReason, string][]): undefined {
    const [[reason, detail], ...rest] = problems as [[VerifyReason, string], ...[VerifyReason, string][]];
    this.#failure = { seq: this.#expected, reason, detail, file: line.file, line: line.lineNo };
    if (rest.length > 0) this.#failure = { ...this.#failure, also: rest.map(([also]) => also) };
    return undefined;
  }

  /**
   * The general path: every check from the parsed line, naming each failure. Returns the line's
   * entry hash when it passes, `undefined` after recording the failure.
   */
  #general(line: ScannedLine): string | undefined {
    const { text } = line;
    const expected = this.#expected;
    const prev = this.#prev;
    if (text === undefined) return this.#lineFailure(line, [['bad_json', 'the line is not valid UTF-8']]);
    if (text.charCodeAt(0) === 0xfeff)
      return this.#lineFailure(line, [['bad_json', 'the line starts with a byte order mark']]);
    let record: { seq?: unknown; prev_hash?: unknown } | null;
    try {
      record = JSON.parse(text) as typeof record;
    } catch (error) {
      return this.#lineFailure(line, [['bad_json', `not JSON: ${(error as Error).message}`]]);
    }
    const stated = statedHash(text);
    const computed = stated === undefined ? undefined : this.#hasher.of(line.data, line.start, line.end);
    const hashOk = stated !== undefined && computed === stated;
    const schema = recordSchemaProblem(record, hashOk ? [prev, computed as string] : [prev]);
    const seq = record?.seq;
    if (!hashOk || schema !== undefined || seq !== expected || record?.prev_hash !== prev) {
      const problems: [VerifyReason, string][] = [];
      if (stated === undefined) problems.push(['schema', 'the line does not end with its entry_hash member']);
      else if (!hashOk) problems.push(['hash_mismatch', 'entry_hash is not the hash of the record']);
      if (schema !== undefined) problems.push(['schema', schema]);
      if (seq !== expected)
        problems.push(['seq_gap', `expected seq ${expected}, found ${JSON.stringify(seq)}`]);
      if (record?.prev_hash !== prev)
        problems.push(['prev_mismatch', `prev_hash is not the entry_hash of seq ${expected - 1}`]);
      return this.#lineFailure(line, problems);
    }
    const noncanonical = canonicalProblem(record as Record<string, unknown>, text);
    if (noncanonical !== undefined) return this.#lineFailure(line, [['schema', noncanonical]]);
    return stated;
  }
}
