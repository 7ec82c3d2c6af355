import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  consistencyProof,
  emptyRoot,
  inclusionProof,
  leafHash,
  MerkleAccumulator,
  nodeHash,
  rootOf,
  verifyConsistency,
  verifyInclusion,
} from './merkle.js';

// The standard RFC 6962 test tree (Certificate Transparency / transparency-dev/merkle test data):
// eight leaves and the roots of their prefixes.
const LEAVES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map((hex) => Buffer.from(hex, 'hex'));
const ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const EMPTY = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const SOME_HASH = Buffer.from('abacaba000000000000000000000000000000000000000000060061e00123456', 'hex');

// [leaf index (0-based), tree size, audit path] from the same test data.
const INCLUSION: [number, number, string[]][] = [
  [0, 1, []],
  [
    0,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    5,
    8,
    [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [2, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
  [
    1,
    5,
    [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
];

// [old size, new size, consistency proof] from the same test data.
const CONSISTENCY: [number, number, string[]][] = [
  [1, 1, []],
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [
    2,
    5,
    [
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
  [
    6,
    7,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
];

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const unhex = (list: string[]): Buffer[] => list.map((h) => Buffer.from(h, 'hex'));
const LEAF_HASHES = LEAVES.map((leaf) => leafHash(leaf));
const root = (size: number): Buffer => Buffer.from(ROOTS[size - 1] as string, 'hex');

function flipBit(proof: readonly Uint8Array[], index: number, mask: number): Buffer[] {
  return proof.map((p, i) => {
    const copy = Buffer.from(p);
    if (i === index) copy[0] = (copy[0] as number) ^ mask;
    return copy;
  });
}

describe('hashing', () => {
  it('uses the RFC 6962 domain-separation prefixes', () => {
    const data = Buffer.from('data');
    expect(hex(leafHash(data))).toBe(
      createHash('sha256')
        .update(Buffer.concat([Buffer.of(0), data]))
        .digest('hex'),
    );
    expect(hex(leafHash('data'))).toBe(hex(leafHash(data)));
    const [a, b] = [LEAF_HASHES[0] as Buffer, LEAF_HASHES[1] as Buffer];
    expect(hex(nodeHash(a, b))).toBe(
      createHash('sha256')
        .update(Buffer.concat([Buffer.of(1), a, b]))
        .digest('hex'),
    );
  });

  it('hashes long leaves (growing its scratch buffer) correctly', () => {
    const big = Buffer.alloc(100_000, 7);
    expect(hex(leafHash(big))).toBe(
      createHash('sha256')
        .update(Buffer.concat([Buffer.of(0), big]))
        .digest('hex'),
    );
    expect(hex(leafHash('é'.repeat(3000)))).toBe(hex(leafHash(Buffer.from('é'.repeat(3000)))));
  });

  it('gives the empty tree the root H("")', () => {
    expect(hex(emptyRoot())).toBe(EMPTY);
    expect(hex(rootOf([]))).toBe(EMPTY);
    expect(hex(new MerkleAccumulator().root())).toBe(EMPTY);
  });
});

describe('known roots (RFC 6962 test tree)', () => {
  it('rootOf matches every prefix root', () => {
    for (let n = 1; n <= 8; n++) expect(hex(rootOf(LEAF_HASHES.slice(0, n)))).toBe(ROOTS[n - 1]);
  });

  it('the accumulator matches every prefix root as it grows', () => {
    const accumulator = new MerkleAccumulator();
    LEAVES.forEach((leaf, i) => {
      accumulator.appendLeaf(leaf);
      expect(accumulator.size).toBe(i + 1);
      expect(hex(accumulator.root())).toBe(ROOTS[i]);
    });
  });
});

describe('inclusion proofs', () => {
  it.each(INCLUSION)(
    'leaf %i of %i: generated proof equals the reference and verifies',
    (index, size, expected) => {
      const proof = inclusionProof(LEAF_HASHES, index, size);
      expect(proof.map(hex)).toEqual(expected);
      expect(verifyInclusion(LEAF_HASHES[index] as Buffer, index, size, unhex(expected), root(size))).toBe(
        true,
      );
    },
  );

  it.each(INCLUSION.filter(([, size]) => size > 1))(
    'leaf %i of %i: every corruption fails',
    (index, size, list) => {
      const proof = unhex(list);
      const leaf = LEAF_HASHES[index] as Buffer;
      const r = root(size);
      const probes: [number, number, Uint8Array, Uint8Array[], Uint8Array][] = [
        [index - 1, size, leaf, proof, r],
        [index + 1, size, leaf, proof, r],
        [index ^ 2, size, leaf, proof, r],
        [index, size * 2, leaf, proof, r],
        [index, Math.floor(size / 2), leaf, proof, r],
        [index, size, leafHash('WrongLeaf'), proof, r],
        [index, size, leaf, proof, Buffer.from(EMPTY, 'hex')],
        [index, size, leaf, proof, SOME_HASH],
        [index, size, leaf, [...proof, Buffer.alloc(0)], r],
        [index, size, leaf, [...proof, r], r],
        [index, size, leaf, [Buffer.alloc(0), ...proof], r],
        [index, size, leaf, [r, ...proof], r],
        [index, size, leaf, proof.slice(0, -1), r],
        [index, size, leaf, [proof[0] as Buffer, SOME_HASH, ...proof.slice(1)], r],
      ];
      for (let i = 0; i < proof.length; i++) probes.push([index, size, leaf, flipBit(proof, i, 8), r]);
      for (const [i, n, l, p, rt] of probes) expect(verifyInclusion(l, i, n, p, rt)).toBe(false);
    },
  );

  it('rejects impossible positions and wrong-length hashes without throwing', () => {
    const leaf = LEAF_HASHES[0] as Buffer;
    for (const [index, size] of [
      [0, 0],
      [1, 0],
      [2, 1],
      [-1, 4],
      [0.5, 4],
    ] as const) {
      expect(verifyInclusion(SOME_HASH, index, size, [], Buffer.from(EMPTY, 'hex'))).toBe(false);
    }
    expect(verifyInclusion(leaf, 0, 1, [], leaf)).toBe(true);
    expect(verifyInclusion(leaf, 0, 1, [], Buffer.alloc(0))).toBe(false);
    expect(verifyInclusion(Buffer.alloc(0), 0, 1, [], leaf)).toBe(false);
  });

  it('refuses to generate a proof for an index outside the tree', () => {
    expect(() => inclusionProof(LEAF_HASHES, 8, 8)).toThrow(/leaf index/);
    expect(() => inclusionProof(LEAF_HASHES, 0, 9)).toThrow(/tree size/);
  });
});

describe('consistency proofs', () => {
  it.each(CONSISTENCY)(
    '%i -> %i: generated proof equals the reference and verifies',
    (oldSize, newSize, expected) => {
      expect(consistencyProof(LEAF_HASHES, oldSize, newSize).map(hex)).toEqual(expected);
      expect(verifyConsistency(oldSize, newSize, root(oldSize), root(newSize), unhex(expected))).toBe(true);
    },
  );

  it.each(CONSISTENCY.filter(([, , proof]) => proof.length > 0))(
    '%i -> %i: every corruption fails',
    (oldSize, newSize, list) => {
      const proof = unhex(list);
      const [r1, r2] = [root(oldSize), root(newSize)];
      const wrong = Buffer.alloc(32, 9);
      const probes: [number, number, Uint8Array, Uint8Array, Uint8Array[]][] = [
        [oldSize - 1, newSize, r1, r2, proof],
        [oldSize + 1, newSize, r1, r2, proof],
        [oldSize ^ 2, newSize, r1, r2, proof],
        [oldSize, newSize * 2, r1, r2, proof],
        [oldSize, Math.floor(newSize / 2), r1, r2, proof],
        [oldSize, newSize, wrong, r2, proof],
        [oldSize, newSize, r1, wrong, proof],
        [oldSize, newSize, r2, r1, proof],
        [oldSize, newSize, r1, r2, []],
        [oldSize, newSize, r1, r2, [...proof, Buffer.alloc(0)]],
        [oldSize, newSize, r1, r2, [...proof, r1]],
        [oldSize, newSize, r1, r2, [...proof, r2]],
        [oldSize, newSize, r1, r2, [Buffer.alloc(0), ...proof]],
        [oldSize, newSize, r1, r2, [r1, ...proof]],
        [oldSize, newSize, r1, r2, [r2, ...proof]],
        [oldSize, newSize, r1, r2, [proof[0] as Buffer, ...proof]],
        [oldSize, newSize, r1, r2, proof.slice(0, -1)],
      ];
      for (let i = 0; i < proof.length; i++) probes.push([oldSize, newSize, r1, r2, flipBit(proof, i, 16)]);
      for (const [m, n, a, b, p] of probes) expect(verifyConsistency(m, n, a, b, p)).toBe(false);
    },
  );

  it('handles the trivial sizes strictly', () => {
    const empty = Buffer.from(EMPTY, 'hex');
    const r1 = root(1);
    expect(verifyConsistency(0, 0, empty, empty, [])).toBe(true);
    expect(verifyConsistency(0, 5, empty, root(5), [])).toBe(true);
    expect(verifyConsistency(0, 5, r1, root(5), [])).toBe(false); // size 0 must have the empty root
    expect(verifyConsistency(0, 1, empty, r1, [empty])).toBe(false); // and an empty proof
    expect(verifyConsistency(1, 1, r1, r1, [])).toBe(true);
    expect(verifyConsistency(1, 1, r1, root(2), [])).toBe(false);
    expect(verifyConsistency(1, 1, r1, r1, [r1])).toBe(false);
    expect(verifyConsistency(2, 1, root(2), r1, [])).toBe(false); // no time travel
    expect(verifyConsistency(1, 2, r1, root(2), [])).toBe(false);
    expect(consistencyProof(LEAF_HASHES, 0, 8)).toEqual([]);
    expect(() => consistencyProof(LEAF_HASHES, 5, 4)).toThrow(/exceeds/);
  });
});

describe('MerkleAccumulator state', () => {
  it('round-trips through JSON and resumes identically', () => {
    const accumulator = new MerkleAccumulator();
    for (const leaf of LEAVES.slice(0, 5)) accumulator.appendLeaf(leaf);
    const state = JSON.parse(JSON.stringify(accumulator.state()));
    expect(state.peaks).toHaveLength(2);
    const resumed = MerkleAccumulator.fromState(state);
    expect(resumed.size).toBe(5);
    expect(hex(resumed.root())).toBe(ROOTS[4]);
    for (const leaf of LEAVES.slice(5)) resumed.appendLeaf(leaf);
    expect(hex(resumed.root())).toBe(ROOTS[7]);
    expect(MerkleAccumulator.fromState({ size: 0, peaks: [] }).root()).toEqual(emptyRoot());
  });

  it('rejects malformed state', () => {
    const peak = 'a'.repeat(64);
    expect(() => MerkleAccumulator.fromState({ size: -1, peaks: [] })).toThrow(/size/);
    expect(() => MerkleAccumulator.fromState({ size: 1.5, peaks: [peak] })).toThrow(/size/);
    expect(() => MerkleAccumulator.fromState({ size: 3, peaks: [peak] })).toThrow(/2 peaks/);
    expect(() => MerkleAccumulator.fromState({ size: 1, peaks: ['A'.repeat(64)] })).toThrow(/hex/);
    expect(() => MerkleAccumulator.fromState({ size: 1, peaks: ['ab'] })).toThrow(/hex/);
  });

  it('copies what it stores and what it returns', () => {
    const accumulator = new MerkleAccumulator();
    const leaf = leafHash('x');
    accumulator.append(leaf);
    leaf.fill(0);
    const first = accumulator.root();
    first.fill(1);
    expect(hex(accumulator.root())).toBe(hex(leafHash('x')));
    expect(() => accumulator.append(Buffer.alloc(31))).toThrow(/32 bytes/);
  });
});

describe('properties', () => {
  const leavesArb = fc.array(fc.uint8Array({ maxLength: 12 }), { minLength: 1, maxLength: 40 });

  it('the accumulator root equals rootOf for every prefix, and state round-trips', () => {
    fc.assert(
      fc.property(leavesArb, (leaves) => {
        const hashes = leaves.map((leaf) => leafHash(leaf));
        const accumulator = new MerkleAccumulator();
        hashes.forEach((h, i) => {
          accumulator.append(h);
          expect(accumulator.root()).toEqual(rootOf(hashes.slice(0, i + 1)));
          expect(MerkleAccumulator.fromState(accumulator.state()).root()).toEqual(accumulator.root());
        });
      }),
      { numRuns: 60 },
    );
  });

  it('every inclusion proof verifies; a mutated proof, leaf or index does not', () => {
    fc.assert(
      fc.property(leavesArb, fc.nat(), fc.nat(), (leaves, a, b) => {
        const hashes = leaves.map((leaf) => leafHash(leaf));
        const size = 1 + (a % hashes.length);
        const index = b % size;
        const r = rootOf(hashes.slice(0, size));
        const proof = inclusionProof(hashes, index, size);
        const leaf = hashes[index] as Buffer;
        expect(verifyInclusion(leaf, index, size, proof, r)).toBe(true);
        expect(verifyInclusion(leafHash('not a leaf'), index, size, proof, r)).toBe(false);
        for (let i = 0; i < proof.length; i++) {
          expect(verifyInclusion(leaf, index, size, flipBit(proof, i, 1), r)).toBe(false);
        }
        if (proof.length > 0) expect(verifyInclusion(leaf, index, size, proof.slice(1), r)).toBe(false);
        if (size > 1 && !(hashes[(index + 1) % size] as Buffer).equals(leaf)) {
          expect(verifyInclusion(leaf, (index + 1) % size, size, proof, r)).toBe(false);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('consistency proofs verify between every pair of sizes and fail for wrong roots', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 4 }), { minLength: 1, maxLength: 17 }), (leaves) => {
        const hashes = leaves.map((leaf, i) => leafHash(Buffer.concat([Buffer.of(i), leaf])));
        const roots = [emptyRoot(), ...hashes.map((_, i) => rootOf(hashes.slice(0, i + 1)))];
        for (let n = 0; n <= hashes.length; n++) {
          for (let m = 0; m <= n; m++) {
            const proof = consistencyProof(hashes, m, n);
            const [rm, rn] = [roots[m] as Buffer, roots[n] as Buffer];
            expect(verifyConsistency(m, n, rm, rn, proof)).toBe(true);
            if (m > 0 && m < n) {
              expect(verifyConsistency(m, n, rn, rm, proof)).toBe(false);
              expect(verifyConsistency(m, n, roots[m - 1] as Buffer, rn, proof)).toBe(false);
              expect(verifyConsistency(m, n, rm, roots[n - 1] as Buffer, proof)).toBe(false);
              expect(verifyConsistency(m, n, rm, rn, flipBit(proof, proof.length - 1, 1))).toBe(false);
            }
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});
