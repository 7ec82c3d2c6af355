/**
 * Approvals in the space. The HTTP approvals API and the space share one `ApprovalRegistry`, so
 * there is one state:
 *
 * - a call held by policy "ask" (`created`) becomes an `mcp/proposal` from its MCP client
 *   (`client-<session>`), whose id is the approval id, addressed to the server that would run it,
 *   in the call's trace context `<session>/<request-envelope-id>` and correlated to that request;
 * - an approver in the space decides it: an `mcp/request` naming it in `correlation_id` approves
 *   (the held call then runs with the client's own arguments, and its result comes back to the
 *   approver as the `mcp/response` of that request), an `mcp/reject` rejects; `decided_by` is the
 *   participant, so the ledger names the approver; approving a call the participant (as a
 *   principal) made itself is refused unless self-approval is allowed (four eyes, the registry's rule);
 * - every decision, wherever it was made (space, HTTP API, timeout, the client giving up), closes
 *   the proposal and is announced with `system/approval`.
 */
import { isValidContext } from '../meup/context-path.js';
import type { MeupEnvelope } from '../meup/types.js';
import { MEUP_PROTOCOL } from '../meup/types.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type {
  ApprovalOutcome,
  ApprovalRegistry,
  ApprovalRequest,
  DecideResult,
} from '../policy/approvals.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc/types.js';
import { serverParticipantId } from './participants.js';
import type { Proposal, ProposalBook } from './proposals.js';
import { approvalDecidedEnvelope } from './system-envelopes.js';

/** What the bridge needs from the space. */
export interface ApprovalHost {
  readonly proposals: ProposalBook;
  /** Publishes a proposal on behalf of an MCP client (broadcast) or a gateway notice. */
  publish(envelope: MeupEnvelope, traceSession: string | undefined): void;
}

/** A fulfilment waiting for the held call's result. */
export interface AwaitedResult {
  readonly approvalId: string;
  onResult(response: JsonRpcResponse, traceId: string): void;
}

export function clientParticipantId(session: string | undefined): string {
  return `client-${session ?? 'unknown'}`;
}

function paramsOf(request: ApprovalRequest): Record<string, unknown> {
  if (request.method === 'resources/read') return { uri: request.target };
  return request.args === undefined
    ? { name: request.target }
    : { name: request.target, arguments: request.args };
}

export class ApprovalBridge {
  readonly #registry: ApprovalRegistry;
  readonly #host: ApprovalHost;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  /** Held calls approved from the space, by the trace id of the call: who gets the result. */
  readonly #awaiting = new Map<string, AwaitedResult>();
  #deciding: { readonly id: string; readonly envelopeId: string } | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(options: {
    readonly registry: ApprovalRegistry;
    readonly host: ApprovalHost;
    readonly logger: Logger;
    readonly metrics: Metrics;
  }) {
    this.#registry = options.registry;
    this.#host = options.host;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
  }

  /** Starts publishing: the calls already held are proposed at once, then every new one. */
  start(): void {
    this.#unsubscribe = this.#registry.subscribe({
      created: (request) => this.#created(request),
      decided: (request, outcome) => this.#decided(request, outcome),
    });
    for (const request of this.#registry.pending()) this.#created(request);
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#awaiting.clear();
  }

  /**
   * Decides approval `id` from the space. With `awaited`, the held call's result goes to it once
   * the call ends (registered before deciding, so it cannot be missed).
   */
  decide(
    proposal: Proposal,
    decision: { readonly approve: boolean; readonly by: string; readonly reason?: string },
    envelopeId: string,
    awaited?: AwaitedResult,
  ): DecideResult {
    const traceId = this.#registry.get(proposal.id)?.traceId;
    if (awaited && traceId !== undefined) this.#awaiting.set(traceId, awaited);
    this.#deciding = { id: proposal.id, envelopeId };
    try {
      const result = this.#registry.decide(proposal.id, decision);
      if (result !== 'decided' && traceId !== undefined) this.#awaiting.delete(traceId);
      return result;
    } finally {
      this.#deciding = undefined;
    }
  }

  /** Whether participant `by` approving held call `id` is refused: it made the call (four eyes). */
  isSelfApproval(id: string, by: string): boolean {
    return this.#registry.isSelfApproval(id, by);
  }

  /** Told by the space's call watcher when any call ends: the result of an approved held call. */
  callCompleted(traceId: string, response: JsonRpcResponse): void {
    const awaited = this.#awaiting.get(traceId);
    if (!awaited) return;
    this.#awaiting.delete(traceId);
    awaited.onResult(response, traceId);
  }

  #created(request: ApprovalRequest): void {
    if (this.#host.proposals.has(request.id)) return;
    const from = clientParticipantId(request.session);
    const context =
      request.session !== undefined && request.traceId !== undefined
        ? `${request.session}/${request.traceId}`
        : undefined;
    const validContext = context !== undefined && isValidContext(context) ? context : undefined;
    const params = paramsOf(request);
    this.#host.proposals.add({
      id: request.id,
      proposer: from,
      method: request.method,
      params,
      approval: {
        upstream: request.upstream,
        target: request.target,
        session: request.session,
        context: validContext,
      },
    });
    const envelope: MeupEnvelope = {
      protocol: MEUP_PROTOCOL,
      id: request.id,
      ts: new Date(request.createdAt).toISOString(),
      from,
      to: [serverParticipantId(request.upstream)],
      kind: 'mcp/proposal',
      ...(request.traceId === undefined ? {} : { correlationId: [request.traceId] }),
      ...(validContext === undefined ? {} : { context: validContext }),
      payload: {
        method: request.method,
        params,
        approval: {
          upstream: request.upstream,
          principal: request.principal,
          tier: request.tier,
          ...(request.rule === undefined ? {} : { rule: request.rule }),
          expires: new Date(request.expiresAt).toISOString(),
        },
      },
    };
    this.#metrics.inc('space_approval_proposals_total');
    this.#host.publish(envelope, request.session);
  }

  #decided(request: ApprovalRequest, outcome: ApprovalOutcome): void {
    const proposal = this.#host.proposals.get(request.id);
    const mine = this.#deciding?.id === request.id ? this.#deciding : undefined;
    const via = mine ? 'space' : outcome.decidedBy !== undefined ? 'http' : 'gateway';
    const result = outcome.approved ? 'approved' : outcome.why;
    if (proposal?.state === 'open') {
      const state = outcome.approved ? 'fulfilled' : outcome.why === 'withdrawn' ? 'withdrawn' : 'rejected';
      this.#host.proposals.close(request.id, state, mine?.envelopeId ?? via);
    }
    if (!outcome.approved && request.traceId !== undefined) this.#awaiting.delete(request.traceId);
    try {
      this.#host.publish(
        approvalDecidedEnvelope({
          approvalId: request.id,
          context: proposal?.approval?.context,
          outcome: result,
          decidedBy: outcome.decidedBy,
          via,
          reason: outcome.reason,
        }),
        request.session,
      );
    } catch (err) {
      this.#logger.error({ err: String(err) }, 'could not announce an approval decision in the space');
    }
  }
}
