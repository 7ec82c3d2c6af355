import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatComment, formatEvent, formatPrimingEvent, formatRetry, type SseEvent } from './sse-writer.js';

/** What a browser's EventSource would report: dispatched events and `retry` values, in order. */
interface Parsed {
  readonly events: { type: string; data: string; lastEventId: string }[];
  readonly retries: number[];
}

/**
 * A small parser that follows the WHATWG "event stream interpretation" steps literally, to check
 * the writer against the standard rather than against the production parser.
 */
function parseEventStream(stream: string): Parsed {
  const events: Parsed['events'] = [];
  const retries: number[] = [];
  let data = '';
  let type = '';
  let lastEventIdBuffer = '';
  let lastEventId = '';
  const text = stream.startsWith('\uFEFF') ? stream.slice(1) : stream;
  let pos = 0;
  while (pos < text.length) {
    const end = text.slice(pos).search(/\r\n|\r|\n/);
    if (end === -1) break; // an unterminated last line is discarded
    const line = text.slice(pos, pos + end);
    pos += end + (text.startsWith('\r\n', pos + end) ? 2 : 1);
    if (line === '') {
      lastEventId = lastEventIdBuffer;
      if (data === '') {
        type = '';
        continue;
      }
      events.push({ type: type === '' ? 'message' : type, data: data.slice(0, -1), lastEventId });
      data = '';
      type = '';
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data += `${value}\n`;
    else if (field === 'id') {
      if (!value.includes('\0')) lastEventIdBuffer = value;
    } else if (field === 'retry' && /^[0-9]+$/.test(value)) retries.push(Number(value));
  }
  return { events, retries };
}

describe('formatEvent', () => {
  it('writes id, event, retry and data fields, then the dispatching empty line', () => {
    expect(formatEvent({ data: '{"a":1}' })).toBe('data: {"a":1}\n\n');
    expect(formatEvent({ id: 's.1', event: 'message', retry: 500, data: 'x' })).toBe(
      'id: s.1\nevent: message\nretry: 500\ndata: x\n\n',
    );
  });

  it('splits data on \\n, \\r\\n and \\r alike, keeping empty lines', () => {
    expect(formatEvent({ data: 'a\nb\r\nc\rd' })).toBe('data: a\ndata: b\ndata: c\ndata: d\n\n');
    expect(formatEvent({ data: 'a\n' })).toBe('data: a\ndata: \n\n');
    expect(formatEvent({ data: '\r\n\r\n' })).toBe('data: \ndata: \ndata: \n\n');
    expect(formatEvent({ data: '' })).toBe('data: \n\n');
  });

  it('keeps values that begin with a space or contain colons', () => {
    const parsed = parseEventStream(formatEvent({ id: ' a:b', event: ' e', data: '  x: y' }));
    expect(parsed.events).toEqual([{ type: ' e', data: '  x: y', lastEventId: ' a:b' }]);
  });

  it.each(['a\nb', 'a\rb', 'a\r\nb', '\n', 'a\0b'])('refuses the id %j instead of stripping it', (id) => {
    expect(() => formatEvent({ id, data: 'x' })).toThrow(TypeError);
  });

  it.each(['a\nb', 'a\rb', '\r\n'])('refuses the event name %j', (event) => {
    expect(() => formatEvent({ event, data: 'x' })).toThrow(TypeError);
  });

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])('refuses retry %s', (retry) => {
    expect(() => formatEvent({ data: 'x', retry })).toThrow(RangeError);
    expect(() => formatRetry(retry)).toThrow(RangeError);
  });
});

describe('formatComment, formatRetry, formatPrimingEvent', () => {
  it('writes keep-alive comments that clients ignore, one comment line per line', () => {
    expect(formatComment('keep-alive')).toBe(': keep-alive\n\n');
    expect(formatComment('a\r\nb')).toBe(': a\n: b\n\n');
    expect(formatComment('')).toBe(': \n\n');
    expect(parseEventStream(formatComment('data: x\nid: y'))).toEqual({ events: [], retries: [] });
  });

  it('writes a retry block that sets the delay without dispatching an event', () => {
    expect(formatRetry(3000)).toBe('retry: 3000\n\n');
    expect(parseEventStream(formatRetry(0))).toEqual({ events: [], retries: [0] });
  });

  it('writes the 2025-11-25 priming event: an id with empty data, optionally with retry', () => {
    expect(formatPrimingEvent('s.1')).toBe('id: s.1\ndata: \n\n');
    expect(formatPrimingEvent('s.1', 3000)).toBe('id: s.1\nretry: 3000\ndata: \n\n');
    expect(parseEventStream(formatPrimingEvent('s.1', 10))).toEqual({
      events: [{ type: 'message', data: '', lastEventId: 's.1' }],
      retries: [10],
    });
    expect(() => formatPrimingEvent('')).toThrow(TypeError);
    expect(() => formatPrimingEvent('a\nb')).toThrow(TypeError);
  });
});

type Block =
  | { readonly kind: 'event'; readonly event: SseEvent }
  | { readonly kind: 'comment'; readonly text: string }
  | { readonly kind: 'retry'; readonly ms: number };

/** Any code point, lone surrogates included, ASCII half the time (the 'binary' unit is slow to start). */
const anyChar = fc
  .oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0, max: 0x10ffff }))
  .map((c) => String.fromCodePoint(c));

/** Strings rich in what SSE treats specially: every line break, colons, spaces, BOM, NUL. */
const tricky = fc
  .array(
    fc.oneof(
      fc.constantFrom('\n', '\r', '\r\n', ':', ' ', '\uFEFF', '\0', 'data: x', 'id: y', 'é', '😀'),
      fc.string({ unit: anyChar, maxLength: 8 }),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join(''));

const noBreak = tricky.map((s) => s.replace(/[\r\n]/g, ''));

const sseEvent: fc.Arbitrary<SseEvent> = fc.record(
  {
    id: noBreak.map((s) => s.replace(/\0/g, '')),
    event: noBreak,
    data: tricky,
    retry: fc.nat(),
  },
  { requiredKeys: ['data'] },
);

const block: fc.Arbitrary<Block> = fc.oneof(
  sseEvent.map((event) => ({ kind: 'event' as const, event })),
  tricky.map((text) => ({ kind: 'comment' as const, text })),
  fc.nat().map((ms) => ({ kind: 'retry' as const, ms })),
);

describe('round trip through a WHATWG event-stream parser', () => {
  it('delivers every event, id, type and retry, with line breaks in data read as \\n', () => {
    fc.assert(
      fc.property(fc.array(block, { maxLength: 10 }), (blocks) => {
        let stream = '';
        const expected: Parsed = { events: [], retries: [] };
        let lastEventId = '';
        for (const b of blocks) {
          if (b.kind === 'comment') stream += formatComment(b.text);
          else if (b.kind === 'retry') {
            stream += formatRetry(b.ms);
            expected.retries.push(b.ms);
          } else {
            const { id, event, data, retry } = b.event;
            stream += formatEvent(b.event);
            if (retry !== undefined) expected.retries.push(retry);
            if (id !== undefined) lastEventId = id;
            expected.events.push({
              type: event === undefined || event === '' ? 'message' : event,
              data: data.replace(/\r\n|\r/g, '\n'),
              lastEventId,
            });
          }
        }
        expect(parseEventStream(stream)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
