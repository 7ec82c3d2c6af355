/**
 * The space's recent envelopes, for participants that join late (`space/history`, a documented
 * extension). Bounded twice: at most `maxEnvelopes` envelopes and `maxBytes` of their JSON text
 * (an MCP result can be megabytes; the oldest go first). Each entry remembers who could see it when
 * it was sent (everyone, its sender and recipients, or the observers of MCP traffic), and a query
 * only returns what the asker could have seen. The subtree filter is seed 004's: `root` and
 * everything below it.
 */
import { isInSubtree } from '../meup/context-path.js';
import type { MeupEnvelope } from '../meup/types.js';

export type Visibility =
  | { readonly kind: 'everyone' }
  | { readonly kind: 'participants'; readonly ids: ReadonlySet<string> }
  | { readonly kind: 'observers' };

interface Entry {
  readonly envelope: MeupEnvelope;
  readonly visibility: Visibility;
  readonly bytes: number;
}

export interface HistoryQuery {
  readonly viewer: string;
  readonly observer: boolean;
  /** Only envelopes in this context's subtree; undefined: every context. */
  readonly context?: string | undefined;
  readonly limit: number;
}

export class SpaceHistory {
  /** Oldest first; `#head` is the index of the oldest kept (the array is compacted now and then). */
  #entries: Entry[] = [];
  #head = 0;
  #bytes = 0;

  constructor(
    readonly maxEnvelopes: number,
    readonly maxBytes: number = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.#entries.length - this.#head;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Keeps `envelope`; `bytes` is the size of its JSON text (computed when not given). */
  add(envelope: MeupEnvelope, visibility: Visibility, bytes?: number): void {
    if (this.maxEnvelopes === 0) return;
    const size = bytes ?? JSON.stringify(envelope).length;
    if (size > this.maxBytes) return;
    this.#entries.push({ envelope, visibility, bytes: size });
    this.#bytes += size;
    while (this.size > this.maxEnvelopes || this.#bytes > this.maxBytes) {
      const oldest = this.#entries[this.#head]!;
      this.#bytes -= oldest.bytes;
      this.#entries[this.#head] = undefined as unknown as Entry;
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * The most recent `limit` envelopes the viewer could see (in the subtree when asked), oldest
   * first, and whether older matching ones were left out.
   */
  query(q: HistoryQuery): { readonly envelopes: MeupEnvelope[]; readonly truncated: boolean } {
    const out: MeupEnvelope[] = [];
    let truncated = false;
    for (let i = this.#entries.length - 1; i >= this.#head; i--) {
      const entry = this.#entries[i]!;
      if (q.context !== undefined && !isInSubtree(entry.envelope.context, q.context)) continue;
      if (!visibleTo(entry.visibility, q)) continue;
      if (out.length === q.limit) {
        truncated = true;
        break;
      }
      out.push(entry.envelope);
    }
    return { envelopes: out.reverse(), truncated };
  }
}

function visibleTo(visibility: Visibility, q: HistoryQuery): boolean {
  if (visibility.kind === 'everyone') return true;
  if (visibility.kind === 'observers') return q.observer;
  return visibility.ids.has(q.viewer);
}
