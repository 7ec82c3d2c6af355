/**
 * What the router makes of something thrown or rejected: a text for the log (with its stack), and
 * a JSON-RPC error for the wire (never the thrown text: internals stay in the log).
 */

import type { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError, rejectionAsJsonRpcError } from '../errors/to-jsonrpc-error.js';
import type { JsonRpcErrorObject } from '../protocol/jsonrpc/types.js';

/** What the log says of something thrown: its stack when it has one. */
export function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * A JSON-RPC error object from anything rejected (`rejectionAsJsonRpcError`); anything else becomes
 * `message` under `code`, without the thrown text (internals stay in the log, not on the wire).
 */
export function asRpcError(error: unknown, code: SbErrorCode, message: string): JsonRpcErrorObject {
  return rejectionAsJsonRpcError(error, () => gatewayError(code, message));
}
