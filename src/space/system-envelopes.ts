/**
 * The envelopes the gateway itself sends in the space, all `from: "gateway"` and in the `system/*`
 * namespace that only the gateway may use: `system/welcome`, `system/presence`, `system/error`,
 * and two documented extensions, `system/history` (the answer to `space/history`) and
 * `system/approval` (a held MCP call was decided, whoever decided it and wherever).
 *
 * They are built with the canonical protocol string; each connection rewrites it to its own
 * dialect when it sends them (`mew/v0.4` participants get `mew/v0.4`).
 */
import { newEnvelopeId } from '../meup/ids.js';
import { MEUP_PROTOCOL, type MeupEnvelope, type MeupWireEnvelope } from '../meup/types.js';
import type { CapabilityPattern } from './capability-pattern.js';
import { GATEWAY_ID } from './participant-id.js';
import type { SystemErrorCode } from './space-error-codes.js';

/** A participant as the welcome and presence envelopes show it. */
export interface ParticipantView {
  readonly id: string;
  readonly capabilities: readonly CapabilityPattern[];
}

function gatewayEnvelope(fields: {
  readonly to?: readonly string[];
  readonly kind: string;
  readonly correlationId?: readonly string[];
  readonly context?: string;
  readonly payload: Record<string, unknown>;
}): MeupEnvelope {
  return {
    protocol: MEUP_PROTOCOL,
    id: newEnvelopeId(),
    ts: new Date().toISOString(),
    from: GATEWAY_ID,
    ...(fields.to === undefined ? {} : { to: fields.to }),
    kind: fields.kind,
    ...(fields.correlationId === undefined || fields.correlationId.length === 0
      ? {}
      : { correlationId: fields.correlationId }),
    ...(fields.context === undefined ? {} : { context: fields.context }),
    payload: fields.payload,
  };
}

/** `system/welcome`: who you are, what you may send, who is here. */
export function welcomeEnvelope(params: {
  readonly you: ParticipantView;
  readonly participants: readonly ParticipantView[];
  readonly space: string;
}): MeupEnvelope {
  return gatewayEnvelope({
    to: [params.you.id],
    kind: 'system/welcome',
    payload: {
      you: { id: params.you.id, capabilities: params.you.capabilities },
      participants: params.participants.map((p) => ({ id: p.id, capabilities: p.capabilities })),
      space: params.space,
    },
  });
}

/** `system/presence`: a participant joined (its first connection) or left (its last). */
export function presenceEnvelope(event: 'join' | 'leave', participant: ParticipantView): MeupEnvelope {
  return gatewayEnvelope({
    kind: 'system/presence',
    payload: { event, participant: { id: participant.id, capabilities: participant.capabilities } },
  });
}

/**
 * `system/error` to one participant: `payload.error` is the stable code, `payload.message` says
 * what was wrong; `correlation_id` names the offending envelope when its id could be read.
 */
export function errorEnvelope(params: {
  /** The participant; absent before anyone is identified (a refused join). */
  readonly to?: string;
  readonly code: SystemErrorCode;
  readonly message: string;
  readonly offendingId?: string | undefined;
  readonly details?: Record<string, unknown>;
}): MeupEnvelope {
  return gatewayEnvelope({
    ...(params.to === undefined ? {} : { to: [params.to] }),
    kind: 'system/error',
    ...(params.offendingId === undefined ? {} : { correlationId: [params.offendingId] }),
    payload: { error: params.code, message: params.message, ...params.details },
  });
}

/** `system/history`: the envelopes of a context subtree a participant asked for. */
export function historyEnvelope(params: {
  readonly to: string;
  readonly requestId: string;
  readonly context: string | undefined;
  readonly envelopes: readonly MeupWireEnvelope[];
  readonly truncated: boolean;
}): MeupEnvelope {
  return gatewayEnvelope({
    to: [params.to],
    kind: 'system/history',
    correlationId: [params.requestId],
    payload: {
      ...(params.context === undefined ? {} : { context: params.context }),
      envelopes: params.envelopes,
      truncated: params.truncated,
    },
  });
}

/** `system/approval`: the held call an approval proposal stood for was decided. */
export function approvalDecidedEnvelope(params: {
  readonly approvalId: string;
  readonly context: string | undefined;
  readonly outcome: 'approved' | 'rejected' | 'timeout' | 'withdrawn' | 'overloaded';
  readonly decidedBy?: string | undefined;
  readonly via: 'space' | 'http' | 'gateway';
  readonly reason?: string | undefined;
}): MeupEnvelope {
  return gatewayEnvelope({
    kind: 'system/approval',
    correlationId: [params.approvalId],
    ...(params.context === undefined ? {} : { context: params.context }),
    payload: {
      approval_id: params.approvalId,
      outcome: params.outcome,
      via: params.via,
      ...(params.decidedBy === undefined ? {} : { decided_by: params.decidedBy }),
      ...(params.reason === undefined ? {} : { reason: params.reason }),
    },
  });
}
