import { describe, expect, it, vi } from 'vitest';
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

  it('stores an answer whose result place is known, and the upstream response it names, as without it', () => {
    const next = createIdGenerator();
    const plain = toolCallChain(next).records.map(traceHopOf);
    // The records' payloads as the router would have written them: JSON text, and for the
    // delivered answer (the last hop, naming the upstream's response) where its result starts.
    const withJson = plain.map((h) => ({ ...h, payloadJson: JSON.stringify(h.payload) }));
    const answer = withJson.at(-1) as (typeof withJson)[0];
    const known = [
      ...withJson.slice(0, -1),
      {
        ...answer,
        correlationId: [...(answer.correlationId ?? []), (withJson[3] as (typeof withJson)[0]).id],
      },
    ];
    const unknown = known.map((h) => ({ ...h }));
    const last = known.at(-1) as (typeof known)[0];
    known[known.length - 1] = {
      ...last,
      resultAt: '{"jsonrpc":"2.0","id":7,"result":'.length,
      resultIsError: false,
    };
    const parse = vi.spyOn(JSON, 'parse');
    const rows = decodeHops(encodeHops(known), new PayloadGuard());
    const parsedKnown = parse.mock.calls.length;
    expect(rows).toEqual(decodeHops(encodeHops(unknown), new PayloadGuard()));
    // Neither hop of the answer was parsed when the result's place was known.
    expect(parse.mock.calls.length - parsedKnown).toBe(parsedKnown + 2);
    parse.mockRestore();
    // Both hops of the answer lost the body.
    expect(rows[3]?.params[16]).toContain('"_omitted":"output"');
    expect(rows[4]?.params[16]).toContain('"_omitted":"output"');
  });
});
