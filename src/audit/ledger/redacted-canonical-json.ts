/**
 * The canonical text of redacted client data (a record's `args`): exactly
 * `canonicalRepairedJson(redactor(value))`, in one walk when redaction changes nothing.
 *
 * The general path walks the value three times: the redactor copies it (every string through its
 * secret-shape pre-check, every member name through its name test), the canonical encoder copies
 * the copy with sorted members, and `JSON.stringify` writes that. Most arguments hold nothing
 * secret-looking, so here one walk writes the canonical text directly, asking the redactor's own
 * tests as it goes, and gives up (falling back to the general path) at the first place where
 * redaction or repair could change anything:
 *
 * - a member name the redactor's name test finds secret, or a `[name, value]` pair with such a name
 *   (the redactor replaces the value);
 * - a string or member name the redactor would change (asked of the redactor itself, so any shape
 *   rule, built-in or configured, is honoured);
 * - anything but plain data: `undefined`, functions, symbols, BigInt, non-finite numbers, boxed
 *   primitives, class instances, `toJSON`, cycles, values deeper than the redactor's `maxDepth`,
 *   member names with lone surrogates or named `__proto__`, and anything that throws when read.
 *
 * What is left is plain JSON data the redactor copies unchanged and `toWellFormedJson` leaves alone
 * except for lone surrogates in string values, which both paths turn into U+FFFD. Its RFC 8785 text
 * is members sorted by UTF-16 code units (the default sort), numbers as `String(n)` (finite ones),
 * and strings as `JSON.stringify` writes well-formed ones. Property-tested against the general path.
 */

import {
  createRedactor,
  createSecretKeyTest,
  DEFAULT_REDACTION_DEPTH,
  type Redactor,
  type RedactorOptions,
} from '../redaction.js';
import { isWellFormedString, toWellFormedString } from '../well-formed-string.js';
import { canonicalRepairedJson } from './canonical-record.js';

/** A redactor, and the canonical text of what it returns. */
export interface RedactedCanonicalJson {
  readonly redactor: Redactor;
  /** `canonicalRepairedJson(redactor(value))`; never throws. */
  readonly encode: (value: unknown) => string;
}

/** Characters JSON must escape (lone surrogates are repaired before this is asked). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding characters to escape is the point.
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** Returned by a walk step where the fast path does not apply. */
const SLOW = undefined;

/**
 * Sorts member names in place by UTF-16 code units, as the default sort does (`<` on strings
 * compares code units). Objects in arguments have a handful of members: an insertion sort of that
 * many allocates nothing, where `Array#sort` allocates its working storage on every call.
 */
function sortNames(names: string[]): void {
  if (names.length > 16) {
    names.sort();
    return;
  }
  for (let i = 1; i < names.length; i++) {
    const name = names[i] as string;
    let j = i - 1;
    while (j >= 0 && (names[j] as string) > name) {
      names[j + 1] = names[j] as string;
      j--;
    }
    names[j + 1] = name;
  }
}

/** Most member names whose verdict is remembered (the cache is emptied when full). */
const NAME_CACHE_LIMIT = 4096;
/** Cached verdict of a member name that the fast path cannot take. */
const SLOW_NAME = '';

/** A redactor built with `options`, and its canonical text; see the module comment. */
export function createRedactedCanonicalJson(options: RedactorOptions = {}): RedactedCanonicalJson {
  const redactor = createRedactor(options);
  // The same name decisions the redactor makes: it is built on this test with the same options.
  const isSecretKey = createSecretKeyTest(options);
  const maxDepth = options.maxDepth ?? DEFAULT_REDACTION_DEPTH;
  const ancestors: object[] = [];
  /** Member name -> its JSON text, or SLOW_NAME: the tests below are pure functions of the name. */
  const names = new Map<string, string>();

  /** A string value's JSON text, or SLOW when the redactor would change it. */
  function stringValue(text: string): string | undefined {
    if (redactor(text) !== text) return SLOW;
    const repaired = isWellFormedString(text) ? text : toWellFormedString(text);
    return NEEDS_ESCAPE.test(repaired) ? JSON.stringify(repaired) : `"${repaired}"`;
  }

  /** A member name's JSON text, or SLOW when redaction or repair would touch the name or its value. */
  function memberName(name: string): string | undefined {
    let text = names.get(name);
    if (text === undefined) {
      if (name === '__proto__' || !isWellFormedString(name) || isSecretKey(name) || redactor(name) !== name) {
        text = SLOW_NAME;
      } else {
        text = NEEDS_ESCAPE.test(name) ? JSON.stringify(name) : `"${name}"`;
      }
      if (names.size >= NAME_CACHE_LIMIT) names.clear();
      names.set(name, text);
    }
    return text === SLOW_NAME ? SLOW : text;
  }

  function walk(value: unknown, depth: number): string | undefined {
    if (depth > maxDepth) return SLOW;
    switch (typeof value) {
      case 'string':
        return stringValue(value);
      case 'number':
        return Number.isFinite(value) ? String(value) : SLOW;
      case 'boolean':
        return value ? 'true' : 'false';
      case 'object':
        break;
      default:
        return SLOW;
    }
    if (value === null) return 'null';
    if (ancestors.includes(value)) return SLOW;
    const proto = Object.getPrototypeOf(value);
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return SLOW;
    let out: string;
    ancestors.push(value);
    if (Array.isArray(value)) {
      if (proto !== Array.prototype) return SLOW;
      if (value.length === 2 && typeof value[0] === 'string' && isSecretKey(value[0])) return SLOW;
      out = '[';
      for (let i = 0; i < value.length; i++) {
        const item = walk(value[i], depth + 1);
        if (item === SLOW) return SLOW;
        out += i === 0 ? item : `,${item}`;
      }
      out += ']';
    } else {
      if (proto !== Object.prototype && proto !== null) return SLOW;
      const record = value as Record<string, unknown>;
      const members = Object.keys(record);
      sortNames(members);
      out = '{';
      for (let i = 0; i < members.length; i++) {
        const name = members[i] as string;
        const key = memberName(name);
        if (key === SLOW) return SLOW;
        const member = walk(record[name], depth + 1);
        if (member === SLOW) return SLOW;
        out += i === 0 ? `${key}:${member}` : `,${key}:${member}`;
      }
      out += '}';
    }
    ancestors.pop();
    return out;
  }

  function encode(value: unknown): string {
    let text: string | undefined;
    try {
      text = walk(value, 0);
    } catch {
      // A throwing getter or Proxy trap: the general path turns it into the redactor's marker.
      text = SLOW;
    }
    // A walk that gave up leaves its containers behind.
    ancestors.length = 0;
    return text ?? canonicalRepairedJson(redactor(value));
  }

  return { redactor, encode };
}
