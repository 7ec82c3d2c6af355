/**
 * The MEUP envelope codec: untrusted JSON in, a typed `MeupEnvelope` (or one precise error) out,
 * and back to the wire. Decoding never throws. Every violation has its own stable snake_case code
 * (`MeupErrorCode`, documented in docs/meup-codec.md), and the error carries the envelope's id
 * whenever it could be read, so the gateway can answer with a `system/error` whose
 * `correlation_id` names the offending envelope.
 *
 * On the wire the correlation field is `correlation_id` (snake_case, ADR-j3k); in TypeScript it is
 * `correlationId`. The camelCase key is refused unless the `acceptCamelCase` shim is switched on.
 */
import {
  type ContextIssue,
  ContextIssueCode,
  type ContextLimits,
  DEFAULT_CONTEXT_LIMITS,
  validateContext,
} from './context-path.js';
import {
  CorrelationErrorCode,
  type CorrelationMigration,
  type CorrelationMode,
  DEFAULT_CORRELATION_MODE,
  mergeCorrelation,
  normalizeCorrelation,
  sameCorrelationSet,
} from './correlation.js';
import { KINDS_REQUIRING_METHOD, kindSyntaxProblem, requiresCorrelation } from './kinds.js';
import { MEUP_PROTOCOL, type MeupEnvelope, type MeupProtocol, type MeupWireEnvelope } from './types.js';

/** Why an envelope was refused: one stable code per violation. */
export const MeupErrorCode = {
  InvalidJson: 'invalid_json',
  NotAnObject: 'not_an_object',
  MissingField: 'missing_field',
  InvalidFieldType: 'invalid_field_type',
  InvalidProtocol: 'invalid_protocol',
  InvalidId: 'invalid_id',
  InvalidTs: 'invalid_ts',
  InvalidFrom: 'invalid_from',
  InvalidTo: 'invalid_to',
  InvalidKind: 'invalid_kind',
  InvalidPayload: 'invalid_payload',
  InvalidCorrelationId: CorrelationErrorCode.InvalidCorrelationId,
  CorrelationStringRejected: CorrelationErrorCode.CorrelationStringRejected,
  CorrelationRequired: 'correlation_required',
  CorrelationConflict: 'correlation_conflict',
  CamelCaseField: 'camel_case_field',
  ContextNotString: ContextIssueCode.NotString,
  ContextLeadingSlash: ContextIssueCode.LeadingSlash,
  ContextTrailingSlash: ContextIssueCode.TrailingSlash,
  ContextEmptySegment: ContextIssueCode.EmptySegment,
  ContextInvalidSegment: ContextIssueCode.InvalidSegment,
  ContextTooDeep: ContextIssueCode.TooDeep,
  ContextTooLong: ContextIssueCode.TooLong,
} as const;

/** One of the `MeupErrorCode` values. */
export type MeupErrorCode = (typeof MeupErrorCode)[keyof typeof MeupErrorCode];

/** What was accepted but deserves attention; the envelope is still delivered. */
export const MeupWarningCode = {
  /** A snake_case top-level key the envelope does not define; it is dropped. */
  UnknownField: 'unknown_field',
  /** A top-level key that is not snake_case (`^[a-z][a-z0-9_]*$`); it is dropped. */
  NonSnakeCaseField: 'non_snake_case_field',
  /** A string `correlation_id` converted to a one-element array (`accept` mode). */
  CorrelationStringAccepted: 'correlation_string_accepted',
  /** `correlationId` read as `correlation_id` through the `acceptCamelCase` shim. */
  CamelCaseAccepted: 'camel_case_accepted',
  /* Context violations tolerated in `warn` mode: the same codes as the errors of `reject` mode. */
  ContextLeadingSlash: ContextIssueCode.LeadingSlash,
  ContextTrailingSlash: ContextIssueCode.TrailingSlash,
  ContextEmptySegment: ContextIssueCode.EmptySegment,
  ContextInvalidSegment: ContextIssueCode.InvalidSegment,
  ContextTooDeep: ContextIssueCode.TooDeep,
  ContextTooLong: ContextIssueCode.TooLong,
} as const;

/** One of the `MeupWarningCode` values. */
export type MeupWarningCode = (typeof MeupWarningCode)[keyof typeof MeupWarningCode];

/** A refused envelope: a stable code, a sentence for humans, and where known the field and id. */
export interface MeupCodecError {
  readonly code: MeupErrorCode;
  readonly message: string;
  /** The wire name of the offending field (`payload.method` for a nested one). */
  readonly field?: string;
  /** The envelope's id when it was a readable, valid id: what a `system/error` correlates to. */
  readonly envelopeId?: string;
}

/** Something accepted with a remark (a dropped key, a deprecated form, a tolerated context). */
export interface MeupWarning {
  readonly code: MeupWarningCode;
  readonly message: string;
  readonly field?: string;
}

/** The outcome of decoding; never thrown. */
export type DecodeResult =
  | { readonly ok: true; readonly envelope: MeupEnvelope; readonly warnings: readonly MeupWarning[] }
  | { readonly ok: false; readonly error: MeupCodecError };

/** How an invalid context is handled, and the bounds of a valid one. */
export interface MeupContextOptions extends ContextLimits {
  /**
   * `reject`: an invalid context refuses the envelope. `warn`: the envelope is accepted with the
   * context kept byte for byte and one warning per violation (a context that is not a string is
   * refused in both modes, since it cannot be kept as a path).
   */
  readonly mode: 'warn' | 'reject';
}

/** Codec settings; every one has a default (see `DEFAULT_MEUP_CODEC_OPTIONS`). */
export interface MeupCodecOptions {
  /** The exact protocol strings accepted (default `['meup/v0.2']`). */
  readonly protocols?: readonly MeupProtocol[];
  /** How a string `correlation_id` is handled (default `accept`). */
  readonly correlation?: CorrelationMode;
  /** Context mode and bounds; omitted members take their defaults. */
  readonly context?: Partial<MeupContextOptions>;
  /** Read a camelCase `correlationId` key as `correlation_id` (default false). */
  readonly acceptCamelCase?: boolean;
  /** Where accepted string correlations are counted and logged (none by default). */
  readonly migration?: CorrelationMigration;
}

/** The defaults: MEUP v0.2 only, string correlations accepted, invalid contexts refused. */
export const DEFAULT_MEUP_CODEC_OPTIONS = {
  protocols: [MEUP_PROTOCOL] as readonly MeupProtocol[],
  correlation: DEFAULT_CORRELATION_MODE,
  context: { mode: 'reject', ...DEFAULT_CONTEXT_LIMITS } as MeupContextOptions,
  acceptCamelCase: false,
} as const;

/** The longest envelope id accepted. */
export const MAX_ENVELOPE_ID_LENGTH = 256;

/** The top-level keys an envelope defines, in wire order. */
export const ENVELOPE_FIELDS = [
  'protocol',
  'id',
  'ts',
  'from',
  'to',
  'kind',
  'correlation_id',
  'context',
  'payload',
] as const;

/** The pattern every wire key matches (ADR-j3k). */
export const SNAKE_CASE_KEY = /^[a-z][a-z0-9_]*$/;

const KNOWN_FIELDS: ReadonlySet<string> = new Set<string>(ENVELOPE_FIELDS);
const CAMEL_CORRELATION = 'correlationId';
/** Dropped keys reported one by one; past this many, one summary warning covers the rest. */
const MAX_KEY_WARNINGS = 10;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * Whether `value` is an RFC 3339 `date-time` (section 5.6): `T` or `t` between date and time,
 * optional fraction, and `Z`/`z` or a `±hh:mm` offset, with every number in range (including
 * February 29 only in leap years and a leap second `:60`).
 */
export function isRfc3339Timestamp(value: string): boolean {
  const m = RFC3339.exec(value);
  if (!m) return false;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const monthDays = [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  const maxDay = monthDays[month - 1];
  if (maxDay === undefined || day < 1 || day > maxDay) return false;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 60) return false;
  if (m[7] !== undefined && (Number(m[7]) > 23 || Number(m[8]) > 59)) return false;
  return true;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A hostile value rendered for a message: never more than 40 characters. */
function preview(value: unknown): string {
  if (typeof value !== 'string') return describe(value);
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/**
 * `isObject` of protocol/jsonrpc/json-object.ts, which this layer may not import (meup imports
 * only observe's types: docs/architecture.md, the layers).
 */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isValidId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ENVELOPE_ID_LENGTH;
}

interface Resolved {
  readonly protocols: readonly MeupProtocol[];
  readonly correlation: CorrelationMode;
  readonly context: MeupContextOptions;
  readonly acceptCamelCase: boolean;
  readonly migration: CorrelationMigration | undefined;
}

function resolve(options: MeupCodecOptions | undefined): Resolved {
  return {
    protocols: options?.protocols ?? DEFAULT_MEUP_CODEC_OPTIONS.protocols,
    correlation: options?.correlation ?? DEFAULT_MEUP_CODEC_OPTIONS.correlation,
    context: { ...DEFAULT_MEUP_CODEC_OPTIONS.context, ...options?.context },
    acceptCamelCase: options?.acceptCamelCase ?? DEFAULT_MEUP_CODEC_OPTIONS.acceptCamelCase,
    migration: options?.migration,
  };
}

/** Thrown inside `decodeUnsafe` only, to stop at the first violation; never escapes the module. */
class Refusal {
  constructor(readonly error: MeupCodecError) {}
}

/**
 * Decodes an already-parsed JSON value into a `MeupEnvelope`. Fields are checked in wire order
 * and the first violation is returned. Unknown top-level keys are dropped with a warning;
 * `correlation_id` comes out deduplicated; `context` is never altered. Never throws.
 */
export function decodeMeupEnvelope(value: unknown, options?: MeupCodecOptions): DecodeResult {
  if (!isJsonObject(value)) {
    return {
      ok: false,
      error: {
        code: MeupErrorCode.NotAnObject,
        message: `an envelope must be a JSON object, got ${describe(value)}`,
      },
    };
  }
  try {
    return decodeUnsafe(value, resolve(options));
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, error: err.error };
    // Only reachable with exotic inputs (getters or proxies that throw); JSON.parse output never gets here.
    return {
      ok: false,
      error: { code: MeupErrorCode.NotAnObject, message: 'the envelope could not be read' },
    };
  }
}

/** Parses JSON text and decodes it; text that is not JSON is `invalid_json`. Never throws. */
export function parseMeupEnvelope(text: string, options?: MeupCodecOptions): DecodeResult {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    const reason = err instanceof Error ? err.message : 'unreadable JSON';
    return { ok: false, error: { code: MeupErrorCode.InvalidJson, message: `not valid JSON: ${reason}` } };
  }
  return decodeMeupEnvelope(value, options);
}

function decodeUnsafe(obj: Record<string, unknown>, opts: Resolved): DecodeResult {
  const envelopeId = isValidId(obj.id) ? obj.id : undefined;
  const refuse = (code: MeupErrorCode, message: string, field?: string): never => {
    const error: MeupCodecError = {
      code,
      message,
      ...(field !== undefined ? { field } : {}),
      ...(envelopeId !== undefined ? { envelopeId } : {}),
    };
    throw new Refusal(error);
  };
  const warnings: MeupWarning[] = [];

  const hasCamel = Object.hasOwn(obj, CAMEL_CORRELATION) && obj[CAMEL_CORRELATION] !== undefined;
  if (hasCamel && !opts.acceptCamelCase) {
    refuse(
      MeupErrorCode.CamelCaseField,
      'the wire field is "correlation_id" (snake_case); "correlationId" is refused unless the acceptCamelCase shim is enabled',
      CAMEL_CORRELATION,
    );
  }
  warnAboutDroppedKeys(obj, warnings);

  const protocol = requireString(obj, 'protocol', refuse);
  if (!(opts.protocols as readonly string[]).includes(protocol)) {
    refuse(
      MeupErrorCode.InvalidProtocol,
      `unsupported protocol version ${preview(protocol)}; accepted: ${opts.protocols.join(', ')}`,
      'protocol',
    );
  }

  const id = requireString(obj, 'id', refuse);
  if (!isValidId(id)) {
    refuse(MeupErrorCode.InvalidId, `id must be 1 to ${MAX_ENVELOPE_ID_LENGTH} characters long`, 'id');
  }

  const ts = requireString(obj, 'ts', refuse);
  if (!isRfc3339Timestamp(ts)) {
    refuse(MeupErrorCode.InvalidTs, `ts must be an RFC 3339 timestamp, got ${preview(ts)}`, 'ts');
  }

  const from = requireString(obj, 'from', refuse);
  if (from.length === 0) refuse(MeupErrorCode.InvalidFrom, 'from must be a non-empty participant id', 'from');

  const to = decodeTo(obj.to, refuse);

  const kind = requireString(obj, 'kind', refuse);
  const kindProblem = kindSyntaxProblem(kind);
  if (kindProblem !== undefined) {
    refuse(MeupErrorCode.InvalidKind, `invalid kind ${preview(kind)}: ${kindProblem}`, 'kind');
  }

  const { correlation, fromString } = decodeCorrelation(obj, opts, refuse, warnings);
  if (requiresCorrelation(kind) && (correlation === undefined || correlation.length === 0)) {
    refuse(
      MeupErrorCode.CorrelationRequired,
      `a ${kind} envelope must name the envelope it answers in correlation_id`,
      'correlation_id',
    );
  }

  const context = decodeContext(obj.context, opts.context, refuse, warnings);

  if (obj.payload === undefined) refuse(MeupErrorCode.MissingField, 'the envelope has no payload', 'payload');
  const payload = obj.payload;
  if (!isJsonObject(payload)) {
    return refuse(
      MeupErrorCode.InvalidFieldType,
      `payload must be a JSON object, got ${describe(payload)}`,
      'payload',
    );
  }
  if (KINDS_REQUIRING_METHOD.has(kind)) {
    const method = payload.method;
    if (typeof method !== 'string' || method.length === 0) {
      refuse(
        MeupErrorCode.InvalidPayload,
        `a ${kind} payload must carry the JSON-RPC method as a non-empty string "method"`,
        'payload.method',
      );
    }
  }

  // Recorded only now, so that an envelope refused for another reason is not counted as accepted.
  if (fromString) opts.migration?.recordStringCorrelation(from);
  const envelope: MeupEnvelope = {
    protocol: protocol as MeupProtocol,
    id,
    ts,
    from,
    ...(to !== undefined ? { to } : {}),
    kind,
    ...(correlation !== undefined ? { correlationId: correlation } : {}),
    ...(context !== undefined ? { context } : {}),
    payload,
  };
  return { ok: true, envelope, warnings };
}

type Refuse = (code: MeupErrorCode, message: string, field?: string) => never;

function requireString(obj: Record<string, unknown>, field: string, refuse: Refuse): string {
  const value = obj[field];
  if (value === undefined) return refuse(MeupErrorCode.MissingField, `the envelope has no ${field}`, field);
  if (typeof value !== 'string') {
    return refuse(MeupErrorCode.InvalidFieldType, `${field} must be a string, got ${describe(value)}`, field);
  }
  return value;
}

function warnAboutDroppedKeys(obj: Record<string, unknown>, warnings: MeupWarning[]): void {
  let dropped = 0;
  for (const key of Object.keys(obj)) {
    if (KNOWN_FIELDS.has(key) || key === CAMEL_CORRELATION) continue;
    dropped++;
    if (dropped > MAX_KEY_WARNINGS) continue;
    const field = key.length > 64 ? `${key.slice(0, 61)}...` : key;
    warnings.push(
      SNAKE_CASE_KEY.test(key)
        ? { code: MeupWarningCode.UnknownField, message: `unknown field ${preview(key)} dropped`, field }
        : {
            code: MeupWarningCode.NonSnakeCaseField,
            message: `field ${preview(key)} is not snake_case (^[a-z][a-z0-9_]*$) and was dropped`,
            field,
          },
    );
  }
  if (dropped > MAX_KEY_WARNINGS) {
    warnings.push({
      code: MeupWarningCode.UnknownField,
      message: `${dropped - MAX_KEY_WARNINGS} more unknown fields dropped`,
    });
  }
}

function decodeTo(raw: unknown, refuse: Refuse): string[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) {
    return refuse(
      MeupErrorCode.InvalidFieldType,
      `to must be an array of participant ids, got ${describe(raw)}`,
      'to',
    );
  }
  const items: unknown[] = raw;
  const to: string[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (typeof item !== 'string' || item.length === 0) {
      return refuse(
        MeupErrorCode.InvalidTo,
        `to[${i}] must be a non-empty participant id, got ${typeof item === 'string' ? 'an empty string' : describe(item)}`,
        'to',
      );
    }
    to.push(item);
  }
  return to;
}

interface DecodedCorrelation {
  readonly correlation: readonly string[] | undefined;
  /** Whether the correlation that counts was the deprecated string form. */
  readonly fromString: boolean;
}

function decodeCorrelation(
  obj: Record<string, unknown>,
  opts: Resolved,
  refuse: Refuse,
  warnings: MeupWarning[],
): DecodedCorrelation {
  const snake = obj.correlation_id;
  const camel = opts.acceptCamelCase ? obj[CAMEL_CORRELATION] : undefined;
  if (snake === undefined && camel === undefined) return { correlation: undefined, fromString: false };

  let fromString = false;
  const read = (raw: unknown, field: string, counts: boolean): readonly string[] => {
    const result = normalizeCorrelation(raw, opts.correlation);
    if (!result.ok) return refuse(result.code, result.message, field);
    if (result.fromString && counts) {
      fromString = true;
      warnings.push({
        code: MeupWarningCode.CorrelationStringAccepted,
        message: 'deprecated: correlation_id was a string; read as a one-element array',
        field,
      });
    }
    return result.correlation;
  };

  if (camel === undefined) {
    const correlation = read(snake, 'correlation_id', true);
    return { correlation, fromString };
  }
  if (snake === undefined) {
    warnings.push({
      code: MeupWarningCode.CamelCaseAccepted,
      message: '"correlationId" read as "correlation_id" (acceptCamelCase shim)',
      field: CAMEL_CORRELATION,
    });
    const correlation = read(camel, CAMEL_CORRELATION, true);
    return { correlation, fromString };
  }
  const fromSnake = read(snake, 'correlation_id', true);
  const fromCamel = read(camel, CAMEL_CORRELATION, false);
  if (!sameCorrelationSet(fromSnake, fromCamel)) {
    refuse(
      MeupErrorCode.CorrelationConflict,
      'correlation_id and correlationId are both present and name different envelopes',
      CAMEL_CORRELATION,
    );
  }
  warnings.push({
    code: MeupWarningCode.CamelCaseAccepted,
    message: '"correlationId" duplicates "correlation_id" and was ignored (acceptCamelCase shim)',
    field: CAMEL_CORRELATION,
  });
  return { correlation: fromSnake, fromString };
}

function decodeContext(
  raw: unknown,
  options: MeupContextOptions,
  refuse: Refuse,
  warnings: MeupWarning[],
): string | undefined {
  if (raw === undefined) return undefined;
  const issues: readonly ContextIssue[] = validateContext(raw, options);
  const first = issues[0];
  if (first === undefined) return raw as string;
  if (first.code === ContextIssueCode.NotString || options.mode === 'reject') {
    return refuse(first.code, first.message, 'context');
  }
  for (const { code, message } of issues) {
    if (code !== ContextIssueCode.NotString) warnings.push({ code, message, field: 'context' });
  }
  return raw as string;
}

/**
 * The wire form of an envelope, keys in the specification's order: `correlationId` becomes
 * `correlation_id` (always an array, deduplicated) and absent optional fields are omitted. The
 * envelope is trusted (built by code or by `decodeMeupEnvelope`), so it is not validated again.
 */
export function encodeMeupEnvelope(envelope: MeupEnvelope): MeupWireEnvelope {
  return {
    protocol: envelope.protocol,
    id: envelope.id,
    ts: envelope.ts,
    from: envelope.from,
    ...(envelope.to !== undefined ? { to: [...envelope.to] } : {}),
    kind: envelope.kind,
    ...(envelope.correlationId !== undefined
      ? { correlation_id: mergeCorrelation(envelope.correlationId) }
      : {}),
    ...(envelope.context !== undefined ? { context: envelope.context } : {}),
    payload: envelope.payload as Record<string, unknown>,
  };
}

/**
 * The envelope as JSON text (via `encodeMeupEnvelope`). Like `JSON.stringify`, it throws only if
 * the payload holds something JSON cannot represent (a BigInt, a cycle), which a decoded envelope
 * never does.
 */
export function serializeMeupEnvelope(envelope: MeupEnvelope): string {
  return JSON.stringify(encodeMeupEnvelope(envelope));
}
