/**
 * Reading what a client sent, once, the same way for every transport. Each item of a payload is
 * either a valid message for the router, an error to answer the sender with (a broken request
 * whose id could be read), or an error to forward in place of a broken response (so that the
 * server waiting for that response gets an error instead of waiting forever). Anything without a
 * readable id is only dropped, logged and counted by the caller: there is no one to answer.
 */
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { classifyPayload, type ParseOutcome, parseJson } from '../protocol/jsonrpc/parse.js';
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
}

export function readInbound(text: string, options: InboundOptions): InboundPayload {
  const json = parseJson(text);
  if (!json.ok) return { batch: false, items: [], error: json.error };
  return readInboundValue(json.value, options, text);
}

export function readInboundValue(value: unknown, options: InboundOptions, text?: string): InboundPayload {
  const payload = classifyPayload(value, options);
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
  if (outcome.id === null) return { kind: 'drop', error: outcome.error };
  const looksLikeRequest = typeof value === 'object' && value !== null && 'method' in value;
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
