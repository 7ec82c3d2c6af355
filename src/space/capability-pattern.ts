/**
 * Capability patterns (MEUP ADR-q8f): JSON patterns over an envelope's `{kind, payload}` that say
 * what a participant may send. This module reads them from untrusted JSON (the configuration, or a
 * `capability/grant` payload) into a checked `CapabilityPattern`; `capability-matcher.ts` matches.
 *
 * A capability is `{kind, payload?}` (or the shorthand string `"chat"` for `{kind: "chat"}`):
 *
 * - `kind`: a string pattern, or a list of them (one-of);
 * - `payload`: an object whose keys name payload fields and whose values are patterns. A value is
 *   a string pattern, a list (one-of), a nested object (the field must be an object matching it),
 *   or a number, boolean or null (equality).
 *
 * String patterns: a literal, a glob (`*` any run without `/`, `**` any run, `?` one character but
 * `/`, `\` escapes the next character), `!pattern` (negation), or `/regex/flags` (flags of
 * `imsu`). Payload keys: a literal field name, a glob over field names, `**` (the value may be
 * anywhere below), or a JSONPath subset (`$.a.b`, `$.a[*].b`, `$.a[0]`, `$['a b']`; see
 * `jsonpath-subset.ts`).
 *
 * Bounds keep hostile input cheap: at most 64 nodes deep, 512 nodes, strings of 1024 characters.
 * Regular expressions can take exponential time on crafted input, so they are refused where the
 * pattern comes from a participant (`allowRegex: false`, used for grants).
 */
import { parseJsonPathSubset } from './jsonpath-subset.js';

/** A pattern for one payload value. */
export type ValuePattern = string | number | boolean | null | readonly ValuePattern[] | PayloadPattern;

/** A pattern for an object: every key must find a matching value. `{}` matches any object. */
export interface PayloadPattern {
  readonly [key: string]: ValuePattern;
}

/** What a participant may send: an envelope matches when its kind and its payload match. */
export interface CapabilityPattern {
  readonly kind: string | readonly string[];
  readonly payload?: PayloadPattern;
}

/** Why a raw value is not a capability: where (`kind`, `payload.params.name`) and what. */
export interface CapabilityProblem {
  readonly path: string;
  readonly problem: string;
}

export type ParseCapabilityResult =
  | { readonly ok: true; readonly capability: CapabilityPattern }
  | { readonly ok: false; readonly error: CapabilityProblem };

export interface ParseCapabilityOptions {
  /** Whether `/regex/` string patterns are accepted (configuration: yes; grants: no). */
  readonly allowRegex: boolean;
}

export const CAPABILITY_LIMITS = { maxDepth: 64, maxNodes: 512, maxStringLength: 1024 } as const;

const REGEX_PATTERN = /^\/(.+)\/([imsu]*)$/s;

/** Whether a string pattern is written as a regular expression (`/.../flags`). */
export function isRegexPattern(pattern: string): boolean {
  const body = pattern.startsWith('!') ? pattern.slice(1) : pattern;
  return REGEX_PATTERN.test(body);
}

/** The RegExp of a `/.../flags` pattern, or undefined when it is not one. Throws on bad syntax. */
export function regexOf(pattern: string): RegExp | undefined {
  const m = REGEX_PATTERN.exec(pattern);
  return m ? new RegExp(m[1]!, m[2]) : undefined;
}

function trailingBackslashes(text: string): number {
  let n = 0;
  while (n < text.length && text[text.length - 1 - n] === '\\') n++;
  return n;
}

/**
 * An object made by `{}` or `JSON.parse` (its prototype `Object.prototype` or null): stricter than
 * `isObject`, since a pattern may come from code as well as from YAML or JSON, and a class instance or a
 * `Map` is not a pattern.
 */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

class Reader {
  nodes = 0;
  constructor(readonly options: ParseCapabilityOptions) {}

  fail(path: string, problem: string): never {
    throw new Refused({ path, problem });
  }

  count(path: string, depth: number): void {
    this.nodes++;
    if (this.nodes > CAPABILITY_LIMITS.maxNodes)
      this.fail(path, `a capability may hold at most ${CAPABILITY_LIMITS.maxNodes} values`);
    if (depth > CAPABILITY_LIMITS.maxDepth)
      this.fail(path, `a capability may nest at most ${CAPABILITY_LIMITS.maxDepth} levels`);
  }

  stringPattern(value: string, path: string): string {
    if (value.length === 0) this.fail(path, 'a pattern must not be empty');
    if (value.length > CAPABILITY_LIMITS.maxStringLength)
      this.fail(path, `a pattern may have at most ${CAPABILITY_LIMITS.maxStringLength} characters`);
    const body = value.startsWith('!') ? value.slice(1) : value;
    if (body.length === 0) this.fail(path, '"!" must be followed by a pattern');
    if (body.startsWith('!'))
      this.fail(path, 'a double negation "!!" is not a pattern; write the pattern itself');
    if (REGEX_PATTERN.test(body)) {
      if (!this.options.allowRegex)
        this.fail(path, 'regular expressions are accepted in the configuration only, not in a grant');
      try {
        regexOf(body);
      } catch (err) {
        this.fail(path, `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`);
      }
    } else if (trailingBackslashes(body) % 2 === 1) {
      this.fail(path, 'a pattern must not end with an unescaped "\\"');
    }
    return value;
  }

  value(raw: unknown, path: string, depth: number): ValuePattern {
    this.count(path, depth);
    if (typeof raw === 'string') return this.stringPattern(raw, path);
    if (typeof raw === 'number') {
      if (!Number.isFinite(raw)) this.fail(path, 'a number pattern must be finite');
      return raw;
    }
    if (typeof raw === 'boolean' || raw === null) return raw;
    if (Array.isArray(raw)) {
      if (raw.length === 0) this.fail(path, 'a one-of list must name at least one pattern');
      return raw.map((item: unknown, i) => this.value(item, `${path}[${i}]`, depth + 1));
    }
    if (isPlainObject(raw)) return this.payload(raw, path, depth + 1);
    return this.fail(path, 'a pattern is a string, a number, a boolean, null, a list or an object');
  }

  payload(raw: Record<string, unknown>, path: string, depth: number): PayloadPattern {
    const out: Record<string, ValuePattern> = {};
    for (const [key, value] of Object.entries(raw)) {
      const at = `${path}.${key}`;
      if (key.length === 0) this.fail(at, 'a payload key must not be empty');
      if (key.length > CAPABILITY_LIMITS.maxStringLength)
        this.fail(at, `a payload key may have at most ${CAPABILITY_LIMITS.maxStringLength} characters`);
      if (key.startsWith('$')) {
        const parsed = parseJsonPathSubset(key);
        if (!parsed.ok) this.fail(at, parsed.problem);
      }
      out[key] = this.value(value, at, depth);
    }
    return out;
  }
}

class Refused {
  constructor(readonly error: CapabilityProblem) {}
}

/**
 * Reads one capability from untrusted JSON. Accepts `"kind-pattern"` as shorthand for
 * `{kind: "kind-pattern"}`; otherwise an object with `kind` and optionally `payload`, nothing
 * else. Never throws.
 */
export function parseCapability(raw: unknown, options: ParseCapabilityOptions): ParseCapabilityResult {
  const reader = new Reader(options);
  try {
    if (typeof raw === 'string') return { ok: true, capability: { kind: reader.stringPattern(raw, 'kind') } };
    if (!isPlainObject(raw))
      return reader.fail('', 'a capability is an object {kind, payload?} or a kind pattern string');
    for (const key of Object.keys(raw)) {
      if (key !== 'kind' && key !== 'payload')
        reader.fail(key, 'a capability has only the keys kind and payload');
    }
    const kindRaw = raw.kind;
    let kind: string | readonly string[];
    if (typeof kindRaw === 'string') kind = reader.stringPattern(kindRaw, 'kind');
    else if (Array.isArray(kindRaw) && kindRaw.length > 0) {
      kind = kindRaw.map((k: unknown, i) =>
        typeof k === 'string'
          ? reader.stringPattern(k, `kind[${i}]`)
          : reader.fail(`kind[${i}]`, 'a kind pattern is a string'),
      );
    } else {
      return reader.fail('kind', 'kind is required: a kind pattern such as "mcp/*", or a list of them');
    }
    if (raw.payload === undefined) return { ok: true, capability: { kind } };
    if (!isPlainObject(raw.payload)) return reader.fail('payload', 'payload is an object of field patterns');
    return { ok: true, capability: { kind, payload: reader.payload(raw.payload, 'payload', 1) } };
  } catch (err) {
    if (err instanceof Refused) return { ok: false, error: err.error };
    throw err;
  }
}

/** Reads a list of capabilities; the first problem names its index (`[2].payload.method`). */
export function parseCapabilities(
  raw: unknown,
  options: ParseCapabilityOptions,
):
  | { readonly ok: true; readonly capabilities: readonly CapabilityPattern[] }
  | { readonly ok: false; readonly error: CapabilityProblem } {
  if (!Array.isArray(raw)) return { ok: false, error: { path: '', problem: 'capabilities are a list' } };
  const out: CapabilityPattern[] = [];
  for (let i = 0; i < raw.length; i++) {
    const parsed = parseCapability(raw[i], options);
    if (!parsed.ok) {
      const path = parsed.error.path === '' ? `[${i}]` : `[${i}].${parsed.error.path}`;
      return { ok: false, error: { path, problem: parsed.error.problem } };
    }
    out.push(parsed.capability);
  }
  return { ok: true, capabilities: out };
}

/**
 * The capability in its canonical JSON form (keys sorted), for comparing two capabilities (revoke
 * by capability) and for showing them.
 */
export function canonicalCapability(capability: CapabilityPattern): string {
  return JSON.stringify(capability, (_key, value: unknown) =>
    isPlainObject(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((k) => [k, value[k]]),
        )
      : value,
  );
}
