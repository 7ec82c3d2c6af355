/**
 * The member set of a `v: 1` record, checked by the verifier on every line. The hash alone would
 * accept any member an attacker adds and re-hashes; the schema makes "an unknown member" a named
 * failure of its own (audit.md §7, test 20), and pins the types a reader of the ledger relies on.
 *
 * Optional members may be absent (never `null`), which is what lets records written before a member
 * existed (ADR-0038's `request_id`, `client_id`) verify beside newer ones.
 */
import { DECISIONS, TIERS } from './audit-event.js';

const HASH = /^[0-9a-f]{64}$/;
const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const REQUIRED = ['v', 'seq', 'ts', 'method', 'tier', 'decision', 'duration_ms', 'prev_hash', 'entry_hash'];
const OPTIONAL = [
  'session_id',
  'client_id',
  'request_id',
  'upstream',
  'target',
  'args',
  'output_sha256',
  'output_len',
  'error',
  'trace_id',
  'decided_by',
  'rule',
];

/** Names of the members a v1 record may carry, required and optional. */
export const RECORD_MEMBERS: readonly string[] = [...REQUIRED, ...OPTIONAL];

const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
const isHash = (value: unknown): boolean => typeof value === 'string' && HASH.test(value);

/**
 * The check of one member: `true` valid and required, `false` valid and optional, a string the
 * problem. A switch on the name (not a table) because the verifier runs this for every member of
 * every record, and V8 compiles it into pointer comparisons of internalized strings.
 */
function checkMember(name: string, value: unknown, trusted: readonly string[]): boolean | string {
  switch (name) {
    case 'v':
      return value === 1 || 'must be 1';
    case 'seq':
      return (isCount(value) && (value as number) >= 1) || 'must be an integer >= 1';
    case 'ts':
      return (typeof value === 'string' && TS.test(value)) || 'must be RFC 3339 UTC with milliseconds';
    case 'method':
      return (typeof value === 'string' && value !== '') || 'must be a non-empty string';
    case 'tier':
      return (TIERS as readonly unknown[]).includes(value) || `must be one of ${TIERS.join(', ')}`;
    case 'decision':
      return (DECISIONS as readonly unknown[]).includes(value) || `must be one of ${DECISIONS.join(', ')}`;
    case 'duration_ms':
      return (
        (typeof value === 'number' && value >= 0 && value !== Number.POSITIVE_INFINITY) ||
        'must be a number >= 0'
      );
    case 'prev_hash':
    case 'entry_hash':
      return trusted.includes(value as string) || isHash(value) || 'must be 64 lowercase hex digits';
    case 'session_id':
    case 'client_id':
    case 'request_id':
    case 'upstream':
    case 'target':
    case 'error':
    case 'trace_id':
    case 'decided_by':
    case 'rule':
      return typeof value === 'string' ? false : 'must be a string';
    case 'args':
      return false;
    case 'output_sha256':
      return isHash(value) ? false : 'must be 64 lowercase hex digits';
    case 'output_len':
      return isCount(value) ? false : 'must be an integer >= 0';
    default:
      return 'is not a member of a v1 record';
  }
}

/**
 * Why `value` (a parsed line) is not a valid v1 record, or `undefined` when it is. Checks: a plain
 * object, no unknown member, every required member present, each member's type and range, and
 * `output_sha256` and `output_len` present together. `trusted` lists hashes already known to be
 * well-formed (the verifier's previous entry hash and the one it just computed), which spares the
 * hot path a pattern test per hash member.
 */
export function recordSchemaProblem(value: unknown, trusted: readonly string[] = []): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const record = value as Record<string, unknown>;
  let required = 0;
  for (const name in record) {
    const check = checkMember(name, record[name], trusted);
    if (typeof check === 'string') return `member ${JSON.stringify(name)} ${check}`;
    if (check) required++;
  }
  if (required !== REQUIRED.length) {
    return `required member "${REQUIRED.find((name) => !Object.hasOwn(record, name))}" is missing`;
  }
  if (Object.hasOwn(record, 'output_sha256') !== Object.hasOwn(record, 'output_len')) {
    return 'output_sha256 and output_len go together';
  }
  return undefined;
}
