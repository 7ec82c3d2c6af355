/**
 * Inclusion proofs a third party can check without access to the ledger: "record N, whose line is
 * exactly these bytes, is leaf N-1 of the tree this signed checkpoint commits to".
 *
 * The document carries the record line, its RFC 6962 leaf hash, the audit path (RFC 9162 §2.1.3.1,
 * innermost sibling first) and the signed checkpoint note. Checking it needs only the ledger's
 * verifier key: verify the note, hash the line, fold the path, compare with the signed root
 * (docs/audit-ledger.md shows it done with python3 and openssl).
 *
 * Building a proof reads the log once, in order, with one accumulator per subtree of the path,
 * so memory stays O(log n) however large the ledger is.
 */
import { join } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { parseCheckpoint } from '../checkpoint.js';
import { leafHash, verifyInclusion } from '../merkle.js';
import { type NoteVerifier, parseVerifierKey, verifyNote } from '../signed-note.js';
import { readCheckpointLine } from './checkpoint-line.js';
import { CHECKPOINTS_FILE, listLedgerFiles } from './ledger-paths.js';
import { lastRecords } from './ledger-query.js';
import { LedgerTree, leafDigest } from './ledger-tree.js';
import { scanLines } from './line-scanner.js';
import { entryHashOf, isHex64, splitRecordLine } from './record-line.js';
import { readSmallFile } from './verify-checkpoints.js';

/** A self-contained inclusion proof (JSON). */
export interface InclusionProofDocument {
  readonly v: 1;
  /** The record's seq. */
  readonly seq: number;
  /** Its leaf index: seq - 1. */
  readonly index: number;
  /** The record line exactly as stored, without its newline: the Merkle leaf. */
  readonly line: string;
  /** SHA-256(0x00 || line), hex. */
  readonly leaf_hash: string;
  /** The checkpoint's tree size. */
  readonly tree_size: number;
  /** The audit path, hex, innermost sibling first. */
  readonly proof: readonly string[];
  /** The signed checkpoint note (C2SP tlog-checkpoint body plus signature lines). */
  readonly checkpoint: string;
}

/** Largest power of two strictly below n (n >= 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The leaf ranges [lo, hi) whose subtree roots form the audit path of `index`, innermost first. */
export function proofRanges(index: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  const walk = (lo: number, hi: number): void => {
    if (hi - lo <= 1) return;
    const k = splitPoint(hi - lo);
    if (index < lo + k) {
      walk(lo, lo + k);
      out.push([lo + k, hi]);
    } else {
      walk(lo + k, hi);
      out.push([lo, lo + k]);
    }
  };
  walk(0, size);
  return out;
}

function usage(message: string, details?: Readonly<Record<string, unknown>>): SwitchboardError {
  return new SwitchboardError(SbErrorCode.UsageError, message, details === undefined ? {} : { details });
}

/**
 * Why no proof of a record exists yet, for a person: when the next checkpoint is due. The ledger
 * directory does not hold the writer's configuration, so this names its settings and defaults.
 */
const NEXT_CHECKPOINT =
  'a running gateway signs the next checkpoint when audit.checkpoint.every records (default 1000) ' +
  'have come since the last one, at the latest audit.checkpoint.interval (default 60s) after it, ' +
  'and when it shuts down';

/** How many records the log holds: the seq of its last readable record (0 for none). */
async function recordCount(dir: string): Promise<number> {
  const [last] = await lastRecords(dir, 1);
  const seq = last?.record?.seq;
  return typeof seq === 'number' ? seq : 0;
}

/**
 * The inclusion proof of record `seq` in the latest checkpoint that covers it (or in the
 * checkpoint of size `treeSize`).
 *
 * @throws SwitchboardError `SB_USAGE` when there is no record `seq` (`details.reason: 'no_record'`),
 *   no checkpoint covers it yet (`'not_covered'`, with when the next one is due) or none has size
 *   `treeSize`; `SB_AUDIT_UNAVAILABLE` (with `details.reason`) when the log does not match the
 *   checkpoint or lacks the record: run `audit verify`.
 */
export async function proveInclusion(options: {
  dir: string;
  seq: number;
  treeSize?: number;
}): Promise<InclusionProofDocument> {
  const { dir, seq } = options;
  if (!Number.isSafeInteger(seq) || seq < 1) throw usage(`Invalid seq ${seq}: records are numbered from 1`);
  const files = await listLedgerFiles(dir);
  const checkpoints = (await readSmallFile(join(dir, CHECKPOINTS_FILE))).lines
    .map((line) => readCheckpointLine(line.text, undefined))
    .flatMap((read) => (read.ok ? [read.entry] : []));
  const candidates = checkpoints.filter((cp) =>
    options.treeSize === undefined ? cp.size >= seq : cp.size === options.treeSize && cp.size >= seq,
  );
  const checkpoint = candidates[candidates.length - 1];
  if (checkpoint === undefined) {
    const lastCheckpoint = checkpoints[checkpoints.length - 1];
    const last = lastCheckpoint?.size ?? 0;
    const records = await recordCount(dir);
    if (seq > records) {
      throw usage(
        `There is no record ${seq}: the ledger holds ${records === 0 ? 'no records' : records === 1 ? 'only record 1' : `records 1 to ${records}`}`,
        { reason: 'no_record', records },
      );
    }
    if (options.treeSize !== undefined)
      throw usage(`No checkpoint of size ${options.treeSize} covers record ${seq}`);
    const when = lastCheckpoint?.time === undefined ? '' : `, signed at ${lastCheckpoint.time}`;
    const sofar =
      lastCheckpoint === undefined
        ? 'no checkpoint has been signed yet'
        : `the last one covers ${last} records${when}`;
    throw usage(
      `Record ${seq} exists but is not covered by a checkpoint yet (${sofar}); ` +
        `${NEXT_CHECKPOINT}. Prove it then.`,
      { reason: 'not_covered', records, lastCheckpointSize: last },
    );
  }
  const size = checkpoint.size;
  const index = seq - 1;
  const ranges = proofRanges(index, size).map(([lo, hi], position) => ({
    lo,
    hi,
    position,
    tree: new LedgerTree(),
  }));
  const ordered = [...ranges].sort((a, b) => a.lo - b.lo);
  const whole = new LedgerTree();
  let leaf = 0;
  let current = 0;
  let line: string | undefined;
  let leafHex = '';
  await scanLines(dir, files, (scanned) => {
    const hashValue = leafDigest(scanned.data, scanned.start, scanned.end);
    whole.append(hashValue);
    if (leaf === index) {
      line = scanned.text;
      leafHex = Buffer.from(hashValue, 'latin1').toString('hex');
    } else {
      while ((ordered[current]?.hi ?? Number.POSITIVE_INFINITY) <= leaf) current++;
      ordered[current]?.tree.append(hashValue);
    }
    leaf++;
    return leaf < size;
  });
  const fail = (reason: string, detail: string): SwitchboardError =>
    new SwitchboardError(SbErrorCode.AuditUnavailable, `${detail}; run \`switchboard audit verify\``, {
      details: { reason },
    });
  if (whole.size < size)
    throw fail('cp_root', `The log holds ${whole.size} records, the checkpoint covers ${size}`);
  if (!whole.root().equals(checkpoint.root))
    throw fail('cp_root', `The log does not match the checkpoint of size ${size}`);
  if (line === undefined) throw fail('bad_json', `Record ${seq} is not valid UTF-8`);
  return {
    v: 1,
    seq,
    index,
    line,
    leaf_hash: leafHex,
    tree_size: size,
    proof: ranges.map((range) => range.tree.root().toString('hex')),
    checkpoint: checkpoint.note,
  };
}

/** Why {@link checkInclusionProof} refused a document. */
export type InclusionProblem =
  | 'bad_document'
  | 'bad_key'
  | 'cp_sig'
  | 'size_mismatch'
  | 'leaf_mismatch'
  | 'hash_mismatch'
  | 'seq_mismatch'
  | 'bad_proof';

/** The outcome of {@link checkInclusionProof}. */
export type InclusionCheck =
  | { readonly ok: true; readonly origin: string; readonly seq: number; readonly treeSize: number }
  | { readonly ok: false; readonly reason: InclusionProblem; readonly detail: string };

function isDocument(value: unknown): value is InclusionProofDocument {
  const doc = value as Partial<InclusionProofDocument> | null;
  return (
    typeof doc === 'object' &&
    doc !== null &&
    doc.v === 1 &&
    Number.isSafeInteger(doc.seq) &&
    doc.index === (doc.seq as number) - 1 &&
    typeof doc.line === 'string' &&
    isHex64(doc.leaf_hash) &&
    Number.isSafeInteger(doc.tree_size) &&
    Array.isArray(doc.proof) &&
    doc.proof.every(isHex64) &&
    typeof doc.checkpoint === 'string'
  );
}

/**
 * Checks an inclusion proof document against the ledger's verifier key: the checkpoint's
 * signature, its size, the line's leaf hash, the record's own entry hash and seq, and the audit
 * path up to the signed root. Never throws.
 */
export function checkInclusionProof(doc: InclusionProofDocument, verifierKey: string): InclusionCheck {
  const fail = (reason: InclusionProblem, detail: string): InclusionCheck => ({ ok: false, reason, detail });
  if (!isDocument(doc)) return fail('bad_document', 'not an inclusion proof document (v 1)');
  let verifier: NoteVerifier;
  try {
    verifier = parseVerifierKey(verifierKey);
  } catch (error) {
    return fail('bad_key', (error as Error).message);
  }
  const note = verifyNote(doc.checkpoint, [verifier]);
  if (!note.ok) return fail('cp_sig', `the checkpoint's signature: ${note.detail}`);
  const parsed = parseCheckpoint(note.text);
  if (!parsed.ok) return fail('cp_sig', `the signed note is not a checkpoint: ${parsed.detail}`);
  const { checkpoint } = parsed;
  if (checkpoint.size !== doc.tree_size) {
    return fail(
      'size_mismatch',
      `the checkpoint's size is ${checkpoint.size}, the document says ${doc.tree_size}`,
    );
  }
  const leaf = leafHash(doc.line);
  if (leaf.toString('hex') !== doc.leaf_hash)
    return fail('leaf_mismatch', 'leaf_hash is not the hash of the line');
  const split = splitRecordLine(doc.line);
  if (split === undefined || entryHashOf(split.hashed) !== split.entryHash) {
    return fail('hash_mismatch', "the line's entry_hash is not the hash of the record");
  }
  let seq: unknown;
  try {
    seq = (JSON.parse(doc.line) as { seq?: unknown }).seq;
  } catch {
    seq = undefined;
  }
  if (seq !== doc.seq)
    return fail('seq_mismatch', `the record's seq is ${JSON.stringify(seq)}, not ${doc.seq}`);
  const proof = doc.proof.map((hex) => Buffer.from(hex, 'hex'));
  if (!verifyInclusion(leaf, doc.index, doc.tree_size, proof, checkpoint.rootHash)) {
    return fail('bad_proof', 'the audit path does not lead to the signed root');
  }
  return { ok: true, origin: checkpoint.origin, seq: doc.seq, treeSize: doc.tree_size };
}
