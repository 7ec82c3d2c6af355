/**
 * A participant that asks for MCP calls the way the MEW reference client does
 * (`MEWParticipant.mcpRequest` of `@mew-protocol/mew`, github.com/rjcorwin/mew-protocol): our own
 * code, written to behave as that client does, over a real `Participant` WebSocket.
 *
 * - It sends `mcp/request` when one of the capabilities of its `system/welcome` allows it, else
 *   `mcp/proposal` (when allowed), with the same id it then waits on.
 * - A proposal learns of its fulfilment only through the chain: an `mcp/request` whose FIRST
 *   `correlation_id` is the proposal's id (the fulfilling request, whoever sent it and whatever
 *   its `to`), then an `mcp/response` whose first `correlation_id` is that request's id. A response
 *   naming the proposal directly resolves it too (the reference client checks that first).
 * - `mcp/reject` naming the proposal first fails it ("Proposal rejected by <from>: <reason>").
 * - No outcome within the timeout: it sends `mcp/withdraw` `{reason: "timeout"}` and fails
 *   ("Proposal <id> not fulfilled after <ms>ms"), which is what a gateway that hides the
 *   fulfilling request from the proposer makes it do.
 */
import { matchesCapability } from '../../src/space/capability-matcher.js';
import type { CapabilityPattern } from '../../src/space/capability-pattern.js';
import type { Participant, Wire } from './space.js';

interface Pending {
  readonly resolve: (result: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

const firstCorrelation = (e: Wire): unknown =>
  Array.isArray(e.correlation_id) ? e.correlation_id[0] : undefined;

let counter = 0;

export class MewLikeProposer {
  readonly #participant: Participant;
  readonly #pending = new Map<string, Pending>();
  /** Fulfilling request id → the proposal it fulfils (MEWParticipant's `proposalFulfillments`). */
  readonly #fulfilments = new Map<string, string>();
  /** Every id this client sent, and how: `mcp/request` or `mcp/proposal`. */
  readonly sent = new Map<string, string>();

  constructor(participant: Participant) {
    this.#participant = participant;
    participant.ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      try {
        this.#onEnvelope(JSON.parse(data.toString()) as Wire);
      } catch {
        // Not an envelope: the reference client ignores it too.
      }
    });
  }

  /** The capabilities of the latest `system/welcome` (they change with grants). */
  get capabilities(): CapabilityPattern[] {
    const welcomes = this.#participant.ofKind('system/welcome');
    const you = (welcomes[welcomes.length - 1]?.payload as { you?: { capabilities?: unknown } } | undefined)
      ?.you;
    const raw = Array.isArray(you?.capabilities) ? (you.capabilities as unknown[]) : [];
    return raw.map((c) => (typeof c === 'string' ? { kind: c } : (c as CapabilityPattern)));
  }

  #canSend(kind: string, payload: Wire): boolean {
    return this.capabilities.some((c) => matchesCapability(c, { kind, payload }));
  }

  /** Resolves with the JSON-RPC `result`, or fails with the error, the rejection or the timeout. */
  mcpRequest(to: readonly string[], payload: Wire, timeoutMs: number): Promise<unknown> {
    const id = `${this.#participant.id}-mew-${++counter}`;
    return new Promise((resolve, reject) => {
      const kind = this.#canSend('mcp/request', payload)
        ? 'mcp/request'
        : this.#canSend('mcp/proposal', payload)
          ? 'mcp/proposal'
          : undefined;
      if (kind === undefined) {
        reject(new Error(`No capability to send request for method: ${String(payload.method)}`));
        return;
      }
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        if (kind === 'mcp/proposal')
          this.#participant.send({
            kind: 'mcp/withdraw',
            correlation_id: [id],
            payload: { reason: 'timeout' },
          });
        reject(
          new Error(
            kind === 'mcp/proposal'
              ? `Proposal ${id} not fulfilled after ${timeoutMs}ms`
              : `Request ${id} timed out after ${timeoutMs}ms`,
          ),
        );
      }, timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      this.sent.set(id, kind);
      this.#participant.send({ id, kind, to: [...to], payload });
    });
  }

  #onEnvelope(e: Wire): void {
    const first = firstCorrelation(e);
    if (typeof first !== 'string') return;
    if (e.kind === 'mcp/request' && this.#pending.has(first)) this.#fulfilments.set(String(e.id), first);
    else if (e.kind === 'mcp/response') {
      const direct = this.#pending.has(first) ? first : undefined;
      const proposal = direct ?? this.#fulfilments.get(first);
      if (proposal === undefined) return;
      this.#fulfilments.delete(first);
      this.#settle(
        proposal,
        e.payload as Wire,
        direct === undefined ? 'Proposal fulfillment failed' : 'Request failed',
      );
    } else if (e.kind === 'mcp/reject' && this.#pending.has(first)) {
      const pending = this.#pending.get(first)!;
      clearTimeout(pending.timer);
      this.#pending.delete(first);
      const reason = (e.payload as Wire | undefined)?.reason ?? 'unknown';
      pending.reject(new Error(`Proposal rejected by ${String(e.from)}: ${String(reason)}`));
    }
  }

  #settle(id: string, payload: Wire, failure: string): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    clearTimeout(pending.timer);
    this.#pending.delete(id);
    const error = payload.error as { message?: string } | undefined;
    if (error) pending.reject(new Error(error.message ?? failure));
    else pending.resolve(payload.result);
  }
}
