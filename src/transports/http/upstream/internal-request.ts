/**
 * Requests a modern upstream transport makes on its own account, not the router's: today the
 * `tools/list` it needs to learn the tools' `x-mcp-header` parameters. They carry the session's
 * envelope and the mirrored headers like any request, have a deadline of their own (nobody else
 * would end them), and their notifications are not delivered to anyone.
 */

import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import type { HttpConnection } from './http-connection.js';
import { type AnswerReader, readModernAnswer } from './modern-answer.js';
import { errorObjectOf } from './modern-errors.js';

/** What sending an internal request takes, from the transport. */
export interface InternalRequester {
  readonly http: HttpConnection;
  readonly path: string;
  readonly reader: AnswerReader;
  /** Aborted when the transport closes. */
  readonly signal: AbortSignal;
  /** Longest wait for the whole answer. */
  readonly timeoutMs: number;
  /** A fresh JSON-RPC id. */
  nextId(): string;
  /** The request's params with the session's `_meta` envelope added. */
  params(extra: JsonObject): JsonObject;
  /** The POST headers of a request of `method` with `params`. */
  headers(method: string, params: JsonObject): Record<string, string>;
}

/** Sends one request and resolves with its result; rejects with an Error saying why there is none. */
export async function internalRequest(
  requester: InternalRequester,
  method: string,
  extra: JsonObject,
): Promise<JsonObject> {
  const id = requester.nextId();
  const params = requester.params(extra);
  const response = await requester.http.request({
    method: 'POST',
    path: requester.path,
    headers: requester.headers(method, params),
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    signal: AbortSignal.any([requester.signal, AbortSignal.timeout(requester.timeoutMs)]),
    headersTimeoutMs: 0,
    bodyTimeoutMs: 0,
  });
  const answer = await readModernAnswer(requester.reader, response, id, `internal-${id}`, () => {});
  if (answer.kind === 'response') {
    const error = errorObjectOf(answer.response);
    if (error) throw new Error(`${method} failed: ${error.message}`);
    return isObject(answer.response.result) ? answer.response.result : {};
  }
  if (answer.kind === 'refused')
    throw new Error(`${method} got HTTP ${answer.status}: ${answer.error?.message ?? answer.detail ?? ''}`);
  throw new Error(answer.kind === 'failed' ? answer.reason : `the answer to ${method} is too large`);
}

/** Every tool, page after page (at most `maxPages`, so a server's endless cursor cannot loop). */
export async function listAllTools(
  request: (method: string, extra: JsonObject) => Promise<JsonObject>,
  maxPages = 20,
): Promise<unknown[]> {
  const tools: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const result = await request('tools/list', cursor === undefined ? {} : { cursor });
    if (Array.isArray(result.tools)) tools.push(...result.tools);
    if (typeof result.nextCursor !== 'string') break;
    cursor = result.nextCursor;
  }
  return tools;
}
