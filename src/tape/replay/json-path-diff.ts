/**
 * Where two JSON values differ, as a short list of JSON paths (`$.arguments.message`,
 * `$.items[2]`, `$["a b"]`): what the error for an unmatched replay request shows, so a reader sees
 * at once which argument changed. A recorded `[REDACTED]` (a secret the recorder cut) differs from
 * no value: the live client's secret is not the tape's business. Deterministic: members in sorted order, arrays index by index, so
 * the same two values always give the same list.
 */
import type { JsonValue } from '../../audit/canonical-json.js';
import { REDACTED } from '../../audit/redaction.js';
import { isObject } from '../../protocol/jsonrpc/json-object.js';

/** One difference: the path, and the value on each side (`undefined`: absent on that side). */
export interface JsonDifference {
  readonly path: string;
  readonly recorded?: JsonValue;
  readonly got?: JsonValue;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function member(path: string, name: string): string {
  return IDENTIFIER.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;
}

function difference(
  path: string,
  recorded: JsonValue | undefined,
  got: JsonValue | undefined,
): JsonDifference {
  return {
    path,
    ...(recorded === undefined ? {} : { recorded }),
    ...(got === undefined ? {} : { got }),
  };
}

function walk(
  path: string,
  recorded: JsonValue | undefined,
  got: JsonValue | undefined,
  out: JsonDifference[],
  limit: number,
): void {
  if (out.length >= limit) return;
  if (isObject(recorded) && isObject(got)) {
    const names = [...new Set([...Object.keys(recorded), ...Object.keys(got)])].sort();
    for (const name of names) walk(member(path, name), recorded[name], got[name], out, limit);
    return;
  }
  if (Array.isArray(recorded) && Array.isArray(got)) {
    const length = Math.max(recorded.length, got.length);
    for (let i = 0; i < length; i++) walk(`${path}[${i}]`, recorded[i], got[i], out, limit);
    return;
  }
  if (recorded === got) return;
  // A value the recorder cut as a secret stands for whatever the live client sends there.
  if (recorded === REDACTED && got !== undefined) return;
  if (recorded !== undefined && got !== undefined && JSON.stringify(recorded) === JSON.stringify(got)) return;
  out.push(difference(path, recorded, got));
}

/**
 * The paths where `got` differs from `recorded` (both JSON values, `undefined` for absent), the
 * first `limit` of them in the walk's order.
 */
export function jsonPathDiff(
  recorded: JsonValue | undefined,
  got: JsonValue | undefined,
  limit = 5,
): readonly JsonDifference[] {
  const out: JsonDifference[] = [];
  walk('$', recorded, got, out, limit);
  return out;
}

/** The number of differing paths (up to `cap`), for ranking candidates by closeness. */
export function diffSize(recorded: JsonValue | undefined, got: JsonValue | undefined, cap = 64): number {
  const out: JsonDifference[] = [];
  walk('$', recorded, got, out, cap);
  return out.length;
}

/** One line per difference: `$.arguments.message: recorded "hello", got "hullo"`. */
export function describeDifference(d: JsonDifference): string {
  const show = (v: JsonValue | undefined): string => {
    if (v === undefined) return 'absent';
    const text = JSON.stringify(v);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  };
  return `${d.path}: recorded ${show(d.recorded)}, got ${show(d.got)}`;
}
