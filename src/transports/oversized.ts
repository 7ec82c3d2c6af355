/**
 * What to do with a message too large to accept, from either side: a request is answered with a
 * -32006 error (when its id can be read), a response is turned into an error response for the same
 * id (so the request it answers fails instead of hanging), anything else is only logged and counted.
 */
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import type { JsonRpcErrorResponse } from '../protocol/jsonrpc/types.js';
import { sniffHead } from './sniff-head.js';

export type OversizedVerdict =
  | { readonly kind: 'request'; readonly reply: JsonRpcErrorResponse }
  | { readonly kind: 'response'; readonly replacement: JsonRpcErrorResponse }
  | { readonly kind: 'unknown' };

export function judgeOversized(head: string, bytes: number, limit: number): OversizedVerdict {
  const sniff = sniffHead(head);
  const error = {
    code: JsonRpcCode.MessageTooLarge,
    message: `message too large: ${bytes} bytes exceeds the gateway's limit of ${limit} bytes`,
    data: { code: 'SB_MESSAGE_TOO_LARGE', bytes, limit },
  };
  if (sniff.id === undefined) return { kind: 'unknown' };
  if (sniff.keys.has('method')) return { kind: 'request', reply: { jsonrpc: '2.0', id: sniff.id, error } };
  if (sniff.keys.has('result') || sniff.keys.has('error')) {
    return { kind: 'response', replacement: { jsonrpc: '2.0', id: sniff.id, error } };
  }
  return { kind: 'unknown' };
}
