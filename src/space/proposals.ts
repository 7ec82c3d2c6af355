/**
 * Proposals the space tracks (MEUP ADR-v2c): an `mcp/proposal` from a participant, or a call held
 * for approval that the gateway proposes on behalf of its MCP client. A proposal is open until it
 * is fulfilled (an `mcp/request` naming it in `correlation_id`), rejected (`mcp/reject`),
 * withdrawn (`mcp/withdraw`, proposer only) or, for a held call, decided elsewhere. One envelope
 * naming several proposals acts on all of them (seed 000: multi-correlation).
 *
 * Bounded: past `max` entries the oldest closed ones are forgotten first, then the oldest open
 * ones (an open proposal forgotten can no longer be acted on: `unknown_proposal`).
 */

export type ProposalState = 'open' | 'fulfilled' | 'rejected' | 'withdrawn';

export interface Proposal {
  readonly id: string;
  readonly proposer: string;
  /** The JSON-RPC method and params proposed. */
  readonly method: string;
  readonly params: unknown;
  /** Set for a held call: the approval it stands for (same id) and what it may be fulfilled with. */
  readonly approval?: {
    readonly upstream: string;
    readonly target: string;
    /** The MCP session of the held call (trace session of the envelopes about it). */
    readonly session: string | undefined;
    readonly context: string | undefined;
  };
  state: ProposalState;
  /** The envelope that closed it. */
  closedBy?: string;
}

export class ProposalBook {
  readonly #proposals = new Map<string, Proposal>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#proposals.size;
  }

  get(id: string): Proposal | undefined {
    return this.#proposals.get(id);
  }

  has(id: string): boolean {
    return this.#proposals.has(id);
  }

  add(proposal: Omit<Proposal, 'state'>): Proposal {
    const entry: Proposal = { ...proposal, state: 'open' };
    this.#proposals.set(entry.id, entry);
    if (this.#proposals.size > this.#max) this.#evict();
    return entry;
  }

  close(id: string, state: Exclude<ProposalState, 'open'>, by: string): void {
    const proposal = this.#proposals.get(id);
    if (proposal?.state !== 'open') return;
    proposal.state = state;
    proposal.closedBy = by;
  }

  /** Whether an open proposal stands for a held call of MCP client `client-<session>`. */
  hasOpenFrom(proposer: string): boolean {
    for (const p of this.#proposals.values()) if (p.state === 'open' && p.proposer === proposer) return true;
    return false;
  }

  #evict(): void {
    for (const [id, p] of this.#proposals) {
      if (p.state !== 'open') {
        this.#proposals.delete(id);
        return;
      }
    }
    const oldest = this.#proposals.keys().next();
    if (!oldest.done) this.#proposals.delete(oldest.value);
  }
}
