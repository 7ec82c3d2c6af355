import { JsonRpcCode } from './codes.js';
import type { JsonRpcErrorObject, JsonRpcErrorResponse, RequestId } from './types.js';

/** Builds an error response; `id` null only when the offending message's id was unreadable. */
export function errorResponse(id: RequestId | null, error: JsonRpcErrorObject): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error };
}

export function rpcError(code: number, message: string, data?: unknown): JsonRpcErrorObject {
  return data === undefined ? { code, message } : { code, message, data };
}

export function methodNotFound(method: string): JsonRpcErrorObject {
  return rpcError(JsonRpcCode.MethodNotFound, `Method not found: ${method}`);
}
