/**
 * The router's own rejections (`Router.requestUpstream`, `whenLinkReady` and the waits behind
 * them) as an `Error`, so that a rejection keeps the stack of where it was made. It is also a
 * JSON-RPC error object: `code`, `message` and `data` are own enumerable fields, so it serialises
 * as `{ code, message, data }` and can be put into a response as it is; `name` and `stack` are not
 * enumerable and never reach the wire.
 */

import type { JsonRpcErrorObject } from '../protocol/jsonrpc/types.js';

/** A JSON-RPC error object that is an `Error` (see the file's comment). */
export class JsonRpcError extends Error implements JsonRpcErrorObject {
  /** The JSON-RPC error code (`JsonRpcCode`). */
  readonly code: number;
  /** The error's data; the gateway's own errors carry their stable `SbErrorCode` in `data.code`. */
  declare readonly data?: unknown;

  /** An error with the fields of `error`, thrown from here. */
  constructor(error: JsonRpcErrorObject) {
    super(error.message);
    // Own and enumerable, as in a plain error object (Error's own `message` is not enumerable).
    Object.defineProperty(this, 'message', { value: error.message, enumerable: true, writable: true });
    this.code = error.code;
    // `declare`d, so no own `data: undefined` when there is none (as in the plain object).
    if (error.data !== undefined) (this as { data?: unknown }).data = error.data;
  }
}

/** `error` as a {@link JsonRpcError} (itself when it is one already), to reject a promise with. */
export function rejection(error: JsonRpcErrorObject): JsonRpcError {
  return error instanceof JsonRpcError ? error : new JsonRpcError(error);
}
