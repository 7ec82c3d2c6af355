import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type SseEvent, SseParser, type SseParserOptions } from './sse-parser.js';

type Seen =
  | { kind: 'event'; event: SseEvent }
  | { kind: 'retry'; ms: number }
  | { kind: 'comment'; text: string }
  | { kind: 'oversized'; head: string; chars: number; lastEventId: string };

function collect(options?: SseParserOptions): { parser: SseParser; seen: Seen[] } {
  const seen: Seen[] = [];
  const parser = new SseParser(
    {
      onEvent: (event) => seen.push({ kind: 'event', event }),
      onRetry: (ms) => seen.push({ kind: 'retry', ms }),
      onComment: (text) => seen.push({ kind: 'comment', text }),
      onOversized: (head, chars, lastEventId) => seen.push({ kind: 'oversized', head, chars, lastEventId }),
    },
    options,
  );
  return { parser, seen };
}

function parse(chunks: readonly (string | Uint8Array)[], options?: SseParserOptions): Seen[] {
  const { parser, seen } = collect(options);
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return seen;
}

function events(chunks: readonly (string | Uint8Array)[]): SseEvent[] {
  return parse(chunks).flatMap((s) => (s.kind === 'event' ? [s.event] : []));
}

describe('SseParser', () => {
  it('parses fields, defaults the type to message and joins data lines with LF', () => {
    expect(events(['event: add\ndata: a\ndata:  b\ndata\n\ndata: c\n\n'])).toEqual([
      { type: 'add', data: 'a\n b\n', lastEventId: '' },
      { type: 'message', data: 'c', lastEventId: '' },
    ]);
  });

  it('accepts CR, LF and CRLF line endings, mixed', () => {
    expect(events(['data: a\r\rdata: b\n\ndata: c\r\n\r\n'])).toEqual([
      { type: 'message', data: 'a', lastEventId: '' },
      { type: 'message', data: 'b', lastEventId: '' },
      { type: 'message', data: 'c', lastEventId: '' },
    ]);
  });

  it('treats a CRLF split across chunks as one line ending', () => {
    expect(events(['data: a\r', '\ndata: b\r', '\n\r', '\n'])).toEqual([
      { type: 'message', data: 'a\nb', lastEventId: '' },
    ]);
  });

  it('keeps the last event id across events and ignores ids containing NUL', () => {
    expect(events(['id: 1\ndata: a\n\ndata: b\n\nid: x\u0000y\ndata: c\n\nid\ndata: d\n\n'])).toEqual([
      { type: 'message', data: 'a', lastEventId: '1' },
      { type: 'message', data: 'b', lastEventId: '1' },
      { type: 'message', data: 'c', lastEventId: '1' },
      { type: 'message', data: 'd', lastEventId: '' },
    ]);
  });

  it('updates the last event id without dispatching an event that has no data', () => {
    const { parser, seen } = collect();
    parser.push('id: 7\n\n');
    expect(seen).toEqual([]);
    expect(parser.lastEventId).toBe('7');
  });

  it('dispatches `data:` + blank line with empty data (the shape of an MCP priming event)', () => {
    expect(events(['id: p1\nretry: 10\ndata: \n\n'])).toEqual([
      { type: 'message', data: '', lastEventId: 'p1' },
    ]);
  });

  it('honours retry only when it is all ASCII digits', () => {
    const { parser, seen } = collect();
    parser.push('retry: 1500\nretry: 1.5\nretry: -1\nretry:  20\nretry\nretry: 300\n');
    expect(seen).toEqual([
      { kind: 'retry', ms: 1500 },
      { kind: 'retry', ms: 300 },
    ]);
    expect(parser.retryMs).toBe(300);
  });

  it('reports comments and ignores unknown fields', () => {
    expect(parse([': keep-alive\nfoo: bar\ndata: x\n\n'])).toEqual([
      { kind: 'comment', text: ' keep-alive' },
      { kind: 'event', event: { type: 'message', data: 'x', lastEventId: '' } },
    ]);
  });

  it('skips one leading BOM, only at the start of the stream', () => {
    expect(events(['\ufeffdata: a\n\n\ufeffdata: b\n\n'])).toEqual([
      { type: 'message', data: 'a', lastEventId: '' },
    ]);
    expect(events(['', '\ufeff', '\ufeffdata: c\n\n'])).toEqual([]);
    expect(
      events([
        new Uint8Array([0xef, 0xbb]),
        new Uint8Array([0xbf, 0x64, 0x61, 0x74, 0x61, 0x3a, 0x31, 0x0a, 0x0a]),
      ]),
    ).toEqual([{ type: 'message', data: '1', lastEventId: '' }]);
  });

  it('decodes UTF-8 split inside a character', () => {
    const bytes = new TextEncoder().encode('data: h\u00e9llo \u{1f600}\n\n');
    const chunks = Array.from(bytes, (b) => new Uint8Array([b]));
    expect(events(chunks)).toEqual([{ type: 'message', data: 'h\u00e9llo \u{1f600}', lastEventId: '' }]);
  });

  it('discards an event that the stream ends in the middle of', () => {
    expect(events(['data: a\n\ndata: b\n'])).toEqual([{ type: 'message', data: 'a', lastEventId: '' }]);
    expect(events(['data: a\n\ndata: b'])).toEqual([{ type: 'message', data: 'a', lastEventId: '' }]);
  });

  it('starts from a given last event id', () => {
    const { parser } = collect({ lastEventId: 'e9' });
    expect(parser.lastEventId).toBe('e9');
    parser.push('data: x\n\n');
    expect(parser.lastEventId).toBe('e9');
  });

  describe('bounded memory', () => {
    it('reports an event whose one data line is too long, with its head, and keeps going', () => {
      const big = 'x'.repeat(100);
      const seen = parse(['id: 3\ndata: ', big.slice(0, 30), big.slice(30), '\n\ndata: ok\n\n'], {
        maxEventChars: 50,
        headChars: 10,
      });
      expect(seen).toEqual([
        { kind: 'oversized', head: 'x'.repeat(10), chars: 100, lastEventId: '3' },
        { kind: 'event', event: { type: 'message', data: 'ok', lastEventId: '3' } },
      ]);
    });

    it('reports an event whose data lines together are too long', () => {
      const seen = parse(['data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n'], {
        maxEventChars: 25,
        headChars: 12,
      });
      expect(seen).toEqual([{ kind: 'oversized', head: '0123456789\n0', chars: 32, lastEventId: '' }]);
    });

    it('drops an over-long comment or id line without losing the event', () => {
      const seen = parse([`: ${'c'.repeat(80)}\nid: ${'i'.repeat(80)}\ndata: fine\n\n`], {
        maxEventChars: 40,
      });
      expect(seen).toEqual([{ kind: 'event', event: { type: 'message', data: 'fine', lastEventId: '' } }]);
    });

    it('never holds more than the limit for a line arriving in many chunks', () => {
      const { parser, seen } = collect({ maxEventChars: 1000, headChars: 16 });
      parser.push('data: {"id":1,');
      for (let i = 0; i < 10_000; i++) parser.push('"aaaaaaaaaaaaaaaaaaaaaaaa":1,');
      parser.push('"z":0}\n\n');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ kind: 'oversized', head: '{"id":1,"aaaaaaa' });
    });
  });

  describe('chunking does not matter (property)', () => {
    const lineEnding = fc.constantFrom('\n', '\r', '\r\n');
    const text = fc.string({
      unit: fc.constantFrom('a', 'b', ' ', ':', '\u00e9', '\u{1f600}', '\u0000', '1'),
    });
    const line = fc.oneof(
      fc
        .tuple(fc.constantFrom('data', 'data:', 'data: ', 'event: ', 'id: ', 'retry: ', ':', 'x: '), text)
        .map(([f, v]) => f + v),
      fc.constant(''),
      fc.integer({ min: 0, max: 99_999 }).map((n) => `retry: ${n}`),
    );
    const stream = fc
      .tuple(fc.boolean(), fc.array(fc.tuple(line, lineEnding), { maxLength: 30 }))
      .map(([bom, lines]) => (bom ? '\ufeff' : '') + lines.map(([l, e]) => l + e).join(''));

    function splitAt<T extends string | Uint8Array>(whole: T, cuts: readonly number[]): T[] {
      const points = [...new Set(cuts.map((c) => c % (whole.length + 1)))].sort((a, b) => a - b);
      const parts: T[] = [];
      let from = 0;
      for (const p of points) {
        parts.push(whole.slice(from, p) as T);
        from = p;
      }
      parts.push(whole.slice(from) as T);
      return parts;
    }

    it('yields the same events, retries and comments for any split of the text', () => {
      fc.assert(
        fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), (whole, cuts) => {
          expect(parse(splitAt(whole, cuts))).toEqual(parse([whole]));
        }),
        { numRuns: 500 },
      );
    });

    it('yields the same events for any split of the UTF-8 bytes', () => {
      fc.assert(
        fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), (whole, cuts) => {
          const bytes = new TextEncoder().encode(whole);
          // TextEncoder never writes a BOM of its own: what the text had is in the bytes.
          expect(parse(splitAt(bytes, cuts))).toEqual(parse([whole]));
        }),
        { numRuns: 500 },
      );
    });

    it('agrees with a whole-text reference reading of the spec', () => {
      fc.assert(
        fc.property(stream, (whole) => {
          expect(events([whole])).toEqual(referenceEvents(whole));
        }),
        { numRuns: 500 },
      );
    });

    it('gives the same oversized reports for any split when a limit is set', () => {
      fc.assert(
        fc.property(
          stream,
          fc.array(fc.nat(), { maxLength: 12 }),
          fc.integer({ min: 1, max: 12 }),
          (whole, cuts, max) => {
            const options = { maxEventChars: max, headChars: 4 };
            expect(parse(splitAt(whole, cuts), options)).toEqual(parse([whole], options));
          },
        ),
        { numRuns: 500 },
      );
    });
  });
});

/** The spec's algorithm applied to a whole stream at once, written as plainly as possible. */
function referenceEvents(whole: string): SseEvent[] {
  const text = whole.startsWith('\ufeff') ? whole.slice(1) : whole;
  const lines = text.split(/\r\n|\r|\n/);
  lines.pop(); // the unterminated tail is never processed
  const out: SseEvent[] = [];
  let data = '';
  let type = '';
  let idBuffer = '';
  for (const line of lines) {
    if (line === '') {
      const lastEventId = idBuffer;
      if (data === '') {
        type = '';
        continue;
      }
      out.push({
        type: type || 'message',
        data: data.endsWith('\n') ? data.slice(0, -1) : data,
        lastEventId,
      });
      data = '';
      type = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data += `${value}\n`;
    else if (field === 'event') type = value;
    else if (field === 'id' && !value.includes('\u0000')) idBuffer = value;
  }
  return out;
}
