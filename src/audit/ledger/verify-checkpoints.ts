/**
 * The verifier's checks of the checkpoint log and of the anchor, before the log walk: every line
 * must be a signed checkpoint (signature by the verifier key, copies agreeing with the note), the
 * checkpoint log must chain (`prev`), keep one origin and never shrink. What survives becomes the
 * list of (size, root) pairs the log walk compares against.
 */
import { isUtf8 } from 'node:buffer';
import { readFile } from 'node:fs/promises';
import type { NoteVerifier } from '../signed-note.js';
import { CHECKPOINT_GENESIS, checkpointLineHash, readCheckpointLine } from './checkpoint-line.js';
import type { VerifyBreak } from './verify-report.js';

/** A line of a small file. */
export interface FileLine {
  readonly lineNo: number;
  readonly bytes: Buffer;
  readonly text: string | undefined;
}

/** The lines of a small file (checkpoints, anchor); `missing` when it does not exist. */
export interface SmallFile {
  readonly missing: boolean;
  readonly lines: readonly FileLine[];
  /** The incomplete last line, when the file does not end with a newline. */
  readonly torn: Buffer | undefined;
}

/** Reads a whole small file as lines. */
export async function readSmallFile(path: string): Promise<SmallFile> {
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { missing: true, lines: [], torn: undefined };
    throw error;
  }
  const lines: FileLine[] = [];
  let start = 0;
  for (let end = data.indexOf(10); end >= 0; end = data.indexOf(10, start)) {
    const bytes = data.subarray(start, end);
    lines.push({ lineNo: lines.length + 1, bytes, text: isUtf8(bytes) ? bytes.toString('utf8') : undefined });
    start = end + 1;
  }
  return { missing: false, lines, torn: start < data.length ? data.subarray(start) : undefined };
}

/** A checkpoint the log walk compares against. */
export interface RootTarget {
  readonly size: number;
  readonly root: Buffer;
  readonly origin: string;
  readonly file: string;
  readonly line: number;
}

/** The checkpoints that verified, and the first line that did not. */
export interface CheckedCheckpoints {
  readonly targets: readonly RootTarget[];
  readonly failure: VerifyBreak | undefined;
}

function claimedSize(text: string | undefined): number {
  try {
    const size = (JSON.parse(text ?? '') as { size?: unknown }).size;
    return typeof size === 'number' && Number.isSafeInteger(size) && size >= 0 ? size : 0;
  } catch {
    return 0;
  }
}

/**
 * Checks every line of a checkpoint file (`chained`: the ledger's own `checkpoints.jsonl`, whose
 * lines must chain and grow; not chained: an anchor, which may miss some). Stops at the first bad
 * line. `origin`, when given, is the origin every checkpoint must have.
 */
export function checkCheckpointLines(
  file: SmallFile,
  name: string,
  verifier: NoteVerifier | undefined,
  chained: boolean,
  origin?: string,
): CheckedCheckpoints {
  const targets: RootTarget[] = [];
  let prev = CHECKPOINT_GENESIS;
  let lastSize = 0;
  let expectedOrigin = origin;
  const fail = (line: FileLine | undefined, reason: VerifyBreak['reason'], detail: string, seq: number) => ({
    targets,
    failure: { seq, reason, detail, file: name, line: line?.lineNo ?? file.lines.length + 1 },
  });
  for (const line of file.lines) {
    const read = readCheckpointLine(line.text, verifier === undefined ? [] : [verifier]);
    const seq = claimedSize(line.text);
    if (!read.ok) return fail(line, read.reason, `checkpoint: ${read.detail}`, seq);
    const { entry } = read;
    if (chained && entry.prev !== prev) {
      return fail(line, 'cp_chain', 'prev is not the hash of the previous checkpoint line', seq);
    }
    if (expectedOrigin !== undefined && entry.origin !== expectedOrigin) {
      return fail(
        line,
        chained ? 'cp_chain' : 'anchor_root_mismatch',
        `origin "${entry.origin}" is not "${expectedOrigin}"`,
        seq,
      );
    }
    if (entry.size === 0) return fail(line, 'cp_root', 'a checkpoint covers at least one record', seq);
    if (chained && entry.size < lastSize) {
      return fail(line, 'cp_chain', `the size decreases from ${lastSize} to ${entry.size}`, seq);
    }
    expectedOrigin = entry.origin;
    prev = checkpointLineHash(line.bytes);
    lastSize = entry.size;
    targets.push({ size: entry.size, root: entry.root, origin: entry.origin, file: name, line: line.lineNo });
  }
  if (file.torn !== undefined) {
    return fail(
      undefined,
      'torn_tail',
      `the last line is incomplete (${file.torn.length} bytes, no newline)`,
      lastSize,
    );
  }
  return { targets, failure: undefined };
}
