/**
 * The walk behind `TraceStore.follow`, shared by every store: breadth-first over correlation
 * edges, outward (what an envelope answers) and inward (what answers it), with a depth bound and a
 * visited set so that cycles in untrusted `correlation_id`s terminate. Stores supply two lookups;
 * the walk itself never touches storage.
 */
import type { CorrelationGraph, TraceRecord } from './types.js';

/** `from` names `to` in its `correlation_id`. */
export interface CorrelationEdge {
  readonly from: string;
  readonly to: string;
}

/** How far `follow` walks when the caller does not say. */
export const DEFAULT_FOLLOW_DEPTH = 16;

/** What a store provides to {@link buildCorrelationGraph}. */
export interface CorrelationSource {
  /** Edges leaving (`out`: the ids name others) or entering (`in`: others name the ids) a frontier. */
  edges(ids: readonly string[], direction: 'out' | 'in'): readonly CorrelationEdge[];
  /** The recorded envelopes among `ids`, in insertion order; unknown ids are simply absent. */
  records(ids: readonly string[]): readonly TraceRecord[];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Breadth-first distances from `rootId` along one direction, root excluded, in discovery order. */
function distances(
  rootId: string,
  maxDepth: number,
  direction: 'out' | 'in',
  source: CorrelationSource,
): Map<string, number> {
  const found = new Map<string, number>();
  const seen = new Set<string>([rootId]);
  let frontier = [rootId];
  for (let depth = 1; depth <= maxDepth && frontier.length > 0; depth++) {
    const next: string[] = [];
    for (const edge of source.edges(frontier, direction)) {
      const id = direction === 'out' ? edge.to : edge.from;
      if (seen.has(id)) continue;
      seen.add(id);
      found.set(id, depth);
      next.push(id);
    }
    frontier = next;
  }
  return found;
}

/**
 * The correlation graph around `rootId`, or `undefined` when the root is not recorded. `answers`
 * and `answeredBy` are ordered by distance from the root, then by insertion order; an envelope
 * reachable both ways (a cycle) appears in both. Ids named but never recorded are left out, and
 * `edges` holds exactly the edges between the records returned (root included), sorted by
 * `from` then `to` (ids sort by time).
 */
export function buildCorrelationGraph(
  rootId: string,
  maxDepth: number,
  source: CorrelationSource,
): CorrelationGraph | undefined {
  const [root] = source.records([rootId]);
  if (root === undefined) return undefined;
  const depth = Number.isFinite(maxDepth) ? Math.max(0, Math.floor(maxDepth)) : DEFAULT_FOLLOW_DEPTH;
  const up = distances(rootId, depth, 'out', source);
  const down = distances(rootId, depth, 'in', source);

  const ids = new Set<string>([...up.keys(), ...down.keys()]);
  const present = source.records([...ids]);
  const byDistance = (map: Map<string, number>): TraceRecord[] =>
    present
      .filter((r) => map.has(r.envelope.id))
      // Array#sort is stable: equal distances keep insertion order.
      .sort((a, b) => (map.get(a.envelope.id) ?? 0) - (map.get(b.envelope.id) ?? 0));

  const kept = new Set<string>([rootId, ...present.map((r) => r.envelope.id)]);
  const edges = source
    .edges([...kept], 'out')
    .filter((e) => kept.has(e.to))
    .map((e) => ({ from: e.from, to: e.to }))
    .sort((a, b) => compare(a.from, b.from) || compare(a.to, b.to));
  return { root, answers: byDistance(up), answeredBy: byDistance(down), edges };
}
