import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineDecoder } from './line-decoder.js';

interface Decoded {
  readonly lines: string[];
  readonly oversized: { head: string; bytes: number }[];
  readonly events: string[];
}

function decoder(options: { maxBytes: number; headBytes?: number }): { decoder: LineDecoder; out: Decoded } {
  const out: Decoded = { lines: [], oversized: [], events: [] };
  const d = new LineDecoder(
    {
      line: (text) => {
        out.lines.push(text);
        out.events.push(`line:${text}`);
      },
      oversized: (head, bytes) => {
        out.oversized.push({ head, bytes });
        out.events.push(`oversized:${bytes}`);
      },
    },
    options,
  );
  return { decoder: d, out };
}

/** Splits `bytes` at the given (sorted, deduplicated) cut points. */
function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let start = 0;
  for (const point of points) {
    parts.push(bytes.subarray(start, point));
    start = point;
  }
  parts.push(bytes.subarray(start));
  return parts;
}

describe('LineDecoder', () => {
  it('yields one line per newline-terminated message', () => {
    const { decoder: d, out } = decoder({ maxBytes: 1024 });
    d.push(Buffer.from('{"a":1}\n{"b":2}\n'));
    expect(out.lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('keeps a partial line until its newline arrives', () => {
    const { decoder: d, out } = decoder({ maxBytes: 1024 });
    d.push(Buffer.from('{"a":'));
    expect(out.lines).toEqual([]);
    d.push(Buffer.from('1}\n{"b"'));
    expect(out.lines).toEqual(['{"a":1}']);
    d.push(Buffer.from(':2}\n'));
    expect(out.lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('tolerates CRLF, even with the CR and LF in different chunks', () => {
    const { decoder: d, out } = decoder({ maxBytes: 1024 });
    d.push(Buffer.from('one\r\ntwo\r'));
    d.push(Buffer.from('\nthree\n'));
    expect(out.lines).toEqual(['one', 'two', 'three']);
  });

  it('skips blank and whitespace-only lines', () => {
    const { decoder: d, out } = decoder({ maxBytes: 1024 });
    d.push(Buffer.from('\n\none\n   \n\r\n\t\ntwo\n\n'));
    expect(out.lines).toEqual(['one', 'two']);
  });

  it('reassembles multi-byte UTF-8 characters split across chunks', () => {
    const { decoder: d, out } = decoder({ maxBytes: 1024 });
    const bytes = Buffer.from('{"t":"héllo 😀"}\n');
    for (let i = 0; i < bytes.length; i++) d.push(bytes.subarray(i, i + 1));
    expect(out.lines).toEqual(['{"t":"héllo 😀"}']);
  });

  it('accepts a line of exactly maxBytes and drops one byte more, keeping its head and the following lines', () => {
    const { decoder: d, out } = decoder({ maxBytes: 10, headBytes: 4 });
    d.push(Buffer.from('0123456789\n'));
    d.push(Buffer.from('0123456789A\nnext\n'));
    expect(out.lines).toEqual(['0123456789', 'next']);
    expect(out.oversized).toEqual([{ head: '0123', bytes: 11 }]);
    expect(out.events).toEqual(['line:0123456789', 'oversized:11', 'line:next']);
  });

  it('reports an oversized line once, with its total size, however many chunks it spans', () => {
    const { decoder: d, out } = decoder({ maxBytes: 8, headBytes: 6 });
    d.push(Buffer.from('before\n{"id":'));
    d.push(Buffer.from('42,"x":"'));
    d.push(Buffer.from('a'.repeat(100)));
    d.push(Buffer.from('"}\r'));
    expect(out.oversized).toEqual([]);
    d.push(Buffer.from('\nafter\n'));
    expect(out.lines).toEqual(['before', 'after']);
    expect(out.oversized).toHaveLength(1);
    expect(out.oversized[0]?.head).toBe('{"id":');
    expect(out.oversized[0]?.bytes).toBe('{"id":42,"x":"'.length + 100 + '"}\r'.length);
  });

  it('drops an incomplete UTF-8 character at the end of an oversized head', () => {
    const { decoder: d, out } = decoder({ maxBytes: 4, headBytes: 2 });
    d.push(Buffer.from('é and more\nok\n'));
    expect(out.oversized[0]?.head).toBe('é');
    const { decoder: d2, out: out2 } = decoder({ maxBytes: 4, headBytes: 3 });
    d2.push(Buffer.from('a😀bcd\n'));
    expect(out2.oversized[0]?.head).toBe('a');
  });

  it('end() flushes a last line that had no newline', () => {
    const { decoder: d, out } = decoder({ maxBytes: 1024 });
    d.push(Buffer.from('one\ntwo'));
    expect(out.lines).toEqual(['one']);
    d.end();
    expect(out.lines).toEqual(['one', 'two']);
  });

  it('end() reports an oversized last line without newline, and does nothing when nothing is pending', () => {
    const { decoder: d, out } = decoder({ maxBytes: 4 });
    d.push(Buffer.from('ok\n'));
    d.end();
    expect(out.events).toEqual(['line:ok']);
    d.push(Buffer.from('too long'));
    d.end();
    expect(out.events).toEqual(['line:ok', 'oversized:8']);
  });

  it('property: any split of a sequence of lines yields the same lines', () => {
    const lineArb = fc
      .string({ unit: 'grapheme', maxLength: 30 })
      .map((s) => s.replace(/[\r\n]/g, ''))
      .filter((s) => s.trim().length > 0);
    fc.assert(
      fc.property(
        fc.array(lineArb, { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        fc.boolean(),
        (lines, cuts, crlf) => {
          const bytes = Buffer.from(lines.map((l) => l + (crlf ? '\r\n' : '\n')).join(''));
          const { decoder: d, out } = decoder({ maxBytes: 1024 });
          for (const part of splitAt(bytes, cuts)) d.push(part);
          d.end();
          expect(out.lines).toEqual(lines);
          expect(out.oversized).toEqual([]);
        },
      ),
    );
  });

  it('property: oversized lines are dropped wherever the chunks split, and the others come through', () => {
    const item = fc.oneof(
      fc
        .string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 16 })
        .map((s) => ({ text: `x${s.replace(/[\r\n]/g, '')}`, big: false })),
      fc.integer({ min: 17, max: 60 }).map((n) => ({ text: 'y'.repeat(n), big: true })),
    );
    fc.assert(
      fc.property(fc.array(item, { maxLength: 10 }), fc.array(fc.nat(), { maxLength: 20 }), (items, cuts) => {
        const bytes = Buffer.from(items.map((i) => `${i.text}\n`).join(''));
        const { decoder: d, out } = decoder({ maxBytes: 17, headBytes: 5 });
        for (const part of splitAt(bytes, cuts)) d.push(part);
        const expected = items.map((i) =>
          i.big && i.text.length > 17 ? `oversized:${i.text.length}` : `line:${i.text}`,
        );
        expect(out.events).toEqual(expected);
        for (const o of out.oversized) expect(o.head).toBe('yyyyy');
      }),
    );
  });
});
