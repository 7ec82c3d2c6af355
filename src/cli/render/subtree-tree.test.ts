import { describe, expect, it } from 'vitest';
import { traceRecord } from '../../trace/trace-store.contract.js';
import { renderSubtree } from './subtree-tree.js';
import { sampleTrace } from './test-support/trace-fixture.js';

describe('renderSubtree', () => {
  it('draws contexts as branches and envelopes as entries, siblings in time order', () => {
    const { records } = sampleTrace();
    expect(renderSubtree('s1', records, { color: false })).toBe(
      [
        's1',
        '├─ 03:04:05.000 → notification notifications/initialized  client-s1 → gateway  01JD0000000000000000000007',
        '└─ 01JD0000000000000000000001/',
        '   ├─ 03:04:05.000 → request tools/call id=7  client-s1 → gateway  01JD0000000000000000000001',
        '   ├─ 03:04:05.001 → request tools/call id=1  gateway → server-a  01JD0000000000000000000002',
        '   ├─ 03:04:05.005 ← notification notifications/progress  server-a → *  01JD0000000000000000000003',
        '   ├─ 01JD0000000000000000000006/',
        '   │  └─ 03:04:05.006 ← request sampling/createMessage id=0  server-a → *  01JD0000000000000000000006',
        '   ├─ 03:04:05.010 ← response (tools/call) id=1  server-a → gateway  01JD0000000000000000000004',
        '   └─ 03:04:05.011 ← response (tools/call) id=7  gateway → client-s1  01JD0000000000000000000005',
        '',
      ].join('\n'),
    );
  });

  it('roots the tree at the requested context and ignores records outside it', () => {
    const { records, D } = sampleTrace();
    const out = renderSubtree(`s1/${D}`, records, { color: false }).split('\n');
    expect(out[0]).toBe(`s1/${D}`);
    expect(out).toHaveLength(1 + 6 + 1 + 1);
    expect(out.join('\n')).not.toContain('initialized');
  });

  it('creates branches for contexts that hold no envelope of their own', () => {
    const out = renderSubtree('a', [traceRecord({ id: 'X', context: 'a/b/c' })], { color: false });
    expect(out.split('\n').slice(0, 3)).toEqual(['a', '└─ b/', '   └─ c/']);
    expect(out).toContain('      └─ ');
  });

  it('places a response the gateway wrote at its own time, after the progress before it (issue 22)', () => {
    // As the router records them: the gateway's response to the client carries its request's
    // receivedAt (T0) and the time it was written as sentAt.
    const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);
    const request = traceRecord({ id: 'R', context: 's1/R', receivedAt: T0 });
    const progress = traceRecord({
      id: 'P',
      context: 's1/R',
      kind: 'mcp/notification',
      from: 'gateway',
      to: ['client-s1'],
      direction: 'server->client',
      payload: { jsonrpc: '2.0', method: 'notifications/progress' },
      receivedAt: T0 + 200,
      sentAt: T0 + 200.5,
    });
    const response = traceRecord({
      id: 'A',
      context: 's1/R',
      kind: 'mcp/response',
      from: 'gateway',
      to: ['client-s1'],
      direction: 'server->client',
      correlationId: ['R'],
      payload: { jsonrpc: '2.0', id: 1, result: {} },
      receivedAt: T0,
      sentAt: T0 + 600,
    });
    const lines = renderSubtree('s1/R', [request, response, progress], { color: false }).split('\n');
    expect(lines.slice(1, 4).map((l) => l.slice(-1))).toEqual(['R', 'P', 'A']);
    expect(lines[3]).toContain('03:04:05.600 ← response (ping)');
  });
});
