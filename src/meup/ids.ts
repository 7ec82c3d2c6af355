/**
 * Envelope ids: 26 characters of Crockford base32, ULID-shaped (48-bit millisecond time, then a
 * per-process random prefix and a counter). They sort by creation time, are unique across
 * processes with overwhelming probability, and contain only `[0-9A-Z]`, so every id is a valid
 * MEUP context segment (meup.md requirement 27).
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

function encode(value: number, length: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function randomPrefix(): string {
  const bytes = randomBytes(8);
  let out = '';
  for (let i = 0; i < 8; i++) out += ALPHABET[(bytes[i] ?? 0) % 32];
  return out;
}

export type IdGenerator = () => string;

/**
 * A generator of ids. Within one millisecond the counter keeps ids increasing; the counter is
 * 40 bits wide, so it never wraps in practice.
 */
export function createIdGenerator(now: () => number = Date.now): IdGenerator {
  const prefix = randomPrefix();
  let counter = 0;
  return () => {
    counter++;
    return encode(now(), 10) + prefix + encode(counter, 8);
  };
}

/** The process-wide generator. */
export const newEnvelopeId: IdGenerator = createIdGenerator();

/** The millisecond timestamp encoded in an id produced by `createIdGenerator`. */
export function idTime(id: string): number | undefined {
  if (id.length !== 26) return undefined;
  let value = 0;
  for (const ch of id.slice(0, 10)) {
    const digit = ALPHABET.indexOf(ch);
    if (digit < 0) return undefined;
    value = value * 32 + digit;
  }
  return value;
}
