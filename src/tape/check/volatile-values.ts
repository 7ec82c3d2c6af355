/**
 * Values that differ from one run of a server to the next without anything having changed: the
 * rules `tape check` ignores them by. A value is volatile only when the recorded value and the
 * live one both look the part, so a timestamp that became `null`, or an id that became a name, is
 * still reported.
 *
 * - Timestamps: under a member whose name says time (`timestamp`, `time`, `date`, `created`,
 *   `modified`, `expires`, and any name ending in `At`, `Time`, `Date`, `Timestamp`, `_at`, `_time`,
 *   `_date`, e.g. `createdAt`, `lastModified`), an ISO-8601-looking string (`2026-11-28`,
 *   `2026-11-28T10:00:00Z`, with fractions and offsets) or an epoch-looking number (milliseconds
 *   from 1e12 to 1e13, i.e. 2001 to 2286, or seconds from 1e9 to 1e10).
 * - Generated ids: under a member named `id` or ending in `Id`/`_id` (`requestId`, `taskId`), a
 *   string that looks machine-made: a UUID, a ULID, 16 or more hex digits, or 16 or more
 *   base64url characters mixing letters and digits. `tape check --volatile-key NAME` adds member
 *   names whose values are always ignored (a server's own nonces, cursors, etags).
 *
 * JSON-RPC ids are not here: the checker never compares a message's `id` at all.
 */

const TIME_KEY =
  /^(timestamp|time|date|created|modified|updated|expires|expiry|lastModified)$|(At|Time|Date|Timestamp|_at|_time|_date)$/;
const ID_KEY = /^id$|(Id|_id|ID)$/;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const HEX = /^[0-9a-f]{16,}$/i;
const BASE64URL = /^[A-Za-z0-9_-]{16,}$/;

/** Whether `value` looks like a timestamp (see the module comment). */
export function looksLikeTimestamp(value: unknown): boolean {
  if (typeof value === 'string') return ISO_8601.test(value) && !Number.isNaN(Date.parse(value));
  if (typeof value !== 'number' || !Number.isInteger(value)) return false;
  return (value >= 1e12 && value < 1e13) || (value >= 1e9 && value < 1e10);
}

/** Whether `value` looks like an id a machine made (see the module comment). */
export function looksGenerated(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  if (UUID.test(value) || ULID.test(value) || HEX.test(value)) return true;
  return BASE64URL.test(value) && /[A-Za-z]/.test(value) && /\d/.test(value);
}

export interface VolatileRules {
  /** Apply the built-in timestamp and generated-id rules (default true). */
  readonly builtIn?: boolean;
  /** Member names whose values are always ignored (`--volatile-key`). */
  readonly keys?: readonly string[];
}

/**
 * A predicate for the diff: whether the member `key`, recorded as `recorded` and live as `live`,
 * is volatile under `rules`.
 */
export function volatilePredicate(
  rules: VolatileRules = {},
): (key: string, recorded: unknown, live: unknown) => boolean {
  const keys = new Set(rules.keys ?? []);
  const builtIn = rules.builtIn ?? true;
  return (key, recorded, live) => {
    if (keys.has(key)) return true;
    if (!builtIn) return false;
    if (TIME_KEY.test(key)) return looksLikeTimestamp(recorded) && looksLikeTimestamp(live);
    if (ID_KEY.test(key)) return looksGenerated(recorded) && looksGenerated(live);
    return false;
  };
}
