import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leafHash } from '../merkle.js';
import { createRedactor, type RedactorOptions } from '../redaction.js';
import { type AuditEvent, DECISIONS, TIERS } from './audit-event.js';
import { type EncodedLine, RecordEncoder } from './record-encoder.js';
import { encodeRecord, recordFields } from './record-fields.js';

/** Texts around each fast path's edges: plain ASCII, quotes, spaces at the ends, long, odd. */
const edgy = fc.oneof(
  fc.stringMatching(/^[ -~]{0,20}$/),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    'read_file',
    ' padded ',
    'tab\tinside',
    'quote"inside',
    'back\\slash',
    'lone\ud800',
    'é',
    '😀',
    'postgres://user:secret@db/x',
    'Bearer abcdefghijklmnop',
    'a'.repeat(128),
    'a'.repeat(129),
    'a'.repeat(256),
    'a'.repeat(257),
    `${'a'.repeat(127)} `,
    'b'.repeat(2048),
    'b'.repeat(2049),
    '',
  ),
);

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const event: fc.Arbitrary<AuditEvent> = fc.record(
  {
    session_id: edgy,
    client_id: edgy,
    request_id: fc.oneof(
      edgy,
      fc.integer(),
      fc.double(),
      fc.constant(null),
      fc.constant(-0),
      fc.constant({ toString: () => 'obj' }),
    ),
    upstream: edgy,
    method: edgy,
    target: edgy,
    tier: fc.oneof(
      { arbitrary: fc.constantFrom(...TIERS), weight: 9 },
      { arbitrary: fc.constant('T9' as never), weight: 1 },
    ),
    decision: fc.oneof(
      { arbitrary: fc.constantFrom(...DECISIONS), weight: 9 },
      { arbitrary: fc.constant('maybe' as never), weight: 1 },
    ),
    args: fc.oneof(
      fc.anything({ withBigInt: true, maxDepth: 3 }),
      fc.dictionary(edgy, fc.oneof(edgy, fc.integer(), fc.double())),
    ),
    output: optional(edgy),
    result: fc.oneof(fc.jsonValue(), fc.constant(10n)),
    error: edgy,
    duration_ms: fc.oneof(fc.double(), fc.constant('12.5' as never)),
    trace_id: edgy,
    decided_by: edgy,
    rule: edgy,
  },
  { requiredKeys: ['tier', 'decision', 'duration_ms'] },
) as fc.Arbitrary<AuditEvent>;

const CONFIGS: readonly RedactorOptions[] = [
  {},
  { extraKeyPatterns: ['ssn'], extraValuePatterns: [/x{3}/g] },
];

function lineText(line: EncodedLine): string {
  return line.buffer.toString('utf8', line.start, line.start + line.bytes);
}

/** The reference's outcome: the line (newline included) and entry hash, or the error's message. */
function reference(e: AuditEvent, redact: RedactorOptions, seq: number, ts: string, prev: string) {
  try {
    const line = encodeRecord(
      seq,
      ts,
      prev,
      recordFields(e, { redactor: createRedactor(redact), maxErrorLength: 80 }),
    );
    return {
      line: `${line.line}\n`,
      entryHash: line.entryHash,
      leaf: leafHash(line.line).toString('latin1'),
    };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

function encoded(encoder: RecordEncoder, e: AuditEvent, seq: number, ts: string, prev: string) {
  try {
    const line = encoder.encode(e, seq, ts, prev);
    return { line: lineText(line), entryHash: line.entryHash, leaf: line.leaf };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe('RecordEncoder', () => {
  it('writes the bytes, entry hash and leaf of encodeRecord(recordFields(event)), or throws as it does', () => {
    for (const redact of CONFIGS) {
      const encoder = new RecordEncoder({ redact, maxErrorLength: 80, arenaBytes: 2048 });
      fc.assert(
        fc.property(
          event,
          fc.integer({ min: 1, max: 2 ** 40 }),
          fc.stringMatching(/^[0-9a-f]{64}$/),
          (e, seq, prev) => {
            const ts = '2026-06-14T12:00:00.000Z';
            expect(encoded(encoder, e, seq, ts, prev)).toEqual(reference(e, redact, seq, ts, prev));
          },
        ),
        { numRuns: 400 },
      );
    }
  });

  it('gives a member whose value repeats from record to record the same text as a fresh value', () => {
    // A few values per member, drawn again and again: each record's session, client, upstream,
    // target and method are often those of the record before, sometimes not, sometimes invalid.
    const few = (...values: unknown[]) => fc.constantFrom(...values);
    const repeating: fc.Arbitrary<AuditEvent> = fc.record({
      session_id: few('s-1', 's-2', ' s-1 ', 'é', undefined, 7),
      client_id: few('local', 'bob', 'quote"inside', undefined, 42),
      upstream: few('echo', 'files', 'lone\ud800', '', undefined),
      target: few('echo', 'read_file', 'postgres://user:secret@db/x', 'a'.repeat(2049), '', undefined),
      method: few('tools/call', 'resources/read', 'tab\tinside', '', undefined, 5),
      tier: few(...TIERS, 'T9'),
      decision: few(...DECISIONS),
      duration_ms: fc.double(),
      args: few({ q: 1 }, undefined),
    }) as fc.Arbitrary<AuditEvent>;
    for (const redact of CONFIGS) {
      fc.assert(
        fc.property(fc.array(repeating, { minLength: 1, maxLength: 40 }), (events) => {
          const encoder = new RecordEncoder({ redact, maxErrorLength: 80, arenaBytes: 4096 });
          const ts = '2026-06-14T12:00:00.000Z';
          const prev = '0'.repeat(64);
          events.forEach((e, i) => {
            expect(encoded(encoder, e, i + 1, ts, prev)).toEqual(reference(e, redact, i + 1, ts, prev));
          });
        }),
        { numRuns: 150 },
      );
    }
  });

  it('lays lines one after another in an arena, and never writes an arena twice', () => {
    const encoder = new RecordEncoder({ redact: {}, maxErrorLength: 80, arenaBytes: 1000 });
    const base = { method: 'tools/call', tier: 'T1', decision: 'allowed', duration_ms: 1 } as const;
    const lines: EncodedLine[] = [];
    const texts: string[] = [];
    let prev = '0'.repeat(64);
    for (let i = 1; i <= 40; i++) {
      // Every seventh line is longer than an arena.
      const args = { text: 'x'.repeat(i % 7 === 0 ? 1500 : i * 10) };
      const line = encoder.encode({ ...base, args }, i, '2026-06-14T12:00:00.000Z', prev);
      prev = line.entryHash;
      lines.push(line);
      texts.push(lineText(line));
    }
    for (let i = 1; i < lines.length; i++) {
      const [a, b] = [lines[i - 1] as EncodedLine, lines[i] as EncodedLine];
      if (a.buffer === b.buffer) expect(b.start).toBe(a.start + a.bytes);
      else expect(b.start).toBe(0);
    }
    // Building more lines left the earlier ones as they were.
    expect(lines.map(lineText)).toEqual(texts);
    expect(texts.every((t) => t.endsWith('"}\n') && !t.slice(0, -1).includes('\n'))).toBe(true);
  });

  it('builds over an arena only once a later arena’s lines are written: lines not written never change', () => {
    const base = { method: 'tools/call', tier: 'T1', decision: 'allowed', duration_ms: 1 } as const;
    // Steps: build a line (of some length), or write a batch of up to n lines (from one arena, as
    // the ledger's batches are) and tell the encoder.
    const step = fc.oneof(
      fc.integer({ min: 1, max: 60 }).map((len) => ({ build: len })),
      fc.integer({ min: 1, max: 6 }).map((n) => ({ write: n })),
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), (steps) => {
        const encoder = new RecordEncoder({ redact: {}, maxErrorLength: 80, arenaBytes: 1200 });
        const waiting: { line: EncodedLine; text: string }[] = [];
        let seq = 0;
        let prev = '0'.repeat(64);
        for (const s of steps) {
          if ('build' in s) {
            const args = { text: 'y'.repeat(s.build * 10) };
            const line = encoder.encode({ ...base, args }, ++seq, '2026-06-14T12:00:00.000Z', prev);
            prev = line.entryHash;
            waiting.push({ line, text: lineText(line) });
          } else if (waiting.length > 0) {
            const arena = (waiting[0] as { line: EncodedLine }).line.buffer;
            let n = 0;
            while (n < s.write && n < waiting.length && waiting[n]?.line.buffer === arena) n++;
            waiting.splice(0, n);
            encoder.written(arena);
          }
          for (const w of waiting) expect(lineText(w.line)).toBe(w.text);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reuses an arena when the writer keeps up', () => {
    const encoder = new RecordEncoder({ redact: {}, maxErrorLength: 80, arenaBytes: 1000 });
    const base = { method: 'tools/call', tier: 'T1', decision: 'allowed', duration_ms: 1 } as const;
    const arenas = new Set<Buffer>();
    let prev = '0'.repeat(64);
    for (let i = 1; i <= 50; i++) {
      const line = encoder.encode({ ...base, args: { n: i } }, i, '2026-06-14T12:00:00.000Z', prev);
      prev = line.entryHash;
      arenas.add(line.buffer);
      encoder.written(line.buffer);
    }
    // The first arena, a second one, then the first again (its lines written): two in all.
    expect(arenas.size).toBe(2);
  });
});
