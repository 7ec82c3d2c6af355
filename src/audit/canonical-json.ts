/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the one byte rendering of a value that the audit
 * ledger hashes. Two processes (the writer today, a verifier in another language tomorrow) must
 * agree on every byte, so the rules are the RFC's, not JSON.stringify's:
 *
 * - object members sorted by the UTF-16 code units of their names, recursively; arrays keep order;
 * - numbers in ECMAScript `Number.prototype.toString` form (`1e+21`, `0.000001`, `-0` is `0`);
 * - strings escaped minimally (`\"`, `\\`, `\b \f \n \r \t`, other C0 controls as `\u00xx`),
 *   everything else, U+2028 and DEL included, written as is;
 * - no whitespace.
 *
 * Values outside the JSON data model are errors, never silently repaired: NaN, ±Infinity, lone
 * surrogates (RFC 8785 §3.2.2.2, which `JSON.stringify` escapes instead), BigInt, cycles. Client
 * data goes through {@link toWellFormedJson} first, which does the repairing, so that hostile input
 * can never make an audit record unhashable.
 *
 * Like `JSON.stringify`, `toJSON` is honoured (a `Date` becomes its ISO string), boxed primitives
 * are unwrapped, and `undefined`, functions and symbols are dropped from objects and become `null`
 * in arrays. At the top level they are errors, because there is no JSON text to return.
 */
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { isWellFormedString, toWellFormedString } from './well-formed-string.js';

/** A value of the JSON data model, as {@link toWellFormedJson} returns it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Why {@link canonicalize} refused a value; found in the error's `details.reason`. */
export type CanonicalJsonFailure =
  | 'non_finite_number'
  | 'lone_surrogate'
  | 'bigint'
  | 'unsupported_type'
  | 'cycle'
  | 'too_deep'
  | 'threw';

const FAILURE_TEXT: Readonly<Record<CanonicalJsonFailure, string>> = {
  non_finite_number: 'NaN and Infinity have no JSON form',
  lone_surrogate: 'a string or member name contains a lone surrogate',
  bigint: 'BigInt has no JSON form',
  unsupported_type: 'undefined, functions and symbols have no JSON form',
  cycle: 'the value contains a cycle',
  too_deep: 'the value is nested too deeply',
  threw: 'a toJSON method or getter threw',
};

/** Internal carrier of a refusal; the path comes from the serializer's stack. */
class Failure {
  constructor(readonly reason: CanonicalJsonFailure) {}
}

/** Segments of the path kept in errors; a stack overflow would otherwise give a huge pointer. */
const MAX_POINTER_SEGMENTS = 64;

/** A JSON Pointer (RFC 6901) to the offending value, for error messages. */
function pointer(path: readonly (string | number)[]): string {
  let out = '';
  for (const segment of path.slice(0, MAX_POINTER_SEGMENTS)) {
    out += `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`;
  }
  return path.length > MAX_POINTER_SEGMENTS ? `${out}/...` : out;
}

function hasToJson(value: unknown): value is { toJSON(key: string): unknown } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  );
}

/** Plain objects and arrays, the common case, need no unboxing check. */
function isPlainContainer(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === Array.prototype || proto === null;
}

/** Unwraps boxed primitives (`new Number(1)`, `Object(1n)`...) as JSON.stringify does. */
function unbox(value: object): unknown {
  if (value instanceof Number) return Number(value);
  if (value instanceof String) return String(value);
  if (value instanceof Boolean) return value.valueOf();
  if (value instanceof BigInt) return value.valueOf();
  return value;
}

function serializeString(text: string): string {
  if (!isWellFormedString(text)) throw new Failure('lone_surrogate');
  // For well-formed strings, JSON.stringify's escaping is exactly RFC 8785 §3.2.2.2.
  return JSON.stringify(text);
}

/** Serialized member names: records repeat the same few dozen names, so they are cached. */
const nameCache = new Map<string, string>();
const NAME_CACHE_LIMIT = 2048;

function serializeName(name: string): string {
  let out = nameCache.get(name);
  if (out === undefined) {
    out = serializeString(name);
    if (nameCache.size >= NAME_CACHE_LIMIT) nameCache.clear();
    nameCache.set(name, out);
  }
  return out;
}

/**
 * The serializer's walk state. `path` is pushed before a member is read and popped after, with no
 * try/catch on the hot path: when anything throws, the stack still names the offending member.
 */
interface Walk {
  readonly ancestors: object[];
  readonly path: (string | number)[];
}

/** Serializes a member's value (already read); `undefined` for a member that JSON drops. */
function serializeValue(input: unknown, key: string | number, walk: Walk): string | undefined {
  let value = input;
  if (hasToJson(value)) value = value.toJSON(String(key));
  if (typeof value === 'object' && value !== null && !isPlainContainer(value)) value = unbox(value);
  switch (typeof value) {
    case 'string':
      return serializeString(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Failure('non_finite_number');
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new Failure('bigint');
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  const object = value as object;
  const { ancestors, path } = walk;
  if (ancestors.includes(object)) throw new Failure('cycle');
  ancestors.push(object);
  let out: string;
  if (Array.isArray(object)) {
    out = '[';
    for (let i = 0; i < object.length; i++) {
      if (i > 0) out += ',';
      path.push(i);
      out += serializeValue(object[i], i, walk) ?? 'null';
      path.pop();
    }
    out += ']';
  } else {
    // The default sort compares UTF-16 code units, which is exactly RFC 8785 §3.2.3.
    const keys = Object.keys(object).sort();
    const record = object as Record<string, unknown>;
    out = '{';
    let first = true;
    for (const name of keys) {
      path.push(name);
      const member = serializeValue(record[name], name, walk);
      if (member !== undefined) {
        out += `${first ? '' : ','}${serializeName(name)}:${member}`;
        first = false;
      }
      path.pop();
    }
    out += '}';
  }
  ancestors.pop();
  return out;
}

/**
 * The RFC 8785 canonical JSON text of `value`. Encode it as UTF-8 (always possible: lone
 * surrogates are rejected) before hashing.
 *
 * @throws SwitchboardError `SB_INTERNAL` when the value is outside the JSON data model, with
 *   `details.reason` (a {@link CanonicalJsonFailure}) and `details.path` (a JSON Pointer to the
 *   offending value, `""` for the top level, cut after 64 segments). A throwing `toJSON` or getter
 *   is the error's `cause`.
 */
export function canonicalize(value: unknown): string {
  const walk: Walk = { ancestors: [], path: [] };
  let failure: Failure;
  let cause: unknown;
  try {
    const out = serializeValue(value, '', walk);
    if (out !== undefined) return out;
    failure = new Failure('unsupported_type');
  } catch (error) {
    failure =
      error instanceof Failure ? error : new Failure(error instanceof RangeError ? 'too_deep' : 'threw');
    cause = error instanceof Failure ? undefined : error;
  }
  const path = pointer(walk.path);
  throw new SwitchboardError(
    SbErrorCode.Internal,
    `Cannot canonicalize as JSON: ${FAILURE_TEXT[failure.reason]} (at "${path}")`,
    { cause, details: { reason: failure.reason, path } },
  );
}

/** Put by {@link toWellFormedJson} where a reference leads back to one of its own ancestors. */
export const CIRCULAR_MARKER = '[Circular]';
/** Put by {@link toWellFormedJson} where the value is nested deeper than `maxDepth`. */
export const MAX_DEPTH_MARKER = '[MaxDepth]';
/** Put by {@link toWellFormedJson} where reading the value threw (a getter, `toJSON`, a Proxy trap). */
export const UNSERIALIZABLE_MARKER = '[Unserializable]';

/** Options of {@link toWellFormedJson}. */
export interface WellFormedJsonOptions {
  /** Containers nested deeper than this become {@link MAX_DEPTH_MARKER}; default 256. */
  readonly maxDepth?: number;
}

const DEFAULT_MAX_DEPTH = 256;

function repairMember(
  holder: object,
  key: string,
  depth: number,
  maxDepth: number,
  ancestors: object[],
): JsonValue | undefined {
  try {
    let value: unknown = (holder as Record<string, unknown>)[key];
    if (hasToJson(value)) value = value.toJSON(key);
    if (typeof value === 'object' && value !== null) value = unbox(value);
    switch (typeof value) {
      case 'string':
        return toWellFormedString(value);
      case 'number':
        return Number.isFinite(value) ? value : null;
      case 'boolean':
        return value;
      case 'bigint':
        return value.toString();
      case 'undefined':
      case 'function':
      case 'symbol':
        return undefined;
    }
    if (value === null) return null;
    const object = value as object;
    if (ancestors.includes(object)) return CIRCULAR_MARKER;
    if (depth >= maxDepth) return MAX_DEPTH_MARKER;
    ancestors.push(object);
    try {
      if (Array.isArray(object)) {
        const out: JsonValue[] = [];
        for (let i = 0; i < object.length; i++) {
          out.push(repairMember(object, String(i), depth + 1, maxDepth, ancestors) ?? null);
        }
        return out;
      }
      const entries: [string, JsonValue][] = [];
      for (const name of Object.keys(object)) {
        const member = repairMember(object, name, depth + 1, maxDepth, ancestors);
        if (member !== undefined) entries.push([toWellFormedString(name), member]);
      }
      // fromEntries defines own data properties, so a "__proto__" member stays a member.
      return Object.fromEntries(entries);
    } finally {
      ancestors.pop();
    }
  } catch {
    return UNSERIALIZABLE_MARKER;
  }
}

/**
 * A copy of `value` that {@link canonicalize} always accepts, made without ever throwing. The audit
 * layer runs client-supplied data through it before hashing, so no input can make a record
 * unhashable. Repairs, each deterministic:
 *
 * - lone surrogates in strings and member names become U+FFFD (if two names collide after that,
 *   the later member wins);
 * - NaN and ±Infinity become `null` (what JSON.stringify writes);
 * - BigInt becomes its decimal string;
 * - a reference back to an ancestor becomes {@link CIRCULAR_MARKER} (shared, non-cyclic references
 *   are copied);
 * - containers deeper than `maxDepth` become {@link MAX_DEPTH_MARKER};
 * - a value whose getter, `toJSON` or Proxy trap throws becomes {@link UNSERIALIZABLE_MARKER};
 * - `undefined`, functions and symbols are dropped from objects and become `null` in arrays and at
 *   the top level; `toJSON` is honoured and boxed primitives are unwrapped, as in JSON.stringify;
 *   other objects (Map, Set, class instances) keep only their own enumerable string-keyed members.
 *
 * The result is made of fresh plain arrays and objects; the input is never mutated.
 */
export function toWellFormedJson(value: unknown, options: WellFormedJsonOptions = {}): JsonValue {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  return repairMember({ '': value }, '', 0, maxDepth, []) ?? null;
}
