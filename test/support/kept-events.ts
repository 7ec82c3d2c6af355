/**
 * An audit sink that keeps the events the governance layer hands it, for in-process tests of the
 * serve gateway that assert what would be recorded (the real ledger is exercised by the tests that
 * run `switchboard serve` and read its files).
 */
import type { AuditSink } from '../../src/gateways/governance/audit-sink.js';

export type KeptEvent = Parameters<AuditSink['append']>[0];

export class KeptEvents implements AuditSink {
  readonly healthy = true;
  readonly events: KeptEvent[] = [];
  async append(event: KeptEvent): Promise<unknown> {
    this.events.push(event);
    return undefined;
  }
  appendUnawaited(event: KeptEvent): void {
    this.events.push(event);
  }
}
