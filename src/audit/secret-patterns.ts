/**
 * What counts as secret for the audit redactor: member names (stems, whole words, and the LLM
 * token counters that are not secrets) and credential shapes inside strings. Kept apart from the
 * walker in `redaction.ts` so that adding a provider's token format touches only this file; every
 * new shape needs a sentinel case in `redaction.test.ts` and a fragment in {@link MAYBE_SECRET}.
 */

/** Replaces a secret value or a secret part of a string. */
export const REDACTED = '[REDACTED]';

/** Substrings of a normalized member name that make it secret. */
export const SECRET_KEY_STEMS = [
  'password',
  'passwd',
  'passphrase',
  'passcode',
  'secret',
  'token',
  'apikey',
  'privatekey',
  'accesskey',
  'secretkey',
  'signingkey',
  'encryptionkey',
  'credential',
  'bearer',
  'authorization',
  'cookie',
  'session',
];

/** Whole words of a member name that make it secret (too short to match as substrings). */
export const SECRET_KEY_WORDS = new Set(['pass', 'pwd', 'otp', 'auth', 'jwt', 'pat']);

/** Token counters of LLM APIs (`max_tokens`, `cache_read_input_tokens`...): not secrets. */
export const TOKEN_COUNTER =
  /^(?:(?:max|min|num|total|input|output|prompt|completion|cached|cache|creation|read|reasoning|remaining|used)+tokens?(?:count|limit|used|usage|budget|total|details)?|tokens?(?:count|counts|limit|limits|used|usage|budget|total|max|details)|tokeniz\w*)$/;

/** A secret shape and what replaces it (`$1` keeps a captured prefix such as `password=`). */
export interface ValueRule {
  readonly pattern: RegExp;
  readonly replacement: string;
}

const KEEP_PREFIX = `$1${REDACTED}`;
/** A value: quoted (an unterminated quote runs to the end), or bare up to a separator. */
const QUOTED_OR_BARE = `("(?:[^"\\\\]|\\\\.)*(?:"|$)|'(?:[^'\\\\]|\\\\.)*(?:'|$)|[^\\s&;,"'<>]+)`;

/** Secret shapes inside strings, applied in order (header rules run before the bare Bearer rule). */
export const VALUE_RULES: readonly ValueRule[] = [
  // PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, PGP... BLOCK), to the END line or, if cut off, the end.
  {
    pattern:
      /-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g,
    replacement: REDACTED,
  },
  // Credentials in URLs and DSNs: keep scheme and user, drop the password (which may contain '@').
  // The scheme is bounded so that long dashed or dotted runs cannot make matching quadratic.
  { pattern: /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:@/?#]*:)[^\s/?#]*(?=@)/gi, replacement: KEEP_PREFIX },
  // Header values, to the end of the line.
  { pattern: /\b((?:proxy-)?authorization["']?\s*[:=]\s*)[^\r\n]+/gi, replacement: KEEP_PREFIX },
  { pattern: /\b((?:set-)?cookie["']?\s*[:=]\s*)[^\r\n]+/gi, replacement: KEEP_PREFIX },
  { pattern: /\b(bearer\s+)[A-Za-z0-9._~+/-]{8,}=*/gi, replacement: KEEP_PREFIX },
  // Provider token shapes.
  { pattern: /\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b/g, replacement: REDACTED },
  {
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g,
    replacement: REDACTED,
  },
  { pattern: /\bgl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|agent)-[A-Za-z0-9_.-]{20,}/g, replacement: REDACTED },
  { pattern: /\bnpm_[A-Za-z0-9]{36}\b/g, replacement: REDACTED },
  { pattern: /\bpypi-[A-Za-z0-9_-]{50,}/g, replacement: REDACTED },
  { pattern: /\bxox[a-z]-[A-Za-z0-9-]{10,}/g, replacement: REDACTED },
  { pattern: /\bsk-[A-Za-z0-9_-]{20,}/g, replacement: REDACTED }, // OpenAI, Anthropic (sk-ant-...)
  { pattern: /\bhf_[A-Za-z0-9]{30,}\b/g, replacement: REDACTED },
  { pattern: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}\b/g, replacement: REDACTED },
  { pattern: /\bwhsec_[A-Za-z0-9+/=]{20,}/g, replacement: REDACTED },
  { pattern: /\bAIza[0-9A-Za-z_-]{35}/g, replacement: REDACTED },
  { pattern: /\bya29\.[0-9A-Za-z_-]{20,}/g, replacement: REDACTED },
  { pattern: /\bdo[opr]_v1_[a-f0-9]{64}\b/g, replacement: REDACTED },
  // Switchboard's own bearer tokens (`switchboard auth token`): sbt_ and 32 bytes in base64url.
  { pattern: /\bsbt_[A-Za-z0-9_-]{40,}/g, replacement: REDACTED },
  // JWTs (JWS compact form; the signature part may be empty for alg "none").
  { pattern: /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, replacement: REDACTED },
  // key=value and key: value pairs whose key ends in a secret word (db_password=, "token": ...),
  // also inside JSON or query text. Only the secret word is matched, whatever precedes it.
  {
    pattern: new RegExp(
      `((?:password|passwd|passphrase|pwd|pass|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth|session(?:[_-]?id)?)["']?\\s*[:=]\\s*)${QUOTED_OR_BARE}`,
      'gi',
    ),
    replacement: KEEP_PREFIX,
  },
  // Credential CLI flags with a space: --password hunter2, --token "x".
  {
    pattern: new RegExp(
      `((?:^|\\s)--?(?:password|passwd|pass|pwd|token|secret|api-key|apikey|auth-token|access-token|client-secret|private-key)\\s+)${QUOTED_OR_BARE}`,
      'gi',
    ),
    replacement: KEEP_PREFIX,
  },
];

/**
 * A cheap pre-check: every built-in rule's match contains one of these fragments, so a string
 * without any of them (most paths, ids, hashes, prose) skips the rules. Keep it a superset of
 * VALUE_RULES when adding a rule.
 */
export const MAYBE_SECRET =
  /-----BEGIN|:\/\/|authoriz|cookie|bearer|AKIA|ASIA|ABIA|ACCA|A3T|gh[pousr]_|github_pat_|gl[a-z]+-|npm_|pypi-|xox[a-z]-|sk-|hf_|_live_|_test_|whsec_|AIza|ya29\.|_v1_|sbt_|eyJ|pass|pwd|secret|token|key|credential|auth|session/i;

/** A member name reduced to lowercase `a-z0-9`, so `API-Key`, `api_key` and `apiKey` compare equal. */
export function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** The words of a member name, split at separators and camelCase boundaries, lowercased. */
export function keyWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
}

/**
 * Whether a member name is secret by the built-in rules: a secret stem anywhere in its normalized
 * form (unless it is an LLM token counter such as `max_tokens`), or a short secret word on its own.
 */
export function isBuiltInSecretKey(key: string): boolean {
  const normalized = normalizeKey(key);
  if (!TOKEN_COUNTER.test(normalized) && SECRET_KEY_STEMS.some((stem) => normalized.includes(stem))) {
    return true;
  }
  return keyWords(key).some((word) => SECRET_KEY_WORDS.has(word));
}
