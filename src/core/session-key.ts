import { randomBytes } from 'node:crypto';

/**
 * A new session key: 128 bits from the CSPRNG in base64url (22 characters of `[A-Za-z0-9_-]`).
 * It is at once a valid `Mcp-Session-Id` (visible ASCII) and a valid MEUP context segment.
 */
export function newSessionKey(): string {
  return randomBytes(16).toString('base64url');
}
