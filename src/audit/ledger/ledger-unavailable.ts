/**
 * Why the audit ledger cannot take records now. The governance layer refuses calls of tier T1 and
 * above before they are forwarded while there is a reason, and says which in its refusal.
 */

/**
 * - `write-failed`: the last batch could not be written or synced (ENOSPC, EIO, EROFS...), until a
 *   write or a probe of the file system succeeds;
 * - `backlog`: writes hang and the queue is full, until it drains to half;
 * - `low-space`: the file system has less free space than `audit.minFreeBytes`, until it has more.
 */
export type LedgerUnavailableReason = 'write-failed' | 'backlog' | 'low-space';

export interface LedgerUnavailable {
  readonly reason: LedgerUnavailableReason;
  /** For the operator's log (sizes, the system error): not meant for clients. */
  readonly detail: string;
}

/** A short phrase for a client, by reason: it says what is wrong without the operator's details. */
export const UNAVAILABLE_PHRASE: Readonly<Record<LedgerUnavailableReason, string>> = {
  'write-failed': 'its last write failed',
  backlog: 'its writes are not completing',
  'low-space': 'its file system is low on free space',
};
