/**
 * What governance adds to a call's trace (docs/observability.md, "Traces"):
 *
 * - a hold for approval is two events on the call's SERVER span, `switchboard.approval.requested`
 *   when the call is held and `switchboard.approval.decided` when someone (or the timeout) decides,
 *   so the wait shows as the gap between them;
 * - a durable ledger write (a T2+ call's record, fsynced before the answer goes out) is an INTERNAL
 *   child span `switchboard.ledger.write`, from the append to the fsync, with `error.type` when it
 *   failed. T0/T1 records are batched after the answer and are not on the call's path: no span.
 *
 * Both find the call by its trace id (the envelope id of its client request), which the approval
 * request and the audit event carry.
 */

import type { AuditSink } from '../../gateways/governance/audit-sink.js';
import type { ApprovalEvents } from '../../policy/approvals.js';
import type { McpSpans } from './mcp-spans.js';

/** `sink`, with each durable append shown as a child span of its call. */
export function tracedAuditSink(sink: AuditSink, spans: McpSpans): AuditSink {
  return {
    get healthy() {
      return sink.healthy;
    },
    get unavailable() {
      return sink.unavailable;
    },
    append(event, options) {
      const written = sink.append(event, options);
      if (options?.durable !== true || event.trace_id === undefined) return written;
      const end = spans.child(event.trace_id, 'switchboard.ledger.write', {
        'switchboard.audit.tier': event.tier,
        'switchboard.audit.decision': event.decision,
      });
      if (end === undefined) return written;
      written.then(
        () => end(),
        (error: unknown) => end(error instanceof Error ? error.name : 'ledger_error'),
      );
      return written;
    },
    appendUnawaited(event, failed) {
      sink.appendUnawaited(event, failed);
    },
  };
}

/** Subscribes to the approvals registry; returns the unsubscribe. */
export function traceApprovals(
  registry: { subscribe(listener: Partial<ApprovalEvents>): () => void },
  spans: McpSpans,
): () => void {
  return registry.subscribe({
    created(request) {
      if (request.traceId === undefined) return;
      spans.event(request.traceId, 'switchboard.approval.requested', {
        'switchboard.approval.id': request.id,
        'switchboard.audit.tier': request.tier,
        ...(request.rule === undefined ? {} : { 'switchboard.policy.rule': request.rule }),
      });
    },
    decided(request, outcome) {
      if (request.traceId === undefined) return;
      spans.event(request.traceId, 'switchboard.approval.decided', {
        'switchboard.approval.id': request.id,
        'switchboard.approval.approved': outcome.approved,
        ...(outcome.approved ? {} : { 'switchboard.approval.why': outcome.why }),
      });
    },
  });
}
