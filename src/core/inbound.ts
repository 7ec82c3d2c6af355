/**
 * Reading what a client sent, once, the same way for every transport. Each item of a payload is
 * either a valid message for the router, an error to answer the sender with (a broken request
 * whose id could be read), or an error to forward in place of a broken response (so that the
 * server waiting for that response gets an error instead of waiting forever). Anything without a
 * readable id is only dropped, logged and counted by the caller: there is no one to answer.
 */
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { classifyPayload, type ParseOutcome, readJson } from '../protocol/jsonrpc/parse.js';
import type { JsonRpcErrorObject, JsonRpcErrorResponse, JsonRpcMessage } from '../protocol/jsonrpc/types.js';

export type InboundItem =
  | { readonly kind: 'message'; readonly message: JsonRpcMessage; readonly raw?: string }
  | { readonly kind: 'reply'; readonly response: JsonRpcErrorResponse }
  | { readonly kind: 'forward-error'; readonly response: JsonRpcErrorResponse }
  | { readonly kind: 'drop'; readonly error: JsonRpcErrorObject };

export interface InboundPayload {
  readonly batch: boolean;
  readonly items: readonly InboundItem[];
  /** Set when the payload as a whole is unusable (not JSON, refused batch, empty batch). */
  readonly error?: JsonRpcErrorObject;
}

export interface InboundOptions {
  readonly allowBatch: boolean;
  readonly revision?: string;
  /**
   * Deepest nesting accepted in one message (`server.maxJsonDepth`); default
   * `DEFAULT_MAX_JSON_DEPTH`. A deeper request is answered -32600 with its id, a deeper response
   * fails the request it answers: nothing that deep ever reaches a serialiser or a walker.
   */
  readonly maxDepth?: number;
}

export function readInbound(text: string, options: InboundOptions): InboundPayload {
  const json = readJson(text);
  if (!json.ok) return { batch: false, items: [], error: json.error };
  const value = json.value;
  const payload = classifyPayload(value, options, json.shape);
  if (payload.kind === 'invalid') return { batch: Array.isArray(value), items: [], error: payload.error };
  if (payload.kind === 'single') {
    return { batch: false, items: [toItem(payload.outcome, value, text)] };
  }
  const values = value as unknown[];
  return { batch: true, items: payload.items.map((outcome, i) => toItem(outcome, values[i])) };
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
