import { describe, expect, it } from 'vitest';
import { createIdGenerator } from '../meup/ids.js';
import { PayloadGuard } from './payload-guard.js';
import { traceHopOf } from './trace-hop.js';
import { toolCallChain } from './trace-store.contract.js';
import { decodeHops, encodeHops } from './trace-wire.js';

describe('trace-wire', () => {
  it('writes `to` and the correlation as the JSON arrays JSON.stringify makes', () => {
    const hops = toolCallChain(createIdGenerator()).records.map(traceHopOf);
    const odd = {
      ...hops[1],
      id: 'odd',
      to: ['server-"quoted"\\ü'],
      correlationId: ['a b', 'c'],
    } as (typeof hops)[0];
    const rows = decodeHops(encodeHops([...hops, odd]), new PayloadGuard());
    for (const [i, hop] of [...hops, odd].entries()) {
      const params = rows[i]?.params;
      expect(params?.[6]).toBe(hop.to === undefined ? null : JSON.stringify(hop.to));
      expect(params?.[7]).toBe(hop.correlationId === undefined ? null : JSON.stringify(hop.correlationId));
    }
  });

  it('decodes a batch whose repeated strings crossed once exactly as hop by hop', () => {
    const next = createIdGenerator();
    const hops = [
      ...toolCallChain(next).records,
      ...toolCallChain(next, 's2').records,
      ...toolCallChain(next).records,
    ].map(traceHopOf);
    hops.push({
      ...(hops[0] as (typeof hops)[0]),
      id: next(),
      to: ['a', 'b'],
      ts: undefined,
      protocol: undefined,
    });
    hops.push({ ...(hops[1] as (typeof hops)[0]), id: next(), to: [], upstream: undefined });
    const slots = encodeHops(hops);
    expect(slots.filter((v) => typeof v === 'string').length).toBeLessThan(
      hops.flatMap((h) => encodeHops([h])).filter((v) => typeof v === 'string').length,
    );
    // One guard per side: it remembers open output calls from batch to batch.
    const oneByOne = new PayloadGuard();
    expect(decodeHops(slots, new PayloadGuard())).toEqual(
      hops.flatMap((h) => decodeHops(encodeHops([h]), oneByOne)),
    );
  });
});
