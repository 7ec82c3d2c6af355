/**
 * Reading what a client sent, once, the same way for every transport. Each item of a payload is
 * either a valid message for the router, an error to answer the sender with (a broken request
 * whose id could be read), or an error to forward in place of a broken response (so that the
 * server waiting for that response gets an error instead of waiting forever). Anything without a
 * readable id is only dropped, logged and counted by the caller: there is no one to answer.
 */
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import type { TextShape } from '../protocol/jsonrpc/json-shape.js';
import {
  classifyPayload,
  DEFAULT_MAX_JSON_DEPTH,
  type ParseOutcome,
  parseMessage,
  readJson,
} from '../protocol/jsonrpc/parse.js';
import type { JsonRpcErrorObject, JsonRpcErrorResponse, JsonRpcMessage } from '../protocol/jsonrpc/types.js';

/**
 * One element of a payload, read: a valid `message` for the router (with `raw`, the payload's text,
 * when it came alone); a `reply` to send back to its sender (a broken request with a readable id);
 * a `forward-error` (-32603 under a broken response's id, for the request it answers); or a
 * `drop` (nothing answerable: the caller logs and counts it).
 */
export type InboundItem =
  | { readonly kind: 'message'; readonly message: JsonRpcMessage; readonly raw?: string }
  | { readonly kind: 'reply'; readonly response: JsonRpcErrorResponse }
  | { readonly kind: 'forward-error'; readonly response: JsonRpcErrorResponse }
  | { readonly kind: 'drop'; readonly error: JsonRpcErrorObject };

/** What `readInbound` made of one payload. */
export interface InboundPayload {
  /** Whether the payload was a JSON array (a batch), refused or not. */
  readonly batch: boolean;
  /** Its elements, read, in payload order; empty when `error` is set. */
  readonly items: readonly InboundItem[];
  /** Set when the payload as a whole is unusable (not JSON, refused batch, empty batch). */
  readonly error?: JsonRpcErrorObject;
  /**
   * With `error`, for a batch refused as a whole (not allowed in the revision, or mixing requests
   * and responses): `error` under the id of each request in it whose id is readable, in order.
   * A transport that has no answer of its own for the whole payload (stdio: no HTTP status) owes
   * each of those requests one, or its client waits for them forever.
   */
  readonly refusals?: readonly JsonRpcErrorResponse[];
}

/** How to read a payload: what the session's negotiated revision allows. */
export interface InboundOptions {
  /** Whether a batch is acceptable (MCP 2025-03-26 only); otherwise one is refused as a whole. */
  readonly allowBatch: boolean;
  /** The revision, named in the error that refuses a batch. */
  readonly revision?: string;
  /**
   * Deepest nesting accepted in one message (`server.maxJsonDepth`); default
   * `DEFAULT_MAX_JSON_DEPTH`. A deeper request is answered -32600 with its id, a deeper response
   * fails the request it answers: nothing that deep ever reaches a serialiser or a walker.
   */
  readonly maxDepth?: number;
}

/**
 * Reads one payload's text into items (above). Text that is not JSON, or a batch refused as a
 * whole, gives `error` and no items (with `refusals` for a refused batch's requests).
 */
export function readInbound(text: string, options: InboundOptions): InboundPayload {
  const json = readJson(text);
  if (!json.ok) return { batch: false, items: [], error: json.error };
  const value = json.value;
  const payload = classifyPayload(value, options, json.shape);
  if (payload.kind === 'invalid') {
    if (!Array.isArray(value)) return { batch: false, items: [], error: payload.error };
    const refusals = refusalsOf(value, payload.error, options, json.shape);
    return { batch: true, items: [], error: payload.error, ...(refusals.length > 0 ? { refusals } : {}) };
  }
  if (payload.kind === 'single') {
    return { batch: false, items: [toItem(payload.outcome, value, text)] };
  }
  const values = value as unknown[];
  return { batch: true, items: payload.items.map((outcome, i) => toItem(outcome, values[i])) };
}

/** `error` under the id of each request of a refused batch whose id is readable (see `refusals`). */
function refusalsOf(
  values: readonly unknown[],
  error: JsonRpcErrorObject,
  options: InboundOptions,
  shape: TextShape | undefined,
): JsonRpcErrorResponse[] {
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const refusals: JsonRpcErrorResponse[] = [];
  values.forEach((value, i) => {
    if (typeof value !== 'object' || value === null || !('method' in value)) return;
    const message = shape?.messages[i];
    const outcome = parseMessage(value, message === undefined ? undefined : { shape: message, maxDepth });
    if (outcome.ok) {
      if ('id' in outcome.message) refusals.push({ jsonrpc: '2.0', id: outcome.message.id, error });
    } else if (outcome.id !== null) refusals.push({ jsonrpc: '2.0', id: outcome.id, error });
    // An id that cannot be echoed is refused under null with its own reason, as outside a batch.
    else if (outcome.idText !== undefined) refusals.push({ jsonrpc: '2.0', id: null, error: outcome.error });
  });
  return refusals;
}

function toItem(outcome: ParseOutcome, value: unknown, raw?: string): InboundItem {
  if (outcome.ok)
    return raw === undefined
      ? { kind: 'message', message: outcome.message }
      : { kind: 'message', message: outcome.message, raw };
  const looksLikeRequest = typeof value === 'object' && value !== null && 'method' in value;
  // A request whose numeric id cannot be echoed exactly is refused aloud, with `id: null` (its
  // sender may still match the answer by the id named in the message); without an id, dropped.
  if (outcome.id === null && outcome.idText !== undefined && looksLikeRequest)
    return { kind: 'reply', response: { jsonrpc: '2.0', id: null, error: outcome.error } };
  if (outcome.id === null) return { kind: 'drop', error: outcome.error };
  if (looksLikeRequest)
    return { kind: 'reply', response: { jsonrpc: '2.0', id: outcome.id, error: outcome.error } };
  return {
    kind: 'forward-error',
    response: {
      jsonrpc: '2.0',
      id: outcome.id,
      error: {
        code: JsonRpcCode.InternalError,
        message: `invalid response from the peer: ${outcome.error.message}`,
      },
    },
  };
}
