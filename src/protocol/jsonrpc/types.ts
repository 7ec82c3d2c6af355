/**
 * JSON-RPC 2.0 message types as MCP uses them.
 *
 * Contract: every value of these types has passed `parseMessage` (or was built by the gateway),
 * so `id` is always a string or a finite number, never null, and a response carries exactly one
 * of `result` and `error`.
 */

/** A request id: a string or a number, never null (MCP `RequestId`). */
export type RequestId = string | number;

/** A JSON object as it came off the wire. */
export type JsonObject = { [key: string]: unknown };

export interface JsonRpcRequest {
  readonly jsonrpc: '2.0';
  readonly id: RequestId;
  readonly method: string;
  readonly params?: JsonObject | readonly unknown[];
}

export interface JsonRpcNotification {
  readonly jsonrpc: '2.0';
  readonly method: string;
  readonly params?: JsonObject | readonly unknown[];
}

export interface JsonRpcSuccess {
  readonly jsonrpc: '2.0';
  readonly id: RequestId;
  readonly result: unknown;
}

export interface JsonRpcErrorObject {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/**
 * An error response. `id` is null only when the gateway answers a message whose id could not be
 * read (parse error, invalid request); errors received from peers always carry a real id.
 */
export interface JsonRpcErrorResponse {
  readonly jsonrpc: '2.0';
  readonly id: RequestId | null;
  readonly error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcErrorResponse;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

export type MessageKind = 'request' | 'notification' | 'result' | 'error';

export function messageKind(message: JsonRpcMessage): MessageKind {
  if ('method' in message) return 'id' in message ? 'request' : 'notification';
  return 'error' in message ? 'error' : 'result';
}

export function isRequest(message: JsonRpcMessage): message is JsonRpcRequest {
  return 'method' in message && 'id' in message;
}

export function isNotification(message: JsonRpcMessage): message is JsonRpcNotification {
  return 'method' in message && !('id' in message);
}

export function isResponse(message: JsonRpcMessage): message is JsonRpcResponse {
  return !('method' in message);
}

export function isErrorResponse(message: JsonRpcMessage): message is JsonRpcErrorResponse {
  return 'error' in message && !('method' in message);
}

/**
 * A stable map key for a request id: `1` and `"1"` are different ids and must never collide.
 */
export function idKey(id: RequestId): string {
  return typeof id === 'number' ? `n${id}` : `s${id}`;
}
