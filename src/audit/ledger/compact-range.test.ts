import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { appendRange, RangeBuilder, rangeHeights, rootWithRange } from './compact-range.js';
import { LedgerTree, leafDigest } from './ledger-tree.js';

const leaves = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => leafDigest(Buffer.from(`leaf ${i}`)));

function treeOf(list: readonly string[]): LedgerTree {
  const tree = new LedgerTree();
  for (const leaf of list) tree.append(leaf);
  return tree;
}

describe('compact ranges', () => {
  it('rangeHeights: the maximal aligned subtrees, left to right', () => {
    expect(rangeHeights(0, 0)).toEqual([]);
    expect(rangeHeights(0, 8)).toEqual([3]);
    expect(rangeHeights(0, 7)).toEqual([2, 1, 0]);
    expect(rangeHeights(3, 13)).toEqual([0, 2, 2, 0]);
    expect(rangeHeights(5, 6)).toEqual([0]);
    expect(rangeHeights(2 ** 40 - 1, 2 ** 40 + 3)).toEqual([0, 1, 0]);
  });

  it('a tree of [0, b) plus the range [b, e) is the tree of [0, e): roots, states and further leaves', () => {
    const all = leaves(300);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 290 }),
        fc.integer({ min: 0, max: 150 }),
        fc.integer({ min: 0, max: 9 }),
        (begin, length, more) => {
          const end = Math.min(300 - more, begin + length);
          const builder = new RangeBuilder(begin);
          for (let i = begin; i < end; i++) builder.append(all[i] as string);
          const range = builder.range();
          expect(range).toMatchObject({ begin, end });
          expect(range.nodes).toHaveLength(rangeHeights(begin, end).length);
          const prefix = treeOf(all.slice(0, begin));
          const whole = treeOf(all.slice(0, end));
          expect(rootWithRange(prefix, range).equals(whole.root())).toBe(true);
          expect(prefix.size).toBe(begin);
          appendRange(prefix, range);
          expect(prefix.state()).toEqual(whole.state());
          for (let i = end; i < end + more; i++) {
            prefix.append(all[i] as string);
            whole.append(all[i] as string);
          }
          expect(prefix.root().equals(whole.root())).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ranges one after another make the whole tree', () => {
    const all = leaves(200);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 199 }), { maxLength: 12 }), (cuts) => {
        const bounds = [0, ...[...cuts].sort((a, b) => a - b), 200];
        const tree = new LedgerTree();
        for (let k = 0; k + 1 < bounds.length; k++) {
          const builder = new RangeBuilder(bounds[k] as number);
          for (let i = bounds[k] as number; i < (bounds[k + 1] as number); i++)
            builder.append(all[i] as string);
          appendRange(tree, builder.range());
        }
        expect(tree.root().equals(treeOf(all).root())).toBe(true);
      }),
    );
  });

  it('refuses a range that does not start where the tree ends, or whose nodes do not fit its bounds', () => {
    const all = leaves(10);
    const builder = new RangeBuilder(4);
    for (let i = 4; i < 10; i++) builder.append(all[i] as string);
    expect(() => appendRange(treeOf(all.slice(0, 3)), builder.range())).toThrow(RangeError);
    expect(() => appendRange(treeOf(all.slice(0, 4)), { ...builder.range(), nodes: [] })).toThrow(RangeError);
    expect(() => treeOf(all.slice(0, 3)).appendSubtree(1, all[0] as string)).toThrow(RangeError);
  });

  it('a copy of a tree is independent of it', () => {
    const all = leaves(5);
    const tree = treeOf(all.slice(0, 3));
    const copy = tree.copy();
    copy.append(all[3] as string);
    expect(tree.size).toBe(3);
    expect(tree.root().equals(treeOf(all.slice(0, 3)).root())).toBe(true);
    expect(copy.root().equals(treeOf(all.slice(0, 4)).root())).toBe(true);
  });
});
