import type { ServerResponse } from 'node:http';
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
