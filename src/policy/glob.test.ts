import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anyGlobMatch, globMatch } from './glob.js';

/**
 * The specification, written the obvious way: over code points (what a person calls characters),
 * `*` any run, `?` exactly one, anything else itself.
 */
function reference(pattern: string, value: string): boolean {
  const p = Array.from(pattern);
  const v = Array.from(value);
  const memo = new Map<string, boolean>();
  const at = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    let result = memo.get(key);
    if (result !== undefined) return result;
    if (i === p.length) result = j === v.length;
    else if (p[i] === '*') result = at(i + 1, j) || (j < v.length && at(i, j + 1));
    else result = j < v.length && (p[i] === '?' || p[i] === v[j]) && at(i + 1, j + 1);
    memo.set(key, result);
    return result;
  };
  return at(0, 0);
}

/** Wildcards, every character a regular expression treats specially, and astral characters. */
const ALPHABET = [
  'a',
  'b',
  '*',
  '?',
  '.',
  '+',
  '^',
  '$',
  '{',
  '}',
  '(',
  ')',
  '|',
  '[',
  ']',
  '\\',
  '/',
  '-',
  '\n',
  'é',
  '😀',
  '𝒳',
  '\uD83D', // a lone high surrogate
  '\uDE00', // a lone low surrogate
];
const text = fc.array(fc.constantFrom(...ALPHABET), { maxLength: 8 }).map((chars) => chars.join(''));

describe('globMatch', () => {
  it('matches one character, not one UTF-16 unit, with ?', () => {
    expect(globMatch('?', '😀')).toBe(true);
    expect(globMatch('a?b', 'a𝒳b')).toBe(true);
    expect(globMatch('??', '😀')).toBe(false);
    expect(globMatch('tool-?', 'tool-é')).toBe(true);
  });

  it('keeps * across astral characters and line breaks, and everything else literal', () => {
    expect(globMatch('*', '😀\n😀')).toBe(true);
    expect(globMatch('a*z', 'a😀\nz')).toBe(true);
    expect(globMatch('a.b', 'aXb')).toBe(false);
    expect(globMatch('a\\d', 'a\\d')).toBe(true);
    expect(globMatch('a\\d', 'a1')).toBe(false);
    expect(globMatch('a{1}$', 'a{1}$')).toBe(true);
    expect(globMatch('a{1}$', 'a')).toBe(false);
    expect(globMatch('(a|b)+', '(a|b)+')).toBe(true);
    expect(globMatch('(a|b)+', 'a')).toBe(false);
  });

  it('agrees with a reference matcher over code points', () => {
    fc.assert(
      fc.property(text, text, (pattern, value) => {
        expect(globMatch(pattern, value)).toBe(reference(pattern, value));
      }),
      { numRuns: 5000 },
    );
  });

  it('matches every value built from its own pattern', () => {
    // Replace each * by a run and each ? by one character: the result always matches.
    const filled = fc
      .array(
        fc.tuple(
          fc.constantFrom(...ALPHABET),
          fc.array(fc.constantFrom(...ALPHABET.filter((c) => c !== '*' && c !== '?')), {
            minLength: 1,
            maxLength: 3,
          }),
        ),
        { maxLength: 8 },
      )
      .map((parts) => {
        const pieces = parts.map(([c, run]) => (c === '*' ? run.join('') : c === '?' ? (run[0] ?? 'a') : c));
        return { pattern: parts.map(([c]) => c).join(''), pieces, value: pieces.join('') };
      })
      // Lone surrogates side by side join into one astral character (`\uD83D` + `\uDE00` is 😀),
      // which one `?` or literal cannot stand for: such a value was not built from the pattern.
      .filter(
        ({ pieces, value }) => Array.from(value).length === pieces.flatMap((x) => Array.from(x)).length,
      );
    fc.assert(
      fc.property(filled, ({ pattern, value }) => {
        expect(globMatch(pattern, value)).toBe(true);
      }),
    );
  });
});

describe('anyGlobMatch', () => {
  it('is true when some pattern matches some value', () => {
    expect(anyGlobMatch(['adm?n', 'ops'], ['dev', 'admín'])).toBe(true);
    expect(anyGlobMatch(['adm?n'], ['dev'])).toBe(false);
    expect(anyGlobMatch([], ['dev'])).toBe(false);
  });
});
