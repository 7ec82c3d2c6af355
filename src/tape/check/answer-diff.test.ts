import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffJson } from './answer-diff.js';
import { parsePointerPattern, pointerOf } from './json-pointer-pattern.js';
import { volatilePredicate } from './volatile-values.js';

/** Every path of `value` that holds a scalar, as segments. */
function leaves(value: unknown, at: string[] = []): string[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...at, String(i)]));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...at, k]));
  return [at];
}

/** A deep copy of `value` with the scalar at `path` replaced by `to`. */
function setAt(value: unknown, path: readonly string[], to: unknown): unknown {
  if (path.length === 0) return to;
  const [head, ...rest] = path as [string, ...string[]];
  if (Array.isArray(value)) return value.map((v, i) => (String(i) === head ? setAt(v, rest, to) : v));
  const copy = { ...(value as Record<string, unknown>) };
  Object.defineProperty(copy, head, {
    value: setAt(copy[head], rest, to),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}

// JSON as it comes off the wire (no -0, no undefined), with member names free of our special keys.
const json = fc
  .jsonValue({ maxDepth: 4, noUnicodeString: false })
  .map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const rules = { volatile: volatilePredicate() };

describe('diffJson', () => {
  it('finds nothing between a value and itself, or a copy of it', () => {
    fc.assert(
      fc.property(json, (a) => {
        expect(diffJson(a, a, rules)).toEqual([]);
        expect(diffJson(a, structuredClone(a), rules)).toEqual([]);
      }),
    );
  });

  it('reports a changed leaf at exactly its path, unless a rule ignores it there', () => {
    fc.assert(
      fc.property(
        json.filter((v) => leaves(v).length > 0),
        fc.nat(),
        fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null)),
        fc.boolean(),
        (a, pick, replacement, ignoreIt) => {
          const all = leaves(a);
          const path = all[pick % all.length] as string[];
          const before = path.reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], a);
          fc.pre(before !== replacement);
          const b = setAt(a, path, replacement);
          const ignore = ignoreIt ? [parsePointerPattern(pointerOf(path))] : [];
          // Only the user's paths here: the built-in volatile rules are tested on their own below.
          const found = diffJson(a, b, { ignore });
          if (ignoreIt) expect(found).toEqual([]);
          else
            expect(found).toEqual([
              { path: pointerOf(path), kind: 'changed', recorded: before, live: replacement },
            ]);
        },
      ),
    );
  });

  it('reports a member added or removed at its path, and ignores key order', () => {
    expect(diffJson({ a: 1, b: { c: 2 } }, { b: { c: 2 }, a: 1 })).toEqual([]);
    expect(diffJson({ a: 1 }, { a: 1, b: 2 })).toEqual([{ path: '/b', kind: 'added', live: 2 }]);
    expect(diffJson({ a: [1, 2] }, { a: [1] })).toEqual([{ path: '/a/1', kind: 'removed', recorded: 2 }]);
    expect(diffJson({ 'a/b': { '~': 1 } }, { 'a/b': { '~': 2 } })).toEqual([
      { path: '/a~1b/~0', kind: 'changed', recorded: 1, live: 2 },
    ]);
    expect(diffJson({ a: [1] }, { a: { 0: 1 } })).toEqual([
      { path: '/a', kind: 'changed', recorded: [1], live: { 0: 1 } },
    ]);
  });

  it('skips what a wildcard pattern covers, with everything below it', () => {
    const ignore = [parsePointerPattern('/result/content/*/text')];
    const a = {
      result: {
        content: [
          { type: 'text', text: 'x' },
          { type: 'text', text: 'y' },
        ],
      },
    };
    const b = {
      result: {
        content: [
          { type: 'text', text: 'X' },
          { type: 'image', text: 'Y' },
        ],
      },
    };
    expect(diffJson(a, b, { ignore })).toEqual([
      { path: '/result/content/1/type', kind: 'changed', recorded: 'text', live: 'image' },
    ]);
    expect(
      diffJson({ r: { deep: { x: 1 } } }, { r: { deep: 2 } }, { ignore: [parsePointerPattern('/r/deep')] }),
    ).toEqual([]);
  });

  it('ignores timestamps and generated ids when both sides look the part, and only then', () => {
    const a = {
      createdAt: '2026-11-28T10:00:00.000Z',
      time: 1764324000000,
      taskId: '0b4c1e4e-8f0e-4c8e-9d1e-2a5b6c7d8e9f',
    };
    const b = {
      createdAt: '2026-11-29T11:30:00Z',
      time: 1764327600123,
      taskId: 'f47ac10b-58cc-4372-a567-0e02b2c3d479',
    };
    expect(diffJson(a, b, rules)).toEqual([]);
    expect(diffJson(a, { ...b, createdAt: null }, rules)).toEqual([
      { path: '/createdAt', kind: 'changed', recorded: a.createdAt, live: null },
    ]);
    expect(diffJson({ name: '2026-11-28' }, { name: '2026-11-29' }, rules)).toHaveLength(1);
    expect(diffJson({ id: 'tool-1' }, { id: 'tool-2' }, rules)).toHaveLength(1);
    const keyed = { volatile: volatilePredicate({ keys: ['cursor'], builtIn: false }) };
    expect(
      diffJson({ cursor: 'a', time: 1764324000000 }, { cursor: 'b', time: 1764324000001 }, keyed),
    ).toEqual([{ path: '/time', kind: 'changed', recorded: 1764324000000, live: 1764324000001 }]);
  });

  it('refuses a pattern that is not a JSON Pointer', () => {
    expect(() => parsePointerPattern('result/x')).toThrow(/JSON Pointer/);
    expect(() => parsePointerPattern('/a~3')).toThrow(/~/);
    expect(parsePointerPattern('/a/*/~2/~1~0')).toEqual(['a', null, '*', '/~']);
  });
});
