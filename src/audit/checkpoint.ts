/**
 * C2SP tlog-checkpoint bodies (https://c2sp.org/tlog-checkpoint): the note text a log signs to
 * commit to its Merkle tree head.
 *
 * ```
 * <origin>\n
 * <tree size, decimal, no leading zeros>\n
 * <base64 of the 32-byte RFC 6962 root>\n
 * [<extension line>\n ...]
 * ```
 *
 * Sign the body with `signNote` and open it with `verifyNote` then {@link parseCheckpoint}: only a
 * verified body may be trusted. Sizes are numbers up to 2^53 - 1 (far beyond any ledger).
 */
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { decodeBase64Strict } from './strict-base64.js';
import { isWellFormedString } from './well-formed-string.js';

/** A tree head as a checkpoint states it. */
export interface Checkpoint {
  /** The log's identity, e.g. `switchboard.example/audit/host1`; the signing key's name should match. */
  readonly origin: string;
  /** Number of leaves in the tree. */
  readonly size: number;
  /** The 32-byte RFC 6962 root of the tree at `size`. */
  readonly rootHash: Uint8Array;
  /** Opaque, non-empty extra lines; the spec discourages them (monitors cannot audit them). */
  readonly extensions: readonly string[];
}

/** The input of {@link formatCheckpoint}; `extensions` defaults to none. */
export interface CheckpointInput {
  readonly origin: string;
  readonly size: number;
  readonly rootHash: Uint8Array;
  readonly extensions?: readonly string[];
}

/** The outcome of {@link parseCheckpoint}. */
export type CheckpointParse =
  | { readonly ok: true; readonly checkpoint: Checkpoint }
  | { readonly ok: false; readonly detail: string };

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\u0000-\u001f]/;

/** Why `line` cannot be a checkpoint line, or undefined. */
function lineProblem(line: string, what: string): string | undefined {
  if (line === '') return `the ${what} must not be empty`;
  if (!isWellFormedString(line)) return `the ${what} must be valid Unicode`;
  if (CONTROL.test(line)) return `the ${what} must not contain control characters or newlines`;
  return undefined;
}

/**
 * The checkpoint body of a tree head, ready for `signNote`.
 *
 * @throws SwitchboardError `SB_INTERNAL` when a field is invalid: an empty origin or extension, a
 *   control character or newline in one, a size that is not a non-negative safe integer, a root
 *   that is not 32 bytes.
 */
export function formatCheckpoint(input: CheckpointInput): string {
  const fail = (detail: string): never => {
    throw new SwitchboardError(SbErrorCode.Internal, `Invalid checkpoint: ${detail}`);
  };
  const originProblem = lineProblem(input.origin, 'origin');
  if (originProblem !== undefined) fail(originProblem);
  if (!Number.isSafeInteger(input.size) || input.size < 0) {
    fail('the size must be a non-negative safe integer');
  }
  if (!(input.rootHash instanceof Uint8Array) || input.rootHash.length !== 32) {
    fail('the root hash must be 32 bytes');
  }
  let out = `${input.origin}\n${input.size}\n${Buffer.from(input.rootHash).toString('base64')}\n`;
  for (const extension of input.extensions ?? []) {
    const problem = lineProblem(extension, 'extension line');
    if (problem !== undefined) fail(problem);
    out += `${extension}\n`;
  }
  return out;
}

/**
 * Parses a checkpoint body (a verified note's text). Never throws. Strict: the size has no sign,
 * no leading zero and fits a safe integer; the root is canonical padded base64 of 32 bytes; every
 * line, extensions included, is non-empty and the body ends with a newline.
 */
export function parseCheckpoint(body: string): CheckpointParse {
  const fail = (detail: string): CheckpointParse => ({ ok: false, detail });
  if (typeof body !== 'string' || !body.endsWith('\n')) {
    return fail('a checkpoint body must end with a newline');
  }
  const lines = body.slice(0, -1).split('\n');
  if (lines.length < 3) return fail('a checkpoint body has at least three lines');
  const [origin, sizeText, rootText, ...extensions] = lines as [string, string, string, ...string[]];
  const originProblem = lineProblem(origin, 'origin');
  if (originProblem !== undefined) return fail(originProblem);
  if (!/^(?:0|[1-9][0-9]*)$/.test(sizeText)) {
    return fail('the size must be a decimal number without leading zeros');
  }
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) return fail('the size is too large');
  const rootHash = decodeBase64Strict(rootText);
  if (rootHash === undefined || rootHash.length !== 32) {
    return fail('the root hash must be base64 of 32 bytes');
  }
  for (const extension of extensions) {
    const problem = lineProblem(extension, 'extension line');
    if (problem !== undefined) return fail(problem);
  }
  return { ok: true, checkpoint: { origin, size, rootHash, extensions } };
}
