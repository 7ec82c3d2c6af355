/**
 * Error responses the HTTP upstream transports make up for a request the upstream will never
 * answer (its POST failed, its stream could not be resumed, its answer was too large or could not
 * be read). Delivered as
 * if the upstream had sent them, they make the request fail at once instead of hanging until a
 * timeout; the router answers the client with them like any upstream error.
 */
import { SbErrorCode } from '../../../errors/switchboard-error.js';
import { gatewayError } from '../../../errors/to-jsonrpc-error.js';
import type { JsonRpcErrorResponse, RequestId } from '../../../protocol/jsonrpc/types.js';

/**
 * A -32000 error for `id` with `data: { code: 'SB_UPSTREAM_UNAVAILABLE', status }`; `status` is
 * the HTTP status when there was one (absent for network errors and broken streams).
 */
export function unavailableResponse(id: RequestId, message: string, status?: number): string {
  const response: JsonRpcErrorResponse = {
    jsonrpc: '2.0',
    id,
    error: gatewayError(
      SbErrorCode.UpstreamUnavailable,
      message,
      status === undefined ? undefined : { status },
    ),
  };
  return JSON.stringify(response);
}

/**
 * A -32603 error for `id` with `data: { code: 'SB_UPSTREAM_PROTOCOL', upstream, status }`: the
 * upstream answered, but not with something the gateway can read (an answer that is not JSON, not
 * JSON-RPC, without the response, of a content type MCP does not use); `message` names what.
 */
export function malformedResponse(id: RequestId, upstream: string, message: string, status?: number): string {
  const response: JsonRpcErrorResponse = {
    jsonrpc: '2.0',
    id,
    error: gatewayError(
      SbErrorCode.UpstreamProtocol,
      message,
      status === undefined ? { upstream } : { upstream, status },
    ),
  };
  return JSON.stringify(response);
}

/** A -32006 error for `id`: the upstream's answer was larger than the gateway accepts. */
export function tooLargeResponse(id: RequestId, upstream: string, bytes: number, limit: number): string {
  const response: JsonRpcErrorResponse = {
    jsonrpc: '2.0',
    id,
    error: gatewayError(
      SbErrorCode.MessageTooLarge,
      `upstream ${upstream} answered with ${bytes} bytes or more, over the gateway's limit of ${limit} bytes`,
      { bytes, limit },
    ),
  };
  return JSON.stringify(response);
}
