/**
 * JSON Pointers (RFC 6901) with `*` wildcards, as `tape check --ignore` takes them: `/result/content/0/text`,
 * `/result/tools/*\/inputSchema`. A `*` segment matches any one member name or array index; a
 * pattern matches a path of exactly as many segments, and the checker skips everything below a
 * path it matches, so a pattern ignores a whole subtree. A literal `*` member is written `~2`
 * (an escape of ours beside the RFC's `~0` for `~` and `~1` for `/`).
 */

/** A parsed pattern: its segments, `null` where the pattern has a wildcard. */
export type PointerPattern = readonly (string | null)[];

/** Parses a pattern; throws with the reason when it is not a JSON Pointer (it must be empty or start with `/`). */
export function parsePointerPattern(text: string): PointerPattern {
  if (text === '') return [];
  if (!text.startsWith('/'))
    throw new Error(`"${text}" is not a JSON Pointer (it starts with "/", e.g. /result/content/0/text)`);
  return text
    .slice(1)
    .split('/')
    .map((raw) => {
      if (raw === '*') return null;
      if (/~[^012]|~$/.test(raw)) throw new Error(`"${text}": "~" must be followed by 0, 1 or 2`);
      return raw.replace(/~2/g, '*').replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

/**
 * An `--ignore` of `tape check`: a pattern, for every comparison, or scoped to one method as
 * `METHOD:POINTER` (`tools/call:/result/content/0/text`; `sampling/createMessage:/params/messages`
 * for a server→client request). A JSON Pointer starts with `/` (or is empty), a method never
 * does, so the two cannot be confused: text that starts with `/` is always a pointer, whatever
 * colons it holds (`/result/a:/b` is a pointer), and a scoped one splits at its first `:` followed
 * by `/` (or by nothing: `ping:` ignores the whole answer of every `ping`).
 */
export interface IgnoreRule {
  /** The method the rule is scoped to: a request's, for its answer and for a server request. */
  readonly method?: string;
  readonly pattern: PointerPattern;
}

/** Parses an `--ignore` value (see `IgnoreRule`); throws with the reason when it is neither shape. */
export function parseIgnoreRule(text: string): IgnoreRule {
  if (text === '' || text.startsWith('/')) return { pattern: parsePointerPattern(text) };
  const scoped = /^([^\s]+?):(\/.*)?$/s.exec(text);
  if (scoped === null)
    throw new Error(
      `"${text}" is not a JSON Pointer (it starts with "/", e.g. /result/content/0/text) nor METHOD:POINTER (e.g. tools/call:/result/content/0/text)`,
    );
  return { method: scoped[1] as string, pattern: parsePointerPattern(scoped[2] ?? '') };
}

/** The patterns of `rules` that apply to a comparison for `method`. */
export function patternsFor(rules: readonly IgnoreRule[], method: string): PointerPattern[] {
  return rules
    .filter((rule) => rule.method === undefined || rule.method === method)
    .map((rule) => rule.pattern);
}

/** The pointer text of a path of segments (`~` and `/` escaped). */
export function pointerOf(segments: readonly string[]): string {
  return segments.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** Whether `pattern` matches the path `segments` (same length, each segment equal or a wildcard). */
export function matchesPattern(pattern: PointerPattern, segments: readonly string[]): boolean {
  if (pattern.length !== segments.length) return false;
  for (let i = 0; i < pattern.length; i += 1) {
    const want = pattern[i];
    if (want !== null && want !== segments[i]) return false;
  }
  return true;
}

/** A plain RFC 6901 pointer as a pattern without wildcards (a `*` segment is a member named `*`). */
export function literalPointer(text: string): PointerPattern {
  if (text === '') return [];
  return text
    .slice(1)
    .split('/')
    .map((raw) => raw.replace(/~1/g, '/').replace(/~0/g, '~'));
}
