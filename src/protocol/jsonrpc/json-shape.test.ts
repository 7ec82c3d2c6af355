import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isExactNumberText, scanJsonShape } from './json-shape.js';

/** The nesting of a decoded value, by definition (recursive: test values stay shallow). */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

/** `[[[...]]]` nesting `depth` levels, as text (JSON.stringify itself cannot make a deep one). */
function nestedText(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

describe('scanJsonShape', () => {
  it('measures depth and reads the numeric id of one message', () => {
    expect(scanJsonShape('{"jsonrpc":"2.0","id":7,"method":"ping"}')).toEqual({
      batch: false,
      depth: 1,
      messages: [{ depth: 1, idToken: '7' }],
    });
    const call = `{"id": 9007199254740993 ,"params":{"arguments":{"x":${nestedText(10)}}}}`;
    expect(scanJsonShape(call).messages).toEqual([{ depth: 13, idToken: '9007199254740993' }]);
    expect(scanJsonShape('"just a string"').messages).toEqual([{ depth: 0, idToken: undefined }]);
  });

  it('is not fooled by brackets, quotes, escapes or "id" inside strings and nested objects', () => {
    const text = String.raw`{"method":"[{\"id\":1}]\\","params":{"id":5,"q":"}}}"},"id":"s","x":"\"id\":3"}`;
    expect(scanJsonShape(text).messages).toEqual([{ depth: 2, idToken: undefined }]);
    // An escaped member name is still `id`; the last `id` member wins, as in JSON.parse.
    expect(scanJsonShape(String.raw`{"\u0069d":1.0}`).messages[0]?.idToken).toBe('1.0');
    expect(scanJsonShape('{"id":1,"id":"two"}').messages[0]?.idToken).toBeUndefined();
    expect(scanJsonShape('{"id":"one","id":-0}').messages[0]?.idToken).toBe('-0');
  });

  it('gives one shape per batch element, scalars and empty containers included', () => {
    const text = ` [ {"id":1e3,"a":[[]]} , 5, "x", [], {"id":2} ] `;
    const shape = scanJsonShape(text);
    expect(shape.batch).toBe(true);
    expect(shape.depth).toBe(4);
    expect(shape.messages).toEqual([
      { depth: 3, idToken: '1e3' },
      { depth: 0, idToken: undefined },
      { depth: 0, idToken: undefined },
      { depth: 1, idToken: undefined },
      { depth: 1, idToken: '2' },
    ]);
    expect(scanJsonShape('[]').messages).toEqual([]);
  });

  it('scans a 4,500-level body in one pass without recursion', () => {
    const text = `{"id":1,"params":{"arguments":${nestedText(4500)}}}`;
    expect(scanJsonShape(text).messages).toEqual([{ depth: 4502, idToken: '1' }]);
  });

  it('agrees with the decoded value on any JSON, however it is spaced, alone or in a batch', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom(undefined, 1, '\t'), (value, space) => {
        const text = JSON.stringify(value, null, space);
        const shape = scanJsonShape(text);
        if (Array.isArray(value)) {
          expect(shape.batch).toBe(true);
          expect(shape.messages.map((m) => m.depth)).toEqual(value.map(depthOf));
        } else {
          expect(shape.messages.map((m) => m.depth)).toEqual([depthOf(value)]);
        }
        expect(shape.depth).toBe(depthOf(value));
      }),
      { numRuns: 500 },
    );
  });

  it('reads exactly the text of a numeric id, wherever it sits among the members', () => {
    const token = fc.oneof(
      fc.integer().map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
      fc.constantFrom('1.0', '-0', '1e3', '1E+2', '9007199254740993', '0.10', '1e400', '-1.5e-7'),
    );
    const member = fc.tuple(
      fc.string().filter((k) => k !== 'id'),
      fc.jsonValue({ maxDepth: 2 }),
    );
    fc.assert(
      fc.property(token, fc.array(member, { maxLength: 4 }), fc.nat(4), (id, members, at) => {
        const parts = members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
        parts.splice(Math.min(at, parts.length), 0, `"id" : ${id}`);
        const text = `{${parts.join(',')}}`;
        expect(scanJsonShape(text).messages[0]?.idToken).toBe(id);
      }),
      { numRuns: 500 },
    );
  });
});

describe('isExactNumberText', () => {
  it('is true only when JSON.stringify would write the same number back', () => {
    for (const exact of ['0', '7', '-12', '9007199254740991', '9007199254740992', '0.1', '1.5e-7', '1e+21'])
      expect(isExactNumberText(exact), exact).toBe(true);
    for (const changed of ['9007199254740993', '1.0', '-0', '1e3', '1E+21', '0.10', '1e400', '00', '+1'])
      expect(isExactNumberText(changed), changed).toBe(false);
    fc.assert(fc.property(fc.integer(), (n) => isExactNumberText(String(n))));
  });
});
