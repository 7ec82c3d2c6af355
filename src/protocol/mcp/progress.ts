/**
 * Reading and rewriting the MCP fields that tie messages to requests: `_meta.progressToken` on a
 * request, `progressToken` on `notifications/progress`, `requestId` on `notifications/cancelled`.
 * All functions are pure and return new objects; the input messages are never modified.
 */

import { isObject } from '../jsonrpc/json-object.js';
import type { JsonObject, JsonRpcNotification, JsonRpcRequest, RequestId } from '../jsonrpc/types.js';

export type ProgressToken = string | number;

function isToken(value: unknown): value is ProgressToken {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** The request's `params._meta.progressToken`, if it carries a valid one. */
export function progressTokenOf(request: JsonRpcRequest): ProgressToken | undefined {
  const params = request.params;
  if (!isObject(params) || !isObject(params._meta)) return undefined;
  const token = params._meta.progressToken;
  return isToken(token) ? token : undefined;
}

/** The request with its id replaced and, when given, its progress token replaced. */
export function rewriteRequest(
  request: JsonRpcRequest,
  id: RequestId,
  progressToken?: ProgressToken,
): JsonRpcRequest {
  if (progressToken === undefined || !isObject(request.params) || !isObject(request.params._meta)) {
    return { ...request, id };
  }
  return {
    ...request,
    id,
    params: { ...request.params, _meta: { ...request.params._meta, progressToken } },
  };
}

/** The token of a `notifications/progress`, if well formed. */
export function progressNotificationToken(notification: JsonRpcNotification): ProgressToken | undefined {
  if (notification.method !== 'notifications/progress' || !isObject(notification.params)) return undefined;
  const token = notification.params.progressToken;
  return isToken(token) ? token : undefined;
}

export function withProgressToken(
  notification: JsonRpcNotification,
  token: ProgressToken,
): JsonRpcNotification {
  return { ...notification, params: { ...(notification.params as JsonObject), progressToken: token } };
}

/** The request id named by a `notifications/cancelled`, if well formed. */
export function cancelledRequestId(notification: JsonRpcNotification): RequestId | undefined {
  if (notification.method !== 'notifications/cancelled' || !isObject(notification.params)) return undefined;
  const id = notification.params.requestId;
  return isToken(id) ? id : undefined;
}

export function withCancelledRequestId(
  notification: JsonRpcNotification,
  requestId: RequestId,
): JsonRpcNotification {
  return { ...notification, params: { ...(notification.params as JsonObject), requestId } };
}

export function cancelledNotification(requestId: RequestId, reason: string): JsonRpcNotification {
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } };
}
