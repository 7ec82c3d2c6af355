import { describe, expect, it } from 'vitest';
import { MemoryTraceStore } from '../../trace/memory-trace-store.js';
import { traceRecord } from '../../trace/trace-store.contract.js';
import { renderCorrelationGraph } from './correlation-graph.js';
import { sampleTrace } from './test-support/trace-fixture.js';

function storeWith(records: Parameters<MemoryTraceStore['append']>[0]): MemoryTraceStore {
  const store = new MemoryTraceStore();
  store.append(records);
  return store;
}

describe('renderCorrelationGraph', () => {
  it('shows the root, then what it answers, indented by distance', () => {
    const { records, R } = sampleTrace();
    const graph = storeWith(records).follow(R);
    expect(graph && renderCorrelationGraph(graph, { color: false })).toBe(
      [
        '03:04:05.011 ← response (tools/call) id=7  gateway → client-s1  01JD0000000000000000000005  (root)',
        'answers ↑',
        '  03:04:05.000 → request tools/call id=7  client-s1 → gateway  01JD0000000000000000000001',
        '  03:04:05.010 ← response (tools/call) id=1  server-a → gateway  01JD0000000000000000000004',
        '    03:04:05.001 → request tools/call id=1  gateway → server-a  01JD0000000000000000000002',
        'answered by ↓',
        '  (none)',
        '',
      ].join('\n'),
    );
  });

  it('shows what answers a request, the upstream response one step further out', () => {
    const { records, D } = sampleTrace();
    const graph = storeWith(records).follow(D);
    const lines = graph ? renderCorrelationGraph(graph, { color: false }).split('\n') : [];
    expect(lines[1]).toBe('answers ↑');
    expect(lines[2]).toBe('  (none)');
    expect(lines[3]).toBe('answered by ↓');
    expect(lines.slice(4, 8).map((l) => l.match(/^ */)?.[0].length)).toEqual([2, 2, 2, 4]);
    expect(lines[7]).toContain('01JD0000000000000000000004');
  });

  it('renders a cycle without looping, the other member on both sides', () => {
    const store = storeWith([
      traceRecord({ id: 'A', correlationId: ['B'] }),
      traceRecord({ id: 'B', correlationId: ['A'] }),
    ]);
    const graph = store.follow('A');
    const out = graph ? renderCorrelationGraph(graph, { color: false }) : '';
    expect(out.match(/ B\n/g)).toHaveLength(2);
    expect(graph && renderCorrelationGraph(graph, { color: true })).toContain(String.fromCharCode(27));
  });
});
