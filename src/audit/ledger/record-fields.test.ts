import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../canonical-json.js';
import { createRedactor } from '../redaction.js';
import { type AuditEvent, DECISIONS, TIERS } from './audit-event.js';
import { CUT_MARK, cutText, encodeRecord, recordBody, recordFields } from './record-fields.js';
import { encodeRecordLine, entryHashOf, splitRecordLine } from './record-line.js';
import { recordSchemaProblem } from './record-schema.js';

const options = { redactor: createRedactor(), maxErrorLength: 80 };
const text = fc.string({ unit: 'binary', maxLength: 40 });

const event: fc.Arbitrary<AuditEvent> = fc.record(
  {
    session_id: text,
    client_id: text,
    request_id: fc.oneof(text, fc.integer(), fc.constant(null)),
    upstream: text,
    method: text.filter((s) => s !== ''),
    target: text,
    tier: fc.constantFrom(...TIERS),
    decision: fc.constantFrom(...DECISIONS),
    args: fc.anything({ withBigInt: true, maxDepth: 3 }),
    output: text,
    error: fc.string({ unit: 'binary', maxLength: 300 }),
    duration_ms: fc.double(),
    trace_id: text,
    decided_by: text,
    rule: text,
  },
  { requiredKeys: ['method', 'tier', 'decision', 'duration_ms'] },
);

describe('encodeRecord', () => {
  it('writes exactly the line the general canonicalizer makes of the record body, which the schema accepts', () => {
    fc.assert(
      fc.property(event, fc.integer({ min: 1, max: 2 ** 40 }), (e, seq) => {
        const fields = recordFields(e, options);
        const ts = '2026-06-14T12:00:00.000Z';
        const prev = 'ab'.repeat(32);
        const fast = encodeRecord(seq, ts, prev, fields);
        const body = recordBody(seq, ts, prev, fields);
        expect(fast).toEqual(encodeRecordLine(body));
        const split = splitRecordLine(fast.line);
        expect(split?.hashed).toBe(canonicalize(body));
        expect(entryHashOf(canonicalize(body))).toBe(fast.entryHash);
        expect(recordSchemaProblem(JSON.parse(fast.line))).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });
});

describe('recordFields', () => {
  it('leaves absent and empty members out, and never stores the output', () => {
    const fields = recordFields(
      {
        method: 'tools/call',
        tier: 'T0',
        decision: 'allowed',
        duration_ms: 2,
        target: '',
        output: 'secret body',
      },
      options,
    );
    const body = recordBody(1, '2026-06-14T12:00:00.000Z', '0'.repeat(64), fields);
    expect(Object.keys(body).sort()).toEqual(
      [
        'decision',
        'duration_ms',
        'method',
        'output_len',
        'output_sha256',
        'prev_hash',
        'seq',
        'tier',
        'ts',
        'v',
      ].sort(),
    );
    expect(JSON.stringify(body)).not.toContain('secret body');
    expect(body.output_len).toBe(11);
  });

  it('serialises a result object as JSON.stringify does, when no output text is given', () => {
    const result = { content: [{ type: 'text', text: 'héllo' }], n: 1.5 };
    const base = { method: 'tools/call', tier: 'T1', decision: 'allowed', duration_ms: 1 } as const;
    const fromResult = recordFields({ ...base, result }, options);
    const fromText = recordFields({ ...base, output: JSON.stringify(result) }, options);
    expect(fromResult.output_sha256).toBe(fromText.output_sha256);
    expect(fromResult.output_len).toBe(fromText.output_len);
    // null is a result; a value JSON cannot hold is recorded without an output hash.
    expect(recordFields({ ...base, result: null }, options).output_len).toBe(4);
    expect(recordFields({ ...base, result: 10n }, options).output_sha256).toBeUndefined();
  });

  it('hashes the output text when there is one, whatever the result, and nothing without either', () => {
    const result = { content: [{ type: 'text', text: 'héllo' }] };
    const base = { method: 'tools/call', tier: 'T1', decision: 'allowed', duration_ms: 1 } as const;
    const delivered = 'the text the client got';
    const fromOutput = recordFields({ ...base, result, output: delivered }, options);
    expect(fromOutput.output_sha256).toBe(createHash('sha256').update(delivered).digest('hex'));
    expect(fromOutput.output_len).toBe(delivered.length);
    expect(recordFields({ ...base, result }, options).output_sha256).not.toBe(fromOutput.output_sha256);
    expect(recordFields(base, options).output_sha256).toBeUndefined();
    expect(recordFields(base, options).output_len).toBeUndefined();
  });

  it('bounds names and targets, and cuts errors to maxErrorLength code points', () => {
    const fields = recordFields(
      {
        method: 'm'.repeat(1000),
        tier: 'T1',
        decision: 'error',
        duration_ms: -5,
        target: 't'.repeat(5000),
        error: '😀'.repeat(200),
      },
      options,
    );
    expect(fields.method).toHaveLength(256);
    expect(fields.target).toHaveLength(2048);
    expect([...(fields.error as string)]).toHaveLength(80);
    expect(fields.error?.endsWith(`😀${CUT_MARK}`)).toBe(true);
    expect(fields.duration_ms).toBe(0);
  });
});

describe('cutText', () => {
  it('keeps texts up to max code points and never splits a surrogate pair', () => {
    expect(cutText('abc', 3)).toBe('abc');
    expect(cutText('abcd', 3)).toBe(`ab${CUT_MARK}`);
    expect(cutText('😀😀😀', 3)).toBe('😀😀😀');
    expect(cutText('😀😀😀😀', 3)).toBe(`😀😀${CUT_MARK}`);
  });
});
