/**
 * What the governance layer needs from the audit ledger (`AuditLedger` in src/audit/ledger, which
 * matches this structurally): append one record per completed call, and say whether it can
 * currently write. The event is the ledger's own type; the ledger redacts, bounds and hashes it.
 */
import type { AuditEvent, Decision } from '../../audit/ledger/audit-event.js';

export type { AuditEvent };
export type AuditDecision = Decision;

export interface AuditSink {
  readonly healthy: boolean;
  /** Resolves once written (and fsynced when `durable`); rejects when it cannot be written. */
  append(event: AuditEvent, options?: { readonly durable?: boolean }): Promise<unknown>;
  /**
   * `append` of a record nobody waits for (not durable): no promise; `failed` is called once when
   * it cannot be written.
   */
  appendUnawaited(event: AuditEvent, failed: (error: unknown) => void): void;
}
