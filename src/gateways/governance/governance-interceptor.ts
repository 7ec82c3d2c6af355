/**
 * Policy, approvals and the audit ledger on the forwarding path (a router `CallInterceptor`).
 *
 * Before a `tools/call`, `resources/read` or `prompts/get` goes upstream (`admit`): the policy
 * decides allow / deny / ask and the tier; a denial is recorded (durably) and answered with
 * -32003; "ask" holds the call in the approval registry until an approver decides (rejected or
 * timed out: recorded, answered with -32004); a call of tier T1 or above is refused with -32005,
 * before it is forwarded, while the ledger says it cannot write (fail closed: a write failed, its
 * writes hang, or its file system is below `audit.minFreeBytes`). That refusal is the one thing
 * the ledger cannot record: it is logged, with what its record would have held, and counted.
 *
 * When the call ends, whatever the end: one ledger record with the decision, the tier, the
 * redacted arguments, the output's hash and length, the error, the duration, the trace id, who
 * approved, the rule. T2+ records are appended in `complete` and durable before the client gets the
 * answer; if that write fails (the window the free-space threshold narrows: the call was admitted
 * while the ledger could write), the result is withheld with -32005 saying that the call ran, so
 * that the client does not retry a side effect blindly. T0/T1 records are appended in
 * `delivered`, once the answer is out, with its text. `tools/list` answers are filtered: a
 * principal only sees the tools it may call (or ask for).
 *
 * The request and client ids come from the request scope the transport bound with
 * AsyncLocalStorage (seed 002): `admit` runs inside it and keeps them for the record.
 */

import { CANCELLED_BY_CLIENT } from '../../audit/ledger/audit-event.js';
import { UNAVAILABLE_PHRASE } from '../../audit/ledger/ledger-unavailable.js';
import { currentRequestScope } from '../../audit/request-scope.js';
import type { GovernedMethod, Tier } from '../../config/types.js';
import type { Admission, CallInfo, CallInterceptor, CallOutcome } from '../../core/router.js';
import { SbErrorCode } from '../../errors/switchboard-error.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import type { ApprovalRegistry } from '../../policy/approvals.js';
import {
  type CallSubject,
  GOVERNED,
  type PolicyDecision,
  type PolicyEngine,
  tierAtLeast,
} from '../../policy/policy-engine.js';
import { isObject } from '../../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import type { AuditDecision, AuditEvent, AuditSink } from './audit-sink.js';
import type { ToolCatalog } from './tool-catalog.js';

export interface GovernanceOptions {
  readonly policy: PolicyEngine;
  readonly approvals: ApprovalRegistry;
  readonly catalog: ToolCatalog;
  /** Undefined when the ledger is disabled. */
  readonly ledger?: AuditSink;
  /** Maps an aggregated name (`<server>__<tool>`) back to its upstream and name. */
  readonly resolveName?: (exposed: string) => { readonly server: string; readonly name: string } | undefined;
  /** Redacts arguments shown to approvers (the ledger redacts what it stores itself). */
  readonly redact: (value: unknown) => unknown;
  /** Whether the caller's principal is trusted to act with every role (no authentication configured). */
  readonly localIsTrusted?: boolean;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** What `admit` learnt about a call, kept for its record. */
interface Governance {
  readonly subject: CallSubject;
  readonly decision: PolicyDecision;
  outcome: AuditDecision;
  decidedBy?: string;
  /** Set when the record was already written (denials and rejections, at admit time). */
  recorded?: boolean;
  /**
   * A T0/T1 call's record between `complete` and `delivered`, which writes it with the text the
   * client got: what the record needs of the answer, and nothing of the call.
   */
  pending?: {
    readonly decision: AuditDecision;
    readonly result: unknown;
    readonly error: string | undefined;
  };
  readonly requestId?: string;
  readonly clientId?: string;
}

/** What the log says of a governed call it could not record: who, what, where, and its trace id. */
function callFields(call: CallInfo, governance: Governance): Record<string, unknown> {
  const { subject } = governance;
  return {
    session_id: call.session.mcpSessionId ?? call.session.key,
    principal: subject.principal,
    request_id: governance.requestId ?? call.request.id,
    upstream: subject.upstream,
    method: subject.method,
    target: subject.target,
    tier: governance.decision.tier,
    trace_id: call.traceId,
  };
}

const NOTE = 'governance';

/** How often, at most, lost audit records are logged (each is counted in `audit_records_lost_total`). */
const LOST_LOG_INTERVAL_MS = 10_000;

function paramsOf(message: { readonly params?: unknown } | undefined): JsonObject {
  return isObject(message?.params) ? message.params : {};
}

export class GovernanceInterceptor implements CallInterceptor {
  readonly name = 'governance';
  readonly #o: GovernanceOptions;

  constructor(options: GovernanceOptions) {
    this.#o = options;
  }

  /** Records lost since the last log line about them, and when that line was written. */
  #lostUnlogged = 0;
  #lostLoggedAt = Number.NEGATIVE_INFINITY;

  /**
   * A non-durable record that could not be written (the ledger logs its own failure and fails
   * closed): counted each time, logged at most every {@link LOST_LOG_INTERVAL_MS} with how many
   * went unlogged since, so that a ledger refusing every record does not log every call.
   */
  readonly #appendFailed = (err: unknown): void => {
    this.#o.metrics.inc('audit_records_lost_total');
    const now = Date.now();
    if (now - this.#lostLoggedAt < LOST_LOG_INTERVAL_MS) {
      this.#lostUnlogged++;
      return;
    }
    this.#o.logger.error(
      { err: String(err), ...(this.#lostUnlogged > 0 ? { alsoLostSinceLastLog: this.#lostUnlogged } : {}) },
      'could not write an audit record',
    );
    this.#lostLoggedAt = now;
    this.#lostUnlogged = 0;
  };

  // ---------------------------------------------------------------- before the call

  admit(call: CallInfo): Admission | Promise<Admission> {
    const method = call.request.method;
    if (!GOVERNED.has(method)) return { allow: true };
    const subject = this.#subject(call, method as GovernedMethod);
    const scope = currentRequestScope();
    const hintsKnown = method !== 'tools/call' || this.#o.catalog.knows(subject.upstream);
    if (hintsKnown) return this.#decide(call, subject, scope);
    return this.#o.catalog
      .ensure(subject.upstream, call.session.key)
      .then(() => this.#decide(call, subject, scope));
  }

  #decide(
    call: CallInfo,
    subject: CallSubject,
    scope: { requestId?: string; clientId?: string } | undefined,
  ): Admission | Promise<Admission> {
    const hints =
      subject.method === 'tools/call' ? this.#o.catalog.hints(subject.upstream, subject.target) : undefined;
    const decision = this.#o.policy.decide(subject, hints);
    const governance: Governance = {
      subject,
      decision,
      outcome: 'allowed',
      ...(scope?.requestId === undefined ? {} : { requestId: scope.requestId }),
      ...(scope?.clientId === undefined ? {} : { clientId: scope.clientId }),
    };
    call.notes.set(NOTE, governance);
    this.#o.metrics.inc('policy_decisions_total', { action: decision.action, tier: decision.tier });
    if (decision.action === 'deny') {
      governance.outcome = 'denied';
      const error = gatewayError(
        SbErrorCode.PolicyDenied,
        `denied by policy${decision.rule ? ` (rule ${decision.rule})` : ''}: ${subject.method} ${subject.target} on ${subject.upstream}`,
        {
          upstream: subject.upstream,
          target: subject.target,
          ...(decision.rule === undefined ? {} : { rule: decision.rule }),
        },
      );
      return this.#recordRefusal(call, governance, error);
    }
    if (decision.action === 'ask') return this.#ask(call, governance);
    return this.#failClosed(call, governance) ?? { allow: true };
  }

  async #ask(call: CallInfo, governance: Governance): Promise<Admission> {
    const { subject, decision } = governance;
    const args =
      subject.method === 'resources/read' ? { uri: subject.target } : paramsOf(call.routed).arguments;
    const { outcome } = this.#o.approvals.request(
      {
        principal: subject.principal,
        session: call.session.key,
        upstream: subject.upstream,
        method: subject.method,
        target: subject.target,
        tier: decision.tier,
        args: this.#o.redact(args),
        traceId: call.traceId,
        ...(decision.rule === undefined ? {} : { rule: decision.rule }),
      },
      call.signal,
    );
    const result = await outcome;
    if (result.approved) {
      governance.outcome = 'approved';
      governance.decidedBy = result.decidedBy;
      this.#o.metrics.inc('approvals_total', { outcome: 'approved' });
      return this.#failClosed(call, governance) ?? { allow: true };
    }
    governance.outcome = 'rejected';
    if (result.decidedBy !== undefined) governance.decidedBy = result.decidedBy;
    this.#o.metrics.inc('approvals_total', { outcome: result.why });
    const who =
      result.why === 'rejected'
        ? `rejected by ${result.decidedBy ?? 'an approver'}`
        : result.why === 'timeout'
          ? 'not approved in time'
          : result.why === 'withdrawn'
            ? 'withdrawn'
            : 'too many calls waiting for approval';
    const error = gatewayError(
      SbErrorCode.ApprovalRejected,
      `${subject.method} ${subject.target} on ${subject.upstream} needs approval and was ${who}${result.reason ? `: ${result.reason}` : ''}`,
      {
        upstream: subject.upstream,
        target: subject.target,
        outcome: result.why,
      },
    );
    return this.#recordRefusal(call, governance, error);
  }

  /**
   * Refuses a T1+ call, before it is forwarded, while the ledger says it cannot write: nothing of
   * consequence runs unaudited. The ledger cannot record this refusal either, so the log line
   * carries what its record would have said (and `audit_fail_closed_total` counts it).
   */
  #failClosed(call: CallInfo, governance: Governance): Admission | undefined {
    const ledger = this.#o.ledger;
    if (!ledger || ledger.healthy || !tierAtLeast(governance.decision.tier, 'T1')) return undefined;
    const why = ledger.unavailable;
    const { decision } = governance;
    this.#o.metrics.inc('audit_fail_closed_total', { reason: why?.reason ?? 'unknown' });
    this.#o.logger.error(
      {
        reason: why?.reason,
        detail: why?.detail,
        ...callFields(call, governance),
        ...(decision.rule === undefined ? {} : { rule: decision.rule }),
      },
      'audit ledger unavailable: refused a T1+ call before forwarding it (not recorded in the ledger)',
    );
    governance.outcome = 'error';
    governance.recorded = true;
    const phrase = why === undefined ? '' : ` (${UNAVAILABLE_PHRASE[why.reason]})`;
    return {
      allow: false,
      error: gatewayError(
        SbErrorCode.AuditUnavailable,
        `not run: the audit ledger cannot be written${phrase}, so calls of tier ${decision.tier} are refused before they reach the upstream until it can; this refusal is in the gateway's log, not in the ledger`,
        { forwarded: false, ...(why === undefined ? {} : { reason: why.reason }) },
      ),
    };
  }

  /** A refusal is recorded durably before the client hears of it. */
  async #recordRefusal(
    call: CallInfo,
    governance: Governance,
    error: { code: number; message: string; data?: unknown },
  ): Promise<Admission> {
    const written = this.#record(call, governance, governance.outcome, undefined, error.message, true);
    if (written)
      await written.catch((err: unknown) =>
        this.#o.logger.error({ err: String(err) }, 'could not record a refused call in the audit ledger'),
      );
    return { allow: false, error };
  }

  /**
   * Writes the call's one record, unless it was written already (a call cancelled while held
   * for approval is recorded when it ends, not again when its approval is withdrawn).
   */
  #record(
    call: CallInfo,
    governance: Governance,
    decision: AuditDecision,
    result: unknown,
    error: string | undefined,
    durable: boolean,
  ): Promise<unknown> | undefined {
    if (governance.recorded) return undefined;
    governance.recorded = true;
    return this.#o.ledger?.append(this.#event(call, governance, decision, result, error), { durable });
  }

  /**
   * {@link #record} of a call that does not wait for its record (T0/T1): no promise. `output` is
   * the result's text as delivered (then `result` is not kept); without it the ledger serialises
   * `result`.
   */
  #recordUnawaited(
    call: CallInfo,
    governance: Governance,
    decision: AuditDecision,
    result: unknown,
    error: string | undefined,
    output: string | undefined,
  ): void {
    if (governance.recorded) return;
    governance.recorded = true;
    this.#o.ledger?.appendUnawaited(
      this.#event(call, governance, decision, result, error, output),
      this.#appendFailed,
    );
  }

  // ---------------------------------------------------------------- after the call

  complete(
    call: CallInfo,
    response: JsonRpcResponse,
    outcome: CallOutcome,
  ): JsonRpcResponse | undefined | Promise<JsonRpcResponse | undefined> {
    const method = call.request.method;
    if (method === 'tools/list' && 'result' in response) return this.#filterTools(call, response);
    if (!GOVERNED.has(method)) return undefined;
    let governance = call.notes.get(NOTE) as Governance | undefined;
    if (governance?.recorded) return undefined;
    if (!this.#o.ledger) return undefined;
    if (!governance) {
      // Refused before any decision (an unknown tool, an upstream down): still one record.
      governance = {
        subject: this.#subject(call, method as GovernedMethod),
        decision: { action: 'allow', tier: method === 'tools/call' ? 'T1' : 'T0' },
        outcome: 'error',
      };
      call.notes.set(NOTE, governance);
    }
    const failed = 'error' in response || !outcome.delivered;
    const decision: AuditDecision = failed ? 'error' : governance.outcome;
    const result = 'result' in response ? response.result : undefined;
    const errorText =
      'error' in response ? response.error.message : outcome.delivered ? undefined : CANCELLED_BY_CLIENT;
    const durable = tierAtLeast(governance.decision.tier, 'T2');
    if (!durable) {
      // Answered at once; recorded in `delivered`, written after (batched).
      governance.pending = { decision, result, error: errorText };
      return undefined;
    }
    // Serialised (and hashed) by the ledger before the answer goes out.
    const written = this.#record(call, governance, decision, result, errorText, true);
    if (!written) return undefined;
    return written.then(
      () => undefined,
      (err: unknown) => {
        this.#o.logger.error(
          { err: String(err), ...callFields(call, governance) },
          'a T2+ call ran but its audit record could not be written; withholding its result',
        );
        this.#o.metrics.inc('audit_results_withheld_total');
        const { subject } = governance;
        const where = subject.upstream === '' ? 'the upstream' : `upstream ${subject.upstream}`;
        return {
          jsonrpc: '2.0',
          id: call.request.id,
          error: gatewayError(
            SbErrorCode.AuditUnavailable,
            `the call ran: ${where} answered it, but its audit record could not be written, so the answer is withheld. It may have taken effect: check before retrying it`,
            { forwarded: true },
          ),
        } as JsonRpcResponse;
      },
    );
  }

  /**
   * Appends a T0/T1 call's record now that its answer is out, with the text the client got as the
   * output to hash: the queued event holds that string (and the arguments), not the call and its
   * result, which can die young instead of waiting out the ledger's batch delay in the heap. (On
   * `switchboard serve` at C=8 with the trace on, scavenges took 4% less time; throughput did not
   * move beyond the noise, since the trace holds the payloads for its own batch anyway.)
   */
  delivered(call: CallInfo, resultText: string | undefined): void {
    const governance = call.notes.get(NOTE) as Governance | undefined;
    const pending = governance?.pending;
    if (governance === undefined || pending === undefined) return;
    governance.pending = undefined;
    this.#recordUnawaited(call, governance, pending.decision, pending.result, pending.error, resultText);
  }

  #filterTools(
    call: CallInfo,
    response: Extract<JsonRpcResponse, { result: unknown }>,
  ): JsonRpcResponse | undefined {
    const result = response.result;
    if (!isObject(result) || !Array.isArray(result.tools)) return undefined;
    const tools = result.tools.filter(isObject);
    const principal = call.session.principal ?? 'local';
    const roles = this.#roles(call);
    const byUpstream = new Map<string, JsonObject[]>();
    const visible = tools.filter((tool) => {
      if (typeof tool.name !== 'string') return true;
      const origin =
        call.upstream !== undefined
          ? { server: call.upstream, name: tool.name }
          : this.#o.resolveName?.(tool.name);
      if (!origin) return true;
      const list = byUpstream.get(origin.server) ?? [];
      list.push({ ...tool, name: origin.name });
      byUpstream.set(origin.server, list);
      const subject: CallSubject = {
        upstream: origin.server,
        method: 'tools/call',
        target: origin.name,
        principal,
        roles,
      };
      return (
        this.#o.policy.decide(subject, this.#o.catalog.hints(origin.server, origin.name)).action !== 'deny'
      );
    });
    // A paginated list (a cursor was asked for, or more pages follow) is only part of the catalog.
    const complete = result.nextCursor === undefined && paramsOf(call.request).cursor === undefined;
    for (const [server, list] of byUpstream) this.#o.catalog.learn(server, list, complete);
    if (visible.length === tools.length) return undefined;
    this.#o.metrics.inc('tools_hidden_by_policy_total', undefined, tools.length - visible.length);
    return { ...response, result: { ...result, tools: visible } };
  }

  // ---------------------------------------------------------------- helpers

  #roles(call: CallInfo): readonly string[] {
    return call.session.roles ?? [];
  }

  #subject(call: CallInfo, method: GovernedMethod): CallSubject {
    const params = paramsOf(call.routed ?? call.request);
    const target = method === 'resources/read' ? String(params.uri ?? '') : String(params.name ?? '');
    return {
      upstream: call.upstream ?? '',
      method,
      target,
      principal: call.session.principal ?? 'local',
      roles: this.#roles(call),
    };
  }

  #event(
    call: CallInfo,
    governance: Governance,
    decision: AuditDecision,
    result: unknown,
    error: string | undefined,
    output?: string,
  ): AuditEvent {
    const { subject } = governance;
    const params = paramsOf(call.routed ?? call.request);
    const args = subject.method === 'resources/read' ? { uri: subject.target } : params.arguments;
    const event: { -readonly [K in keyof AuditEvent]: AuditEvent[K] } = {
      session_id: call.session.mcpSessionId ?? call.session.key,
      method: subject.method,
      tier: governance.decision.tier as Tier,
      decision,
      duration_ms: Math.max(
        0,
        Math.round((performance.timeOrigin + performance.now() - call.receivedAt) * 1000) / 1000,
      ),
      trace_id: call.traceId,
      request_id: governance.requestId ?? call.request.id,
    };
    const clientId =
      governance.clientId ?? (call.session.transport === 'stdio' ? undefined : call.session.principal);
    if (clientId !== undefined) event.client_id = clientId;
    if (subject.upstream !== '') event.upstream = subject.upstream;
    if (subject.target !== '') event.target = subject.target;
    if (args !== undefined) event.args = args;
    if (output !== undefined) event.output = output;
    else if (result !== undefined) event.result = result;
    if (error !== undefined) event.error = error;
    if (governance.decidedBy !== undefined) event.decided_by = governance.decidedBy;
    if (governance.decision.rule !== undefined) event.rule = governance.decision.rule;
    return event;
  }
}
