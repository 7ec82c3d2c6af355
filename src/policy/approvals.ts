/**
 * Calls held for a person's decision (policy "ask"). The HTTP approvals API and the MEUP space
 * share one registry, so an approval granted in one place is seen in the other. No decision
 * before the timeout means rejected; a call its client cancels is withdrawn.
 *
 * Four eyes: unless `allowSelfApproval`, the principal that made a call may not approve it (the
 * ledger would name it as both caller and decider); it may still reject it. The rule is here, in
 * the one registry, so every way of deciding (the HTTP API, the space, whatever comes next) keeps it.
 */

import type { Tier } from '../config/types.js';
import { newEnvelopeId } from '../meup/ids.js';

export interface ApprovalRequest {
  /** A valid MEUP context segment (it becomes the proposal's id in the space). */
  readonly id: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Who called (the client's principal). */
  readonly principal: string;
  readonly session?: string;
  readonly upstream: string;
  readonly method: string;
  readonly target: string;
  readonly tier: Tier;
  readonly rule?: string;
  /** The call's arguments, redacted, for the approver to read. */
  readonly args?: unknown;
  /** Trace id of the held request. */
  readonly traceId?: string;
}

export type ApprovalOutcome =
  | { readonly approved: true; readonly decidedBy: string; readonly reason?: string }
  | {
      readonly approved: false;
      readonly why: 'rejected' | 'timeout' | 'withdrawn' | 'overloaded';
      readonly decidedBy?: string;
      readonly reason?: string;
    };

/** `self-approval`: refused, the decider made the call and self-approval is not allowed. */
export type DecideResult = 'decided' | 'unknown' | 'already-decided' | 'self-approval';

export interface ApprovalEvents {
  created(request: ApprovalRequest): void;
  decided(request: ApprovalRequest, outcome: ApprovalOutcome): void;
}

interface Pending {
  readonly request: ApprovalRequest;
  readonly settle: (outcome: ApprovalOutcome) => void;
  readonly timer: NodeJS.Timeout;
}

export class ApprovalRegistry {
  readonly #timeoutMs: number;
  readonly #maxPending: number;
  readonly #allowSelfApproval: boolean;
  readonly #now: () => number;
  readonly #pending = new Map<string, Pending>();
  /** Recently decided ids (bounded), so a late decision is told "already decided", not "unknown". */
  readonly #decided = new Map<string, ApprovalOutcome>();
  readonly #listeners: Partial<ApprovalEvents>[] = [];

  constructor(options: {
    readonly timeoutMs: number;
    readonly maxPending?: number;
    /**
     * Whether a principal may approve its own call. Default false (four eyes); the composition
     * allows it without authentication (the one local user) or when the configuration says so.
     */
    readonly allowSelfApproval?: boolean;
    readonly now?: () => number;
  }) {
    this.#timeoutMs = options.timeoutMs;
    this.#maxPending = options.maxPending ?? 1000;
    this.#allowSelfApproval = options.allowSelfApproval ?? false;
    this.#now = options.now ?? Date.now;
  }

  /** Listens to approvals being created and decided (the MEUP space publishes them). */
  subscribe(listener: Partial<ApprovalEvents>): () => void {
    this.#listeners.push(listener);
    return () => {
      const i = this.#listeners.indexOf(listener);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /**
   * Holds a call until someone decides, the timeout passes (rejected), or `signal` aborts
   * (withdrawn). Too many pending approvals: refused at once (`overloaded`).
   */
  request(
    details: Omit<ApprovalRequest, 'id' | 'createdAt' | 'expiresAt'>,
    signal?: AbortSignal,
  ): { readonly id: string; readonly outcome: Promise<ApprovalOutcome> } {
    const id = newEnvelopeId();
    if (this.#pending.size >= this.#maxPending)
      return { id, outcome: Promise.resolve({ approved: false, why: 'overloaded' }) };
    const createdAt = this.#now();
    const request: ApprovalRequest = { ...details, id, createdAt, expiresAt: createdAt + this.#timeoutMs };
    const outcome = new Promise<ApprovalOutcome>((resolve) => {
      const settle = (result: ApprovalOutcome) => {
        const entry = this.#pending.get(id);
        if (!entry) return;
        clearTimeout(entry.timer);
        this.#pending.delete(id);
        this.#remember(id, result);
        resolve(result);
        this.#emit('decided', request, result);
      };
      const timer = setTimeout(
        () =>
          settle({
            approved: false,
            why: 'timeout',
            reason: `no decision within ${Math.round(this.#timeoutMs / 1000)}s`,
          }),
        this.#timeoutMs,
      );
      timer.unref();
      this.#pending.set(id, { request, settle, timer });
      signal?.addEventListener(
        'abort',
        () => settle({ approved: false, why: 'withdrawn', reason: 'the client cancelled the call' }),
        { once: true },
      );
    });
    this.#emit('created', request);
    return { id, outcome };
  }

  /**
   * Approves or rejects a held call. An approval by the call's own principal is refused
   * (`self-approval`, the call stays held) unless self-approval is allowed.
   */
  decide(
    id: string,
    decision: { readonly approve: boolean; readonly by: string; readonly reason?: string },
  ): DecideResult {
    const entry = this.#pending.get(id);
    if (!entry) return this.#decided.has(id) ? 'already-decided' : 'unknown';
    if (decision.approve && this.#refusesSelfApproval(entry.request, decision.by)) return 'self-approval';
    const reason = decision.reason === undefined ? {} : { reason: decision.reason };
    entry.settle(
      decision.approve
        ? { approved: true, decidedBy: decision.by, ...reason }
        : { approved: false, why: 'rejected', decidedBy: decision.by, ...reason },
    );
    return 'decided';
  }

  /** Whether `by` approving held call `id` would be refused as approving its own call. */
  isSelfApproval(id: string, by: string): boolean {
    const entry = this.#pending.get(id);
    return entry !== undefined && this.#refusesSelfApproval(entry.request, by);
  }

  #refusesSelfApproval(request: ApprovalRequest, by: string): boolean {
    return !this.#allowSelfApproval && request.principal === by;
  }

  pending(): ApprovalRequest[] {
    return [...this.#pending.values()].map((p) => p.request);
  }

  get(id: string): ApprovalRequest | undefined {
    return this.#pending.get(id)?.request;
  }

  outcomeOf(id: string): ApprovalOutcome | undefined {
    return this.#decided.get(id);
  }

  /** Rejects everything still pending (shutdown). */
  close(): void {
    for (const entry of [...this.#pending.values()])
      entry.settle({ approved: false, why: 'rejected', reason: 'the gateway is shutting down' });
  }

  #remember(id: string, outcome: ApprovalOutcome): void {
    this.#decided.set(id, outcome);
    if (this.#decided.size > 10_000) {
      const oldest = this.#decided.keys().next();
      if (!oldest.done) this.#decided.delete(oldest.value);
    }
  }

  #emit<K extends keyof ApprovalEvents>(event: K, ...args: Parameters<ApprovalEvents[K]>): void {
    for (const listener of this.#listeners) {
      try {
        (listener[event] as ((...a: Parameters<ApprovalEvents[K]>) => void) | undefined)?.(...args);
      } catch {
        // A listener must not break approvals.
      }
    }
  }
}
