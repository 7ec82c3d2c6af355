import { describe, expect, it } from 'vitest';
import { createIdGenerator } from '../meup/ids.js';
import { traceHopOf } from './trace-hop.js';
import { toolCallChain } from './trace-store.contract.js';
import { decodeHops, encodeHops, isoTimestamp } from './trace-wire.js';

describe('trace-wire', () => {
  it('formats timestamps exactly as Date#toISOString, across minutes, fractions and 1970', () => {
    const base = Date.UTC(2026, 10, 22, 1, 2, 3, 4);
    const times = [
      base,
      base + 0.999,
      base + 56_995.5,
      base + 57_000,
      base + 60_000,
      base - 1,
      base + 59_999.9999,
      0,
      -0.5,
      -1,
      -1.5,
      -60_000.25,
      1,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
    ];
    // Twice: the second pass takes the cached minute.
    for (const t of [...times, ...times]) expect(isoTimestamp(t)).toBe(new Date(t).toISOString());
    for (const t of [Date.UTC(10_000, 0, 1), Date.UTC(-1, 0, 1)])
      expect(isoTimestamp(t)).toBe(new Date(t).toISOString());
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
  });

  it('writes `to` and the correlation as the JSON arrays JSON.stringify makes', () => {
    const hops = toolCallChain(createIdGenerator()).records.map(traceHopOf);
    const odd = {
      ...hops[1],
      id: 'odd',
      to: ['server-"quoted"\\ü'],
      correlationId: ['a b', 'c'],
    } as (typeof hops)[0];
    const rows = decodeHops(encodeHops([...hops, odd]), 1 << 20);
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
    expect(decodeHops(slots, 1 << 20)).toEqual(hops.flatMap((h) => decodeHops(encodeHops([h]), 1 << 20)));
  });
});
