/**
 * The byte format of one ledger record (docs/audit-ledger.md, "Records"):
 *
 * ```
 * line       = canonical[0 .. len-1] + ',"entry_hash":"' + entry_hash + '"}'
 * canonical  = RFC 8785 canonical JSON of the record without entry_hash
 * entry_hash = hex(SHA-256("switchboard/audit/v1\n" + canonical))
 * ```
 *
 * So the hashed bytes are exactly the line without its fixed-length suffix, plus the closing `}`:
 * a verifier recomputes the hash from the bytes on disk with no re-canonicalization (the reason a
 * single core verifies hundreds of thousands of records per second), while any third party can
 * still re-derive it from the parsed JSON with a stock JCS implementation. The domain tag keeps a
 * ledger hash from ever being confused with a hash of the same bytes in another protocol.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-record.js';

/** Prefixed to the canonical record before hashing (a domain-separation tag, version included). */
export const ENTRY_HASH_DOMAIN = 'switchboard/audit/v1\n';

/** `prev_hash` of the first record: 64 zeros. */
export const GENESIS_HASH = '0'.repeat(64);

/** What precedes the hash in a line's suffix. */
export const ENTRY_HASH_SUFFIX_HEAD = ',"entry_hash":"';

/** Length of the suffix `,"entry_hash":"<64 hex>"}` (81 bytes, ASCII). */
export const ENTRY_HASH_SUFFIX_LENGTH = ENTRY_HASH_SUFFIX_HEAD.length + 64 + 2;

const HEX64 = /^[0-9a-f]{64}$/;

/** The `entry_hash` of a record whose canonical JSON (without `entry_hash`) is `canonical`. */
export function entryHashOf(canonical: string): string {
  return hash('sha256', ENTRY_HASH_DOMAIN + canonical, 'hex');
}

/** A record line (without its newline) and its entry hash. */
export interface EncodedRecordLine {
  readonly line: string;
  readonly entryHash: string;
}

/**
 * Encodes a record body (every member but `entry_hash`) as a ledger line.
 *
 * @throws SwitchboardError `SB_INTERNAL` when the body is not canonicalizable JSON (the ledger
 *   sanitizes every member first, so this means a bug).
 */
export function encodeRecordLine(body: Readonly<Record<string, unknown>>): EncodedRecordLine {
  const canonical = canonicalJson(body);
  const entryHash = entryHashOf(canonical);
  return { line: `${canonical.slice(0, -1)}${ENTRY_HASH_SUFFIX_HEAD}${entryHash}"}`, entryHash };
}

/** A line split into the canonical text that was hashed and the hash it states. */
export interface SplitRecordLine {
  readonly hashed: string;
  readonly entryHash: string;
}

/**
 * The inverse of {@link encodeRecordLine}: the hashed text and the stated hash, or `undefined`
 * when the line does not end with a well-formed `,"entry_hash":"<64 lowercase hex>"}` suffix.
 * It does not check the hash; compare `entryHashOf(hashed)` with `entryHash` for that.
 */
export function splitRecordLine(line: string): SplitRecordLine | undefined {
  const at = line.length - ENTRY_HASH_SUFFIX_LENGTH;
  if (at < 1 || !line.startsWith(ENTRY_HASH_SUFFIX_HEAD, at) || !line.endsWith('"}')) return undefined;
  const entryHash = line.slice(at + ENTRY_HASH_SUFFIX_HEAD.length, line.length - 2);
  if (!HEX64.test(entryHash)) return undefined;
  return { hashed: `${line.slice(0, at)}}`, entryHash };
}

/** Whether `value` is 64 lowercase hex digits (the form of every hash in the ledger). */
export function isHex64(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}
