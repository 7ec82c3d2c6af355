/**
 * Redaction of tool arguments and error texts before they are hashed into the audit ledger
 * (praxis SEC-9; audit.md tamper test 29). A ledger is append-only and copied to other trust
 * domains, so a secret that reaches it can never be taken back: redaction errs on the side of
 * removing too much.
 *
 * Two mechanisms:
 *
 * - **Secret keys.** A member whose name looks secret (password, token, api_key, authorization,
 *   cookie, session...; compared case-insensitively with separators removed, so `apiKey`,
 *   `API-KEY` and `x_api_key` all match) has its whole value replaced by {@link REDACTED},
 *   whatever its type; `null` and `undefined` are kept, they reveal nothing. The same holds for
 *   the second element of a two-element `[name, value]` array (header lists, `Object.entries`).
 * - **Secret shapes.** Inside every string (member names included) known credential shapes are
 *   replaced in place: PEM private keys, cloud and SaaS tokens (AWS, GitHub, GitLab, npm, PyPI,
 *   Slack, OpenAI, Anthropic, Hugging Face, Stripe, Google, DigitalOcean), JWTs, `Authorization:`
 *   and `Cookie:` header values, `Bearer` tokens, `password=...`-style pairs and credential CLI
 *   flags, and the password of `scheme://user:password@host` URLs and DSNs (the user is kept).
 *
 * The result is a copy (arrays and objects are rebuilt; `toJSON` is applied first, as JSON would),
 * so the caller's value is never mutated. Values nested deeper than `maxDepth` become
 * {@link REDACTED_DEPTH}, references back to an ancestor {@link REDACTED_CIRCULAR}, and anything
 * that throws while being read {@link REDACTED_ERROR}: the redactor itself never throws.
 */
import {
  isBuiltInSecretKey,
  MAYBE_SECRET,
  normalizeKey,
  REDACTED,
  VALUE_RULES,
  type ValueRule,
} from './secret-patterns.js';

export { REDACTED };

/** Replaces a value nested deeper than the redactor's `maxDepth`. */
export const REDACTED_DEPTH = '[REDACTED:depth]';
/** Replaces a reference back to one of the value's own ancestors. */
export const REDACTED_CIRCULAR = '[REDACTED:circular]';
/** Replaces a value whose reading or redaction threw (a getter, a Proxy, `toJSON`). */
export const REDACTED_ERROR = '[REDACTED:error]';
/** The default nesting cap, as in praxis. */
export const DEFAULT_REDACTION_DEPTH = 32;

/** Options of {@link createRedactor}. */
export interface RedactorOptions {
  /**
   * More secret member names. A string matches every name whose normalized form (lowercase, only
   * `a-z0-9`) contains the string's normalized form; a RegExp is tested against the raw name.
   */
  readonly extraKeyPatterns?: readonly (string | RegExp)[];
  /**
   * More secret shapes: every non-empty match inside a string is replaced by {@link REDACTED}. A
   * string longer than {@link PATTERN_PIECE} is matched piece by piece ({@link redactPatternInPieces}).
   */
  readonly extraValuePatterns?: readonly RegExp[];
  /** Values nested deeper than this (the argument itself is depth 0) are cut; default 32. */
  readonly maxDepth?: number;
  /**
   * Member names (exact, case-sensitive) that are never secret whatever they look like: names a
   * protocol defines for non-secret values (MCP's `progressToken`). Their values are still checked
   * for secret shapes.
   */
  readonly keepKeys?: readonly string[];
}

/** A redaction function: returns a redacted copy of any value and never throws. */
export type Redactor = (value: unknown) => unknown;

function withoutStatefulFlags(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
}

function globalCopy(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`);
}

function applyRules(text: string, rules: readonly ValueRule[]): string {
  let out = text;
  for (const rule of rules) {
    rule.pattern.lastIndex = 0;
    out =
      rule.replacement === REDACTED
        ? out.replace(rule.pattern, (match) => (match === '' ? '' : REDACTED))
        : out.replace(rule.pattern, rule.replacement);
  }
  return out;
}

/**
 * Extra value patterns (the operator's, `audit.redact.patterns`) match strings of up to this many
 * UTF-16 units whole, and longer ones piece by piece: pieces of this length, each starting
 * {@link PATTERN_STEP} after the previous one. A backtracking match that fails may scan from each
 * start position to the end of its text; pieces bound that scan, so the work grows in proportion
 * to the string's length instead of with its square. (The configuration refuses the patterns that
 * could backtrack far worse: see `pattern-safety.ts`.) The built-in rules are written not to need
 * this and see strings whole.
 */
export const PATTERN_PIECE = 1024;
/** Pieces overlap by half: every match of up to this many units lies whole within one piece. */
export const PATTERN_STEP = PATTERN_PIECE / 2;

/**
 * `text` with every non-empty match of `pattern` (global) replaced by {@link REDACTED}; a long text
 * matched piece by piece (see {@link PATTERN_PIECE}). What any piece matches is removed, runs of
 * overlapping matches as one. A match that reaches the end of its piece might go on: it is matched
 * again from its start on twice as much text, and so on, until it ends before the text given.
 * Anchors and lookarounds see the piece, so a long text may lose a little more than the pattern
 * alone would remove.
 */
export function redactPatternInPieces(text: string, pattern: RegExp): string {
  if (text.length <= PATTERN_PIECE) {
    pattern.lastIndex = 0;
    return text.replace(pattern, (match) => (match === '' ? '' : REDACTED));
  }
  const sticky = new RegExp(pattern.source, `${pattern.flags.replace(/[gy]/g, '')}y`);
  const ranges: [number, number][] = [];
  /** How far a match followed past its piece reached: later pieces' matches inside are known. */
  let followed = 0;
  for (let start = 0; ; start += PATTERN_STEP) {
    const end = Math.min(start + PATTERN_PIECE, text.length);
    for (const m of text.slice(start, end).matchAll(pattern)) {
      if (m[0] === '') continue;
      const from = start + m.index;
      let to = from + m[0].length;
      if (to === end && end < text.length && end > followed) {
        for (let limit = end; to === limit && limit < text.length; ) {
          limit = Math.min(text.length, from + 2 * (limit - from));
          sticky.lastIndex = 0;
          const longer = sticky.exec(text.slice(from, limit));
          if (longer === null) break;
          to = Math.max(to, from + longer[0].length);
        }
        followed = to;
      }
      ranges.push([from, to]);
    }
    if (end === text.length) break;
  }
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a[0] - b[0]);
  let out = '';
  let kept = 0;
  let current = ranges[0]!;
  for (const range of ranges.slice(1)) {
    if (range[0] <= current[1]) current = [current[0], Math.max(current[1], range[1])];
    else {
      out += text.slice(kept, current[0]) + REDACTED;
      kept = current[1];
      current = range;
    }
  }
  return out + text.slice(kept, current[0]) + REDACTED + text.slice(current[1]);
}

const KEY_CACHE_LIMIT = 4096;

/**
 * The member-name test of a redactor built with `options`: true for a name whose value is secret.
 * Decisions are cached (up to a few thousand names), so build it once and reuse it. Exposed so that
 * a caller holding JSON text can tell whether any member name in it needs the redactor at all.
 */
export function createSecretKeyTest(
  options: Pick<RedactorOptions, 'extraKeyPatterns' | 'keepKeys'> = {},
): (key: string) => boolean {
  const extraStems: string[] = [];
  const extraKeyRegexes: RegExp[] = [];
  for (const pattern of options.extraKeyPatterns ?? []) {
    if (typeof pattern === 'string') {
      const stem = normalizeKey(pattern);
      if (stem !== '') extraStems.push(stem);
    } else {
      extraKeyRegexes.push(withoutStatefulFlags(pattern));
    }
  }
  const keep = new Set(options.keepKeys ?? []);
  const keyCache = new Map<string, boolean>();
  return (key: string): boolean => {
    const cached = keyCache.get(key);
    if (cached !== undefined) return cached;
    let secret = !keep.has(key) && isBuiltInSecretKey(key);
    if (!secret && !keep.has(key) && extraStems.length > 0) {
      const normalized = normalizeKey(key);
      secret = extraStems.some((stem) => normalized.includes(stem));
    }
    if (!secret && !keep.has(key)) secret = extraKeyRegexes.some((regex) => regex.test(key));
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    keyCache.set(key, secret);
    return secret;
  };
}

/**
 * A redactor with the built-in rules plus `options`' extra ones. Build it once and reuse it: member
 * name decisions are cached (up to a few thousand names).
 */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const maxDepth = options.maxDepth ?? DEFAULT_REDACTION_DEPTH;
  const isSecretKey = createSecretKeyTest(options);
  const extraValuePatterns = (options.extraValuePatterns ?? []).map(globalCopy);

  function redactString(text: string): string {
    let out = MAYBE_SECRET.test(text) ? applyRules(text, VALUE_RULES) : text;
    for (const pattern of extraValuePatterns) out = redactPatternInPieces(out, pattern);
    return out;
  }

  function redactValue(input: unknown, depth: number, ancestors: object[], jsonApplied: boolean): unknown {
    if (depth > maxDepth) return REDACTED_DEPTH;
    if (typeof input === 'string') return redactString(input);
    if (typeof input !== 'object' || input === null) return input;
    if (input instanceof String) return redactString(String(input));
    if (input instanceof Number || input instanceof Boolean) return input.valueOf();
    if (!jsonApplied && typeof (input as { toJSON?: unknown }).toJSON === 'function') {
      return redactValue((input as { toJSON(): unknown }).toJSON(), depth, ancestors, true);
    }
    if (ancestors.includes(input)) return REDACTED_CIRCULAR;
    ancestors.push(input);
    try {
      if (Array.isArray(input)) {
        const out: unknown[] = [];
        for (let i = 0; i < input.length; i++) out.push(redactChild(input, String(i), depth, ancestors));
        // A [name, value] pair (header lists, Object.entries output) with a secret name.
        if (out.length === 2 && typeof input[0] === 'string' && isSecretKey(input[0])) {
          out[1] = secretMember(input, '1');
        }
        return out;
      }
      const entries: [string, unknown][] = [];
      for (const key of Object.keys(input)) {
        const value = isSecretKey(key) ? secretMember(input, key) : redactChild(input, key, depth, ancestors);
        entries.push([redactString(key), value]);
      }
      // fromEntries defines own data properties, so a "__proto__" member stays a member.
      return Object.fromEntries(entries);
    } finally {
      ancestors.pop();
    }
  }

  function secretMember(holder: object, key: string): unknown {
    try {
      const value = (holder as Record<string, unknown>)[key];
      return value === null || value === undefined ? value : REDACTED;
    } catch {
      return REDACTED_ERROR;
    }
  }

  function redactChild(holder: object, key: string, depth: number, ancestors: object[]): unknown {
    try {
      return redactValue((holder as Record<string, unknown>)[key], depth + 1, ancestors, false);
    } catch {
      return REDACTED_ERROR;
    }
  }

  return (value: unknown): unknown => {
    try {
      return redactValue(value, 0, [], false);
    } catch {
      return REDACTED_ERROR;
    }
  };
}

/** A redactor with the built-in rules and default depth, for callers without extra rules. */
export const redact: Redactor = createRedactor();
