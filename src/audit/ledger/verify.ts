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
 *    size its root is compared: the cost stays linear however many checkpoints there are. On a
 *    large ledger, worker threads check segments of it at the same time, with a result identical
 *    to the one-thread pass (log-walk.ts).
 * 3. Checkpoints larger than the log (`cp_root`), anchored checkpoints larger than the log
 *    (`truncated_below_anchor`).
 * 4. The verdict: `intact` only when an anchor confirms every record; `unanchored` when the log
 *    verifies but records are not anchored (no anchor, an empty anchor, records after the last
 *    anchored checkpoint); `strict` turns that into a failure (`uncovered_tail` or `unanchored`).
 */
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { type NoteVerifier, parseVerifierKey } from '../signed-note.js';
import { CHECKPOINTS_FILE, listLedgerFiles, VERIFIER_KEY_FILE } from './ledger-paths.js';
import { LogWalk, type WalkParallelism, type WalkResult } from './log-walk.js';
import {
  checkCheckpointLines,
  type RootTarget,
  readSmallFile,
  type SmallFile,
} from './verify-checkpoints.js';
import type { VerifyWorkerModule } from './verify-pool.js';
import { earliestBreak, type VerifyBreak, type VerifyReport } from './verify-report.js';

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
  /**
   * Threads checking records at once, this one included: default the CPUs available, at most
   * {@link MAX_DEFAULT_THREADS}; 1 checks them one after another. The report is the same either way.
   */
  readonly threads?: number;
  /** Ledgers smaller than this many bytes are checked by one thread. Default {@link PARALLEL_MIN_BYTES}. */
  readonly parallelMinBytes?: number;
  /**
   * Segments hold at most about this many bytes of record lines (there are eight per thread, more
   * when they would be larger). Default 64 MiB.
   */
  readonly parallelSegmentBytes?: number;
  /** Where the worker's code is (tests start it from the TypeScript sources). Default: beside this module. */
  readonly worker?: VerifyWorkerModule;
}

/** The default of `threads` on a machine with many CPUs: past it, reading the files dominates. */
export const MAX_DEFAULT_THREADS = 4;

/** Below this many bytes of ledger files, starting worker threads costs more than they save: 8 MiB. */
export const PARALLEL_MIN_BYTES = 8 * 1024 * 1024;

const DEFAULT_WORKER: VerifyWorkerModule = { url: new URL('./verify-worker.js', import.meta.url) };

function parallelism(options: VerifyOptions): WalkParallelism {
  const threads = options.threads ?? Math.min(availableParallelism(), MAX_DEFAULT_THREADS);
  if (!Number.isInteger(threads) || threads < 1)
    throw new SwitchboardError(SbErrorCode.UsageError, `threads must be a positive integer, not ${threads}`);
  return {
    threads,
    minBytes: options.parallelMinBytes ?? PARALLEL_MIN_BYTES,
    maxSegmentBytes: Math.max(1, options.parallelSegmentBytes ?? 64 * 1024 * 1024),
    worker: options.worker ?? DEFAULT_WORKER,
  };
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
  const walk = await new LogWalk(options.dir, files, targets, [lastCheckpointSize + 1, anchoredSize + 1]).run(
    parallelism(options),
  );
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
  walk: WalkResult,
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
