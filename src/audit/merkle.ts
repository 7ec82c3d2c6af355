/**
 * RFC 6962 / RFC 9162 Merkle trees with SHA-256, over byte leaves (the audit ledger's leaves are
 * its raw JSONL line bytes). Domain separation is the RFC's: leaf hash = H(0x00 || leaf), node hash
 * = H(0x01 || left || right), and the empty tree's root is H(""); without the prefixes a leaf could
 * pose as an interior node (the second-preimage weakness of "Bitcoin-style" trees).
 *
 * The writer keeps a {@link MerkleAccumulator} (a compact range: one hash per set bit of the size),
 * so checkpointing never re-reads the log. Proof generation takes the full list of leaf hashes and
 * is meant for the verifier and tests. Verification follows RFC 9162 §2.1.3.2 and §2.1.4.2.
 *
 * Sizes and indexes are plain numbers up to 2^53 - 1; no bitwise operator is used on them, so logs
 * larger than 2^32 records behave.
 */
import { hash } from 'node:crypto';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';

/** Bytes of a SHA-256 hash. */
export const HASH_SIZE = 32;

const EMPTY_ROOT: Buffer = hash('sha256', new Uint8Array(0), 'buffer');

/** Root of the empty tree, SHA-256 of the empty string (e3b0c442...). A fresh copy each call. */
export function emptyRoot(): Buffer {
  return Buffer.from(EMPTY_ROOT);
}

// Reused input buffers: hashing is synchronous, so one scratch per shape is safe and saves an
// allocation per hash on the append path.
const nodeScratch = Buffer.alloc(1 + 2 * HASH_SIZE);
nodeScratch[0] = 0x01;
let leafScratch = Buffer.alloc(1024);

/** The RFC 6962 leaf hash H(0x00 || leaf); a string leaf is hashed as its UTF-8 bytes. */
export function leafHash(leaf: Uint8Array | string): Buffer {
  const length = typeof leaf === 'string' ? Buffer.byteLength(leaf, 'utf8') : leaf.length;
  if (leafScratch.length < length + 1) {
    leafScratch = Buffer.alloc(Math.max(length + 1, leafScratch.length * 2));
  }
  leafScratch[0] = 0x00;
  if (typeof leaf === 'string') leafScratch.write(leaf, 1, 'utf8');
  else leafScratch.set(leaf, 1);
  return hash('sha256', leafScratch.subarray(0, length + 1), 'buffer');
}

/** The RFC 6962 interior node hash H(0x01 || left || right); both inputs are 32-byte hashes. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  nodeScratch.set(left, 1);
  nodeScratch.set(right, 1 + HASH_SIZE);
  return hash('sha256', nodeScratch, 'buffer');
}

function invalid(message: string): SwitchboardError {
  return new SwitchboardError(SbErrorCode.Internal, `Merkle: ${message}`);
}

function isSize(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isHash(value: Uint8Array): boolean {
  return value instanceof Uint8Array && value.length === HASH_SIZE;
}

function equalHashes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function popCount(size: number): number {
  let count = 0;
  for (let rest = size; rest > 0; rest = Math.floor(rest / 2)) count += rest % 2;
  return count;
}

/** Largest power of two strictly below `n` (n >= 2): the RFC's split point k. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The persisted form of a {@link MerkleAccumulator}: JSON-friendly, a few hundred bytes at most. */
export interface MerkleAccumulatorState {
  /** Number of leaves appended. */
  readonly size: number;
  /** Roots of the perfect subtrees covering [0, size), largest (leftmost) first, lowercase hex. */
  readonly peaks: readonly string[];
}

/**
 * An append-only Merkle tree that keeps only its compact range: the roots of the perfect subtrees
 * covering the leaves, one per set bit of `size` (at most 53). `append` is O(1) amortised (one
 * node hash on average), `root()` is O(log n). Persist {@link state} next to each checkpoint and
 * resume with {@link fromState} instead of re-reading the log.
 */
export class MerkleAccumulator {
  #size = 0;
  /** Subtree roots, leftmost (largest) first. */
  readonly #peaks: Buffer[] = [];
  #root: Buffer | undefined = EMPTY_ROOT;

  /** Number of leaves appended so far. */
  get size(): number {
    return this.#size;
  }

  /** Appends one leaf by its leaf hash (see {@link leafHash}); the hash must be 32 bytes. */
  append(leafHashValue: Uint8Array): void {
    if (leafHashValue.length !== HASH_SIZE) throw invalid(`a leaf hash is ${HASH_SIZE} bytes`);
    if (this.#size >= Number.MAX_SAFE_INTEGER) throw invalid('the tree is full');
    // Each trailing 1-bit of the old size is a perfect subtree of the new leaf's height: merge it.
    // The caller's buffer is only copied when it is stored as is (nodeHash copies its inputs).
    let rest = this.#size;
    let hashValue: Buffer;
    if (rest % 2 === 0) {
      hashValue = Buffer.from(leafHashValue);
    } else {
      hashValue = nodeHash(this.#peaks.pop() as Buffer, leafHashValue);
      for (rest = (rest - 1) / 2; rest % 2 === 1; rest = (rest - 1) / 2) {
        hashValue = nodeHash(this.#peaks.pop() as Buffer, hashValue);
      }
    }
    this.#peaks.push(hashValue);
    this.#size++;
    this.#root = undefined;
  }

  /** Appends a raw leaf: shorthand for `append(leafHash(leaf))`. */
  appendLeaf(leaf: Uint8Array | string): void {
    this.append(leafHash(leaf));
  }

  /** The RFC 6962 root of the tree so far (the empty root at size 0). The result is a fresh copy. */
  root(): Buffer {
    if (this.#root === undefined) {
      const peaks = this.#peaks;
      let acc = peaks[peaks.length - 1] as Buffer;
      for (let i = peaks.length - 2; i >= 0; i--) acc = nodeHash(peaks[i] as Buffer, acc);
      this.#root = acc;
    }
    return Buffer.from(this.#root);
  }

  /** A snapshot that {@link fromState} turns back into an equal accumulator. */
  state(): MerkleAccumulatorState {
    return { size: this.#size, peaks: this.#peaks.map((peak) => peak.toString('hex')) };
  }

  /**
   * Rebuilds an accumulator from {@link state}.
   *
   * @throws SwitchboardError `SB_INTERNAL` when the state is malformed (size not a safe integer,
   *   wrong number of peaks for the size, a peak that is not 64 lowercase hex digits).
   */
  static fromState(state: MerkleAccumulatorState): MerkleAccumulator {
    if (!isSize(state.size)) throw invalid('state size must be a non-negative safe integer');
    if (!Array.isArray(state.peaks) || state.peaks.length !== popCount(state.size)) {
      throw invalid(`state of size ${state.size} must hold ${popCount(state.size)} peaks`);
    }
    const accumulator = new MerkleAccumulator();
    for (const peak of state.peaks) {
      if (typeof peak !== 'string' || !/^[0-9a-f]{64}$/.test(peak)) {
        throw invalid('state peaks must be 64 lowercase hex digits');
      }
      accumulator.#peaks.push(Buffer.from(peak, 'hex'));
    }
    accumulator.#size = state.size;
    accumulator.#root = state.size === 0 ? EMPTY_ROOT : undefined;
    return accumulator;
  }
}

/** Merkle Tree Hash of leafHashes[lo, hi), hi > lo, per RFC 9162 §2.1.1. */
function subtreeRoot(leafHashes: readonly Uint8Array[], lo: number, hi: number): Buffer {
  if (hi - lo === 1) return Buffer.from(leafHashes[lo] as Uint8Array);
  const k = splitPoint(hi - lo);
  return nodeHash(subtreeRoot(leafHashes, lo, lo + k), subtreeRoot(leafHashes, lo + k, hi));
}

function checkLeafHashes(leafHashes: readonly Uint8Array[], size: number): void {
  if (!isSize(size) || size > leafHashes.length) {
    throw invalid(`tree size ${size} is not within the ${leafHashes.length} leaf hashes given`);
  }
  for (let i = 0; i < size; i++) {
    if (!isHash(leafHashes[i] as Uint8Array)) throw invalid(`leaf hash ${i} is not ${HASH_SIZE} bytes`);
  }
}

/** The RFC 6962 root over all of `leafHashes` (each a 32-byte {@link leafHash}). O(n). */
export function rootOf(leafHashes: readonly Uint8Array[]): Buffer {
  checkLeafHashes(leafHashes, leafHashes.length);
  if (leafHashes.length === 0) return Buffer.from(EMPTY_ROOT);
  return subtreeRoot(leafHashes, 0, leafHashes.length);
}

function path(leafHashes: readonly Uint8Array[], index: number, lo: number, hi: number, out: Buffer[]): void {
  if (hi - lo <= 1) return;
  const k = splitPoint(hi - lo);
  if (index < lo + k) {
    path(leafHashes, index, lo, lo + k, out);
    out.push(subtreeRoot(leafHashes, lo + k, hi));
  } else {
    path(leafHashes, index, lo + k, hi, out);
    out.push(subtreeRoot(leafHashes, lo, lo + k));
  }
}

/**
 * The RFC 9162 §2.1.3.1 inclusion proof (audit path) of leaf `index` in the tree made of the first
 * `treeSize` leaf hashes, innermost sibling first. O(treeSize) hashing.
 *
 * @throws SwitchboardError `SB_INTERNAL` unless 0 <= index < treeSize <= leafHashes.length.
 */
export function inclusionProof(leafHashes: readonly Uint8Array[], index: number, treeSize: number): Buffer[] {
  checkLeafHashes(leafHashes, treeSize);
  if (!isSize(index) || index >= treeSize) {
    throw invalid(`leaf index ${index} is not below tree size ${treeSize}`);
  }
  const out: Buffer[] = [];
  path(leafHashes, index, 0, treeSize, out);
  return out;
}

/**
 * Whether `proof` shows that the leaf with hash `leafHashValue` sits at `index` in the tree of
 * `treeSize` leaves whose root is `root` (RFC 9162 §2.1.3.2). Never throws: malformed input
 * (wrong hash lengths, index out of range, a proof too short or too long) is simply `false`.
 */
export function verifyInclusion(
  leafHashValue: Uint8Array,
  index: number,
  treeSize: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  if (!isSize(index) || !isSize(treeSize) || index >= treeSize) return false;
  if (!isHash(leafHashValue) || !isHash(root) || !proof.every(isHash)) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r: Buffer = Buffer.from(leafHashValue);
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn /= 2;
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalHashes(r, root);
}

function subproof(
  leafHashes: readonly Uint8Array[],
  m: number,
  lo: number,
  hi: number,
  complete: boolean,
  out: Buffer[],
): void {
  const n = hi - lo;
  if (m === n) {
    if (!complete) out.push(subtreeRoot(leafHashes, lo, hi));
    return;
  }
  const k = splitPoint(n);
  if (m <= k) {
    subproof(leafHashes, m, lo, lo + k, complete, out);
    out.push(subtreeRoot(leafHashes, lo + k, hi));
  } else {
    subproof(leafHashes, m - k, lo + k, hi, false, out);
    out.push(subtreeRoot(leafHashes, lo, lo + k));
  }
}

/**
 * The RFC 9162 §2.1.4.1 consistency proof that the tree of the first `oldSize` leaf hashes is a
 * prefix of the tree of the first `newSize`. Empty when oldSize is 0 or equals newSize.
 *
 * @throws SwitchboardError `SB_INTERNAL` unless 0 <= oldSize <= newSize <= leafHashes.length.
 */
export function consistencyProof(
  leafHashes: readonly Uint8Array[],
  oldSize: number,
  newSize: number,
): Buffer[] {
  checkLeafHashes(leafHashes, newSize);
  if (!isSize(oldSize) || oldSize > newSize) throw invalid(`old size ${oldSize} exceeds new size ${newSize}`);
  const out: Buffer[] = [];
  if (oldSize > 0 && oldSize < newSize) subproof(leafHashes, oldSize, 0, newSize, true, out);
  return out;
}

/**
 * Whether `proof` shows that the tree of `oldSize` leaves with root `oldRoot` is a prefix of the
 * tree of `newSize` leaves with root `newRoot` (RFC 9162 §2.1.4.2). Never throws.
 *
 * Edge cases, stricter than some implementations on purpose (an audit verifier should not accept a
 * checkpoint whose root cannot be right): equal sizes need equal roots and an empty proof; oldSize 0
 * needs an empty proof and `oldRoot` equal to {@link emptyRoot}; oldSize > newSize is `false`.
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  if (!isSize(oldSize) || !isSize(newSize) || oldSize > newSize) return false;
  if (!isHash(oldRoot) || !isHash(newRoot) || !proof.every(isHash)) return false;
  if (oldSize === 0) return proof.length === 0 && equalHashes(oldRoot, EMPTY_ROOT);
  if (oldSize === newSize) return proof.length === 0 && equalHashes(oldRoot, newRoot);
  if (proof.length === 0) return false;
  // When oldSize is a power of two, the old root is itself the first node of the path.
  let isPowerOfTwo = true;
  for (let rest = oldSize; rest > 1; rest /= 2) {
    if (rest % 2 === 1) {
      isPowerOfTwo = false;
      break;
    }
  }
  const nodes = isPowerOfTwo ? [oldRoot, ...proof] : proof;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (fn % 2 === 1) {
    fn = (fn - 1) / 2;
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(nodes[0] as Uint8Array);
  let sr: Buffer = Buffer.from(nodes[0] as Uint8Array);
  for (let i = 1; i < nodes.length; i++) {
    const c = nodes[i] as Uint8Array;
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn /= 2;
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equalHashes(fr, oldRoot) && equalHashes(sr, newRoot);
}
