import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leafHash, MerkleAccumulator } from '../merkle.js';
import { LedgerTree, leafDigest } from './ledger-tree.js';

describe('LedgerTree', () => {
  it('has the roots and states of MerkleAccumulator at every size', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 70 }), (leaves) => {
        const tree = new LedgerTree();
        const reference = new MerkleAccumulator();
        expect(tree.root()).toEqual(reference.root());
        for (const leaf of leaves) {
          tree.appendLine(Buffer.from(leaf));
          reference.appendLeaf(leaf);
          expect(tree.root()).toEqual(reference.root());
        }
        expect(tree.state()).toEqual(reference.state());
        expect(LedgerTree.fromState(reference.state()).root()).toEqual(reference.root());
      }),
      { numRuns: 100 },
    );
  });

  it('hashes a range of a buffer as its own leaf, and resumes from a state', () => {
    const data = Buffer.from('xxhello worldyy');
    expect(Buffer.from(leafDigest(data, 2, 13), 'latin1')).toEqual(leafHash('hello world'));
    const tree = new LedgerTree();
    for (const word of ['a', 'b', 'c']) tree.appendLine(Buffer.from(word));
    const resumed = LedgerTree.fromState(tree.state());
    resumed.appendLine(Buffer.from('d'));
    tree.appendLine(Buffer.from('d'));
    expect(resumed.size).toBe(4);
    expect(resumed.root()).toEqual(tree.root());
    expect(() => LedgerTree.fromState({ size: 3, peaks: ['00'] })).toThrow();
  });
});
