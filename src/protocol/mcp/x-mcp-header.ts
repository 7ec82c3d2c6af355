/**
 * `x-mcp-header` (2026-07-28 tools, Streamable HTTP "Custom Headers from Tool Parameters"): a
 * tool's input schema may mark primitive parameters to be mirrored into `Mcp-Param-{Name}` headers,
 * so that load balancers and gateways can route on them without reading the body. Both sides of the
 * gateway use it: as a client of a modern upstream it MUST send those headers (and drop a tool
 * whose annotations break the rules from the `tools/list` it hands on, so one malformed tool does
 * not poison the rest); as a server of modern clients it checks the headers against the arguments.
 *
 * The rules checked: the name is a non-empty RFC 9110 token, unique case-insensitively within the
 * schema; the parameter's `type` is `string`, `integer` or `boolean`; and it is reached from the
 * root through `properties` keys only. An annotation under `items`, `anyOf`, `$defs`, `if`... (or
 * on the root itself) makes the whole tool invalid. Data keywords (`const`, `enum`, `default`,
 * `examples`) are not schemas and are not searched.
 */

import { isObject } from '../jsonrpc/json-object.js';
import { encodeHeaderValue } from './header-value.js';

/** One parameter mirrored into a header. */
export interface ParamHeader {
  /** The `properties` keys from the schema's root to the parameter. */
  readonly path: readonly string[];
  /** The name part of `Mcp-Param-{name}`, as the schema spells it. */
  readonly name: string;
  readonly type: 'string' | 'integer' | 'boolean';
}

/** A tool's headers, or why its definition is invalid. */
export type ToolHeaders =
  | { readonly ok: true; readonly headers: readonly ParamHeader[] }
  | { readonly ok: false; readonly reason: string };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ANNOTATION = 'x-mcp-header';
const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
/** Keywords holding one subschema or an array of them: never part of a `properties` chain. */
const SUBSCHEMA_KEYWORDS = [
  'items',
  'prefixItems',
  'additionalItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
] as const;
/** Keywords holding a map of name to subschema, other than `properties`. */
const SCHEMA_MAP_KEYWORDS = ['patternProperties', 'dependentSchemas', '$defs', 'definitions'] as const;
/** Deeper than this, a schema is refused rather than walked (no real tool nests this far). */
const MAX_DEPTH = 64;

function where(path: readonly string[]): string {
  return path.length === 0 ? 'the schema root' : path.join('.');
}

/** The `x-mcp-header` parameters of an input schema, or the first rule it breaks. */
export function scanToolHeaders(inputSchema: unknown): ToolHeaders {
  const headers: ParamHeader[] = [];
  const seen = new Map<string, string>();
  /** `reachable`: reached from the root through `properties` keys only. */
  const visit = (
    node: unknown,
    path: readonly string[],
    reachable: boolean,
    depth: number,
  ): string | undefined => {
    if (!isObject(node)) return undefined;
    if (depth > MAX_DEPTH) return `the input schema nests deeper than ${MAX_DEPTH} levels`;
    if (ANNOTATION in node) {
      const name = node[ANNOTATION];
      if (!reachable || path.length === 0)
        return `${where(path)}: x-mcp-header is only allowed on properties reached through "properties" keys`;
      if (typeof name !== 'string' || !TOKEN.test(name))
        return `${where(path)}: x-mcp-header must be a non-empty HTTP token, not ${JSON.stringify(name)}`;
      const type = node.type;
      if (typeof type !== 'string' || !PRIMITIVE.has(type))
        return `${where(path)}: x-mcp-header is only allowed on string, integer or boolean parameters (type is ${JSON.stringify(type ?? null)})`;
      const previous = seen.get(name.toLowerCase());
      if (previous !== undefined)
        return `x-mcp-header ${JSON.stringify(name)} is used twice (also as ${JSON.stringify(previous)}); names are case-insensitive`;
      seen.set(name.toLowerCase(), name);
      headers.push({ path, name, type: type as ParamHeader['type'] });
    }
    if (isObject(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable, depth + 1);
        if (fault) return fault;
      }
    }
    for (const keyword of SUBSCHEMA_KEYWORDS) {
      const value = node[keyword];
      for (const child of Array.isArray(value) ? value : [value]) {
        const fault = visit(child, [...path, `<${keyword}>`], false, depth + 1);
        if (fault) return fault;
      }
    }
    for (const keyword of SCHEMA_MAP_KEYWORDS) {
      const value = node[keyword];
      if (!isObject(value)) continue;
      for (const [key, child] of Object.entries(value)) {
        const fault = visit(child, [...path, `<${keyword}>`, key], false, depth + 1);
        if (fault) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true, 0);
  return fault === undefined ? { ok: true, headers } : { ok: false, reason: fault };
}

/** The argument at `path`, or undefined when absent. */
export function valueAt(args: unknown, path: readonly string[]): unknown {
  let current = args;
  for (const key of path) {
    if (!isObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

/**
 * The text a primitive argument is mirrored as: strings as they are, numbers in decimal, booleans
 * as `true`/`false`. Undefined (no header) for absent, null, non-primitive and non-finite values,
 * and integers outside JavaScript's safe range, which could not round-trip.
 */
export function headerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value)) {
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) return undefined;
    return String(value);
  }
  return undefined;
}

/** One computed `Mcp-Param-*` header: the lower-cased header name, its raw text and sent value. */
export interface ParamHeaderValue {
  readonly header: string;
  readonly text: string;
  readonly value: string;
  readonly type: ParamHeader['type'];
}

/** The `Mcp-Param-*` headers of one call of a tool with `headers`, given its `arguments`. */
export function paramHeaderValues(headers: readonly ParamHeader[], args: unknown): ParamHeaderValue[] {
  const out: ParamHeaderValue[] = [];
  for (const declared of headers) {
    const text = headerText(valueAt(args, declared.path));
    if (text === undefined) continue;
    out.push({
      header: `mcp-param-${declared.name.toLowerCase()}`,
      text,
      value: encodeHeaderValue(text),
      type: declared.type,
    });
  }
  return out;
}

/**
 * Whether a header value (decoded) stands for the argument `value` of a parameter of `type`:
 * strings exactly (values are case-sensitive), booleans as `true`/`false`, integers numerically
 * (`42.0` and `42` are the same integer).
 */
export function headerMatchesArgument(header: string, value: unknown, type: ParamHeader['type']): boolean {
  if (type === 'string') return typeof value === 'string' && header === value;
  if (type === 'boolean') return typeof value === 'boolean' && header === String(value);
  return typeof value === 'number' && header.trim() !== '' && Number(header) === value;
}
