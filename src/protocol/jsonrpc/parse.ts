/**
 * Parsing of JSON-RPC 2.0 messages. Nothing here throws, whatever the input: every function returns
 * either the message or a precise JSON-RPC error (-32700 for text that is not JSON, -32600 with a
 * sentence saying what is wrong for JSON that is not a valid message).
 *
 * Where text becomes a value, two things `JSON.parse` cannot see are checked on the text
 * (`json-shape.ts`): a message nesting deeper than the depth limit is refused (-32600 naming the
 * limit, with its id when readable), because serialising or walking it would overflow the stack;
 * and a numeric id that would not be echoed exactly (9007199254740993, 1.0, -0, 1e3) is refused
 * (-32600, `id: null` since it cannot be echoed), because answering it under a changed id would
 * answer someone else's request or nobody's.
 */
import { JsonRpcCode } from './codes.js';
import { isObject } from './json-object.js';
import { isExactNumberText, type MessageShape, scanJsonShape, type TextShape } from './json-shape.js';
import type { JsonRpcErrorObject, JsonRpcMessage, RequestId } from './types.js';

/**
 * The deepest nesting of objects and arrays a message may have by default (`server.maxJsonDepth`,
 * `switchboard stdio --max-json-depth`). MCP messages nest a handful of levels; tool schemas and
 * arguments rarely pass twenty.
 */
export const DEFAULT_MAX_JSON_DEPTH = 128;
/** The smallest configurable limit: below it ordinary MCP messages (a tool's schema) are refused. */
export const MIN_JSON_DEPTH_LIMIT = 16;
/**
 * The largest configurable limit. `structuredClone`, the first of the gateway's walkers to give
 * up, overflows past about 2,400 levels from a shallow stack (`JSON.stringify` past 4,100); this
 * leaves room for the envelopes a message travels in and for a deep caller's stack
 * (`src/trace/json-depth.test.ts` runs every walker at this depth, in its envelopes).
 */
export const MAX_JSON_DEPTH_LIMIT = 1000;

export type ParseOutcome =
  | { readonly ok: true; readonly message: JsonRpcMessage }
  /**
   * `id` is the message's id when it could be read, so that an error answer can echo it.
   * `idText` is set when the id was a number that cannot be echoed exactly: the message is
   * refused with `id: null`, and `idText` says which id that was.
   */
  | {
      readonly ok: false;
      readonly error: JsonRpcErrorObject;
      readonly id: RequestId | null;
      readonly idText?: string;
    };

export type PayloadOutcome =
  | { readonly kind: 'single'; readonly outcome: ParseOutcome }
  | { readonly kind: 'batch'; readonly items: readonly ParseOutcome[] }
  /** The whole payload is unusable: not JSON, an empty batch, or a batch where none is allowed. */
  | { readonly kind: 'invalid'; readonly error: JsonRpcErrorObject };

export interface PayloadOptions extends JsonLimits {
  /** Whether a JSON array (a batch) is acceptable; only MCP 2025-03-26 allows batches. */
  readonly allowBatch: boolean;
  /** Named in the error when a batch is refused, e.g. "2025-06-18". */
  readonly revision?: string;
}

export interface JsonLimits {
  /** Deepest nesting accepted in one message; default {@link DEFAULT_MAX_JSON_DEPTH}. */
  readonly maxDepth?: number;
}

/** Parsed text with its shape (see `json-shape.ts`), or the -32700 error. */
export type JsonRead =
  | { readonly ok: true; readonly value: unknown; readonly shape: TextShape }
  | { readonly ok: false; readonly error: JsonRpcErrorObject };

/** One JSON value read from text, within the depth limit. */
export type JsonOutcome =
  | { readonly ok: true; readonly value: unknown; readonly shape: TextShape }
  /** `id` is the value's top-level id when it is a readable, exact id (for the error answer). */
  | { readonly ok: false; readonly error: JsonRpcErrorObject; readonly id: RequestId | null };

function invalid(message: string, id: RequestId | null = null): ParseOutcome {
  return {
    ok: false,
    error: { code: JsonRpcCode.InvalidRequest, message: `Invalid Request: ${message}` },
    id,
  };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A short rendering of a hostile value for an error message: never more than 40 characters. */
function preview(value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
    return describe(value);
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function isValidId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/**
 * Parses JSON text and scans its shape, with no limit applied; a failure is a -32700 parse error
 * naming what the JSON parser reported. For callers that apply the limits per message.
 */
export function readJson(text: string): JsonRead {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    const reason = err instanceof Error ? err.message : 'unreadable JSON';
    return { ok: false, error: { code: JsonRpcCode.ParseError, message: `Parse error: ${reason}` } };
  }
  return { ok: true, value, shape: scanJsonShape(text) };
}

/**
 * Parses JSON text into one value no deeper than `limits.maxDepth` (default
 * {@link DEFAULT_MAX_JSON_DEPTH}): -32700 for text that is not JSON, -32600 naming the limit for
 * a deeper value (with its top-level id when that is readable, so the refusal can echo it). The
 * one way a single JSON message from a peer becomes a value; batches go through `parsePayload`,
 * which applies the limit to each element.
 */
export function parseJson(text: string, limits: JsonLimits = {}): JsonOutcome {
  const read = readJson(text);
  if (!read.ok) return { ok: false, error: read.error, id: null };
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  if (read.shape.depth <= maxDepth) return read;
  const shape = read.shape.batch ? undefined : read.shape.messages[0];
  return {
    ok: false,
    error: tooDeep(read.shape.depth, maxDepth).error,
    id: shape === undefined ? null : exactIdOf(read.value, shape),
  };
}

/** The -32600 of a message nesting `depth` levels, beyond `maxDepth`. */
function tooDeep(depth: number, maxDepth: number): { error: JsonRpcErrorObject } {
  return {
    error: {
      code: JsonRpcCode.InvalidRequest,
      message: `Invalid Request: the message nests ${depth} levels of objects and arrays; the gateway accepts at most ${maxDepth} (maxJsonDepth)`,
    },
  };
}

/** The value's id when it is one that can be echoed exactly, else null. */
function exactIdOf(value: unknown, shape: MessageShape): RequestId | null {
  if (!isObject(value)) return null;
  const id = value.id;
  if (typeof id === 'string') return id;
  if (typeof id === 'number' && shape.idToken !== undefined && isExactNumberText(shape.idToken)) return id;
  return null;
}

/**
 * Validates one decoded JSON value as a JSON-RPC 2.0 request, notification, result or error.
 * Unknown extra members are kept (peers may add them); ids must be strings or finite numbers.
 * With the message's `shape` (read from its text), also refuses a message deeper than
 * `maxDepth` (default {@link DEFAULT_MAX_JSON_DEPTH}) and a numeric id the text wrote in a way
 * that would not be echoed exactly; without it, those two checks are the caller's.
 */
export function parseMessage(
  value: unknown,
  checks?: { readonly shape: MessageShape; readonly maxDepth?: number },
): ParseOutcome {
  try {
    if (checks !== undefined) {
      const refused = checkShape(value, checks.shape, checks.maxDepth ?? DEFAULT_MAX_JSON_DEPTH);
      if (refused !== undefined) return refused;
    }
    return parseMessageUnsafe(value);
  } catch {
    // Only reachable with exotic inputs (getters that throw); JSON.parse output never gets here.
    return invalid('the message could not be read');
  }
}

/** The refusal of a message whose id cannot be echoed exactly or that nests too deep, if either. */
function checkShape(value: unknown, shape: MessageShape, maxDepth: number): ParseOutcome | undefined {
  const token = shape.idToken;
  if (token !== undefined && isObject(value) && typeof value.id === 'number' && !isExactNumberText(token)) {
    const shown = token.length > 40 ? `${token.slice(0, 37)}...` : token;
    return {
      ok: false,
      error: {
        code: JsonRpcCode.InvalidRequest,
        message: `Invalid Request: id ${shown} cannot be echoed exactly (JSON numbers are read as 64-bit floats, so it would come back as ${JSON.stringify(value.id)}); use a string id, or an integer of at most 15 digits written plainly`,
      },
      id: null,
      idText: token,
    };
  }
  if (shape.depth > maxDepth)
    return { ok: false, ...tooDeep(shape.depth, maxDepth), id: exactIdOf(value, shape) };
  return undefined;
}

function parseMessageUnsafe(value: unknown): ParseOutcome {
  if (!isObject(value)) return invalid(`a message must be a JSON object, got ${describe(value)}`);
  const hasId = 'id' in value;
  const rawId = value.id;
  const readableId = hasId && isValidId(rawId) ? rawId : null;
  if (value.jsonrpc !== '2.0') {
    return invalid(
      'jsonrpc' in value
        ? `"jsonrpc" must be "2.0", got ${preview(value.jsonrpc)}`
        : 'missing "jsonrpc": "2.0"',
      readableId,
    );
  }
  if (hasId && !isValidId(rawId)) {
    return invalid(`"id" must be a string or a number, got ${describe(rawId)}`);
  }
  const hasMethod = 'method' in value;
  const hasResult = 'result' in value;
  const hasError = 'error' in value;

  if (hasMethod) {
    if (typeof value.method !== 'string')
      return invalid(`"method" must be a string, got ${describe(value.method)}`, readableId);
    if (value.method.length === 0) return invalid('"method" must not be empty', readableId);
    if (hasResult || hasError)
      return invalid('a request or notification must not carry "result" or "error"', readableId);
    if ('params' in value && value.params !== undefined && typeof value.params !== 'object') {
      return invalid(`"params" must be an object or an array, got ${describe(value.params)}`, readableId);
    }
    if ('params' in value && value.params === null)
      return invalid('"params" must be an object or an array, got null', readableId);
    return { ok: true, message: value as unknown as JsonRpcMessage };
  }

  if (hasResult && hasError)
    return invalid('a response must carry exactly one of "result" and "error", not both', readableId);
  if (!hasResult && !hasError)
    return invalid(
      'a message needs "method" (request or notification) or "result"/"error" (response)',
      readableId,
    );
  if (!hasId) return invalid('a response must carry the "id" of the request it answers');
  if (hasError) {
    const error = value.error;
    if (!isObject(error)) return invalid(`"error" must be an object, got ${describe(error)}`, readableId);
    if (typeof error.code !== 'number' || !Number.isInteger(error.code)) {
      return invalid(`"error.code" must be an integer, got ${describe(error.code)}`, readableId);
    }
    if (typeof error.message !== 'string')
      return invalid(`"error.message" must be a string, got ${describe(error.message)}`, readableId);
  }
  return { ok: true, message: value as unknown as JsonRpcMessage };
}

/**
 * Parses a transport payload: one message, or a batch where the negotiated revision allows one.
 * A batch is refused as a whole (-32600) when not allowed, so nothing in it is half-processed.
 */
export function parsePayload(text: string, options: PayloadOptions): PayloadOutcome {
  const json = readJson(text);
  if (!json.ok) return { kind: 'invalid', error: json.error };
  return classifyPayload(json.value, options, json.shape);
}

/**
 * Like `parsePayload`, for a value that is already decoded JSON. With the text's `shape` (from
 * `readJson`), each message is also checked for depth and for an id that cannot be echoed.
 */
export function classifyPayload(value: unknown, options: PayloadOptions, shape?: TextShape): PayloadOutcome {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const checksOf = (i: number) => {
    const message = shape?.messages[i];
    return message === undefined ? undefined : { shape: message, maxDepth };
  };
  if (!Array.isArray(value)) return { kind: 'single', outcome: parseMessage(value, checksOf(0)) };
  if (!options.allowBatch) {
    const where = options.revision ? ` in MCP revision ${options.revision}` : '';
    return {
      kind: 'invalid',
      error: {
        code: JsonRpcCode.InvalidRequest,
        message: `Invalid Request: JSON-RPC batches are not allowed${where} (only 2025-03-26 allows them)`,
      },
    };
  }
  if (value.length === 0) {
    return {
      kind: 'invalid',
      error: { code: JsonRpcCode.InvalidRequest, message: 'Invalid Request: empty batch' },
    };
  }
  const items = value.map((item, i) => parseMessage(item, checksOf(i)));
  const valid = items.filter((o): o is Extract<ParseOutcome, { ok: true }> => o.ok);
  const responses = valid.filter((o) => !('method' in o.message)).length;
  if (responses > 0 && responses < valid.length) {
    return {
      kind: 'invalid',
      error: {
        code: JsonRpcCode.InvalidRequest,
        message:
          'Invalid Request: a batch must hold either requests and notifications or responses, not both',
      },
    };
  }
  return { kind: 'batch', items };
}
