/**
 * One line of `checkpoints.jsonl` (and of an anchor file, which holds copies of the same lines):
 * the canonical JSON object `{"note":...,"prev":...,"root":...,"size":...}` where
 *
 * - `note` is a C2SP signed note whose text is a tlog-checkpoint body: the origin, the tree size,
 *   the base64 RFC 6962 root over the first `size` record lines, then two extension lines,
 *   `prev <hex>` (= this line's `prev`) and `time <RFC 3339>`;
 * - `prev` is the SHA-256 (hex) of the previous line's bytes (without its newline), 64 zeros for
 *   the first, so the checkpoints form a chain of their own, and the signature covers the link;
 * - `size` and `root` (hex) repeat the note's values for readers; only the signed note counts, and
 *   a verifier refuses a line whose copies disagree with it.
 */
import { hash } from 'node:crypto';
import { canonicalize } from '../canonical-json.js';
import { formatCheckpoint, parseCheckpoint } from '../checkpoint.js';
import { type NoteSigner, type NoteVerifier, signNote, verifyNote } from '../signed-note.js';
import { isHex64 } from './record-line.js';

/** `prev` of the first checkpoint line. */
export const CHECKPOINT_GENESIS = '0'.repeat(64);

const PREV_EXTENSION = 'prev ';
const TIME_EXTENSION = 'time ';

/** What a checkpoint commits to. */
export interface CheckpointLineInput {
  readonly origin: string;
  readonly size: number;
  readonly root: Uint8Array;
  /** The previous line's {@link checkpointLineHash}, or {@link CHECKPOINT_GENESIS}. */
  readonly prev: string;
  /** RFC 3339 time of signing. */
  readonly time: string;
}

/** The checkpoint line (without its newline) for `input`, signed by `signer`. */
export function formatCheckpointLine(input: CheckpointLineInput, signer: NoteSigner): string {
  const body = formatCheckpoint({
    origin: input.origin,
    size: input.size,
    rootHash: input.root,
    extensions: [`${PREV_EXTENSION}${input.prev}`, `${TIME_EXTENSION}${input.time}`],
  });
  const note = signNote(body, signer);
  return canonicalize({
    note,
    prev: input.prev,
    root: Buffer.from(input.root).toString('hex'),
    size: input.size,
  });
}

/** SHA-256 (hex) of a line's bytes without its newline: the next line's `prev`. */
export function checkpointLineHash(line: string | Uint8Array): string {
  return hash('sha256', line, 'hex');
}

/** A checkpoint line, read and (when verifiers were given) signature-checked. */
export interface CheckpointEntry {
  readonly origin: string;
  readonly size: number;
  readonly root: Buffer;
  readonly prev: string;
  readonly time: string | undefined;
  /** The signed note, as stored. */
  readonly note: string;
}

/** Why a checkpoint line was refused: the verifier's reason codes. */
export type CheckpointLineProblem = 'bad_json' | 'schema' | 'cp_sig' | 'cp_chain';

/** The outcome of {@link readCheckpointLine}. */
export type CheckpointLineResult =
  | { readonly ok: true; readonly entry: CheckpointEntry }
  | { readonly ok: false; readonly reason: CheckpointLineProblem; readonly detail: string };

function noteBody(note: string): string | undefined {
  const split = note.lastIndexOf('\n\n');
  return split < 0 ? undefined : note.slice(0, split + 1);
}

/**
 * Reads a checkpoint line. With `verifiers`, the note must carry a valid signature from one of
 * them (`cp_sig`); without, the note is parsed but not authenticated (for tools that only need to
 * locate a checkpoint, never for verification). Never throws.
 */
export function readCheckpointLine(
  text: string | undefined,
  verifiers: readonly NoteVerifier[] | undefined,
): CheckpointLineResult {
  const fail = (reason: CheckpointLineProblem, detail: string): CheckpointLineResult => ({
    ok: false,
    reason,
    detail,
  });
  if (text === undefined) return fail('bad_json', 'the line is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return fail('bad_json', `not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return fail('schema', 'not an object');
  const line = value as Record<string, unknown>;
  const names = Object.keys(line).sort().join(',');
  if (names !== 'note,prev,root,size')
    return fail('schema', `members are ${names}, expected note,prev,root,size`);
  if (typeof line.note !== 'string' || !isHex64(line.prev) || !isHex64(line.root)) {
    return fail('schema', 'note must be a string, prev and root 64 hex digits');
  }
  let body: string | undefined;
  if (verifiers === undefined) {
    body = noteBody(line.note);
    if (body === undefined) return fail('cp_sig', 'the note has no signature block');
  } else {
    const verified = verifyNote(line.note, verifiers);
    if (!verified.ok) return fail('cp_sig', `signature: ${verified.detail}`);
    body = verified.text;
  }
  const parsed = parseCheckpoint(body);
  if (!parsed.ok) return fail('cp_sig', `the signed note is not a checkpoint: ${parsed.detail}`);
  const { checkpoint } = parsed;
  const root = Buffer.from(checkpoint.rootHash);
  if (line.size !== checkpoint.size || line.root !== root.toString('hex')) {
    return fail('cp_sig', 'size or root differ from the signed note');
  }
  const prev = checkpoint.extensions
    .find((ext) => ext.startsWith(PREV_EXTENSION))
    ?.slice(PREV_EXTENSION.length);
  if (prev !== line.prev) return fail('cp_chain', 'prev differs from the signed note');
  const time = checkpoint.extensions
    .find((ext) => ext.startsWith(TIME_EXTENSION))
    ?.slice(TIME_EXTENSION.length);
  return {
    ok: true,
    entry: { origin: checkpoint.origin, size: checkpoint.size, root, prev, time, note: line.note },
  };
}
