import { describe, expect, it } from 'vitest';
import { MemoryTraceStore } from './memory-trace-store.js';
import { traceRecord, traceStoreContract } from './trace-store.contract.js';

traceStoreContract('MemoryTraceStore', (options) => new MemoryTraceStore(options));

describe('MemoryTraceStore capacity', () => {
  it('prunes back to capacity once 10% more envelopes are held', () => {
    const store = new MemoryTraceStore({ capacity: 10 });
    const id = (n: number) => `ID${String(n).padStart(24, '0')}`;
    for (let n = 0; n < 11; n++) store.append([traceRecord({ id: id(n) })]);
    expect(store.session('s1')).toHaveLength(11);
    store.append([traceRecord({ id: id(11) })]);
    const kept = store.session('s1').map((r) => r.envelope.id);
    expect(kept).toEqual(Array.from({ length: 10 }, (_, i) => id(i + 2)));
  });
});
