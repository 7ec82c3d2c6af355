import { describe, expect, it } from 'vitest';
import { buildCorrelationGraph, type CorrelationEdge, type CorrelationSource } from './correlation-walk.js';
import { traceRecord } from './trace-store.contract.js';
import type { TraceRecord } from './types.js';

/** A source over a fixed edge list that counts its lookups. */
function source(ids: string[], edges: CorrelationEdge[]): CorrelationSource & { lookups: number } {
  const records = new Map<string, TraceRecord>(ids.map((id) => [id, traceRecord({ id })]));
  const order = new Map(ids.map((id, i) => [id, i]));
  const s = {
    lookups: 0,
    edges(frontier: readonly string[], direction: 'out' | 'in') {
      s.lookups++;
      const set = new Set(frontier);
      return edges.filter((e) => set.has(direction === 'out' ? e.from : e.to));
    },
    records(wanted: readonly string[]) {
      return wanted
        .filter((id) => records.has(id))
        .sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0))
        .map((id) => records.get(id) as TraceRecord);
    },
  };
  return s;
}

const ids = (rs: readonly TraceRecord[] | undefined) => (rs ?? []).map((r) => r.envelope.id);

describe('buildCorrelationGraph', () => {
  it('orders by distance, then insertion order, and takes one lookup per level', () => {
    const src = source(
      ['A', 'B', 'C', 'D'],
      [
        { from: 'D', to: 'B' },
        { from: 'D', to: 'A' },
        { from: 'B', to: 'C' },
      ],
    );
    const graph = buildCorrelationGraph('D', 16, src);
    expect(ids(graph?.answers)).toEqual(['A', 'B', 'C']);
    // Levels 1, 2 and 3 outward (the last finds nothing), level 1 inward, then the edge query.
    expect(src.lookups).toBe(3 + 1 + 1);
  });

  it('bounds the walk by depth even on a long chain, and treats bad depths sanely', () => {
    const chain = Array.from({ length: 50 }, (_, i) => `N${i}`);
    const edges = chain.slice(1).map((id, i) => ({ from: id, to: chain[i] ?? '' }));
    expect(buildCorrelationGraph('N49', 5, source(chain, edges))?.answers).toHaveLength(5);
    expect(buildCorrelationGraph('N49', -3, source(chain, edges))?.answers).toHaveLength(0);
    expect(buildCorrelationGraph('N49', Number.NaN, source(chain, edges))?.answers).toHaveLength(16);
    expect(buildCorrelationGraph('N0', 2.9, source(chain, edges))?.answeredBy).toHaveLength(2);
  });

  it('returns undefined without the root, and never lists the root among its neighbours', () => {
    expect(buildCorrelationGraph('X', 3, source(['A'], []))).toBeUndefined();
    const loop = buildCorrelationGraph(
      'A',
      3,
      source(
        ['A', 'B'],
        [
          { from: 'A', to: 'B' },
          { from: 'B', to: 'A' },
        ],
      ),
    );
    expect(ids(loop?.answers)).toEqual(['B']);
    expect(ids(loop?.answeredBy)).toEqual(['B']);
    expect(loop?.edges).toEqual([
      { from: 'A', to: 'B' },
      { from: 'B', to: 'A' },
    ]);
  });
});
