/**
 * What `verifyLedger` reports, and its reason codes (audit.md §6, plus `torn_tail` and
 * `unanchored`). Stable: scripts match on them, and docs/audit-ledger.md lists what each means.
 */

/** Why a ledger failed verification. */
export type VerifyReason =
  /** A line is not JSON (or not UTF-8, or starts with a byte order mark). */
  | 'bad_json'
  /** A record's seq is not the one its position requires (a deleted, swapped or replayed record). */
  | 'seq_gap'
  /** A record's prev_hash is not the previous record's entry_hash. */
  | 'prev_mismatch'
  /** A record's entry_hash is not the hash of its bytes (an edited record). */
  | 'hash_mismatch'
  /** A record or checkpoint line has an unknown, missing or ill-typed member. */
  | 'schema'
  /** A checkpoint's signature does not verify with the verifier key, or its copies disagree with the note. */
  | 'cp_sig'
  /** A checkpoint's root is not the root of the log at its size, or it claims more records than the log has. */
  | 'cp_root'
  /** The checkpoints do not chain (prev), their sizes decrease, or their origin changes. */
  | 'cp_chain'
  /** Records after the last checkpoint (an error only with `strict`). */
  | 'uncovered_tail'
  /** The anchor holds a checkpoint larger than the log: the log was truncated. */
  | 'truncated_below_anchor'
  /** An anchored checkpoint's root is not the root of the log at its size: the log was rewritten. */
  | 'anchor_root_mismatch'
  /** A file ends with an incomplete line (a crash mid-write, or a seam the writer left after one). */
  | 'torn_tail'
  /** Nothing anchors the log against truncation (an error only with `strict`). */
  | 'unanchored';

/** The overall outcome: `intact` (exit 0), `tampered` (exit 1), `unanchored` (exit 3). */
export type VerifyStatus = 'intact' | 'tampered' | 'unanchored';

/** The first place verification failed. */
export interface VerifyBreak {
  /**
   * The record position in question: for a record, the seq its position requires; for a root
   * comparison, the checkpoint's size; for a checkpoint line that cannot be trusted, the size it
   * claims (0 if unreadable); for truncation and uncovered records, the first record missing or
   * uncovered.
   */
  readonly seq: number;
  readonly reason: VerifyReason;
  readonly detail: string;
  /** The file (a name inside the ledger directory, or the anchor's path). */
  readonly file: string;
  /** 1-based line number in `file` (0 when the break is about the file as a whole). */
  readonly line: number;
  /** Other failures of the same line (e.g. an added member is both `hash_mismatch` and `schema`). */
  readonly also?: readonly VerifyReason[];
}

/** The result of `verifyLedger`. */
export interface VerifyReport {
  readonly status: VerifyStatus;
  /** Records that verified (all of them when intact; those before the break otherwise). */
  readonly records: number;
  /** Checkpoint lines whose signature and chain verified. */
  readonly checkpoints: number;
  /** Tree size of the last verified checkpoint (0 when none). */
  readonly lastCheckpointSize: number;
  /** Largest tree size an anchored checkpoint confirmed (0 without an anchor). */
  readonly anchored: number;
  readonly firstBreak?: VerifyBreak;
  /** Why the status is `unanchored` (or what `strict` turned into a failure). */
  readonly unanchoredBecause?: string;
}

/** The earliest of `breaks` by seq (ties: the first given). */
export function earliestBreak(...breaks: (VerifyBreak | undefined)[]): VerifyBreak | undefined {
  let best: VerifyBreak | undefined;
  for (const candidate of breaks) {
    if (candidate !== undefined && (best === undefined || candidate.seq < best.seq)) best = candidate;
  }
  return best;
}
