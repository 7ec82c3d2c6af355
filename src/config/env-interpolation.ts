/**
 * `${env:NAME}` in configuration strings: secrets (tokens, API keys) stay in the environment and
 * out of the file, which can then be committed. Any number of references may appear anywhere in a
 * string (`"Bearer ${env:TOKEN}"`); `$${` writes a literal `${`. Any other `${...}` is an error
 * rather than literal text, so that a typo (`${ENV:X}`, `${TOKEN}`) never reaches an upstream as
 * a header value. The environment is always a parameter: the caller decides which one applies.
 */

/** One problem in one string; `path` is the configuration key the string belongs to. */
export interface InterpolationError {
  readonly path: string;
  /** The variable that is not set, when that is the problem. */
  readonly variable?: string;
  /** What was found, e.g. `${env:TOKEN}, which is not set`. */
  readonly found: string;
  /** What is allowed instead. */
  readonly expected: string;
  /** A complete sentence naming the key (and the variable). */
  readonly message: string;
}

/** The interpolated string, or every problem found in it. */
export type InterpolationResult =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly errors: readonly InterpolationError[] };

const REFERENCE = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;
// biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
const SYNTAX = '${env:NAME} with NAME made of letters, digits and _ (write $${ for a literal ${)';

/**
 * Replaces every `${env:NAME}` in `text` with `env[NAME]`. A variable set to the empty string
 * counts as set. Fails, naming `path` and the variable, when a variable is not set, a reference is
 * not of the form `${env:NAME}`, or a `${` is never closed. All problems in the string are
 * reported, not only the first.
 */
export function interpolateEnv(text: string, env: NodeJS.ProcessEnv, path: string): InterpolationResult {
  const errors: InterpolationError[] = [];
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${';
      i += 3;
      continue;
    }
    if (!text.startsWith('${', i)) {
      out += text[i];
      i += 1;
      continue;
    }
    const close = text.indexOf('}', i + 2);
    if (close < 0) {
      const found = `an unclosed ${quoteFragment(text.slice(i))}`;
      errors.push({ path, found, expected: SYNTAX, message: `${path}: ${found}; expected ${SYNTAX}` });
      break;
    }
    const inner = text.slice(i + 2, close);
    const name = REFERENCE.exec(inner)?.[1];
    if (name === undefined) {
      const found = quoteFragment(text.slice(i, close + 1));
      errors.push({ path, found, expected: SYNTAX, message: `${path}: found ${found}; expected ${SYNTAX}` });
    } else {
      const value = env[name];
      if (value === undefined) {
        const found = `\${env:${name}}, but ${name} is not set`;
        const expected = `the environment variable ${name} to be set`;
        errors.push({
          path,
          variable: name,
          found,
          expected,
          message: `${path}: the environment variable ${name} is not set (referenced as \${env:${name}})`,
        });
      } else {
        out += value;
      }
    }
    i = close + 1;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out };
}

/**
 * The inverse of interpolation for literal text: every `${` becomes `$${`, so that
 * `interpolateEnv(escapeInterpolation(s), anyEnv, path)` yields `s` unchanged. Used when a
 * computed value (a path, a rendered configuration) is written where interpolation applies.
 */
export function escapeInterpolation(text: string): string {
  // A function, since in a replacement string `$$` would itself mean one `$`.
  return text.replaceAll('${', () => '$${');
}

function quoteFragment(fragment: string): string {
  return JSON.stringify(fragment.length > 40 ? `${fragment.slice(0, 37)}...` : fragment);
}
