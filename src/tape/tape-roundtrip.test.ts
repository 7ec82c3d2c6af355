/**
 * Properties of the reader and the writer together: what the writer writes reads back as the
 * same tape, and whatever happens to the bytes afterwards (cut anywhere, a byte changed, a line
 * dropped or swapped) the reader either reads a tape or throws `SB_TAPE_INVALID` naming a line
 * that exists — never anything else.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { TAPE_VERSION, type Tape, type TapeHeader, type TapeMessage } from './tape-format.js';
import { readTape } from './tape-reader.js';
import { writeTape } from './tape-writer.js';

const json = fc
  .jsonValue({ maxDepth: 3, noUnicodeString: false })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const object = fc
  .dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 4 })
  .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>);
const id = fc.oneof(fc.string({ maxLength: 6 }), fc.integer());
const method = fc.constantFrom('tools/call', 'ping', 'notifications/progress', 'resources/read', 'x/ü');
const message: fc.Arbitrary<JsonRpcMessage> = fc.oneof(
  fc.record({ jsonrpc: fc.constant('2.0' as const), id, method, params: object }),
  fc.record({ jsonrpc: fc.constant('2.0' as const), method }),
  fc.record({ jsonrpc: fc.constant('2.0' as const), id, result: json }),
  fc.record({
    jsonrpc: fc.constant('2.0' as const),
    id,
    error: fc.record({ code: fc.integer({ min: -33000, max: 0 }), message: fc.string({ maxLength: 10 }) }),
  }),
);

const header: fc.Arbitrary<TapeHeader> = fc.record(
  {
    tape: fc.constant(TAPE_VERSION),
    kind: fc.constant('header' as const),
    recordedAt: fc.constant('2026-11-28T10:00:00.000Z'),
    source: fc.record(
      {
        via: fc.constantFrom('record' as const, 'export' as const),
        gateway: fc.constant('switchboard 0.0.0'),
        command: fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
        session: fc.string({ maxLength: 6 }),
      },
      { requiredKeys: ['via', 'gateway'] },
    ),
    protocolVersion: fc.constantFrom('2025-06-18', '2026-07-28'),
    server: fc.record({ initialize: object }),
    client: fc.record({ initialize: object }),
    // Placed on lines below: a version-2 tape lists each cut on the line it names.
    redactions: fc.constant([]),
    incomplete: fc.array(fc.record({ seq: fc.nat().map((n) => n + 1), reason: fc.string() }), {
      maxLength: 2,
    }),
  },
  {
    requiredKeys: [
      'tape',
      'kind',
      'recordedAt',
      'source',
      'protocolVersion',
      'server',
      'redactions',
      'incomplete',
    ],
  },
);

const tape: fc.Arbitrary<Tape> = fc
  .tuple(
    header,
    fc.array(
      fc.record({
        dir: fc.constantFrom('c2s' as const, 's2c' as const),
        t: fc.double({ min: 0, max: 1e6, noNaN: true }).map((t) => (Object.is(t, -0) ? 0 : t)),
        message,
        re: fc.option(fc.nat(), { nil: undefined }),
        envelope: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
      }),
      { maxLength: 8 },
    ),
    fc.array(fc.record({ at: fc.nat(), path: fc.string(), rule: fc.string() }), { maxLength: 3 }),
  )
  .map(([h, entries, cuts]) => ({
    header: {
      ...h,
      // In line order, as the reader gathers them from the lines.
      redactions:
        entries.length === 0
          ? []
          : cuts
              .map((c) => ({ seq: (c.at % entries.length) + 1, path: c.path, rule: c.rule }))
              .sort((a, b) => a.seq - b.seq),
    },
    messages: entries.map((e, i): TapeMessage => {
      const seq = i + 1;
      const re = e.re === undefined || seq === 1 ? undefined : (e.re % (seq - 1)) + 1;
      return {
        kind: 'message',
        seq,
        t: e.t,
        dir: e.dir,
        message: e.message,
        ...(re === undefined ? {} : { re }),
        ...(e.envelope === undefined ? {} : { envelope: e.envelope }),
      };
    }),
  }));

/** Reads `text`: a tape, or an SB_TAPE_INVALID error naming a line of the text; anything else fails. */
function readOrLineError(text: string | Uint8Array, allowTruncated = false): Tape | undefined {
  const lineCount = (typeof text === 'string' ? text : new TextDecoder().decode(text)).split('\n').length;
  try {
    return readTape(text, 'p.jsonl', { allowTruncated });
  } catch (err) {
    expect(err).toBeInstanceOf(SwitchboardError);
    const e = err as SwitchboardError;
    expect(e.code).toBe('SB_TAPE_INVALID');
    const line = e.details?.line as number;
    expect(Number.isInteger(line) && line >= 1 && line <= Math.max(1, lineCount)).toBe(true);
    expect(e.message.startsWith(`p.jsonl:${line}: `)).toBe(true);
    return undefined;
  }
}

describe('tape reader and writer', () => {
  it('read ∘ write is the identity', () => {
    fc.assert(
      fc.property(tape, (t) => {
        expect(readTape(writeTape(t))).toEqual(t);
      }),
      { numRuns: 300 },
    );
  });

  it('every cut of a tape is refused, naming a line', () => {
    fc.assert(
      fc.property(tape, fc.nat(), (t, at) => {
        const text = writeTape(t);
        const bytes = new TextEncoder().encode(text);
        // Cut anywhere short of the whole file (and its final newline, which is optional).
        const cut = at % (bytes.length - 1);
        expect(readOrLineError(bytes.subarray(0, cut))).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it('a tape cut at a line boundary is whole, or refused naming a line and read up to the cut with allowTruncated', () => {
    fc.assert(
      fc.property(tape, fc.nat(), (t, at) => {
        const lines = writeTape(t).slice(0, -1).split('\n');
        const kept = at % (lines.length + 1);
        const text = lines
          .slice(0, kept)
          .map((l) => `${l}\n`)
          .join('');
        const strict = readOrLineError(text);
        const lenient = readOrLineError(text, true);
        if (kept === lines.length) {
          expect(strict).toEqual(t);
          expect(lenient).toEqual(t);
          return;
        }
        expect(strict).toBeUndefined();
        if (kept === 0) {
          // Nothing was written, not even the header: nothing to read, flag or not.
          expect(lenient).toBeUndefined();
          return;
        }
        const messages = t.messages.slice(0, kept - 1);
        expect(lenient).toEqual({
          header: { ...t.header, redactions: t.header.redactions.filter((r) => r.seq <= messages.length) },
          messages,
          truncated: true,
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a tape cut anywhere reads with allowTruncated as its whole lines, or is refused at the header', () => {
    fc.assert(
      fc.property(tape, fc.nat(), (t, at) => {
        const bytes = new TextEncoder().encode(writeTape(t));
        const cut = at % (bytes.length + 1);
        const read = readOrLineError(bytes.subarray(0, cut), true);
        const headerBytes = new TextEncoder().encode(writeTape(t).split('\n')[0] as string).length;
        if (cut < headerBytes) {
          expect(read).toBeUndefined();
          return;
        }
        expect(read).toBeDefined();
        expect(read?.header.source).toEqual(t.header.source);
        expect(t.messages.slice(0, read?.messages.length)).toEqual(read?.messages);
      }),
      { numRuns: 300 },
    );
  });

  it('a changed byte, a dropped line or two swapped lines give a tape or an error naming a line', () => {
    fc.assert(
      fc.property(
        tape,
        fc.nat(),
        fc.nat({ max: 255 }),
        fc.constantFrom('byte', 'drop', 'swap'),
        (t, at, b, how) => {
          const text = writeTape(t);
          let changed: string | Uint8Array;
          if (how === 'byte') {
            const bytes = new TextEncoder().encode(text);
            bytes[at % bytes.length] = b;
            changed = bytes;
          } else {
            const lines = text.slice(0, -1).split('\n');
            const i = at % lines.length;
            if (how === 'drop') lines.splice(i, 1);
            else {
              const j = (i + 1) % lines.length;
              [lines[i], lines[j]] = [lines[j] as string, lines[i] as string];
            }
            changed = `${lines.join('\n')}\n`;
          }
          readOrLineError(changed);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a dropped or swapped message line is always noticed', () => {
    fc.assert(
      fc.property(tape, fc.nat(), (t, at) => {
        fc.pre(t.messages.length >= 2);
        const lines = writeTape(t).slice(0, -1).split('\n');
        const i = 1 + (at % t.messages.length);
        lines.splice(i, 1);
        expect(readOrLineError(`${lines.join('\n')}\n`)).toBeUndefined();
      }),
      { numRuns: 200 },
    );
  });
});
