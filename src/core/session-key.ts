import { randomBytes } from 'node:crypto';
import type { SessionKey } from './correlation-table.js';

/**
 * The correlation table's session for requests the gateway itself sends upstream (never a client
 * session: a generated key never starts with `#`). In the trace that traffic is the gateway's own,
 * traced under the session `gateway` (`traceSessionOf` in hops.ts).
 */
export const INTERNAL_SESSION: SessionKey = '#internal';

/**
 * A new session key: 128 bits from the CSPRNG in base64url (22 characters of `[A-Za-z0-9_-]`).
 * It is at once a valid `Mcp-Session-Id` (visible ASCII) and a valid MEUP context segment.
 *
 * Never one that starts with `-`: people paste keys into `switchboard trace show <session>` and
 * `trace tree <context>`, where a leading `-` reads as an option (1 key in 64 would). Such draws
 * are drawn again, so keys stay uniform over the rest (about 127.98 bits).
 */
export function newSessionKey(): string {
  for (;;) {
    const key = randomBytes(16).toString('base64url');
    if (key.charCodeAt(0) !== 0x2d) return key;
  }
}
