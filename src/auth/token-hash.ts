/**
 * Bearer tokens at rest: the configuration holds only the SHA-256 of each token, so a leaked
 * configuration file (or `config show`, or a backup) never leaks a credential. The tokens the
 * gateway mints carry a fixed prefix so that secret scanners and the audit redactor can spot them.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The prefix of every token `newToken` makes ("switchboard bearer token"). Recognisable in logs,
 * pastes and repositories; never part of a JWT (which starts with `eyJ`).
 */
export const TOKEN_PREFIX = 'sbt_';

/** Random bytes per token: 256 bits, far beyond guessing, as long as a SHA-256. */
export const TOKEN_BYTES = 32;

/**
 * The lower-case hex SHA-256 of the token's UTF-8 bytes: the value the configuration stores
 * (`auth.tokens[].sha256`). A plain hash, not a slow password hash, is enough because tokens are
 * 256 random bits, not something a person chose: there is nothing to brute-force.
 *
 * @example hashToken('sbt_...') // '3f2a...' (64 hex digits)
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * A new token: {@link TOKEN_PREFIX} followed by {@link TOKEN_BYTES} bytes from the operating
 * system's CSPRNG in base64url (43 characters, no padding). Its characters are all valid in an
 * `Authorization: Bearer` value and it never looks like a JWT (no dots).
 */
export function newToken(): string {
  return TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString('base64url');
}

/** The bytes of a hex string, or undefined when it is not hex (odd length or a non-hex digit). */
function hexBytes(hex: string): Buffer | undefined {
  if (hex.length % 2 !== 0) return undefined;
  // Buffer.from stops silently at the first pair that is not hex: a short result means "not hex".
  const bytes = Buffer.from(hex, 'hex');
  return bytes.length * 2 === hex.length ? bytes : undefined;
}

/**
 * Whether two hex strings (case-insensitive) encode the same bytes, in time that depends only on
 * their length, never on where they first differ, so response times do not reveal how much of a
 * secret value a guess got right. False when either is not hex or their lengths differ (lengths
 * are not secret: every hash here is 64 digits).
 */
export function safeEqualHex(a: string, b: string): boolean {
  const x = hexBytes(a);
  const y = hexBytes(b);
  if (x === undefined || y === undefined || x.length !== y.length) return false;
  return timingSafeEqual(x, y);
}
