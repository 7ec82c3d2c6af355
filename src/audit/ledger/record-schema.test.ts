import { describe, expect, it } from 'vitest';
import { RECORD_MEMBERS, recordSchemaProblem } from './record-schema.js';

const valid = {
  v: 1,
  seq: 3,
  ts: '2026-06-14T12:00:00.000Z',
  method: 'tools/call',
  tier: 'T2',
  decision: 'approved',
  duration_ms: 1.5,
  prev_hash: 'a'.repeat(64),
  entry_hash: 'b'.repeat(64),
};

describe('recordSchemaProblem', () => {
  it('accepts the required members alone and with every optional one', () => {
    expect(recordSchemaProblem(valid)).toBeUndefined();
    const full = {
      ...valid,
      session_id: 's',
      client_id: 'c',
      request_id: 'r',
      upstream: 'u',
      target: 't',
      args: { any: ['thing'] },
      output_sha256: 'c'.repeat(64),
      output_len: 0,
      error: 'e',
      trace_id: 'x',
      decided_by: 'd',
      rule: 'rules[0]',
    };
    expect(Object.keys(full).sort()).toEqual([...RECORD_MEMBERS].sort());
    expect(recordSchemaProblem(full)).toBeUndefined();
  });

  it('names the problem', () => {
    const cases: [unknown, string][] = [
      [null, 'not a JSON object'],
      [[1], 'not a JSON object'],
      [{ ...valid, extra: 1 }, 'member "extra" is not a member of a v1 record'],
      [JSON.parse(`{"__proto__":1,${JSON.stringify(valid).slice(1)}`), 'member "__proto__" is not a member'],
      [{ ...valid, v: 2 }, 'member "v" must be 1'],
      [{ ...valid, seq: 0 }, 'member "seq"'],
      [{ ...valid, seq: 1.5 }, 'member "seq"'],
      [{ ...valid, ts: '2026-06-14T12:00:00Z' }, 'member "ts"'],
      [{ ...valid, method: '' }, 'member "method"'],
      [{ ...valid, tier: 'T4' }, 'member "tier"'],
      [{ ...valid, decision: 'session' }, 'member "decision"'],
      [{ ...valid, duration_ms: -1 }, 'member "duration_ms"'],
      [{ ...valid, prev_hash: 'A'.repeat(64) }, 'member "prev_hash"'],
      [{ ...valid, client_id: null }, 'member "client_id" must be a string'],
      [{ ...valid, output_len: 5 }, 'output_sha256 and output_len go together'],
      [{ ...valid, output_sha256: 'f'.repeat(64) }, 'output_sha256 and output_len go together'],
      [(({ tier: _t, ...rest }) => rest)(valid), 'required member "tier" is missing'],
    ];
    for (const [value, problem] of cases) expect(recordSchemaProblem(value), problem).toContain(problem);
  });
});
