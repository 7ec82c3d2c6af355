/**
 * A response from the gateway's (legacy-shaped) router, made into what a 2026-07-28 client
 * expects: every result carries `resultType` ('complete' unless the upstream said otherwise),
 * cacheable complete results carry `ttlMs` and `cacheScope` (defaults: not cacheable, private),
 * results name the server in `_meta`, and "resource not found" is -32602 with `data.uri` (it was
 * -32002 before 2026-07-28). Results an upstream already gave in modern form pass unchanged.
 */
import { JsonRpcCode } from '../../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../../protocol/jsonrpc/json-object.js';
import type {
  JsonObject,
  JsonRpcRequest,
  JsonRpcResponse,
  RequestId,
} from '../../../../protocol/jsonrpc/types.js';
import { META_SERVER_INFO } from '../../../../protocol/mcp/modern-meta.js';

export const CACHEABLE: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

export function adaptResponse(
  request: JsonRpcRequest,
  response: JsonRpcResponse,
  id: RequestId,
  serverInfo: JsonObject,
): JsonRpcResponse {
  if ('error' in response) {
    const error = response.error;
    if (error.code === JsonRpcCode.ResourceNotFound && request.method === 'resources/read') {
      const uri = isObject(request.params) ? request.params.uri : undefined;
      return {
        jsonrpc: '2.0',
        id,
        error: {
          code: JsonRpcCode.InvalidParams,
          message: error.message,
          data: { ...(isObject(error.data) ? error.data : {}), uri },
        },
      };
    }
    return { ...response, id };
  }
  const result = isObject(response.result) ? response.result : {};
  const meta = isObject(result._meta) ? result._meta : {};
  // Every 2026-07-28 result says what kind it is; a legacy upstream's results are all complete.
  const resultType = typeof result.resultType === 'string' ? result.resultType : 'complete';
  const adapted: JsonObject = {
    ...result,
    resultType,
    _meta: { ...meta, [META_SERVER_INFO]: meta[META_SERVER_INFO] ?? serverInfo },
  };
  if (resultType === 'complete' && CACHEABLE.has(request.method)) {
    if (typeof adapted.ttlMs !== 'number') adapted.ttlMs = 0;
    if (adapted.cacheScope !== 'public' && adapted.cacheScope !== 'private') adapted.cacheScope = 'private';
  }
  return { jsonrpc: '2.0', id, result: adapted };
}

/** The HTTP status of a modern error answer given as one JSON body (the spec's table). */
export function statusOfError(code: number): number {
  if (code === JsonRpcCode.MethodNotFound) return 404;
  if (
    code === JsonRpcCode.HeaderMismatch ||
    code === JsonRpcCode.MissingRequiredClientCapability ||
    code === JsonRpcCode.UnsupportedProtocolVersion
  )
    return 400;
  return 200;
}
