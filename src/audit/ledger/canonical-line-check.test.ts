import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../canonical-json.js';
import { checkCanonicalRecordLine } from './canonical-line-check.js';
import { ENTRY_HASH_SUFFIX_LENGTH, encodeRecordLine } from './record-line.js';
import { recordSchemaProblem } from './record-schema.js';

const PREV = 'ab'.repeat(32);
const SUFFIX = `,"entry_hash":"${'cd'.repeat(32)}"}`;

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    v: 1,
    seq: 7,
    ts: '2026-06-14T12:00:00.000Z',
    method: 'tools/call',
    tier: 'T1',
    decision: 'allowed',
    duration_ms: 12.5,
    prev_hash: PREV,
    ...overrides,
  };
}

/** The fast path's verdict on a line (the scanner always hands it a line followed by its newline). */
function fast(line: string, seq = 7, prev = PREV): boolean {
  const bytes = Buffer.from(`${line}\n`, 'utf8');
  return checkCanonicalRecordLine(bytes, 0, bytes.length - 1, seq, prev);
}

/** The general path's verdict, from the parsed line: JSON, schema, seq, prev_hash, canonical form. */
function general(line: string, seq = 7, prev = PREV): boolean {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return false;
  }
  if (recordSchemaProblem(record) !== undefined || record.seq !== seq || record.prev_hash !== prev)
    return false;
  const { entry_hash: _, ...rest } = record;
  try {
    return canonicalize(rest) === `${line.slice(0, -ENTRY_HASH_SUFFIX_LENGTH)}}`;
  } catch {
    return false;
  }
}

/** A body text with the fixed suffix in place of its closing brace. */
const withSuffix = (text: string): string => `${text.slice(0, -1)}${SUFFIX}`;

describe('checkCanonicalRecordLine', () => {
  it('accepts what the writer writes, and nothing the general path refuses', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            args: fc.jsonValue(),
            target: fc.string(),
            error: fc.string({ unit: 'grapheme' }),
            duration_ms: fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
            output_len: fc.nat(),
          },
          { requiredKeys: [] },
        ),
        (extra) => {
          const fields: Record<string, unknown> = { ...extra };
          if ('output_len' in fields) fields.output_sha256 = 'ef'.repeat(32);
          const { line } = encodeRecordLine(body(fields));
          const accepted = fast(line);
          if (accepted) expect(general(line)).toBe(true);
          // Plain data (no escapes, no U+E000 and above) always takes the fast path.
          if (!/[\\\ue000-\uffff\ud800-\udfff]/.test(line) && !/e[+-]/.test(line))
            expect(accepted).toBe(true);
          expect(general(line)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never accepts an edit the general path refuses (random byte edits of a record)', () => {
    const base = encodeRecordLine(
      body({
        args: { a: [1, 2.5, -3, 0, true, false, null, 'x'], b: { c: 1e-6, d: 'é🙂' }, 'c d': {} },
        output_len: 10,
        output_sha256: '01'.repeat(32),
        request_id: '1',
      }),
    ).line;
    const text = `${base.slice(0, -ENTRY_HASH_SUFFIX_LENGTH)}}`;
    const alphabet = [...' {}[],:"\\0123456789.-+eEtfnuaslbrx_\u00e9\t'];
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            at: fc.nat({ max: text.length - 2 }),
            op: fc.constantFrom('replace', 'insert', 'delete'),
            char: fc.constantFrom(...alphabet),
          }),
          { minLength: 1, maxLength: 3 },
        ),
        (edits) => {
          let edited = text;
          for (const { at, op, char } of edits) {
            const i = Math.min(at, edited.length - 2) + 1;
            if (op === 'replace') edited = edited.slice(0, i) + char + edited.slice(i + 1);
            else if (op === 'insert') edited = edited.slice(0, i) + char + edited.slice(i);
            else edited = edited.slice(0, i) + edited.slice(i + 1);
          }
          // As bytes on disk would be (an edit may split a surrogate pair, which UTF-8 cannot hold).
          const line = Buffer.from(withSuffix(edited), 'utf8').toString('utf8');
          if (fast(line)) expect(general(line)).toBe(true);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('refuses non-canonical texts of valid records', () => {
    const ok = encodeRecordLine(body({ args: { a: 1, b: [1.5, 'x'] } })).line;
    expect(fast(ok)).toBe(true);
    const variants = [
      ok.replace('"args":', '"args": '), // white space
      ok.replace('{"a":1,"b"', '{"b":[1.5,"x"],"a":1,"c"'), // unsorted members
      ok.replace('{"a":1,', '{"a":1,"a":1,'), // a duplicate member
      ok.replace('"a":1', '"a":1.0'), // numbers not in ES form
      ok.replace('"a":1', '"a":01'),
      ok.replace('"a":1', '"a":1e0'),
      ok.replace('"a":1', '"a":-0'),
      ok.replace('1.5', '1.50'),
      ok.replace('1.5', '15e-1'),
      ok.replace('"x"', '"\\u0078"'), // an unneeded escape
      ok.replace('"duration_ms":12.5', '"duration_ms":12.50'),
      ok.replace('"v":1', '"v":1.0'),
      ok.replace('"tier":"T1"', '"tier":"T\\u0031"'),
    ];
    for (const variant of variants) {
      expect(variant, variant).not.toBe(ok);
      expect(fast(variant), variant).toBe(false);
      expect(general(variant), variant).toBe(false);
    }
    // Numbers the fast rule leaves to String(Number(text)), accepted when they are canonical.
    for (const n of [1e21, 1e-7, 123456789012345680000, 0.1 + 0.2, -1.5, 2 ** 53 + 2]) {
      const line = encodeRecordLine(body({ args: n })).line;
      expect(fast(line), line).toBe(true);
    }
  });

  it('refuses what the schema, seq or prev_hash refuse', () => {
    const cases: [Record<string, unknown>, number?, string?][] = [
      [body(), 8],
      [body(), 7, 'cd'.repeat(32)],
      [body({ v: 2 })],
      [body({ seq: 0 }), 0],
      [body({ ts: '2026-06-14 12:00:00.000Z' })],
      [body({ method: '' })],
      [body({ tier: 'T4' })],
      [body({ decision: 'maybe' })],
      [body({ duration_ms: -1 })],
      [body({ output_len: 5 })],
      [body({ output_sha256: 'ef'.repeat(32) })],
      [body({ output_sha256: 'EF'.repeat(32), output_len: 5 })],
      [body({ output_len: 1.5, output_sha256: 'ef'.repeat(32) })],
      [body({ target: 5 })],
      [body({ extra: 'x' })],
      [body({ entry_hash: 'cd'.repeat(32) })],
    ];
    for (const [fields, seq, prev] of cases) {
      const { line } = encodeRecordLine(fields);
      expect(fast(line, seq, prev), line).toBe(false);
      expect(general(line, seq, prev), line).toBe(false);
    }
    const { method: _, ...missing } = body();
    expect(fast(encodeRecordLine(missing).line)).toBe(false);
  });
});
