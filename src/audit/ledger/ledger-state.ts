/**
 * `state.json`: where the writer stood at its last checkpoint (the last record's file, offset,
 * seq and entry hash, and the Merkle accumulator's compact range), so that a restart reads only the
 * records written since, never the whole log. It is a cache, not evidence: the writer checks it
 * against the log before trusting it (the record it names must be there, with that seq and hash) and
 * rebuilds it from the log when it is missing or wrong. Written atomically (temporary file, rename).
 */
import { open, readFile, rename } from 'node:fs/promises';
import type { MerkleAccumulatorState } from '../merkle.js';
import { isHex64 } from './record-line.js';

/** The content of `state.json`. */
export interface LedgerState {
  readonly v: 1;
  /** The ledger file holding the last record covered. */
  readonly file: string;
  /** Byte offset of that record's line. */
  readonly lineStart: number;
  /** Byte offset just after that line's newline: where reading resumes. */
  readonly offset: number;
  /** The last record's seq (= the accumulator's size). */
  readonly seq: number;
  readonly entryHash: string;
  readonly tree: MerkleAccumulatorState;
}

function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** The state in `path`, or `undefined` when it is missing or not a well-formed state. */
export async function readLedgerState(path: string): Promise<LedgerState | undefined> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, 'utf8'));
  } catch {
    return undefined;
  }
  const state = value as Partial<LedgerState> | null;
  if (typeof state !== 'object' || state === null || state.v !== 1) return undefined;
  const tree = state.tree as Partial<MerkleAccumulatorState> | undefined;
  const valid =
    typeof state.file === 'string' &&
    isOffset(state.lineStart) &&
    isOffset(state.offset) &&
    state.offset > state.lineStart &&
    isOffset(state.seq) &&
    state.seq >= 1 &&
    isHex64(state.entryHash) &&
    typeof tree === 'object' &&
    tree !== null &&
    tree.size === state.seq &&
    Array.isArray(tree.peaks);
  return valid ? (state as LedgerState) : undefined;
}

/** Writes `state` to `path` atomically (0600); with `sync`, the file is fsynced before the rename. */
export async function writeLedgerState(path: string, state: LedgerState, sync: boolean): Promise<void> {
  const temporary = `${path}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(state)}\n`);
    if (sync) await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
