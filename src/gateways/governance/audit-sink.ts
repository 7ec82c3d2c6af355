/**
 * What the governance layer needs from the audit ledger (`AuditLedger` in src/audit/ledger, which
 * matches this structurally): append one record per completed call, and say whether it can
 * currently write, and if not, why. The event is the ledger's own type; the ledger redacts, bounds
 * and hashes it.
 */
import type { AuditEvent, Decision } from '../../audit/ledger/audit-event.js';
import type { LedgerUnavailable } from '../../audit/ledger/ledger-unavailable.js';

export type { AuditEvent, LedgerUnavailable };
export type AuditDecision = Decision;

export interface AuditSink {
  /** Whether a record appended now can be written; while false, T1+ calls are refused. */
  readonly healthy: boolean;
  /** Why it is not `healthy` (a sink that cannot tell leaves it undefined). */
  readonly unavailable?: LedgerUnavailable | undefined;
  /** Records waiting to be written (the metrics' queue depth), when the sink can tell. */
  readonly queued?: number;
  /** Resolves once written (and fsynced when `durable`); rejects when it cannot be written. */
  append(event: AuditEvent, options?: { readonly durable?: boolean }): Promise<unknown>;
  /**
   * `append` of a record nobody waits for (not durable): no promise; `failed` is called once when
   * it cannot be written.
   */
  appendUnawaited(event: AuditEvent, failed: (error: unknown) => void): void;
}
