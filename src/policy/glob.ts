/**
 * Glob patterns of the policy: `*` matches any run of characters (slashes and line breaks
 * included: tool names and URIs are matched whole), `?` exactly one character, everything else
 * itself. A character is a Unicode code point, so `?` matches `é` and `😀` alike (an astral
 * character is two UTF-16 units, which a plain `.` would split). Compiled once and cached.
 */
const cache = new Map<string, RegExp>();

export function globToRegExp(pattern: string): RegExp {
  let compiled = cache.get(pattern);
  if (!compiled) {
    let source = '';
    // By code point, as the `u` flag reads the result.
    for (const ch of pattern) {
      if (ch === '*') source += '.*';
      else if (ch === '?') source += '.';
      // Only syntax characters are escaped: the `u` flag refuses any other escape.
      else source += ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
    compiled = new RegExp(`^${source}$`, 'su');
    if (cache.size < 10_000) cache.set(pattern, compiled);
  }
  return compiled;
}

export function globMatch(pattern: string, value: string): boolean {
  return pattern === '*' || pattern === value || globToRegExp(pattern).test(value);
}

/** Whether any pattern matches any value. */
export function anyGlobMatch(patterns: readonly string[], values: readonly string[]): boolean {
  return patterns.some((p) => values.some((v) => globMatch(p, v)));
}
