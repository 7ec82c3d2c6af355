/**
 * RFC 6962 compact ranges: the Merkle tree of the leaves `[begin, end)` of a larger tree, kept as
 * the roots of its maximal aligned perfect subtrees, left to right (at most two per level). A
 * worker of a parallel `verifyLedger` builds one over the records it checks, so that the walk can
 * add them to its tree with a few node hashes ({@link appendRange}) instead of one per record,
 * and can compute the root at a checkpoint inside the range from a copy taken there.
 *
 * Which subtrees make up `[begin, end)` follows from the two numbers alone ({@link rangeHeights}):
 * from `begin`, each time the highest subtree that starts there (aligned to its size) and ends at
 * or before `end`. So a range travels as its bounds and its digests.
 */
import { type LedgerTree, nodeDigest } from './ledger-tree.js';

/** The leaves `[begin, end)` of a tree as the digests (latin1, 32 bytes) of their subtrees. */
export interface CompactRange {
  readonly begin: number;
  readonly end: number;
  /** The subtrees' digests, left to right; their heights are {@link rangeHeights}. */
  readonly nodes: readonly string[];
}

/** The heights of the subtrees of the compact range `[begin, end)`, left to right. */
export function rangeHeights(begin: number, end: number): number[] {
  const heights: number[] = [];
  for (let at = begin; at < end; ) {
    let height = 0;
    // The subtree of height + 1 starts at `at` when `at` is a multiple of its size, and must fit.
    while (at % 2 ** (height + 1) === 0 && at + 2 ** (height + 1) <= end) height++;
    heights.push(height);
    at += 2 ** height;
  }
  return heights;
}

/** Builds the compact range of the leaves appended from `begin` on. */
export class RangeBuilder {
  readonly begin: number;
  #end: number;
  readonly #nodes: string[] = [];
  readonly #heights: number[] = [];

  constructor(begin: number) {
    this.begin = begin;
    this.#end = begin;
  }

  get end(): number {
    return this.#end;
  }

  /** Appends the leaf at index `end` (its digest, as `leafDigest` returns it). */
  append(leaf: string): void {
    const nodes = this.#nodes;
    const heights = this.#heights;
    let digest = leaf;
    let height = 0;
    // A right child merges with its left sibling when the range holds it (the range's first
    // subtrees have no sibling inside it: they stay as they are).
    for (let rest = this.#end; rest % 2 === 1 && heights[heights.length - 1] === height; height++) {
      digest = nodeDigest(nodes.pop() as string, digest);
      heights.pop();
      rest = (rest - 1) / 2;
    }
    nodes.push(digest);
    heights.push(height);
    this.#end++;
  }

  /** The range so far (a copy: appending more leaves does not change it). */
  range(): CompactRange {
    return { begin: this.begin, end: this.#end, nodes: [...this.#nodes] };
  }
}

/**
 * Appends the leaves of `range` to `tree`, which must end where the range begins.
 *
 * @throws RangeError when it does not.
 */
export function appendRange(tree: LedgerTree, range: CompactRange): void {
  if (tree.size !== range.begin)
    throw new RangeError(`a range from ${range.begin} cannot follow a tree of ${tree.size} leaves`);
  const heights = rangeHeights(range.begin, range.end);
  if (heights.length !== range.nodes.length)
    throw new RangeError(`a range [${range.begin}, ${range.end}) has ${heights.length} subtrees`);
  for (let i = 0; i < heights.length; i++) tree.appendSubtree(heights[i] as number, range.nodes[i] as string);
}

/** The root of `tree` followed by `range`, `tree` unchanged. @throws RangeError as {@link appendRange}. */
export function rootWithRange(tree: LedgerTree, range: CompactRange): Buffer {
  const extended = tree.copy();
  appendRange(extended, range);
  return extended.root();
}
