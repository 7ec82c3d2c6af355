import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import type { RequestId } from '../../../protocol/jsonrpc/types.js';
import type { BodyResult } from './read-body.js';

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

/**
 * The answer to a request body that did not arrive whole within `server.bodyTimeout` (a slow or
 * stalled sender): 408 with a JSON-RPC error, counted, and the connection closed with it, so what
 * is left of the body is never read.
 */
export function refuseSlowBody(res: ServerResponse, timeoutMs: number, metrics: Metrics): void {
  metrics.inc('http_rejected_total', { reason: 'body-timeout' });
  sendJsonRpcError(
    res,
    408,
    JsonRpcCode.InvalidRequest,
    `Request Timeout: the request body did not arrive within ${timeoutMs} ms (server.bodyTimeout)`,
    null,
    { connection: 'close' },
  );
}

/**
 * Answers a POST whose body could not be read whole, the same on every endpoint: too large (413,
 * and the connection closes, since the rest of the body is left unread), too slow (408), or the
 * client left (nothing). Returns the body's text when it was read, else `undefined` once answered.
 */
export function bodyTextOrRefuse(
  res: ServerResponse,
  body: BodyResult,
  limits: { readonly maxBodyBytes: number; readonly bodyTimeoutMs: number },
  metrics: Metrics,
): string | undefined {
  switch (body.kind) {
    case 'ok':
      return body.text;
    case 'too-large':
      metrics.inc('http_rejected_total', { reason: 'too-large' });
      sendJsonRpcError(
        res,
        413,
        JsonRpcCode.MessageTooLarge,
        `Payload Too Large: the body exceeds ${limits.maxBodyBytes} bytes`,
        null,
        { connection: 'close' },
      );
      return undefined;
    case 'timeout':
      refuseSlowBody(res, limits.bodyTimeoutMs, metrics);
      return undefined;
    case 'aborted':
      return undefined;
  }
}

/**
 * Answers an upgrade request (a socket no longer speaking HTTP through Node) with a plain HTTP
 * error, `{"error": message}`, and closes the socket.
 */
export function refuseUpgrade(
  socket: Duplex,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ error: message });
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v.replace(/[\r\n]/g, ' ')}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * Answers a connection Node's HTTP parser gave up on (`clientError`: a timeout, oversized headers,
 * malformed HTTP) with a JSON-RPC error, id null, then closes it once the answer is written.
 */
export function rejectClientError(socket: Duplex, answer: { status: number; message: string }): void {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: null,
    error: { code: JsonRpcCode.InvalidRequest, message: answer.message },
  });
  const head = [
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
}
