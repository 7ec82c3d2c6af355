/**
 * Bounding of client-supplied correlation ids (ADR-0038 `bound_id`) before they enter an audit
 * record. A request id comes from the JSON-RPC message and a client id from the transport; either
 * may be hostile or careless, and neither may bloat the record, smuggle control characters into a
 * log viewer, make the record unhashable (lone surrogates are not JSON-canonicalizable) or break the
 * audited path by throwing.
 */

/** Longest id kept, in Unicode code points (not UTF-16 units, so a surrogate pair is never split). */
export const MAX_ID_LENGTH = 128;

/** C0 controls, DEL and C1 controls. */
function isControl(codePoint: number): boolean {
  return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f);
}

function coerce(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return undefined;
  try {
    // String() covers numbers, bigints, booleans and symbols without calling user code for them;
    // for objects it calls Symbol.toPrimitive / toString / valueOf, which may throw.
    return String(value);
  } catch {
    return undefined;
  }
}

/**
 * The id to store for `value`, or `undefined` when there is none worth storing. Never throws.
 *
 * Strings are taken as they are, numbers and other values through `String()` (a throwing
 * `toString` or `Symbol.toPrimitive` yields `undefined`; `null`/`undefined` yield `undefined`).
 * Then control characters (C0, DEL, C1) are removed, lone surrogates become U+FFFD, leading and
 * trailing white space is trimmed, the result is cut to {@link MAX_ID_LENGTH} code points and an
 * empty result is `undefined`. The work is bounded by the kept prefix, not the input's length.
 */
export function boundId(value: unknown): string | undefined {
  try {
    const text = coerce(value);
    if (text === undefined) return undefined;
    let out = '';
    let count = 0;
    // for-of walks code points: a pair is one step, a lone surrogate is a step of its own.
    for (const char of text) {
      const codePoint = char.codePointAt(0) as number;
      if (isControl(codePoint)) continue;
      const kept = codePoint >= 0xd800 && codePoint <= 0xdfff ? '\ufffd' : char;
      if (count === 0 && kept.trim() === '') continue;
      out += kept;
      count++;
      if (count === MAX_ID_LENGTH) break;
    }
    out = out.trimEnd();
    return out === '' ? undefined : out;
  } catch {
    return undefined;
  }
}
