/**
 * What the writer needs to continue a ledger after a restart: the last record's seq and hash (the
 * next record's `prev_hash`), the Merkle accumulator over every line, where to append, and the head
 * of the checkpoint chain. It starts from `state.json` when that matches the log, so only the lines
 * written since the last checkpoint are read; otherwise it reads the whole log once (and says so).
 *
 * Recovery never repairs anything. A torn last line (a crash mid-write) stays where it is and the
 * writer continues in a new file, leaving a seam that `audit verify` reports; a line that does not
 * chain is logged with a pointer to `audit verify`, and appending continues after the last readable
 * record, because refusing to start would turn a damaged ledger into a gateway that cannot run.
 */
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../observe/logger.js';
import { CHECKPOINT_GENESIS, checkpointLineHash, readCheckpointLine } from './checkpoint-line.js';
import { CHECKPOINTS_FILE, ledgerFileIndex, listLedgerFiles, STATE_FILE } from './ledger-paths.js';
import { type LedgerState, readLedgerState } from './ledger-state.js';
import { LedgerTree } from './ledger-tree.js';
import { scanLines } from './line-scanner.js';
import { GENESIS_HASH, splitRecordLine } from './record-line.js';
import { readTailLines } from './tail-reader.js';

/** The last record written: the chain head. */
export interface LedgerHead {
  readonly seq: number;
  readonly entryHash: string;
}

/** Where the last record's line is. */
export interface LinePosition {
  readonly file: string;
  readonly lineStart: number;
  readonly offset: number;
}

/** Everything {@link recoverLedger} found. */
export interface RecoveredLedger {
  readonly head: LedgerHead;
  /** Over every complete line of the log. */
  readonly tree: LedgerTree;
  readonly lastLine: LinePosition | undefined;
  /** The ledger file to append to (1-based) and its current size. */
  readonly appendTo: { readonly index: number; readonly size: number };
  /** The last checkpoint line: its size and hash (the next line's `prev`), and whether the file ends torn. */
  readonly checkpoint: { readonly size: number; readonly lineHash: string; readonly torn: boolean };
}

/** Whether `state` names a record line that is really there, with that seq and entry hash. */
async function stateMatches(dir: string, state: LedgerState): Promise<boolean> {
  try {
    LedgerTree.fromState(state.tree);
    const handle = await open(join(dir, state.file), 'r');
    try {
      const length = state.offset - state.lineStart;
      const bytes = Buffer.alloc(length);
      const { bytesRead } = await handle.read(bytes, 0, length, state.lineStart);
      if (bytesRead !== length || bytes[length - 1] !== 10) return false;
      const text = bytes.subarray(0, length - 1).toString('utf8');
      const split = splitRecordLine(text);
      return (
        split?.entryHash === state.entryHash && (JSON.parse(text) as { seq?: unknown }).seq === state.seq
      );
    } finally {
      await handle.close();
    }
  } catch {
    return false;
  }
}

async function recoverCheckpointHead(dir: string, logger: Logger): Promise<RecoveredLedger['checkpoint']> {
  const tail = await readTailLines(join(dir, CHECKPOINTS_FILE), 1);
  const torn = tail.torn !== undefined;
  if (torn) {
    logger.error(
      { file: CHECKPOINTS_FILE, bytes: tail.torn?.length },
      'audit ledger: the checkpoint log ends with a torn line; it is left in place (audit verify reports it)',
    );
  }
  const last = tail.lines[0];
  if (last === undefined) return { size: 0, lineHash: CHECKPOINT_GENESIS, torn };
  const read = readCheckpointLine(last.toString('utf8'), undefined);
  if (!read.ok) {
    logger.error(
      { file: CHECKPOINTS_FILE, detail: read.detail },
      'audit ledger: the last checkpoint is unreadable',
    );
  }
  return { size: read.ok ? read.entry.size : 0, lineHash: checkpointLineHash(last), torn };
}

/** Whether every one of `files` in `dir` is empty. */
async function allEmpty(dir: string, files: readonly string[]): Promise<boolean> {
  for (const file of files) if ((await stat(join(dir, file))).size > 0) return false;
  return true;
}

/**
 * Recovers the writer's position in the ledger at `dir` (which must exist).
 *
 * @throws the file system's errors when the ledger cannot be read.
 */
export async function recoverLedger(dir: string, logger: Logger): Promise<RecoveredLedger> {
  const files = await listLedgerFiles(dir);
  const state = await readLedgerState(join(dir, STATE_FILE));
  let tree = new LedgerTree();
  let head: LedgerHead = { seq: 0, entryHash: GENESIS_HASH };
  let lastLine: LinePosition | undefined;
  let from = 0;
  let startOffset = 0;
  if (state !== undefined && files.includes(state.file) && (await stateMatches(dir, state))) {
    tree = LedgerTree.fromState(state.tree);
    head = { seq: state.seq, entryHash: state.entryHash };
    lastLine = { file: state.file, lineStart: state.lineStart, offset: state.offset };
    from = files.indexOf(state.file);
    startOffset = state.offset;
  } else if (files.length > 0 && !(state === undefined && (await allEmpty(dir, files)))) {
    // No state and nothing but empty files is a ledger that never held a record (a run without
    // calls writes no checkpoint, so no state): there is nothing to rebuild, and nothing to say.
    logger.warn(
      { stateFile: STATE_FILE, present: state !== undefined },
      'audit ledger: state.json is missing or does not match the log; rebuilding it by reading the whole log',
    );
  }
  let problem: { file: string; line: number; detail: string } | undefined;
  let tornLast = false;
  const lastFile = files[files.length - 1];
  await scanLines(
    dir,
    files.slice(from),
    (line) => {
      tree.appendLine(line.data, line.start, line.end);
      const split = line.text === undefined ? undefined : splitRecordLine(line.text);
      let record: { seq?: unknown; prev_hash?: unknown } | undefined;
      try {
        record = split === undefined ? undefined : (JSON.parse(line.text as string) as typeof record);
      } catch {
        record = undefined;
      }
      if (split === undefined || record === undefined || typeof record.seq !== 'number') {
        problem ??= { file: line.file, line: line.lineNo, detail: 'an unreadable line' };
        return true;
      }
      if (record.seq !== head.seq + 1 || record.prev_hash !== head.entryHash) {
        problem ??= {
          file: line.file,
          line: line.lineNo,
          detail: `seq ${record.seq} does not continue the chain`,
        };
      }
      head = { seq: record.seq, entryHash: split.entryHash };
      lastLine = { file: line.file, lineStart: line.offset, offset: line.offset + line.length + 1 };
      return true;
    },
    {
      startOffset,
      onTorn: (torn) => {
        if (torn.file === lastFile) tornLast = true;
        logger.error(
          { file: torn.file, line: torn.lineNo, bytes: torn.bytes.length },
          'audit ledger: a ledger file ends with a torn line (a crash mid-write); it is left in place and ' +
            'the chain continues in a new file (audit verify reports the seam)',
        );
        return true;
      },
    },
  );
  if (problem !== undefined) {
    logger.error(
      problem,
      'audit ledger: the log does not verify from this line; appending continues after the last readable ' +
        'record. Run `switchboard audit verify` and keep the damaged files as evidence',
    );
  }
  const lastIndex = lastFile === undefined ? 1 : (ledgerFileIndex(lastFile) as number);
  const size = lastFile === undefined ? 0 : (await stat(join(dir, lastFile))).size;
  const checkpoint = await recoverCheckpointHead(dir, logger);
  if (checkpoint.size > tree.size) {
    logger.error(
      { checkpointSize: checkpoint.size, records: tree.size },
      'audit ledger: the log is shorter than its last checkpoint (truncated?); run `switchboard audit verify`',
    );
  }
  return {
    head,
    tree,
    lastLine,
    appendTo: tornLast ? { index: lastIndex + 1, size: 0 } : { index: lastIndex, size },
    checkpoint,
  };
}
