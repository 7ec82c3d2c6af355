/**
 * Errors of 2026-07-28 upstreams as the legacy side of the gateway sees them. Two jobs:
 *
 * - Era detection: which error bodies identify a modern server (the spec's "recognized modern
 *   JSON-RPC error"): -32020 HeaderMismatch, -32021 MissingRequiredClientCapability, -32022
 *   UnsupportedProtocolVersion, and -32601 when it comes with HTTP 404 (a legacy HTTP+SSE server's
 *   404 has no such body).
 * - Translation for requests that did not carry a modern envelope (legacy clients, the gateway):
 *   the one code whose meaning moved is mapped back (-32602 with `data.uri` on `resources/read` is
 *   the old -32002 "resource not found"); codes a legacy client has never heard of keep their code
 *   and data but get a message that says what happened and what is missing.
 */
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonRpcErrorObject } from '../../../protocol/jsonrpc/types.js';
import { MODERN_REVISION } from '../../../protocol/mcp/revisions.js';

/** The error codes only modern servers send. */
export const MODERN_ERROR_CODES: ReadonlySet<number> = new Set([
  JsonRpcCode.HeaderMismatch,
  JsonRpcCode.MissingRequiredClientCapability,
  JsonRpcCode.UnsupportedProtocolVersion,
]);

/** Whether an error body with `code`, answered with HTTP `status`, identifies a modern server. */
export function isModernErrorSignal(code: number, status: number): boolean {
  return MODERN_ERROR_CODES.has(code) || (code === JsonRpcCode.MethodNotFound && status === 404);
}

/** The JSON-RPC error object of a parsed body, if it is an error response. */
export function errorObjectOf(value: unknown): JsonRpcErrorObject | undefined {
  if (!isObject(value) || !isObject(value.error)) return undefined;
  const { code, message, data } = value.error;
  if (typeof code !== 'number' || !Number.isInteger(code)) return undefined;
  const error: { code: number; message: string; data?: unknown } = {
    code,
    message: typeof message === 'string' ? message : '',
  };
  if (data !== undefined) error.data = data;
  return error;
}

/**
 * The error a request without a modern envelope gets for `error` from `upstream` (see the file
 * comment); `error` itself when nothing needs saying. `method` is the request's method.
 */
export function errorForLegacyClient(
  method: string,
  error: JsonRpcErrorObject,
  upstream: string,
): JsonRpcErrorObject {
  const data = isObject(error.data) ? error.data : undefined;
  switch (error.code) {
    case JsonRpcCode.InvalidParams:
      if (method === 'resources/read' && typeof data?.uri === 'string')
        return { ...error, code: JsonRpcCode.ResourceNotFound };
      return error;
    case JsonRpcCode.MissingRequiredClientCapability: {
      const required = data?.requiredCapabilities;
      const what = isObject(required) ? Object.keys(required).join(', ') : 'capabilities';
      return {
        ...error,
        message: `upstream ${upstream} needs the client capabilities ${what}, which this session did not declare in initialize (${error.message})`,
      };
    }
    case JsonRpcCode.UnsupportedProtocolVersion: {
      const supported = Array.isArray(data?.supported) ? data.supported.join(', ') : 'unknown';
      return {
        ...error,
        message: `upstream ${upstream} does not accept protocol ${MODERN_REVISION}, the version the gateway speaks to modern servers (it supports: ${supported})`,
      };
    }
    case JsonRpcCode.HeaderMismatch:
      return {
        ...error,
        message: `upstream ${upstream} refused the request's HTTP headers: ${error.message}`,
      };
    default:
      return error;
  }
}
