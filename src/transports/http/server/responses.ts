import type { ServerResponse } from 'node:http';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import type { RequestId } from '../../../protocol/jsonrpc/types.js';

/**
 * An HTTP error answer with a JSON-RPC error body. The id is null when the failing message's id
 * could not be read (or the failure is about the HTTP request itself). `data` becomes the error's
 * `data` member (the supported versions of a -32022, say).
 */
export function sendJsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  id: RequestId | null = null,
  headers: Record<string, string> = {},
  data?: unknown,
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    error: data === undefined ? { code, message } : { code, message, data },
  });
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

/**
 * A request that failed inside the gateway (a bug, never the client's fault): logged with its
 * stack, counted, and answered 500, or ended when its answer had already begun.
 */
export function answerInternalError(
  res: ServerResponse,
  error: unknown,
  url: string | undefined,
  logger: Logger,
  metrics: Metrics,
): void {
  logger.error({ err: error instanceof Error ? error.stack : String(error), url }, 'HTTP request failed');
  metrics.inc('http_internal_errors_total');
  sendJsonRpcError(res, 500, JsonRpcCode.InternalError, 'Internal error in the gateway');
}
