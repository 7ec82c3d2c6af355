/**
 * The difference between a recorded JSON value and a live one: the heart of `tape check`, pure
 * and synchronous, so that what counts as "changed" is decided in one place and property-tested.
 *
 * Contract: `diffJson(a, a, rules)` is empty for every JSON value `a`; a change at a path that no
 * rule ignores is reported at that path (a leaf changed, a member or an array item added or
 * removed, a value of another type); nothing is reported below an ignored path. Object member
 * order never matters, array order does. Differences come in document order (members sorted).
 */
import { isObject } from '../../protocol/jsonrpc/json-object.js';
import { matchesPattern, type PointerPattern, pointerOf } from './json-pointer-pattern.js';

/** One difference: where (a JSON Pointer), what, and the two values (absent for a missing side). */
export interface Difference {
  readonly path: string;
  /** `changed`: both sides have a value; `removed`: only the recording; `added`: only the live answer. */
  readonly kind: 'changed' | 'removed' | 'added';
  readonly recorded?: unknown;
  readonly live?: unknown;
}

export interface DiffRules {
  /** Paths (patterns with `*`) not compared, with everything below them. */
  readonly ignore?: readonly PointerPattern[];
  /** Whether a member is volatile, given its name and both values (`volatile-values.ts`). */
  readonly volatile?: (key: string, recorded: unknown, live: unknown) => boolean;
}

/** The differences between `recorded` and `live` under `rules` (see the module contract). */
export function diffJson(recorded: unknown, live: unknown, rules: DiffRules = {}): Difference[] {
  const out: Difference[] = [];
  walk(recorded, live, [], rules, out);
  return out;
}

function ignored(segments: readonly string[], rules: DiffRules): boolean {
  return (rules.ignore ?? []).some((pattern) => matchesPattern(pattern, segments));
}

function walk(a: unknown, b: unknown, at: string[], rules: DiffRules, out: Difference[]): void {
  if (ignored(at, rules)) return;
  const key = at[at.length - 1];
  if (key !== undefined && rules.volatile?.(key, a, b) === true) return;
  if (Array.isArray(a) && Array.isArray(b)) {
    const n = Math.max(a.length, b.length);
    for (let i = 0; i < n; i += 1) member(a, b, i < a.length, i < b.length, String(i), at, rules, out);
    return;
  }
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) member(a, b, Object.hasOwn(a, k), Object.hasOwn(b, k), k, at, rules, out);
    return;
  }
  // Not both arrays nor both objects: equal only as the same scalar (`-0` is `0`, as in JSON).
  if (a !== b) out.push({ path: pointerOf(at), kind: 'changed', recorded: a, live: b });
}

function member(
  a: Record<string, unknown> | readonly unknown[],
  b: Record<string, unknown> | readonly unknown[],
  inA: boolean,
  inB: boolean,
  k: string,
  at: string[],
  rules: DiffRules,
  out: Difference[],
): void {
  const va = (a as Record<string, unknown>)[k];
  const vb = (b as Record<string, unknown>)[k];
  const path = [...at, k];
  if (inA && inB) {
    walk(va, vb, path, rules, out);
    return;
  }
  if (ignored(path, rules)) return;
  if (inA) out.push({ path: pointerOf(path), kind: 'removed', recorded: va });
  else out.push({ path: pointerOf(path), kind: 'added', live: vb });
}
