import { isObject } from '../protocol/jsonrpc/json-object.js';
/**
 * The JSONPath keys a capability's payload pattern may use: a deliberate subset of JSONPath
 * (RFC 9535) that selects values by position and nothing else.
 *
 * - `$` the payload itself;
 * - `.name` or `['name']` / `["name"]` a member (`.name` takes letters, digits, `_` and `-`);
 * - `.*` or `[*]` every member of an object or every element of a list;
 * - `[N]` the element N of a list (N ≥ 0).
 *
 * Not supported, and refused with a message when the pattern is read: recursive descent (`..`),
 * filters (`[?()]`), slices (`[a:b]`), unions (`[a,b]`), negative indexes, functions. They make a
 * permission depend on more than "this field has this value", which is hard to review and, for
 * filters, as expensive as the expression. `**` as a payload key covers "anywhere below".
 */

export type PathStep =
  | { readonly kind: 'member'; readonly name: string }
  | { readonly kind: 'index'; readonly index: number }
  | { readonly kind: 'wildcard' };

export type JsonPathParse =
  | { readonly ok: true; readonly steps: readonly PathStep[] }
  | { readonly ok: false; readonly problem: string };

const NAME = /^[A-Za-z_][A-Za-z0-9_-]*/;
const UNSUPPORTED = "supported JSONPath: $, .name, .*, [N], [*], ['name']";

/** Parses `path` (it must start with `$`). Never throws. */
export function parseJsonPathSubset(path: string): JsonPathParse {
  if (!path.startsWith('$')) return { ok: false, problem: `a JSONPath key starts with "$" (${UNSUPPORTED})` };
  const steps: PathStep[] = [];
  let i = 1;
  while (i < path.length) {
    const rest = path.slice(i);
    if (rest.startsWith('..'))
      return {
        ok: false,
        problem: `recursive descent ".." is not supported; use the key "**" (${UNSUPPORTED})`,
      };
    if (rest.startsWith('.*')) {
      steps.push({ kind: 'wildcard' });
      i += 2;
      continue;
    }
    if (rest.startsWith('.')) {
      const m = NAME.exec(rest.slice(1));
      if (!m) return { ok: false, problem: `expected a member name after "." at ${i} (${UNSUPPORTED})` };
      steps.push({ kind: 'member', name: m[0] });
      i += 1 + m[0].length;
      continue;
    }
    if (rest.startsWith('[*]')) {
      steps.push({ kind: 'wildcard' });
      i += 3;
      continue;
    }
    const index = /^\[(0|[1-9][0-9]{0,8})\]/.exec(rest);
    if (index) {
      steps.push({ kind: 'index', index: Number(index[1]) });
      i += index[0].length;
      continue;
    }
    const quoted = /^\[(?:'([^'\\]*)'|"([^"\\]*)")\]/.exec(rest);
    if (quoted) {
      steps.push({ kind: 'member', name: quoted[1] ?? quoted[2] ?? '' });
      i += quoted[0].length;
      continue;
    }
    return {
      ok: false,
      problem: `unsupported JSONPath at position ${i}: ${JSON.stringify(rest.slice(0, 20))} (${UNSUPPORTED})`,
    };
  }
  return { ok: true, steps };
}

/** The values `steps` select in `root`, in document order (none when a step finds nothing). */
export function selectPath(root: unknown, steps: readonly PathStep[]): unknown[] {
  let current: unknown[] = [root];
  for (const step of steps) {
    const next: unknown[] = [];
    for (const node of current) {
      if (step.kind === 'member') {
        if (isObject(node) && Object.hasOwn(node, step.name)) next.push(node[step.name]);
      } else if (step.kind === 'index') {
        if (Array.isArray(node) && step.index < node.length) next.push(node[step.index]);
      } else if (Array.isArray(node)) next.push(...node);
      else if (isObject(node)) next.push(...Object.values(node));
    }
    current = next;
    if (current.length === 0) break;
  }
  return current;
}
