/**
 * Parsing of JSON-RPC 2.0 messages. Nothing here throws, whatever the input: every function returns
 * either the message or a precise JSON-RPC error (-32700 for text that is not JSON, -32600 with a
 * sentence saying what is wrong for JSON that is not a valid message).
 */
import { JsonRpcCode } from './codes.js';
import type { JsonObject, JsonRpcErrorObject, JsonRpcMessage, RequestId } from './types.js';

export type ParseOutcome =
  | { readonly ok: true; readonly message: JsonRpcMessage }
  /** `id` is the message's id when it could be read, so that an error answer can echo it. */
  | { readonly ok: false; readonly error: JsonRpcErrorObject; readonly id: RequestId | null };

export type PayloadOutcome =
  | { readonly kind: 'single'; readonly outcome: ParseOutcome }
  | { readonly kind: 'batch'; readonly items: readonly ParseOutcome[] }
  /** The whole payload is unusable: not JSON, an empty batch, or a batch where none is allowed. */
  | { readonly kind: 'invalid'; readonly error: JsonRpcErrorObject };

export interface PayloadOptions {
  /** Whether a JSON array (a batch) is acceptable; only MCP 2025-03-26 allows batches. */
  readonly allowBatch: boolean;
  /** Named in the error when a batch is refused, e.g. "2025-06-18". */
  readonly revision?: string;
}

function invalid(message: string, id: RequestId | null = null): ParseOutcome {
  return {
    ok: false,
    error: { code: JsonRpcCode.InvalidRequest, message: `Invalid Request: ${message}` },
    id,
  };
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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

/** Parses JSON text; a failure is a -32700 parse error naming what the JSON parser reported. */
export function parseJson(
  text: string,
):
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: JsonRpcErrorObject } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    const reason = err instanceof Error ? err.message : 'unreadable JSON';
    return { ok: false, error: { code: JsonRpcCode.ParseError, message: `Parse error: ${reason}` } };
  }
}

/**
 * Validates one decoded JSON value as a JSON-RPC 2.0 request, notification, result or error.
 * Unknown extra members are kept (peers may add them); ids must be strings or finite numbers.
 */
export function parseMessage(value: unknown): ParseOutcome {
  try {
    return parseMessageUnsafe(value);
  } catch {
    // Only reachable with exotic inputs (getters that throw); JSON.parse output never gets here.
    return invalid('the message could not be read');
  }
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
  const json = parseJson(text);
  if (!json.ok) return { kind: 'invalid', error: json.error };
  return classifyPayload(json.value, options);
}

/** Like `parsePayload`, for a value that is already decoded JSON. */
export function classifyPayload(value: unknown, options: PayloadOptions): PayloadOutcome {
  if (!Array.isArray(value)) return { kind: 'single', outcome: parseMessage(value) };
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
  const items = value.map((item) => parseMessage(item));
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
