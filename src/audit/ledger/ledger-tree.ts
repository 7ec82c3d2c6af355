/**
 * The ledger's Merkle accumulator: the same RFC 6962 tree and compact range as `MerkleAccumulator`
 * (src/audit/merkle.ts), and the same persisted state, tuned for the two hot paths that hash every
 * record (the writer and the verifier).
 *
 * On Node 20, `crypto.hash(..., 'buffer')` allocates an external ArrayBuffer per call, which costs
 * more than hashing a 500-byte line. Here digests are kept as 32-character latin1 strings (one
 * byte per character, no allocation beyond the string) and the inputs of leaf and node hashes are
 * assembled in one reused scratch buffer. Roots and states are identical to `MerkleAccumulator`'s
 * (the tests compare them), so either can resume from the other's state.
 */
import { hash } from 'node:crypto';
import { MerkleAccumulator, type MerkleAccumulatorState } from '../merkle.js';

let scratch = Buffer.alloc(4096);

function ensureScratch(length: number): Buffer {
  if (scratch.length < length) scratch = Buffer.alloc(Math.max(length, scratch.length * 2));
  return scratch;
}

/** RFC 6962 leaf hash of the bytes `data[start, end)` (default: all of it), as a latin1 digest string. */
export function leafDigest(data: Buffer, start = 0, end = data.length): string {
  const input = ensureScratch(end - start + 1);
  input[0] = 0x00;
  data.copy(input, 1, start, end);
  return hash('sha256', input.subarray(0, end - start + 1), 'binary');
}

/** The input of a node hash: 0x01, then the two child digests (filled per call). */
const NODE_INPUT = Buffer.alloc(65, 0x01);

/**
 * RFC 6962 node hash of two latin1 digests, as a latin1 digest. The digests are copied in by a
 * loop (one character per byte), cheaper here than two `Buffer#write` calls and a view.
 */
export function nodeDigest(left: string, right: string): string {
  const input = NODE_INPUT;
  for (let k = 0; k < 32; k++) {
    input[1 + k] = left.charCodeAt(k);
    input[33 + k] = right.charCodeAt(k);
  }
  return hash('sha256', input, 'binary');
}

const EMPTY_ROOT = new MerkleAccumulator().root();

/** An append-only RFC 6962 tree keeping only its compact range; see the module comment. */
export class LedgerTree {
  #size = 0;
  /** Roots of the perfect subtrees covering [0, size), leftmost (largest) first. */
  readonly #peaks: string[] = [];

  /** Leaves appended so far. */
  get size(): number {
    return this.#size;
  }

  /** Appends a leaf by its digest ({@link leafDigest}). */
  append(leaf: string): void {
    this.#push(1, leaf);
  }

  /**
   * Appends the 2^height leaves under a perfect subtree at once, by its root's digest. The size must
   * be a multiple of 2^height (the subtree is aligned, as the subtrees of a compact range are).
   */
  appendSubtree(height: number, digest: string): void {
    const leaves = 2 ** height;
    if (this.#size % leaves !== 0)
      throw new RangeError(`a subtree of ${leaves} leaves cannot follow ${this.#size}`);
    this.#push(leaves, digest);
  }

  /**
   * Adds the root of an aligned perfect subtree of `leaves` leaves (a leaf: 1), merging it with the
   * peaks it completes: one node hash per peak of its height or more that it closes.
   */
  #push(leaves: number, digest: string): void {
    let node = digest;
    for (let rest = this.#size / leaves; rest % 2 === 1; rest = (rest - 1) / 2) {
      node = nodeDigest(this.#peaks.pop() as string, node);
    }
    this.#peaks.push(node);
    this.#size += leaves;
  }

  /** An independent copy (appending to either leaves the other as it was). */
  copy(): LedgerTree {
    const tree = new LedgerTree();
    tree.#peaks.push(...this.#peaks);
    tree.#size = this.#size;
    return tree;
  }

  /** Appends a record line: its bytes without the newline, `data[start, end)` (default: all of it). */
  appendLine(data: Buffer, start = 0, end = data.length): void {
    this.append(leafDigest(data, start, end));
  }

  /** The RFC 6962 root (SHA-256 of "" when empty). */
  root(): Buffer {
    const peaks = this.#peaks;
    if (peaks.length === 0) return Buffer.from(EMPTY_ROOT);
    let acc = peaks[peaks.length - 1] as string;
    for (let i = peaks.length - 2; i >= 0; i--) acc = nodeDigest(peaks[i] as string, acc);
    return Buffer.from(acc, 'latin1');
  }

  /** The state `MerkleAccumulator.fromState` and {@link LedgerTree.fromState} accept. */
  state(): MerkleAccumulatorState {
    return {
      size: this.#size,
      peaks: this.#peaks.map((peak) => Buffer.from(peak, 'latin1').toString('hex')),
    };
  }

  /**
   * A tree from a persisted state.
   *
   * @throws SwitchboardError `SB_INTERNAL` when the state is malformed (checked by `MerkleAccumulator`).
   */
  static fromState(state: MerkleAccumulatorState): LedgerTree {
    MerkleAccumulator.fromState(state);
    const tree = new LedgerTree();
    for (const peak of state.peaks) tree.#peaks.push(Buffer.from(peak, 'hex').toString('latin1'));
    tree.#size = state.size;
    return tree;
  }
}
