/**
 * `verifyLedger`: checks a ledger directory end to end and reports the first break (audit.md §6).
 *
 * 1. The checkpoint log: every line signed by the verifier key, chained by `prev`, one origin,
 *    sizes never decreasing; the anchor's lines (when given) signed by the same key.
 * 2. One pass over the ledger files in order, line by line: UTF-8 and JSON, the entry hash
 *    recomputed from the line's bytes, the schema, seq, prev_hash, and that the line is the
 *    canonical form of its record (so any JCS implementation re-derives the same hash from the
 *    parsed record). A line the writer produced is proven all of that by one scan of its bytes
 *    (canonical-line-check.ts, where the soundness argument is), then hashed where it lies; any
 *    other line takes the general path (`JSON.parse`, the schema, a re-encoding), which names the
 *    failure. A Merkle accumulator runs along, and at each checkpoint's and anchored checkpoint's
 *    size its root is compared: the cost stays linear however many checkpoints there are.
 * 3. Checkpoints larger than the log (`cp_root`), anchored checkpoints larger than the log
 *    (`truncated_below_anchor`).
 * 4. The verdict: `intact` only when an anchor confirms every record; `unanchored` when the log
 *    verifies but records are not anchored (no anchor, an empty anchor, records after the last
 *    anchored checkpoint); `strict` turns that into a failure (`uncovered_tail` or `unanchored`).
 */
import { hash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { type NoteVerifier, parseVerifierKey } from '../signed-note.js';
import { checkCanonicalRecordLine, latin1 } from './canonical-line-check.js';
import { canonicalJson } from './canonical-record.js';
import { CHECKPOINTS_FILE, listLedgerFiles, VERIFIER_KEY_FILE } from './ledger-paths.js';
import { LedgerTree, leafDigest } from './ledger-tree.js';
import { type ScannedLine, scanLines } from './line-scanner.js';
import {
  ENTRY_HASH_DOMAIN,
  ENTRY_HASH_SUFFIX_HEAD,
  ENTRY_HASH_SUFFIX_LENGTH,
  GENESIS_HASH,
} from './record-line.js';
import { recordSchemaProblem } from './record-schema.js';
import {
  checkCheckpointLines,
  type RootTarget,
  readSmallFile,
  type SmallFile,
} from './verify-checkpoints.js';
import { earliestBreak, type VerifyBreak, type VerifyReason, type VerifyReport } from './verify-report.js';

export type { VerifyBreak, VerifyReason, VerifyReport, VerifyStatus } from './verify-report.js';

/** Options of {@link verifyLedger}. */
export interface VerifyOptions {
  /** The ledger directory. */
  readonly dir: string;
  /** The verifier key string; default the content of `<dir>/keys/checkpoint.pub`. */
  readonly verifierKey?: string;
  /** An anchor file: copies of checkpoint lines kept in another trust domain. */
  readonly anchor?: string;
  /** Unanchored or uncovered records are a failure. */
  readonly strict?: boolean;
}

const DOMAIN = Buffer.from(ENTRY_HASH_DOMAIN, 'utf8');
const SUFFIX_HEAD = Buffer.from(ENTRY_HASH_SUFFIX_HEAD, 'latin1');

/** Recomputes entry hashes from line bytes with one reused buffer: domain + line minus suffix + `}`. */
class EntryHasher {
  #scratch = Buffer.alloc(64 * 1024);

  constructor() {
    this.#scratch.set(DOMAIN);
  }

  /** The entry hash of the line `data[start, end)`, which must be longer than the suffix. */
  of(data: Buffer, start: number, end: number): string {
    const hashed = end - start - ENTRY_HASH_SUFFIX_LENGTH;
    const total = DOMAIN.length + hashed + 1;
    if (this.#scratch.length < total) {
      this.#scratch = Buffer.alloc(total * 2);
      this.#scratch.set(DOMAIN);
    }
    data.copy(this.#scratch, DOMAIN.length, start, start + hashed);
    this.#scratch[total - 1] = 0x7d;
    return hash('sha256', this.#scratch.subarray(0, total), 'hex');
  }
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

/** The entry hash {@link hashInPlace} computed last (module state: no object per line). */
let inPlaceEntryHash = '';

/**
 * The Merkle leaf digest (returned) and the entry hash ({@link inPlaceEntryHash}) of the line
 * `data[start, end)`, hashed where it lies instead of copied: the bytes before the line, those of
 * lines already visited and never read again by the scanner, are overwritten with each hash's
 * prefix (`0x00`, then the domain tag), and the suffix's comma is `}` for the entry hash, then put
 * back. Needs `start >= DOMAIN.length`. The line's own bytes are unchanged afterwards.
 */
function hashInPlace(data: Buffer, start: number, end: number): string {
  data[start - 1] = 0x00;
  const leaf = hash('sha256', data.subarray(start - 1, end), 'binary');
  const from = start - DOMAIN.length;
  for (let k = 0; k < DOMAIN.length; k++) data[from + k] = DOMAIN[k] as number;
  const close = end - ENTRY_HASH_SUFFIX_LENGTH;
  data[close] = 0x7d;
  inPlaceEntryHash = hash('sha256', data.subarray(from, close + 1), 'hex');
  data[close] = 0x2c;
  return leaf;
}

/** Whether `data[end - 81, end)` is the suffix `,"entry_hash":"<hash>"}` for this hex `hash`. */
function statesHash(data: Buffer, end: number, hash: string): boolean {
  const at = end - ENTRY_HASH_SUFFIX_LENGTH;
  for (let k = 0; k < SUFFIX_HEAD.length; k++) if (data[at + k] !== SUFFIX_HEAD[k]) return false;
  const hexAt = at + SUFFIX_HEAD.length;
  return data[end - 2] === 0x22 && data[end - 1] === 0x7d && latin1(data, hexAt, hexAt + 64) === hash;
}

/**
 * Why the record (parsed from `text`, which passed every other check) is not in the canonical form
 * the writer produces, or `undefined` when it is: the general path's re-encoding, for the lines the
 * fast path (canonical-line-check.ts) could not prove canonical.
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

async function loadVerifier(options: VerifyOptions, needed: boolean): Promise<NoteVerifier | undefined> {
  let key = options.verifierKey;
  if (key === undefined) {
    try {
      key = await readFile(join(options.dir, VERIFIER_KEY_FILE), 'utf8');
    } catch {
      if (!needed) return undefined;
      throw new SwitchboardError(
        SbErrorCode.UsageError,
        `No checkpoint verifier key: pass one (--pubkey FILE), or keep ${VERIFIER_KEY_FILE} in the ledger directory`,
      );
    }
  }
  return parseVerifierKey(key);
}

/** Where a record is. */
interface Position {
  readonly file: string;
  readonly lineNo: number;
}

/** Walks the records; returns the count verified and the first break (records or root comparisons). */
async function walkLog(
  dir: string,
  files: readonly string[],
  targets: readonly RootTarget[],
  watch: readonly number[],
): Promise<{ records: number; failure: VerifyBreak | undefined; positions: Map<number, Position> }> {
  const hasher = new EntryHasher();
  const tree = new LedgerTree();
  const positions = new Map<number, Position>();
  let expected = 1;
  let prev = GENESIS_HASH;
  let next = 0;
  let failure: VerifyBreak | undefined;
  const lineFailure = (line: ScannedLine, problems: [VerifyReason, string][]): undefined => {
    const [[reason, detail], ...rest] = problems as [[VerifyReason, string], ...[VerifyReason, string][]];
    failure = { seq: expected, reason, detail, file: line.file, line: line.lineNo };
    if (rest.length > 0) failure = { ...failure, also: rest.map(([also]) => also) };
    return undefined;
  };
  /**
   * The general path: every check from the parsed line, naming each failure. Returns the line's
   * entry hash when it passes, `undefined` after recording the failure.
   */
  const general = (line: ScannedLine): string | undefined => {
    const { text } = line;
    if (text === undefined) return lineFailure(line, [['bad_json', 'the line is not valid UTF-8']]);
    if (text.charCodeAt(0) === 0xfeff)
      return lineFailure(line, [['bad_json', 'the line starts with a byte order mark']]);
    let record: { seq?: unknown; prev_hash?: unknown } | null;
    try {
      record = JSON.parse(text) as typeof record;
    } catch (error) {
      return lineFailure(line, [['bad_json', `not JSON: ${(error as Error).message}`]]);
    }
    const stated = statedHash(text);
    const computed = stated === undefined ? undefined : hasher.of(line.data, line.start, line.end);
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
      return lineFailure(line, problems);
    }
    const noncanonical = canonicalProblem(record as Record<string, unknown>, text);
    if (noncanonical !== undefined) return lineFailure(line, [['schema', noncanonical]]);
    return stated;
  };
  await scanLines(
    dir,
    files,
    (line) => {
      if (watch.includes(expected)) positions.set(expected, { file: line.file, lineNo: line.lineNo });
      const { data, start, end } = line;
      // The fast path (canonical-line-check.ts) proves the line canonical and valid from its bytes,
      // with its seq and prev_hash; then only the hash is left to compare. Anything it cannot prove
      // goes to the general path, which decides and names the failure.
      let entryHash: string | undefined;
      let leaf: string | undefined;
      if (line.utf8 && checkCanonicalRecordLine(data, start, end, expected, prev)) {
        if (start >= DOMAIN.length) {
          leaf = hashInPlace(data, start, end);
          entryHash = inPlaceEntryHash;
        } else {
          entryHash = hasher.of(data, start, end);
        }
        if (!statesHash(data, end, entryHash)) entryHash = undefined;
      }
      if (entryHash === undefined) {
        entryHash = general(line);
        if (entryHash === undefined) return false;
      }
      tree.append(leaf ?? leafDigest(data, start, end));
      prev = entryHash;
      expected++;
      while (next < targets.length && (targets[next] as RootTarget).size === tree.size) {
        const target = targets[next] as RootTarget;
        if (!tree.root().equals(target.root)) {
          const anchored = target.file !== CHECKPOINTS_FILE;
          failure = {
            seq: target.size,
            reason: anchored ? 'anchor_root_mismatch' : 'cp_root',
            detail: `the root of the first ${target.size} records is not the ${anchored ? 'anchored ' : ''}checkpoint's`,
            file: target.file,
            line: target.line,
          };
          return false;
        }
        next++;
      }
      return true;
    },
    {
      onTorn: (torn) => {
        failure = {
          seq: expected,
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
  return { records: expected - 1, failure, positions };
}

/** Checkpoints (local, then anchored) that claim more records than the log holds. */
function beyondLog(targets: readonly RootTarget[], records: number): VerifyBreak | undefined {
  const target = targets.find((t) => t.size > records);
  if (target === undefined) return undefined;
  const anchored = target.file !== CHECKPOINTS_FILE;
  return {
    seq: records + 1,
    reason: anchored ? 'truncated_below_anchor' : 'cp_root',
    detail: `the ${anchored ? 'anchored ' : ''}checkpoint covers ${target.size} records but the log holds ${records} (truncated)`,
    file: target.file,
    line: target.line,
  };
}

/**
 * Verifies the ledger in `options.dir`; see the module comment. Never throws for tampering (that
 * is the report); throws for what prevents verifying at all.
 *
 * @throws SwitchboardError `SB_USAGE` when the directory does not exist or no verifier key is
 *   available while checkpoints exist; `SB_CONFIG_INVALID` for a malformed verifier key; the file
 *   system's errors when a file cannot be read.
 */
export async function verifyLedger(options: VerifyOptions): Promise<VerifyReport> {
  const files = await listLedgerFiles(options.dir);
  const checkpointFile = await readSmallFile(join(options.dir, CHECKPOINTS_FILE));
  const anchorFile: SmallFile | undefined =
    options.anchor === undefined ? undefined : await readSmallFile(options.anchor);
  const needed = checkpointFile.lines.length > 0 || (anchorFile?.lines.length ?? 0) > 0;
  const verifier = await loadVerifier(options, needed);
  const local = checkCheckpointLines(checkpointFile, CHECKPOINTS_FILE, verifier, true);
  const origin = local.targets[0]?.origin;
  const anchored =
    anchorFile === undefined || options.anchor === undefined
      ? { targets: [], failure: undefined }
      : checkCheckpointLines(anchorFile, options.anchor, verifier, false, origin);
  const lastCheckpointSize = local.targets[local.targets.length - 1]?.size ?? 0;
  const anchoredSize = Math.max(0, ...anchored.targets.map((t) => t.size));
  // Stable by size, local before anchored at equal sizes.
  const targets = [...local.targets, ...anchored.targets].sort((a, b) => a.size - b.size);
  const walk = await walkLog(options.dir, files, targets, [lastCheckpointSize + 1, anchoredSize + 1]);
  const firstBreak = earliestBreak(
    walk.failure,
    local.failure,
    anchored.failure,
    walk.failure === undefined ? beyondLog(targets, walk.records) : undefined,
  );
  const report = {
    records: walk.records,
    checkpoints: local.targets.length,
    lastCheckpointSize,
    anchored: firstBreak === undefined ? anchoredSize : 0,
  };
  if (firstBreak !== undefined) return { status: 'tampered', ...report, firstBreak };
  return verdict(options, walk, report, anchorFile);
}

function verdict(
  options: VerifyOptions,
  walk: Awaited<ReturnType<typeof walkLog>>,
  report: Omit<VerifyReport, 'status'>,
  anchorFile: SmallFile | undefined,
): VerifyReport {
  const { records, lastCheckpointSize, anchored } = report;
  const uncovered = records - lastCheckpointSize;
  let because: string | undefined;
  if (options.anchor === undefined) because = 'no anchor was given: truncation cannot be ruled out';
  else if (anchorFile?.lines.length === 0 && records > 0) {
    because = `the anchor ${anchorFile.missing ? 'does not exist' : 'is empty'}: truncation cannot be ruled out`;
  } else if (anchored < records) because = `records ${anchored + 1} to ${records} are not anchored`;
  if (because === undefined) return { status: 'intact', ...report };
  if (uncovered > 0)
    because += `; records ${lastCheckpointSize + 1} to ${records} are not covered by any checkpoint`;
  if (options.strict !== true) return { status: 'unanchored', ...report, unanchoredBecause: because };
  const seq = uncovered > 0 ? lastCheckpointSize + 1 : Math.min(anchored + 1, records);
  const at = walk.positions.get(seq);
  return {
    status: 'tampered',
    ...report,
    unanchoredBecause: because,
    firstBreak: {
      seq,
      reason: uncovered > 0 ? 'uncovered_tail' : 'unanchored',
      detail: because,
      file: at?.file ?? options.anchor ?? CHECKPOINTS_FILE,
      line: at?.lineNo ?? 0,
    },
  };
}
