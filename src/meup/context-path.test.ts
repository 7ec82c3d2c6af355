import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ContextIssueCode,
  childContext,
  contextDepth,
  contextParent,
  contextRoot,
  DEFAULT_CONTEXT_LIMITS,
  directChildren,
  isAncestorContext,
  isInSubtree,
  isNestedContext,
  isValidContext,
  isValidContextSegment,
  mainContextOnly,
  rootContexts,
  subtree,
  validateContext,
} from './context-path.js';

const codes = (path: unknown, limits = DEFAULT_CONTEXT_LIMITS) =>
  validateContext(path, limits).map((i) => i.code);

describe('validateContext (meup.md requirements 19-21)', () => {
  it.each(['reason-789', 'reason-789/security-check', 'deploy-abc/test/unit-tests', 'A_b-9', 'a/b/c/d/e'])(
    'accepts %s',
    (path) => {
      expect(validateContext(path)).toEqual([]);
      expect(isValidContext(path)).toBe(true);
    },
  );

  it.each([
    [{ id: 'ctx' }, 'an object'],
    [['a', 'b'], 'an array'],
    [42, 'a number'],
    [null, 'null'],
    [true, 'a boolean'],
  ])('rejects the non-string %j (requirement 19)', (path, got) => {
    const issues = validateContext(path);
    expect(issues).toHaveLength(1);
    expect(issues[0]?.code).toBe(ContextIssueCode.NotString);
    expect(issues[0]?.message).toContain(got);
  });

  it.each([
    ['/a', ['context_leading_slash']],
    ['a/', ['context_trailing_slash']],
    ['/a/', ['context_leading_slash', 'context_trailing_slash']],
    ['a//b', ['context_empty_segment']],
    ['', ['context_empty_segment']],
    ['/', ['context_leading_slash', 'context_trailing_slash', 'context_empty_segment']],
    ['a/b c', ['context_invalid_segment']],
    ['a:b', ['context_invalid_segment']],
    ['a.b/c', ['context_invalid_segment']],
    ['caf\u00e9', ['context_invalid_segment']],
    ['mcp/request:tools/call', ['context_invalid_segment']],
    ['a/b/c/d/e/f', ['context_too_deep']],
    ['x'.repeat(256), ['context_too_long']],
    [
      '/a//b c/',
      ['context_leading_slash', 'context_trailing_slash', 'context_empty_segment', 'context_invalid_segment'],
    ],
  ])('reports each violation of %j with its own code (requirement 20)', (path, expected) => {
    expect(codes(path)).toEqual(expected);
    expect(isValidContext(path)).toBe(false);
  });

  it('counts depth over real segments, so a stray slash is not also a depth error', () => {
    expect(codes('/a/b/c/d/e')).toEqual(['context_leading_slash']);
  });

  it('reports depth and length together when both are exceeded', () => {
    const deepAndLong = Array.from({ length: 6 }, () => 'x'.repeat(50)).join('/');
    expect(codes(deepAndLong)).toEqual(['context_too_deep', 'context_too_long']);
  });

  it('applies depth 5 and length 255 by default, inclusive (requirement 21)', () => {
    expect(DEFAULT_CONTEXT_LIMITS).toEqual({ maxDepth: 5, maxLength: 255 });
    expect(codes('a/b/c/d/e')).toEqual([]);
    expect(codes('x'.repeat(255))).toEqual([]);
    expect(codes('x'.repeat(256))).toEqual(['context_too_long']);
  });

  it('takes configurable limits (requirement 21)', () => {
    expect(codes('a/b/c', { maxDepth: 2, maxLength: 255 })).toEqual(['context_too_deep']);
    expect(codes('a/b/c/d/e/f/g', { maxDepth: 10, maxLength: 255 })).toEqual([]);
    expect(codes('abcdef', { maxDepth: 5, maxLength: 5 })).toEqual(['context_too_long']);
    const message = validateContext('abcdef', { maxDepth: 5, maxLength: 5 })[0]?.message;
    expect(message).toMatch(/6 characters long; at most 5/);
  });

  it('never throws and accepts exactly the well-formed bounded paths (property)', () => {
    const wellFormed = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/;
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'Z', '0', '_', '-', '/', ' ', ':', '.') }),
        (path) => {
          const valid = wellFormed.test(path) && path.split('/').length <= 5 && path.length <= 255;
          expect(validateContext(path).length === 0).toBe(valid);
        },
      ),
    );
  });
});

describe('isValidContextSegment (requirement 27)', () => {
  it('allows only [A-Za-z0-9_-]+', () => {
    expect(isValidContextSegment('01J8ZKQ3W0ABCDEFGH12345678')).toBe(true);
    expect(isValidContextSegment('reason_1-a')).toBe(true);
    expect(isValidContextSegment('')).toBe(false);
    expect(isValidContextSegment('a/b')).toBe(false);
    expect(isValidContextSegment('urn:uuid')).toBe(false);
  });
});

describe('path helpers (requirement 22)', () => {
  it('root', () => {
    expect(contextRoot('a/b/c')).toBe('a');
    expect(contextRoot('a')).toBe('a');
  });

  it('parent', () => {
    expect(contextParent('a/b/c')).toBe('a/b');
    expect(contextParent('a/b')).toBe('a');
    expect(contextParent('a')).toBeNull();
  });

  it('depth', () => {
    expect(contextDepth('a')).toBe(1);
    expect(contextDepth('a/b')).toBe(2);
    expect(contextDepth('a/b/c/d/e')).toBe(5);
  });

  it('isNested', () => {
    expect(isNestedContext('a')).toBe(false);
    expect(isNestedContext('a/b')).toBe(true);
  });

  it('isAncestor', () => {
    expect(isAncestorContext('a', 'a/b')).toBe(true);
    expect(isAncestorContext('a', 'a/b/c')).toBe(true);
    expect(isAncestorContext('a/b', 'a/b/c')).toBe(true);
    expect(isAncestorContext('a', 'a')).toBe(false);
    expect(isAncestorContext('a', 'ab/c')).toBe(false);
    expect(isAncestorContext('a', 'ab')).toBe(false);
    expect(isAncestorContext('a/b', 'a')).toBe(false);
    expect(isAncestorContext('a/b', 'a/bc')).toBe(false);
  });

  it('isInSubtree', () => {
    expect(isInSubtree('a', 'a')).toBe(true);
    expect(isInSubtree('a/b/c', 'a')).toBe(true);
    expect(isInSubtree('ab', 'a')).toBe(false);
    expect(isInSubtree('ab/c', 'a')).toBe(false);
    expect(isInSubtree(undefined, 'a')).toBe(false);
  });

  it('childContext validates the segment and the resulting path', () => {
    expect(childContext('a', 'b')).toEqual({ ok: true, context: 'a/b' });
    expect(childContext('a', 'b/c')).toMatchObject({
      ok: false,
      issues: [{ code: 'context_invalid_segment' }],
    });
    expect(childContext('a', '')).toMatchObject({ ok: false, issues: [{ code: 'context_invalid_segment' }] });
    expect(childContext('a/b/c/d/e', 'f')).toMatchObject({
      ok: false,
      issues: [{ code: 'context_too_deep' }],
    });
    expect(childContext('a', 'b', { maxDepth: 5, maxLength: 2 })).toMatchObject({
      ok: false,
      issues: [{ code: 'context_too_long' }],
    });
    expect(childContext('/a', 'b')).toMatchObject({ ok: false, issues: [{ code: 'context_leading_slash' }] });
  });
});

describe('filters (requirement 23)', () => {
  const items = [
    { n: 0 },
    { n: 1, context: 'a' },
    { n: 2, context: 'a/b' },
    { n: 3, context: 'a/b/c' },
    { n: 4, context: 'a/d' },
    { n: 5, context: 'ab' },
    { n: 6, context: 'ab/c' },
    { n: 7, context: 'b' },
    { n: 8, context: undefined },
  ];
  const ns = (list: readonly { n: number }[]) => list.map((i) => i.n);

  it('subtree of a is a itself and everything below it, not the string-prefix sibling ab', () => {
    expect(ns(subtree(items, 'a'))).toEqual([1, 2, 3, 4]);
    expect(ns(subtree(items, 'a/b'))).toEqual([2, 3]);
  });

  it('direct children are exactly one level deeper', () => {
    expect(ns(directChildren(items, 'a'))).toEqual([2, 4]);
    expect(ns(directChildren(items, 'a/b'))).toEqual([3]);
    expect(ns(directChildren(items, 'ab'))).toEqual([6]);
  });

  it('root contexts have no slash', () => {
    expect(ns(rootContexts(items))).toEqual([1, 5, 7]);
  });

  it('main context only keeps items without a context', () => {
    expect(ns(mainContextOnly(items))).toEqual([0, 8]);
  });
});

const segment = fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/);
/** Valid paths of depth 1..4, so that a child is still within the default depth of 5. */
const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));

function child(parent: string, s: string): string {
  const result = childContext(parent, s);
  if (!result.ok) throw new Error(`child of a depth <= 4 path refused: ${JSON.stringify(result.issues)}`);
  return result.context;
}

describe('path helper properties', () => {
  it('generated paths are valid, and the root is an ancestor of every nested path', () => {
    fc.assert(
      fc.property(path, (p) => {
        expect(validateContext(p)).toEqual([]);
        expect(contextRoot(p) === p).toBe(!isNestedContext(p));
        expect(isAncestorContext(contextRoot(p), p)).toBe(isNestedContext(p));
        expect(isNestedContext(p)).toBe(contextDepth(p) > 1);
      }),
    );
  });

  it('parent(child(p, s)) === p and the depth grows by one', () => {
    fc.assert(
      fc.property(path, segment, (p, s) => {
        const c = child(p, s);
        expect(contextParent(c)).toBe(p);
        expect(contextDepth(c)).toBe(contextDepth(p) + 1);
        expect(contextRoot(c)).toBe(contextRoot(p));
      }),
    );
  });

  it('p is an ancestor of child(p, s) but never of itself', () => {
    fc.assert(
      fc.property(path, segment, (p, s) => {
        expect(isAncestorContext(p, child(p, s))).toBe(true);
        expect(isAncestorContext(p, p)).toBe(false);
        expect(isAncestorContext(child(p, s), p)).toBe(false);
      }),
    );
  });

  it('ancestry is transitive', () => {
    fc.assert(
      fc.property(fc.array(segment, { minLength: 3, maxLength: 5 }), fc.nat(), fc.nat(), (segments, i, j) => {
        const cut1 = 1 + (i % (segments.length - 2));
        const cut2 = cut1 + 1 + (j % (segments.length - cut1 - 1));
        const a = segments.slice(0, cut1).join('/');
        const b = segments.slice(0, cut2).join('/');
        const c = segments.join('/');
        expect(isAncestorContext(a, b)).toBe(true);
        expect(isAncestorContext(b, c)).toBe(true);
        expect(isAncestorContext(a, c)).toBe(true);
      }),
    );
  });

  it('ancestry is transitive over arbitrary triples', () => {
    fc.assert(
      fc.property(path, path, path, (a, b, c) => {
        if (isAncestorContext(a, b) && isAncestorContext(b, c)) expect(isAncestorContext(a, c)).toBe(true);
      }),
    );
  });

  it('a string-prefix sibling is never in the subtree', () => {
    fc.assert(
      fc.property(path, segment, fc.option(path, { nil: undefined }), (p, extra, rest) => {
        const sibling = p + extra;
        const nested = rest === undefined ? sibling : `${sibling}/${rest}`;
        expect(isInSubtree(sibling, p)).toBe(false);
        expect(isInSubtree(nested, p)).toBe(false);
        expect(isAncestorContext(p, nested)).toBe(false);
        expect(subtree([{ context: nested }], p)).toEqual([]);
      }),
    );
  });

  it('the filters agree with the predicates', () => {
    const pool = fc.constantFrom('a', 'b', 'ab', 'a/b', 'a/bc', 'ab/c', 'a/b/c', 'b/a', 'a/b/c/d');
    const items = fc.array(fc.record({ context: fc.option(pool, { nil: undefined }) }), { maxLength: 20 });
    fc.assert(
      fc.property(items, pool, (list, root) => {
        expect(subtree(list, root)).toEqual(list.filter((i) => isInSubtree(i.context, root)));
        expect(directChildren(list, root)).toEqual(
          list.filter(
            (i) =>
              i.context !== undefined &&
              isAncestorContext(root, i.context) &&
              contextDepth(i.context) === contextDepth(root) + 1,
          ),
        );
        expect(rootContexts(list)).toEqual(
          list.filter((i) => i.context !== undefined && contextDepth(i.context) === 1),
        );
        expect(mainContextOnly(list)).toEqual(list.filter((i) => i.context === undefined));
        for (const item of list) {
          const inMain = mainContextOnly([item]).length === 1;
          const inOwnRootTree =
            item.context !== undefined && subtree([item], contextRoot(item.context)).length === 1;
          expect(inMain !== inOwnRootTree).toBe(true);
        }
      }),
    );
  });
});
