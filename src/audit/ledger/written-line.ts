/**
 * The verifier's fast path for a line the writer produced, shared by the sequential walk
 * (verify.ts) and the parallel segments (verify-segment.ts): `checkCanonicalRecordLine` proves the
 * line a canonical valid record with the expected seq and prev_hash from its bytes, then the entry
 * hash is recomputed where the line lies and compared with the one it states, and the Merkle leaf
 * is hashed on the way. Anything it cannot prove is "not proven" (`undefined`), never "tampered":
 * the caller's general path decides and names the failure.
 */
import { hash } from 'node:crypto';
import { checkCanonicalRecordLine, latin1 } from './canonical-line-check.js';
import { leafDigest } from './ledger-tree.js';
import { ENTRY_HASH_DOMAIN, ENTRY_HASH_SUFFIX_HEAD, ENTRY_HASH_SUFFIX_LENGTH } from './record-line.js';

const DOMAIN = Buffer.from(ENTRY_HASH_DOMAIN, 'utf8');
const SUFFIX_HEAD = Buffer.from(ENTRY_HASH_SUFFIX_HEAD, 'latin1');

/** Recomputes entry hashes from line bytes with one reused buffer: domain + line minus suffix + `}`. */
export class EntryHasher {
  #scratch = Buffer.alloc(64 * 1024);

  constructor() {
    this.#scratch.set(DOMAIN);
  }

  /** The entry hash of the line `data[start, end)`, which must be longer than the suffix. */
  of(data: Buffer, start: number, end: number): string {
    const hashed = end - start - ENTRY_HASH_SUFFIX_LENGTH;
    const total = DOMAIN.length + hashed + 1;
    if (this.#scratch.length < total) {
      this.#scratch = Buffer.alloc(total * 2);
      this.#scratch.set(DOMAIN);
    }
    data.copy(this.#scratch, DOMAIN.length, start, start + hashed);
    this.#scratch[total - 1] = 0x7d;
    return hash('sha256', this.#scratch.subarray(0, total), 'hex');
  }
}

/** The entry hash {@link hashInPlace} computed last (module state: no object per line). */
let inPlaceEntryHash = '';

/**
 * The Merkle leaf digest (returned) and the entry hash ({@link inPlaceEntryHash}) of the line
 * `data[start, end)`, hashed where it lies instead of copied: the bytes before the line, those of
 * lines already visited and never read again by the scanner, are overwritten with each hash's
 * prefix (`0x00`, then the domain tag), and the suffix's comma is `}` for the entry hash, then put
 * back. Needs `start >= DOMAIN.length`. The line's own bytes are unchanged afterwards.
 */
function hashInPlace(data: Buffer, start: number, end: number): string {
  data[start - 1] = 0x00;
  const leaf = hash('sha256', data.subarray(start - 1, end), 'binary');
  const from = start - DOMAIN.length;
  for (let k = 0; k < DOMAIN.length; k++) data[from + k] = DOMAIN[k] as number;
  const close = end - ENTRY_HASH_SUFFIX_LENGTH;
  data[close] = 0x7d;
  inPlaceEntryHash = hash('sha256', data.subarray(from, close + 1), 'hex');
  data[close] = 0x2c;
  return leaf;
}

/** Whether `data[end - 81, end)` is the suffix `,"entry_hash":"<hash>"}` for this hex `hash`. */
function statesHash(data: Buffer, end: number, hash: string): boolean {
  const at = end - ENTRY_HASH_SUFFIX_LENGTH;
  for (let k = 0; k < SUFFIX_HEAD.length; k++) if (data[at + k] !== SUFFIX_HEAD[k]) return false;
  const hexAt = at + SUFFIX_HEAD.length;
  return data[end - 2] === 0x22 && data[end - 1] === 0x7d && latin1(data, hexAt, hexAt + 64) === hash;
}

/** The leaf digest (latin1) of the line {@link verifyWrittenLine} proved last. */
export let writtenLineLeaf = '';

/**
 * The entry hash of the record line `data[start, end)` (a scanned line: `data[end]` is its newline,
 * and `data[0, start)` may be overwritten) when the fast path proves it: valid UTF-8 (`utf8`, from
 * the scanner), canonical, a valid record with `seq` and `prev`, and stating its true entry hash.
 * Its leaf digest is then in {@link writtenLineLeaf}. `undefined`: not proven.
 */
export function verifyWrittenLine(
  hasher: EntryHasher,
  data: Buffer,
  start: number,
  end: number,
  utf8: boolean,
  seq: number,
  prev: string,
): string | undefined {
  if (!utf8 || !checkCanonicalRecordLine(data, start, end, seq, prev)) return undefined;
  let entryHash: string;
  if (start >= DOMAIN.length) {
    writtenLineLeaf = hashInPlace(data, start, end);
    entryHash = inPlaceEntryHash;
  } else {
    writtenLineLeaf = leafDigest(data, start, end);
    entryHash = hasher.of(data, start, end);
  }
  return statesHash(data, end, entryHash) ? entryHash : undefined;
}
