import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  formatEventId,
  isStreamId,
  MAX_EVENT_ID_LENGTH,
  MAX_STREAM_ID_LENGTH,
  newStreamId,
  parseEventId,
  streamIdSource,
} from './event-id.js';

/** Any code point, lone surrogates included, ASCII half the time (the 'binary' unit is slow to start). */
const anyChar = fc
  .oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0, max: 0x10ffff }))
  .map((c) => String.fromCodePoint(c));

describe('newStreamId', () => {
  it('makes 16 characters of [A-Za-z0-9_-], different every time', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newStreamId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
      expect(isStreamId(id)).toBe(true);
    }
  });
});

describe('streamIdSource', () => {
  it('gives one session stream ids that never repeat and are all valid stream ids', () => {
    const next = streamIdSource();
    const ids = Array.from({ length: 100_000 }, () => next());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [ids[0]!, ids[35]!, ids[36]!, ids.at(-1)!]) {
      expect(isStreamId(id)).toBe(true);
      expect(parseEventId(formatEventId(id, 7))).toEqual({ streamId: id, seq: 7 });
    }
  });

  it('shares no prefix between sessions: each draws its own 96 random bits', () => {
    const prefixes = new Set(Array.from({ length: 1000 }, () => streamIdSource()().slice(0, 16)));
    expect(prefixes.size).toBe(1000);
    for (const prefix of prefixes) expect(prefix).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });
});

describe('formatEventId and parseEventId', () => {
  it('round-trips every stream id and positive safe integer', () => {
    const streamId = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
    fc.assert(
      fc.property(streamId, fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (s, seq) => {
        const id = formatEventId(s, seq);
        expect(id).toMatch(/^[\x21-\x7e]+$/);
        expect(id.length).toBeLessThanOrEqual(MAX_EVENT_ID_LENGTH);
        expect(parseEventId(id)).toEqual({ streamId: s, seq });
      }),
    );
  });

  it('refuses to format what it could not read back', () => {
    for (const bad of ['', 'a.b', 'a b', 'ä', 'x'.repeat(MAX_STREAM_ID_LENGTH + 1), 'a\n']) {
      expect(() => formatEventId(bad, 1)).toThrow(RangeError);
    }
    for (const seq of [0, -1, 1.5, Number.NaN, 2 ** 53])
      expect(() => formatEventId('s', seq)).toThrow(RangeError);
  });

  it.each([
    ['empty', ''],
    ['no dot', 'abc'],
    ['no seq', 'abc.'],
    ['no stream', '.1'],
    ['zero', 'abc.0'],
    ['leading zero', 'abc.01'],
    ['sign', 'abc.+1'],
    ['negative', 'abc.-1'],
    ['fraction', 'abc.1.5'],
    ['exponent', 'abc.1e3'],
    ['hex', 'abc.0x10'],
    ['beyond MAX_SAFE_INTEGER', 'abc.9007199254740992'],
    ['two dots', 'a.b.1'],
    ['space', 'abc. 1'],
    ['trailing space', 'abc.1 '],
    ['newline', 'abc.1\n'],
    ['unicode stream', 'ábc.1'],
    ['unicode digits', 'abc.١'],
    ['fullwidth digits', 'abc.１'],
    ['stream too long', `${'a'.repeat(MAX_STREAM_ID_LENGTH + 1)}.1`],
    ['10 KB', `${'a'.repeat(10_000)}.1`],
    ['10 KB of digits', `a.${'9'.repeat(10_000)}`],
  ])('rejects %s', (_name, id) => {
    expect(parseEventId(id)).toBeUndefined();
  });

  it('accepts the largest stream id and sequence number', () => {
    const id = formatEventId('a'.repeat(MAX_STREAM_ID_LENGTH), Number.MAX_SAFE_INTEGER);
    expect(id.length).toBe(MAX_EVENT_ID_LENGTH);
    expect(parseEventId(id)).toEqual({ streamId: 'a'.repeat(64), seq: Number.MAX_SAFE_INTEGER });
  });

  it('never throws and only accepts canonical ids, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: anyChar, maxLength: 100 }), (input) => {
        const parsed = parseEventId(input);
        if (parsed !== undefined) expect(formatEventId(parsed.streamId, parsed.seq)).toBe(input);
      }),
    );
  });
});
