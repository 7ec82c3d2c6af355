/**
 * Matching envelopes against capability patterns (see `capability-pattern.ts` for the language).
 * Pure functions over checked patterns; a pattern is compiled once (`compileCapability`) and the
 * compiled form is what the space keeps per participant.
 *
 * A message passes when **any** of the participant's capabilities matches (ADR-q8f). One
 * capability matches when its kind pattern matches `kind` and, if it has a payload pattern, the
 * payload matches it: every key of the pattern must find a value that matches (keys are
 * conjunctive, lists are one-of). A string pattern only ever matches a string: `"!tools/call"`
 * does not match a number, and a missing field matches nothing, not even a negation.
 */

import { isObject } from '../protocol/jsonrpc/json-object.js';
import type { CapabilityPattern, PayloadPattern, ValuePattern } from './capability-pattern.js';
import { regexOf } from './capability-pattern.js';
import { type PathStep, parseJsonPathSubset, selectPath } from './jsonpath-subset.js';

/** What a capability is matched against: an envelope's kind and payload. */
export interface CapabilitySubject {
  readonly kind: string;
  readonly payload: unknown;
}

type StringMatcher = (value: string) => boolean;
type ValueMatcher = (value: unknown) => boolean;

/** A capability ready to match: the source pattern and its compiled predicate. */
export interface CompiledCapability {
  readonly source: CapabilityPattern;
  readonly matches: (subject: CapabilitySubject) => boolean;
}

/** How deep `**` looks for a match (a payload is never deeper than this in practice). */
const DEEP_LIMIT = 32;

function escapeRegex(ch: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch;
}

/**
 * A glob as a predicate: `**` any run, `*` any run without `/`, `?` one character but `/`, `\x`
 * the character x. A glob without wildcards is compared as a plain string.
 */
export function compileGlob(glob: string): StringMatcher {
  let source = '';
  let literal = '';
  let wild = false;
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === '\\' && i + 1 < glob.length) {
      const next = glob[++i]!;
      source += escapeRegex(next);
      literal += next;
    } else if (ch === '*' && glob[i + 1] === '*') {
      source += '.*';
      wild = true;
      i++;
      while (glob[i + 1] === '*') i++;
    } else if (ch === '*') {
      source += '[^/]*';
      wild = true;
    } else if (ch === '?') {
      source += '[^/]';
      wild = true;
    } else {
      source += escapeRegex(ch);
      literal += ch;
    }
  }
  if (!wild) return (value) => value === literal;
  const re = new RegExp(`^${source}$`, 's');
  return (value) => re.test(value);
}

/** A string pattern as a predicate: `!p` negation, `/re/flags` regular expression, else a glob. */
export function compileStringPattern(pattern: string): StringMatcher {
  if (pattern.startsWith('!')) {
    const inner = compileStringPattern(pattern.slice(1));
    return (value) => !inner(value);
  }
  const re = regexOf(pattern);
  if (re) return (value) => re.test(value);
  return compileGlob(pattern);
}

/** The literal pattern that matches exactly `text` and nothing else (escapes what is special). */
export function escapeLiteral(text: string): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\\' || ch === '*' || ch === '?' || (i === 0 && (ch === '!' || ch === '/'))) out += '\\';
    out += ch;
  }
  return out;
}

function hasWildcard(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    if (key[i] === '\\') i++;
    else if (key[i] === '*' || key[i] === '?') return true;
  }
  return false;
}

function compileValue(pattern: ValuePattern): ValueMatcher {
  if (typeof pattern === 'string') {
    const match = compileStringPattern(pattern);
    return (value) => typeof value === 'string' && match(value);
  }
  if (Array.isArray(pattern)) {
    const options = (pattern as readonly ValuePattern[]).map(compileValue);
    return (value) => options.some((option) => option(value));
  }
  if (isObject(pattern)) {
    const object = compilePayload(pattern as PayloadPattern);
    return (value) => isObject(value) && object(value);
  }
  return (value) => value === pattern;
}

function deepSome(value: unknown, test: ValueMatcher, depth: number): boolean {
  if (test(value)) return true;
  if (depth >= DEEP_LIMIT) return false;
  if (Array.isArray(value)) return value.some((v) => deepSome(v, test, depth + 1));
  if (isObject(value)) return Object.values(value).some((v) => deepSome(v, test, depth + 1));
  return false;
}

function compileKey(key: string, pattern: ValuePattern): (payload: Record<string, unknown>) => boolean {
  const test = compileValue(pattern);
  if (key === '**') return (payload) => deepSome(payload, test, 0);
  if (key.startsWith('$')) {
    const parsed = parseJsonPathSubset(key);
    // parseCapability refuses any other key; an unchecked pattern with a bad path matches nothing.
    const steps: readonly PathStep[] | undefined = parsed.ok ? parsed.steps : undefined;
    return (payload) => steps !== undefined && selectPath(payload, steps).some(test);
  }
  if (hasWildcard(key)) {
    const keyMatch = compileGlob(key);
    return (payload) => Object.keys(payload).some((k) => keyMatch(k) && test(payload[k]));
  }
  const literal = compileGlob(key);
  const name = key.includes('\\') ? undefined : key;
  return (payload) =>
    name !== undefined
      ? Object.hasOwn(payload, name) && test(payload[name])
      : Object.keys(payload).some((k) => literal(k) && test(payload[k]));
}

function compilePayload(pattern: PayloadPattern): (payload: Record<string, unknown>) => boolean {
  const keys = Object.entries(pattern).map(([key, value]) => compileKey(key, value));
  return (payload) => keys.every((key) => key(payload));
}

/** Compiles a checked capability (from `parseCapability`) into a predicate over envelopes. */
export function compileCapability(capability: CapabilityPattern): CompiledCapability {
  const kind = compileValue(capability.kind as ValuePattern);
  const payload = capability.payload === undefined ? undefined : compilePayload(capability.payload);
  return {
    source: capability,
    matches: (subject) =>
      kind(subject.kind) &&
      (payload === undefined || (isObject(subject.payload) && payload(subject.payload))),
  };
}

/** Whether `capability` allows `subject`. Compiles on every call: keep compiled forms for hot paths. */
export function matchesCapability(capability: CapabilityPattern, subject: CapabilitySubject): boolean {
  return compileCapability(capability).matches(subject);
}

/** Whether any of `capabilities` allows `subject` (the rule of ADR-q8f). */
export function anyCapabilityMatches(
  capabilities: readonly CompiledCapability[],
  subject: CapabilitySubject,
): boolean {
  for (const capability of capabilities) if (capability.matches(subject)) return true;
  return false;
}
