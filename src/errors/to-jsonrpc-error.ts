import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import type { JsonRpcErrorObject } from '../protocol/jsonrpc/types.js';
import { SbErrorCode, SwitchboardError } from './switchboard-error.js';

const WIRE_CODE: Readonly<Record<SbErrorCode, number>> = {
  SB_CONFIG_INVALID: JsonRpcCode.InternalError,
  SB_CONFIG_NOT_FOUND: JsonRpcCode.InternalError,
  SB_USAGE: JsonRpcCode.InvalidParams,
  SB_DATA_DIR: JsonRpcCode.InternalError,
  SB_UPSTREAM_EXITED: JsonRpcCode.UpstreamClosed,
  SB_UPSTREAM_UNAVAILABLE: JsonRpcCode.UpstreamClosed,
  SB_UPSTREAM_SPAWN: JsonRpcCode.UpstreamClosed,
  SB_UPSTREAM_PROTOCOL: JsonRpcCode.InternalError,
  SB_ROUTE_UNRESOLVED: JsonRpcCode.UpstreamClosed,
  SB_REQUEST_TIMEOUT: JsonRpcCode.RequestTimeout,
  SB_MESSAGE_TOO_LARGE: JsonRpcCode.MessageTooLarge,
  SB_UNROUTABLE: JsonRpcCode.Unroutable,
  SB_POLICY_DENIED: JsonRpcCode.PolicyDenied,
  SB_APPROVAL_REJECTED: JsonRpcCode.ApprovalRejected,
  SB_SELF_APPROVAL: JsonRpcCode.Unauthorized,
  SB_AUDIT_UNAVAILABLE: JsonRpcCode.AuditUnavailable,
  SB_LIMIT_EXCEEDED: JsonRpcCode.LimitExceeded,
  SB_TAPE_NO_MATCH: JsonRpcCode.TapeNoMatch,
  SB_UNAUTHORIZED: JsonRpcCode.Unauthorized,
  SB_CANCELLED: JsonRpcCode.RequestCancelled,
  SB_SHUTTING_DOWN: JsonRpcCode.ShuttingDown,
  SB_TRACE_STORE: JsonRpcCode.InternalError,
  SB_TAPE_INVALID: JsonRpcCode.InternalError,
  SB_TAPE_INCOMPLETE: JsonRpcCode.InternalError,
  SB_INTERNAL: JsonRpcCode.InternalError,
};

/**
 * The one conversion from anything thrown to a JSON-RPC error object. A `SwitchboardError` keeps
 * its message and carries its stable code in `data.code`; anything else becomes an internal error
 * whose message does not leak internals.
 */
export function toJsonRpcError(error: unknown): JsonRpcErrorObject {
  if (error instanceof SwitchboardError) {
    return {
      code: WIRE_CODE[error.code],
      message: error.message,
      data: { code: error.code, ...error.details },
    };
  }
  return {
    code: JsonRpcCode.InternalError,
    message: 'Internal error in the gateway',
    data: { code: SbErrorCode.Internal },
  };
}

/** A JSON-RPC error object for a gateway failure, with its stable code in `data.code`. */
export function gatewayError(
  code: SbErrorCode,
  message: string,
  details?: Record<string, unknown>,
): JsonRpcErrorObject {
  return toJsonRpcError(new SwitchboardError(code, message, details ? { details } : undefined));
}

/**
 * The JSON-RPC error object a rejection stands for: a `SwitchboardError`'s (the gateway's own
 * failures are thrown as that one class, so their stacks survive), a JSON-RPC error object passed
 * through as it is (an upstream's answer, or a resolver of someone else's that rejects with one),
 * else `fallback` — never the thrown text, which stays in the log.
 */
export function rejectionAsJsonRpcError(
  error: unknown,
  fallback: () => JsonRpcErrorObject,
): JsonRpcErrorObject {
  if (error instanceof SwitchboardError) return toJsonRpcError(error);
  if (isObject(error) && typeof error.code === 'number' && typeof error.message === 'string') {
    // A `JsonRpcError` (an Error) is copied to a plain object: what goes into a message stays plain
    // data (structuredClone of an Error would drop `code` and `data`).
    if (!(error instanceof Error)) return error as unknown as JsonRpcErrorObject;
    const { code, message, data } = error as unknown as JsonRpcErrorObject;
    return data === undefined ? { code, message } : { code, message, data };
  }
  return fallback();
}
