/**
 * RFC 8785 canonical JSON for values that are already plain JSON: the ledger's record bodies,
 * whose members are bounded strings, finite numbers and `args` repaired by `toWellFormedJson`.
 *
 * `canonicalize` (src/audit/canonical-json.ts) accepts anything JavaScript can hold and pays for
 * it on every value. For plain data, `JSON.stringify` already writes JCS text, except for the order
 * of members: it follows insertion order. So the fast path copies the value with every object's
 * members inserted in UTF-16 code unit order, then lets the native `JSON.stringify` write it.
 * That holds when every string is well-formed (JSON.stringify would escape a lone surrogate where
 * JCS refuses it), every number is finite, and no member name is an array index (V8 lists those
 * first, in numeric order). Anything else goes to `canonicalize`, which renders it or throws
 * exactly as it would have: the output is always byte-identical to `canonicalize(value)`
 * (property-tested).
 */
import { canonicalize, toWellFormedJson } from '../canonical-json.js';
import { isWellFormedString } from '../well-formed-string.js';

/** Returned by {@link sortedCopy} when the fast path does not apply. */
const SLOW = Symbol('slow');

/** Names V8 stores as array elements (canonical integers up to 2^32 - 2), iterated first. */
const ARRAY_INDEX = /^(?:0|[1-9][0-9]{0,9})$/;

function isArrayIndex(name: string): boolean {
  return ARRAY_INDEX.test(name) && Number(name) <= 4294967294;
}

/** A copy of `value` with sorted member insertion order, or {@link SLOW}. */
function sortedCopy(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
      return isWellFormedString(value) ? value : SLOW;
    case 'number':
      return Number.isFinite(value) ? value : SLOW;
    case 'boolean':
      return value;
    case 'object':
      break;
    default:
      return SLOW;
  }
  if (value === null) return null;
  // Deep data takes the exact path, where canonicalize reports its own depth limit.
  if (depth > 200) return SLOW;
  const proto = Object.getPrototypeOf(value);
  if (Array.isArray(value)) {
    if (proto !== Array.prototype) return SLOW;
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) {
      const item = sortedCopy(value[i], depth + 1);
      if (item === SLOW) return SLOW;
      out[i] = item;
    }
    return out;
  }
  if (
    (proto !== Object.prototype && proto !== null) ||
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    return SLOW;
  }
  const record = value as Record<string, unknown>;
  const names = Object.keys(record);
  if (!isSorted(names)) names.sort(compareNames);
  const out: Record<string, unknown> = {};
  for (const name of names) {
    // "__proto__" cannot be an own member of a literal object by assignment: the exact path takes it.
    if (name === '__proto__' || !isWellFormedString(name) || isArrayIndex(name)) return SLOW;
    const member = sortedCopy(record[name], depth + 1);
    if (member === SLOW) return SLOW;
    out[name] = member;
  }
  return out;
}

/** UTF-16 code unit order, which is what `<` on strings compares (RFC 8785 §3.2.3). */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Member names usually arrive sorted (the ledger builds its records that way): no sort then. */
function isSorted(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i++) if ((names[i - 1] as string) >= (names[i] as string)) return false;
  return true;
}

/**
 * `canonicalize(toWellFormedJson(value))`: the canonical text of any value, repaired into JSON
 * first (lone surrogates, non-finite numbers, cycles, BigInt...), without the copy the repair makes
 * when the value is plain JSON data already (the common case: parsed JSON-RPC arguments, redacted).
 * Never throws.
 */
export function canonicalRepairedJson(value: unknown): string {
  let copy: unknown;
  try {
    copy = sortedCopy(value, 0);
  } catch {
    copy = SLOW;
  }
  return copy === SLOW ? canonicalize(toWellFormedJson(value)) : JSON.stringify(copy);
}

/**
 * `canonicalize(value)`, faster for plain JSON data (see the module comment).
 *
 * @throws SwitchboardError `SB_INTERNAL` exactly when `canonicalize` would.
 */
export function canonicalJson(value: unknown): string {
  let copy: unknown;
  try {
    copy = sortedCopy(value, 0);
  } catch {
    // A throwing getter or Proxy trap: canonicalize reports it its own way.
    copy = SLOW;
  }
  return copy === SLOW ? canonicalize(value) : JSON.stringify(copy);
}
