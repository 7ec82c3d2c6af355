import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize, type JsonValue } from '../../audit/canonical-json.js';
import { describeDifference, jsonPathDiff } from './json-path-diff.js';

const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;

describe('jsonPathDiff', () => {
  it('finds no difference exactly when the canonical JSON is equal', () => {
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(jsonPathDiff(a, b, 1_000).length === 0).toBe(canonicalize(a) === canonicalize(b));
        expect(jsonPathDiff(a, a)).toEqual([]);
      }),
    );
  });

  it('names the member, the index and odd keys as JSON paths', () => {
    expect(
      jsonPathDiff(
        { arguments: { message: 'a', list: [1, 2] }, 'odd key': 1 },
        { arguments: { message: 'b', list: [1, 3] } },
      ),
    ).toEqual([
      { path: '$.arguments.list[1]', recorded: 2, got: 3 },
      { path: '$.arguments.message', recorded: 'a', got: 'b' },
      { path: '$["odd key"]', recorded: 1 },
    ]);
    expect(describeDifference({ path: '$.a', got: 1 })).toBe('$.a: recorded absent, got 1');
  });

  it('gives at most `limit` differences', () => {
    expect(jsonPathDiff({ a: 1, b: 2, c: 3 }, {}, 2)).toHaveLength(2);
  });

  it('takes a recorded [REDACTED] as equal to any value', () => {
    expect(jsonPathDiff({ token: '[REDACTED]' }, { token: 'sk-123' })).toEqual([]);
    expect(jsonPathDiff({ token: '[REDACTED]' }, {})).toEqual([{ path: '$.token', recorded: '[REDACTED]' }]);
  });
});
