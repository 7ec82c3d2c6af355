import { describe, expect, it } from 'vitest';
import { parseJsonPathSubset, selectPath } from './jsonpath-subset.js';

function steps(path: string) {
  const parsed = parseJsonPathSubset(path);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.steps;
}

describe('the JSONPath subset of capability keys', () => {
  it('parses members, wildcards, indexes and quoted names', () => {
    expect(steps('$')).toEqual([]);
    expect(steps('$.params.name')).toEqual([
      { kind: 'member', name: 'params' },
      { kind: 'member', name: 'name' },
    ]);
    expect(steps('$.a[*].b[2][\'c d\']["e"].*')).toEqual([
      { kind: 'member', name: 'a' },
      { kind: 'wildcard' },
      { kind: 'member', name: 'b' },
      { kind: 'index', index: 2 },
      { kind: 'member', name: 'c d' },
      { kind: 'member', name: 'e' },
      { kind: 'wildcard' },
    ]);
  });

  it('refuses what it does not support, saying what it does', () => {
    for (const path of [
      'params.name',
      '$..name',
      '$.a[-1]',
      '$.a[0:2]',
      '$.a[?(@.b)]',
      '$.a[1,2]',
      '$.',
      '$a',
    ]) {
      const parsed = parseJsonPathSubset(path);
      expect(parsed.ok, path).toBe(false);
      if (!parsed.ok) expect(parsed.problem).toMatch(/\$|supported/);
    }
  });

  it('selects what the steps name, in document order, and nothing on a mismatch', () => {
    const doc = { a: [{ b: 1 }, { b: 2 }, { c: 3 }], o: { x: 'y', z: 'w' } };
    expect(selectPath(doc, steps('$.a[*].b'))).toEqual([1, 2]);
    expect(selectPath(doc, steps('$.a[1].b'))).toEqual([2]);
    expect(selectPath(doc, steps('$.a[9].b'))).toEqual([]);
    expect(selectPath(doc, steps('$.o.*'))).toEqual(['y', 'w']);
    expect(selectPath(doc, steps('$.o[0]'))).toEqual([]);
    expect(selectPath(doc, steps('$.a.b'))).toEqual([]);
    expect(selectPath(doc, steps('$'))).toEqual([doc]);
    // Inherited properties are not members.
    expect(selectPath({}, steps('$.toString'))).toEqual([]);
  });
});
