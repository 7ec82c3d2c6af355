import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idKey, type RequestId } from '../protocol/jsonrpc/types.js';
import { batchText, expectOneAnswerPerRequest, hostileBatch } from '../test-support/hostile-batches.js';
import { planPayload } from './batch-plan.js';
import { readInbound } from './inbound.js';

const BATCHES = { allowBatch: true, revision: '2025-03-26', maxDepth: 32 } as const;

function plan(text: string, inFlight: (id: RequestId) => boolean = () => false) {
  const payload = readInbound(text, BATCHES);
  return planPayload(payload.items, payload.batch, inFlight);
}

describe('planPayload', () => {
  it('refuses every request of a batch that shares an id, and runs none of them (the issue’s case)', () => {
    const call = (message: string) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message } },
      });
    const p = plan(`[${call('a')},${call('b')},{"jsonrpc":"2.0","id":2,"method":"ping"}]`);
    expect(p.awaited).toEqual([2]);
    expect(p.dispatch.map((i) => i.kind === 'message' && 'id' in i.message && i.message.id)).toEqual([2]);
    expect(p.answers).toHaveLength(2);
    for (const answer of p.answers) {
      expect(answer.id).toBe(1);
      expect(answer.error.code).toBe(-32600);
      expect(answer.error.message).toContain('id 1 appears more than once in this batch');
    }
    expect(p.duplicates).toBe(2);
  });

  it('refuses a request whose id is in flight, alone or in a batch; 1 and "1" are different ids', () => {
    const inFlight = (id: RequestId) => id === 1;
    const alone = plan('{"jsonrpc":"2.0","id":1,"method":"ping"}', inFlight);
    expect(alone.awaited).toEqual([]);
    expect(alone.answers[0]?.error.message).toContain('already in use by a request in flight');
    const batch = plan(
      '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"}]',
      inFlight,
    );
    expect(batch.awaited).toEqual(['1']);
    expect(batch.answers.map((a) => a.id)).toEqual([1]);
  });

  it('an invalid request shares its id with a valid one: both refused, so no answer is ambiguous', () => {
    const p = plan('[{"jsonrpc":"1.0","id":"k","method":"ping"},{"jsonrpc":"2.0","id":"k","method":"ping"}]');
    expect(p.awaited).toEqual([]);
    expect(p.answers.map((a) => [a.id, a.error.code])).toEqual([
      ['k', -32600],
      ['k', -32600],
    ]);
  });

  it('answers an element without a readable id with id null in a batch, and only logs it alone', () => {
    expect(plan('[42]').answers).toEqual([
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) },
    ]);
    const alone = plan('{"jsonrpc":"2.0","id":null,"method":"ping"}');
    expect(alone.answers).toEqual([]);
    expect(alone.dropped).toHaveLength(1);
    // An id that cannot be echoed exactly is refused aloud, even alone.
    expect(plan('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}').answers).toMatchObject([
      { id: null, error: { code: -32600 } },
    ]);
  });

  it('with the router answering what it is given, every request of any batch gets exactly one answer', () => {
    fc.assert(
      fc.property(
        hostileBatch({ deepLevels: 40 }),
        fc.subarray<RequestId>([1, 2, 3, '1', 'a']),
        (elements, busy) => {
          const inFlight = (id: RequestId) => busy.some((b) => idKey(b) === idKey(id));
          const p = plan(batchText(elements), inFlight);
          // The router gets unique ids, none of them in flight already.
          const keys = p.awaited.map(idKey);
          expect(new Set(keys).size).toBe(keys.length);
          for (const id of p.awaited) expect(inFlight(id)).toBe(false);
          const routed = p.dispatch.filter((i) => i.kind === 'message' && 'id' in i.message);
          expect(routed).toHaveLength(p.awaited.length);
          // The router answers each request it was given once.
          const answers = [...p.answers, ...p.awaited.map((id) => ({ id }))];
          expectOneAnswerPerRequest(elements, answers);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
