/**
 * The verifier's fast path: one pass over a record line's bytes that proves, without `JSON.parse`
 * and without re-encoding, that the line is exactly what the writer produces (the RFC 8785
 * canonical JSON of a valid v1 record, followed by its `entry_hash` member), and that its `seq` and
 * `prev_hash` are the ones its position requires.
 *
 * Soundness. {@link checkCanonicalRecordLine} returns `true` only if all of these hold, each
 * checked on the bytes:
 *
 * - The body `line[0 .. len-81] + "}"` matches a strict subset of the JSON grammar: no white space,
 *   strings without any escape or raw control character (the bytes were validated as UTF-8 by the
 *   caller, so every other character stands for itself), numbers whose text is exactly ES
 *   `Number.prototype.toString` of their value (an integer of at most 15 digits with no leading
 *   zero is; anything else is compared with `String(Number(text))`), and every object's member
 *   names strictly increasing in byte order, which for names without U+E000 and above (refused
 *   here) is the UTF-16 code unit order of RFC 8785 §3.2.3, and, being strict, rules out duplicate
 *   names. Such a text is the RFC 8785 serialization of the value it denotes: it is canonical.
 * - Its top-level members are v1 record members (never `entry_hash`), and their values pass the same
 *   checks as `recordSchemaProblem`: every required member, `v` 1, `seq` the expected one, `ts` in
 *   its format, `tier` and `decision` from their lists, `duration_ms` a number >= 0, hashes 64
 *   lowercase hex, `output_len` a safe integer with `output_sha256`, strings where strings go.
 * - `prev_hash` is byte-for-byte the previous record's (verified) entry hash.
 *
 * The line then ends with the fixed suffix `,"entry_hash":"<hex>"}` (checked by the caller, which
 * also compares the hex with the hash it computes over the body bytes), so `JSON.parse` of the
 * whole line would give exactly the body's members plus `entry_hash`. Every check of the general
 * path (JSON, schema, hash, seq, prev_hash, canonical form) therefore holds for an accepted line.
 * A `false` proves nothing: the caller runs the general path, which decides and names the failure.
 * So the fast path can only be too strict (an escape in a string, say, costs a `JSON.parse` and a
 * re-encoding), never too lenient.
 */
import { DECISIONS, TIERS } from './audit-event.js';
import { ENTRY_HASH_SUFFIX_LENGTH } from './record-line.js';

const FAIL = -1;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
const DOT = 0x2e;

/** Containers nested deeper than this go to the general path (the writer caps `args` at 32). */
const MAX_DEPTH = 64;

/** The lead byte of U+E000 and above: names containing it are left to the general path. */
const HIGH_LEAD = 0xee;

/** Kinds of top-level members. */
const V = 0;
const SEQ = 1;
const TS = 2;
const NON_EMPTY_STRING = 3;
const TIER = 4;
const DECISION = 5;
const NON_NEGATIVE_NUMBER = 6;
const PREV_HASH = 7;
const STRING = 8;
const ANY = 9;
const HASH = 10;
const COUNT = 11;

interface Member {
  readonly name: Buffer;
  readonly kind: number;
  readonly required: boolean;
  /** Position in UTF-16 order of the names (all ASCII, so byte order too). */
  order: number;
  /** The name's bytes 0-5, 6-11 and 12-14, each packed big-endian into a number. */
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
}

/** The name's bytes packed as the top-level loop packs them (names are at most 15 bytes). */
function pack(name: Buffer, from: number, to: number): number {
  let w = 0;
  for (let k = from; k < Math.min(to, name.length); k++) w = w * 256 + (name[k] as number);
  return w;
}

const MEMBERS: Member[] = [
  ['v', V, true],
  ['seq', SEQ, true],
  ['ts', TS, true],
  ['method', NON_EMPTY_STRING, true],
  ['tier', TIER, true],
  ['decision', DECISION, true],
  ['duration_ms', NON_NEGATIVE_NUMBER, true],
  ['prev_hash', PREV_HASH, true],
  ['session_id', STRING, false],
  ['client_id', STRING, false],
  ['request_id', STRING, false],
  ['upstream', STRING, false],
  ['target', STRING, false],
  ['args', ANY, false],
  ['output_sha256', HASH, false],
  ['output_len', COUNT, false],
  ['error', STRING, false],
  ['trace_id', STRING, false],
  ['decided_by', STRING, false],
  ['rule', STRING, false],
].map(([name, kind, required]) => {
  const bytes = Buffer.from(name as string, 'latin1');
  return {
    name: bytes,
    kind: kind as number,
    required: required as boolean,
    order: 0,
    w0: pack(bytes, 0, 6),
    w1: pack(bytes, 6, 12),
    w2: pack(bytes, 12, 15),
  };
});
for (const [i, member] of [...MEMBERS].sort((a, b) => Buffer.compare(a.name, b.name)).entries()) {
  member.order = i;
}
const REQUIRED_COUNT = MEMBERS.filter((m) => m.required).length;

/**
 * Top-level members by {@link shapeOf} their name, which is unique among the v1 names (a lookup,
 * then one comparison, instead of a comparison per candidate).
 */
const BY_SHAPE: (Member | undefined)[] = new Array(16 * 32).fill(undefined);
const shapeOf = (length: number, first: number): number => (length < 16 ? (length << 5) | (first & 31) : 0);
for (const member of MEMBERS) {
  const shape = shapeOf(member.name.length, member.name[0] as number);
  if (BY_SHAPE[shape] !== undefined) throw new Error(`canonical-line-check: two members of shape ${shape}`);
  BY_SHAPE[shape] = member;
}

/** The accepted values of `tier` and `decision`, quoted, as bytes. */
const TIER_VALUES = TIERS.map((t) => Buffer.from(JSON.stringify(t), 'latin1'));
const DECISION_VALUES = DECISIONS.map((d) => Buffer.from(JSON.stringify(d), 'latin1'));

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= ZERO && c <= NINE;

/** `Buffer#latin1Slice` (Node's native decoder, without `toString`'s argument handling). */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice(start: number, end: number): string })
  .latin1Slice;

/** The bytes `d[start, end)` as a latin1 string. */
export function latin1(d: Buffer, start: number, end: number): string {
  return latin1Slice.call(d, start, end);
}

/**
 * The position after a string at `d[i]` (an opening quote) with no escape and no raw control
 * character, or FAIL. The line's newline (a control character) stops the loop at the latest.
 * (Comparisons, not a lookup table: V8 runs this loop faster so.)
 */
function skipString(d: Buffer, i: number): number {
  let at = i + 1;
  for (;;) {
    const c = d[at] as number;
    if (c > QUOTE) {
      if (c === BACKSLASH) return FAIL;
    } else if (c === QUOTE) return at + 1;
    else if (c < 0x20) return FAIL;
    at++;
  }
}

/** As {@link skipString}, for a member name: also FAIL when it holds U+E000 or above. */
function skipName(d: Buffer, i: number): number {
  let at = i + 1;
  for (;;) {
    const c = d[at] as number;
    if (c > QUOTE) {
      if (c === BACKSLASH || c >= HIGH_LEAD) return FAIL;
    } else if (c === QUOTE) return at + 1;
    else if (c < 0x20) return FAIL;
    at++;
  }
}

/** Whether the bytes `d[a0, a1)` sort strictly before `d[b0, b1)`. */
function bytesBefore(d: Buffer, a0: number, a1: number, b0: number, b1: number): boolean {
  const n = Math.min(a1 - a0, b1 - b0);
  for (let k = 0; k < n; k++) {
    const x = d[a0 + k] as number;
    const y = d[b0 + k] as number;
    if (x !== y) return x < y;
  }
  return a1 - a0 < b1 - b0;
}

/**
 * The position after a number at `d[i]` whose text is its own ES `Number#toString` (RFC 8785
 * §3.2.2.3), or FAIL.
 *
 * Without a sign or exponent, the text `I[.F]` (I "0" or without a leading zero, F ending in a
 * non-zero digit) is its own `toString` when it has at most 15 significant digits and its value
 * is 0 or in [1e-6, 1e21): two decimals of at most 15 significant digits never round to the same
 * double (DBL_DIG), so the shortest decimal that rounds to the value is this one, and in that range
 * `toString` writes it without an exponent, exactly so. Anything else is compared with
 * `String(Number(text))`.
 */
function skipNumber(d: Buffer, i: number): number {
  let at = i;
  if (d[at] === MINUS) at++;
  const first = d[at];
  if (first === ZERO) at++;
  else if (isDigit(first)) while (isDigit(d[at])) at++;
  else return FAIL;
  const intDigits = at - i;
  let plain = d[i] !== MINUS && intDigits <= 15;
  let significant = first === ZERO ? 0 : intDigits;
  if (d[at] === DOT) {
    at++;
    if (!isDigit(d[at])) return FAIL;
    const fraction = at;
    if (first === ZERO) {
      // 0.000001 is written so; 0.0000001 is 1e-7.
      while (d[at] === ZERO) at++;
      if (at - fraction > 5) plain = false;
    }
    const digits = at;
    while (isDigit(d[at])) at++;
    significant += at - digits;
    if (d[at - 1] === ZERO || at === digits) plain = false;
  }
  const e = d[at];
  if (e === 0x65 || e === 0x45) {
    at++;
    if (d[at] === 0x2b || d[at] === MINUS) at++;
    if (!isDigit(d[at])) return FAIL;
    while (isDigit(d[at])) at++;
    plain = false;
  }
  if (plain && significant <= 15) return at;
  const text = d.toString('latin1', i, at);
  return String(Number(text)) === text ? at : FAIL;
}

/** The position after the canonical JSON value at `d[i]`, or FAIL. */
function skipValue(d: Buffer, i: number, depth: number): number {
  const c = d[i];
  switch (c) {
    case QUOTE:
      return skipString(d, i);
    case OPEN_BRACE:
      return depth >= MAX_DEPTH ? FAIL : skipObject(d, i, depth + 1);
    case OPEN_BRACKET:
      return depth >= MAX_DEPTH ? FAIL : skipArray(d, i, depth + 1);
    case 0x74: // true
      return d[i + 1] === 0x72 && d[i + 2] === 0x75 && d[i + 3] === 0x65 ? i + 4 : FAIL;
    case 0x66: // false
      return d[i + 1] === 0x61 && d[i + 2] === 0x6c && d[i + 3] === 0x73 && d[i + 4] === 0x65 ? i + 5 : FAIL;
    case 0x6e: // null
      return d[i + 1] === 0x75 && d[i + 2] === 0x6c && d[i + 3] === 0x6c ? i + 4 : FAIL;
    default:
      return skipNumber(d, i);
  }
}

function skipObject(d: Buffer, i: number, depth: number): number {
  let at = i + 1;
  if (d[at] === CLOSE_BRACE) return at + 1;
  let prevStart = -1;
  let prevEnd = -1;
  for (;;) {
    if (d[at] !== QUOTE) return FAIL;
    const nameEnd = skipName(d, at);
    if (nameEnd === FAIL) return FAIL;
    if (prevStart >= 0 && !bytesBefore(d, prevStart, prevEnd, at + 1, nameEnd - 1)) return FAIL;
    prevStart = at + 1;
    prevEnd = nameEnd - 1;
    if (d[nameEnd] !== COLON) return FAIL;
    at = skipValue(d, nameEnd + 1, depth);
    if (at === FAIL) return FAIL;
    const next = d[at];
    if (next === CLOSE_BRACE) return at + 1;
    if (next !== COMMA) return FAIL;
    at++;
  }
}

function skipArray(d: Buffer, i: number, depth: number): number {
  let at = i + 1;
  if (d[at] === CLOSE_BRACKET) return at + 1;
  for (;;) {
    at = skipValue(d, at, depth);
    if (at === FAIL) return FAIL;
    const next = d[at];
    if (next === CLOSE_BRACKET) return at + 1;
    if (next !== COMMA) return FAIL;
    at++;
  }
}

/** Whether `d[i, i + value.length)` equals `value`. */
function bytesEqual(d: Buffer, i: number, value: Buffer): boolean {
  for (let k = 0; k < value.length; k++) if (d[i + k] !== value[k]) return false;
  return true;
}

function skipOneOf(d: Buffer, i: number, values: readonly Buffer[]): number {
  for (const value of values) if (bytesEqual(d, i, value)) return i + value.length;
  return FAIL;
}

/** `"YYYY-MM-DDTHH:MM:SS.mmmZ"` (the schema's pattern, digits only where it has `\d`). */
function skipTimestamp(d: Buffer, i: number): number {
  if (d[i] !== QUOTE || d[i + 25] !== QUOTE || d[i + 24] !== 0x5a) return FAIL;
  for (let k = 1; k <= 23; k++) {
    const c = d[i + k];
    switch (k) {
      case 5:
      case 8:
        if (c !== MINUS) return FAIL;
        break;
      case 11:
        if (c !== 0x54) return FAIL;
        break;
      case 14:
      case 17:
        if (c !== COLON) return FAIL;
        break;
      case 20:
        if (c !== DOT) return FAIL;
        break;
      default:
        if (!isDigit(c)) return FAIL;
    }
  }
  return i + 26;
}

function skipHash(d: Buffer, i: number): number {
  if (d[i] !== QUOTE || d[i + 65] !== QUOTE) return FAIL;
  for (let k = i + 1; k <= i + 64; k++) {
    const c = d[k] as number;
    // 0-9 or a-f, as unsigned ranges.
    if ((c - ZERO) >>> 0 > 9 && (c - 0x61) >>> 0 > 5) return FAIL;
  }
  return i + 66;
}

/** `"<prev>"` where `prev` is 64 hex characters. */
function skipPrev(d: Buffer, i: number, prev: string): number {
  if (d[i] !== QUOTE || d[i + 65] !== QUOTE) return FAIL;
  // One native slice and a string comparison: cheaper than 64 character comparisons in a loop.
  return latin1(d, i + 1, i + 65) === prev ? i + 66 : FAIL;
}

/** A non-negative integer of at most 15 digits (a safe integer), canonical; its value in `out`. */
function skipCount(d: Buffer, i: number, out: { value: number }): number {
  let at = i;
  if (d[at] === ZERO) {
    out.value = 0;
    return isDigit(d[at + 1]) ? FAIL : at + 1;
  }
  let value = 0;
  while (isDigit(d[at])) {
    value = value * 10 + ((d[at] as number) - ZERO);
    at++;
  }
  if (at === i || at - i > 15) return FAIL;
  out.value = value;
  return at;
}

const count = { value: 0 };

function skipMember(d: Buffer, i: number, kind: number, seq: number, prev: string): number {
  switch (kind) {
    case V:
      return d[i] === 0x31 ? i + 1 : FAIL;
    case SEQ: {
      const at = skipCount(d, i, count);
      return at !== FAIL && count.value === seq && seq >= 1 ? at : FAIL;
    }
    case TS:
      return skipTimestamp(d, i);
    case NON_EMPTY_STRING:
      return d[i] === QUOTE && d[i + 1] !== QUOTE ? skipString(d, i) : FAIL;
    case STRING:
      return d[i] === QUOTE ? skipString(d, i) : FAIL;
    case TIER:
      return skipOneOf(d, i, TIER_VALUES);
    case DECISION:
      return skipOneOf(d, i, DECISION_VALUES);
    case NON_NEGATIVE_NUMBER:
      return d[i] === MINUS ? FAIL : skipNumber(d, i);
    case PREV_HASH:
      return skipPrev(d, i, prev);
    case ANY:
      return skipValue(d, i, 0);
    case HASH:
      return skipHash(d, i);
    case COUNT:
      return skipCount(d, i, count);
    default:
      return FAIL;
  }
}

/**
 * Whether the record line `d[start, end)` is, provably, a canonical valid v1 record with `seq` and
 * `prev_hash` as given (see the module comment). It does not check the entry hash's suffix or
 * value: the caller does. `d[end]` must exist and be the line's newline (a scanned line's is).
 * `false` means "not proven", never "tampered".
 */
export function checkCanonicalRecordLine(
  d: Buffer,
  start: number,
  end: number,
  seq: number,
  prev: string,
): boolean {
  const bodyEnd = end - ENTRY_HASH_SUFFIX_LENGTH;
  if (bodyEnd <= start || d[start] !== OPEN_BRACE || d[bodyEnd] !== COMMA) return false;
  let at = start + 1;
  let order = -1;
  let required = 0;
  let hasHash = false;
  let hasLen = false;
  for (;;) {
    if (d[at] !== QUOTE) return false;
    // The name's bytes, packed exactly (6 per number, below 2^53) while looking for its end; its
    // length and first byte pick the one candidate, whose packed bytes must then be equal.
    let nameEnd = at + 1;
    let w0 = 0;
    let w1 = 0;
    let w2 = 0;
    for (let c = d[nameEnd] as number; c !== QUOTE; c = d[++nameEnd] as number) {
      const n = nameEnd - at - 1;
      if (n < 6) w0 = w0 * 256 + c;
      else if (n < 12) w1 = w1 * 256 + c;
      else if (n < 15) w2 = w2 * 256 + c;
      else return false;
    }
    const member = BY_SHAPE[shapeOf(nameEnd - at - 1, d[at + 1] as number)];
    if (member === undefined || member.w0 !== w0 || member.w1 !== w1 || member.w2 !== w2) return false;
    if (member.order <= order) return false;
    nameEnd++;
    if (d[nameEnd] !== COLON) return false;
    order = member.order;
    if (member.required) required++;
    else if (member.kind === HASH) hasHash = true;
    else if (member.kind === COUNT) hasLen = true;
    at = skipMember(d, nameEnd + 1, member.kind, seq, prev);
    if (at === FAIL || at > bodyEnd) return false;
    if (at === bodyEnd) break;
    if (d[at] !== COMMA) return false;
    at++;
  }
  return required === REQUIRED_COUNT && hasHash === hasLen;
}
