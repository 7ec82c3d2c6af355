/**
 * Turns a raw {@link AuditEvent} into the members of a record, every hygiene step included, before
 * the ledger takes a sequence number: ids bounded (ADR-0038 `boundId`), `args` redacted then
 * repaired into JSON, `target` and `error` redacted, `error` cut, the output hashed and measured
 * but never kept. Whatever the caller passes, the result canonicalizes: the hash can never fail on
 * hostile input, and no secret or output body reaches the disk through this path.
 */
import { hash } from 'node:crypto';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { boundId } from '../bound-id.js';
import type { JsonValue } from '../canonical-json.js';
import type { Redactor } from '../redaction.js';
import { toWellFormedString } from '../well-formed-string.js';
import { type AuditEvent, DECISIONS, type Decision, TIERS, type Tier } from './audit-event.js';
import { canonicalRepairedJson } from './canonical-record.js';
import { ENTRY_HASH_SUFFIX_HEAD, type EncodedRecordLine, entryHashOf } from './record-line.js';

/** Longest `method`, `upstream`, `trace_id`, `decided_by` and `rule` kept, in code points. */
export const MAX_NAME_LENGTH = 256;
/** Longest `target` (a tool name or a resource URI) kept, in code points. */
export const MAX_TARGET_LENGTH = 2048;
/** Error texts are cut to this many UTF-16 units before redaction, bounding the regex work. */
const ERROR_PRECUT = 64 * 1024;
/** Marks a cut text. */
export const CUT_MARK = '…';

/** What {@link recordFields} needs besides the event. */
export interface RecordFieldOptions {
  readonly redactor: Redactor;
  /**
   * `canonicalRepairedJson(redactor(args))`, or a faster function equal to it for `redactor` (see
   * `createRedactedCanonicalJson`); default that expression.
   */
  readonly canonicalArgs?: (args: unknown) => string;
  /** `error` is cut to this many code points (the cut mark included). */
  readonly maxErrorLength: number;
}

/**
 * The members of a record that come from the event (all but v, seq, ts, prev_hash, entry_hash).
 * Every property is always present (`undefined` when the member is absent), so all field objects
 * share one shape.
 */
export interface RecordFields {
  /** The redacted arguments as canonical JSON text. */
  readonly args: string | undefined;
  readonly client_id: string | undefined;
  readonly decided_by: string | undefined;
  readonly decision: Decision;
  readonly duration_ms: number;
  readonly error: string | undefined;
  readonly method: string;
  readonly output_len: number | undefined;
  readonly output_sha256: string | undefined;
  readonly request_id: string | undefined;
  readonly rule: string | undefined;
  readonly session_id: string | undefined;
  readonly target: string | undefined;
  readonly tier: Tier;
  readonly trace_id: string | undefined;
  readonly upstream: string | undefined;
}

/**
 * The record body (every member but `entry_hash`) as a plain object, absent members left out: what
 * `encodeRecordLine` and any JCS implementation turn into the hashed text.
 */
export function recordBody(
  seq: number,
  ts: string,
  prevHash: string,
  fields: RecordFields,
): Record<string, JsonValue> {
  const body: Record<string, JsonValue> = { v: 1, seq, ts, prev_hash: prevHash };
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    body[name] = name === 'args' ? (JSON.parse(value as string) as JsonValue) : (value as JsonValue);
  }
  return body;
}

/** `text` cut to `max` code points, the last one being {@link CUT_MARK} when it was cut. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let count = 0;
  let keep = 0;
  let index = 0;
  for (const char of text) {
    if (count === max - 1) keep = index;
    count++;
    if (count > max) return `${text.slice(0, keep)}${CUT_MARK}`;
    index += char.length;
  }
  return text;
}

/** A name member (`method`, `upstream`, `trace_id`, `decided_by`, `rule`): well-formed, cut to `max`. */
export function boundName(value: unknown, max: number): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  return cutText(toWellFormedString(value), max);
}

/** The `target` member: redacted (a URI may carry a password), well-formed, cut. */
export function boundTarget(target: unknown, redactor: Redactor): string | undefined {
  if (typeof target !== 'string' || target === '') return undefined;
  return cutText(toWellFormedString(String(redactor(target))), MAX_TARGET_LENGTH);
}

/** The `error` member: pre-cut, redacted, well-formed, cut to `max` code points. */
export function boundError(error: unknown, redactor: Redactor, max: number): string | undefined {
  if (typeof error !== 'string' || error === '') return undefined;
  return cutText(toWellFormedString(String(redactor(error.slice(0, ERROR_PRECUT)))), max);
}

/** A duration in ms rounded to microseconds; 0 for anything that is not a positive finite number. */
export function microseconds(duration: number): number {
  if (!(Number.isFinite(duration) && duration > 0)) return 0;
  const rounded = Math.round(duration * 1000) / 1000;
  // Beyond about 1e305 ms the multiplication overflows: such a value is kept as it is.
  return Number.isFinite(rounded) ? rounded : duration;
}

/** `result` as JSON text; undefined when absent or not serialisable (then nothing is hashed). */
function serialisedResult(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  try {
    return JSON.stringify(result);
  } catch {
    return undefined;
  }
}

/** The output text to hash and measure: `output`, else `result` serialised; not a string: none. */
export function eventOutput(event: AuditEvent): unknown {
  if (event.output !== undefined) return event.output;
  return serialisedResult(event.result);
}

function invalid(message: string): SwitchboardError {
  return new SwitchboardError(SbErrorCode.Internal, `Invalid audit event: ${message}`);
}

/**
 * The event's bounded `method`, after checking what every record needs.
 *
 * @throws SwitchboardError `SB_INTERNAL` when the event is not an object, its `method` is missing,
 *   or its `tier` or `decision` is not one of the known values (a caller bug: the call it describes
 *   cannot be audited and must be refused).
 */
export function checkedMethod(event: AuditEvent): string {
  checkedObject(event);
  const method = checkedMethodName(event.method);
  checkedTierAndDecision(event);
  return method;
}

/**
 * The first of {@link checkedMethod}'s checks, on their own for a caller that reads `method`
 * another way (the record encoder remembers the last one).
 *
 * @throws SwitchboardError `SB_INTERNAL` when the event is not an object.
 */
export function checkedObject(event: AuditEvent): void {
  if (typeof event !== 'object' || event === null) throw invalid('not an object');
}

/**
 * An event's `method` bounded, as {@link checkedMethod} checks it.
 *
 * @throws SwitchboardError `SB_INTERNAL` when it is missing or not a non-empty string.
 */
export function checkedMethodName(value: unknown): string {
  const method = boundName(value, MAX_NAME_LENGTH);
  if (method === undefined) throw invalid('method must be a non-empty string');
  return method;
}

/**
 * The last of {@link checkedMethod}'s checks.
 *
 * @throws SwitchboardError `SB_INTERNAL` when `tier` or `decision` is not one of the known values.
 */
export function checkedTierAndDecision(event: AuditEvent): void {
  if (!TIERS.includes(event.tier)) throw invalid(`unknown tier ${JSON.stringify(String(event.tier))}`);
  if (!DECISIONS.includes(event.decision)) {
    throw invalid(`unknown decision ${JSON.stringify(String(event.decision))}`);
  }
}

/**
 * The record members for `event`. Absent or empty optional values are left out (never `null`).
 *
 * @throws SwitchboardError `SB_INTERNAL` as {@link checkedMethod} does.
 */
export function recordFields(event: AuditEvent, options: RecordFieldOptions): RecordFields {
  const method = checkedMethod(event);
  const output = eventOutput(event);
  const duration = Number(event.duration_ms);
  return {
    args:
      event.args === undefined
        ? undefined
        : options.canonicalArgs === undefined
          ? canonicalRepairedJson(options.redactor(event.args))
          : options.canonicalArgs(event.args),
    client_id: boundId(event.client_id),
    decided_by: boundName(event.decided_by, MAX_NAME_LENGTH),
    decision: event.decision,
    duration_ms: microseconds(duration),
    error: boundError(event.error, options.redactor, options.maxErrorLength),
    method,
    output_len: typeof output === 'string' ? Buffer.byteLength(output, 'utf8') : undefined,
    output_sha256: typeof output === 'string' ? hash('sha256', output, 'hex') : undefined,
    request_id: boundId(event.request_id),
    rule: boundName(event.rule, MAX_NAME_LENGTH),
    session_id: boundId(event.session_id),
    target: boundTarget(event.target, options.redactor),
    tier: event.tier,
    trace_id: boundName(event.trace_id, MAX_NAME_LENGTH),
    upstream: boundName(event.upstream, MAX_NAME_LENGTH),
  };
}

/** Characters JSON must escape (JCS escapes exactly these, and lone surrogates, which never get here). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding characters to escape is the point.
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/** `,"name":<JSON string>` for a present string member. */
export function member(name: string, value: string | undefined): string {
  if (value === undefined) return '';
  return `,"${name}":${NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`}`;
}

/**
 * The record line for `fields` at `seq`: the same bytes as `encodeRecordLine(recordBody(...))`,
 * written directly in canonical member order. Sound because every string member is well-formed
 * by construction ({@link recordFields} bounds or repairs each one) and every number is finite,
 * which is where JSON.stringify and RFC 8785 agree; `args` is canonical text already. The
 * equivalence is property-tested.
 */
export function encodeRecord(seq: number, ts: string, prevHash: string, f: RecordFields): EncodedRecordLine {
  let text = f.args === undefined ? '' : `,"args":${f.args}`;
  text += member('client_id', f.client_id);
  text += member('decided_by', f.decided_by);
  text += `,"decision":"${f.decision}","duration_ms":${JSON.stringify(f.duration_ms)}`;
  text += member('error', f.error);
  text += member('method', f.method);
  if (f.output_len !== undefined) text += `,"output_len":${f.output_len}`;
  text += member('output_sha256', f.output_sha256);
  text += `,"prev_hash":"${prevHash}"`;
  text += member('request_id', f.request_id);
  text += member('rule', f.rule);
  text += `,"seq":${seq}`;
  text += member('session_id', f.session_id);
  text += member('target', f.target);
  text += `,"tier":"${f.tier}"`;
  text += member('trace_id', f.trace_id);
  text += `,"ts":"${ts}"`;
  text += member('upstream', f.upstream);
  const canonical = `{${text.slice(1)},"v":1}`;
  const entryHash = entryHashOf(canonical);
  return { line: `${canonical.slice(0, -1)}${ENTRY_HASH_SUFFIX_HEAD}${entryHash}"}`, entryHash };
}
