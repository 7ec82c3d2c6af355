/**
 * The SSE stream that answers one request POSTed over Streamable HTTP, followed to its response:
 * every message it carries is delivered with `relatedUpstreamId` = that request's id, and when the
 * stream ends (or breaks) before the response, it is resumed by GET with `Last-Event-ID` after the
 * server's `retry` (default 1000 ms), for as long as resumptions bring messages and then at most
 * `maxResumeAttempts` more times. A request whose answer cannot be had gets a synthesized error.
 */
import type { Dispatcher } from 'undici';
import type { JsonObject, RequestId } from '../../../protocol/jsonrpc/types.js';
import { judgeOversized } from '../../oversized.js';
import { sniffHead } from '../../sniff-head.js';
import { type SseEvent, SseParser } from '../sse/sse-parser.js';
import { describeNetworkError } from './describe-error.js';
import { discardBody, mediaTypeOf, type ResponseBody } from './response-body.js';
import { findResponse } from './response-watch.js';
import { isEmptyData, pumpSse } from './sse-body.js';
import { sseContext } from './sse-context.js';
import type { StreamHost } from './stream-host.js';
import { tooLargeResponse } from './synthesized-response.js';

/**
 * A request in flight: registered when sent, so that a cancellation is seen however early it comes,
 * and so that a response arriving on another stream (the GET stream) counts as its answer.
 */
export interface Flight {
  cancelled: boolean;
  answered: boolean;
}

/** The request an answer stream belongs to. */
export interface AnswerRequest {
  readonly id: RequestId;
  readonly flight: Flight;
  /** The stream's name in traces (`post-<n>`). */
  readonly streamId: string;
  /** Called with the response once it is seen (the transport reads `initialize`'s). */
  readonly onResponse?: (response: JsonObject) => void;
}

/** The cursor of the stream, kept across resumptions. */
interface Cursor {
  lastEventId: string;
  retryMs: number | undefined;
  /** The `Last-Event-ID` the current connection resumed from. */
  resumedFrom: string | undefined;
  /** Messages the current connection delivered. */
  delivered: number;
}

/** Follows the answer stream `body` of `request` until its response, resuming it as needed. */
export async function followAnswerStream(
  host: StreamHost,
  body: ResponseBody,
  request: AnswerRequest,
): Promise<void> {
  const o = host.options;
  const flight = request.flight;
  const cursor: Cursor = { lastEventId: '', retryMs: undefined, resumedFrom: undefined, delivered: 0 };
  let current: ResponseBody | undefined = body;
  let fruitless = 0;
  for (;;) {
    if (current) {
      cursor.delivered = 0;
      await readOnce(host, current, request, cursor);
      if (cursor.delivered > 0) fruitless = 0;
    }
    if (host.out.closed || flight.answered || flight.cancelled) return;
    if (cursor.lastEventId === '') {
      host.out.fail(
        request.id,
        `the answer stream of upstream ${o.name} ended before the response and cannot be resumed (no event id)`,
      );
      return;
    }
    if (++fruitless > o.maxResumeAttempts) {
      host.out.fail(
        request.id,
        `the answer stream of upstream ${o.name} ended before the response; gave up after ${o.maxResumeAttempts} attempts to resume it`,
      );
      return;
    }
    await host.http.sleep(cursor.retryMs ?? o.defaultRetryMs);
    // The answer may have come on the GET stream meanwhile, or the request been cancelled.
    if (host.out.closed || flight.cancelled || flight.answered) return;
    const resumed = await resume(host, request, cursor);
    if (resumed === 'stop') return;
    current = resumed;
  }
}

/** GET with `Last-Event-ID`: the rest of the stream, undefined to try again later, or 'stop'. */
async function resume(
  host: StreamHost,
  request: AnswerRequest,
  cursor: Cursor,
): Promise<ResponseBody | undefined | 'stop'> {
  const o = host.options;
  o.metrics.inc('upstream_sse_resumptions_total', { upstream: o.name, stream: 'post' });
  cursor.resumedFrom = cursor.lastEventId;
  let response: Dispatcher.ResponseData;
  try {
    response = await host.get(cursor.lastEventId);
  } catch (error) {
    if (host.out.closed) return 'stop';
    o.logger.debug(
      { upstream: o.name, err: describeNetworkError(error) },
      'resuming an answer stream failed',
    );
    return undefined;
  }
  const { statusCode: status, headers, body } = response;
  if (status >= 200 && status < 300 && mediaTypeOf(headers) === 'text/event-stream') return body;
  discardBody(body);
  if (status === 404 && host.hasSession()) {
    host.expired();
    return 'stop';
  }
  if (status === 405) {
    host.out.fail(
      request.id,
      `the answer stream of upstream ${o.name} broke off and the server does not allow resuming it (GET: 405)`,
      status,
    );
    return 'stop';
  }
  o.logger.debug({ upstream: o.name, status }, 'resuming an answer stream was refused');
  return undefined;
}

/** Reads one connection of the stream to its end. */
async function readOnce(
  host: StreamHost,
  body: ResponseBody,
  request: AnswerRequest,
  cursor: Cursor,
): Promise<void> {
  const o = host.options;
  const parser = new SseParser(
    {
      onEvent: (event) => onEvent(host, request, cursor, event),
      onRetry: (ms) => {
        cursor.retryMs = ms;
      },
      onOversized: (head, chars) => onOversized(host, request, cursor, head, chars),
    },
    { maxEventChars: o.maxMessageBytes, lastEventId: cursor.lastEventId },
  );
  const end = await pumpSse(body, parser);
  cursor.lastEventId = parser.lastEventId;
  if (end.kind === 'broken' && !host.out.closed && !request.flight.answered) {
    o.logger.debug({ upstream: o.name, err: describeNetworkError(end.error) }, 'an answer stream broke off');
  }
}

function onEvent(host: StreamHost, request: AnswerRequest, cursor: Cursor, event: SseEvent): void {
  // Events of other types are not MCP messages; empty data is a priming event.
  if (event.type !== 'message' || isEmptyData(event.data)) return;
  if (!request.flight.answered) {
    const response = findResponse(event.data, request.id);
    if (response) {
      request.flight.answered = true;
      request.onResponse?.(response);
    }
  }
  cursor.delivered++;
  host.out.deliver(event.data, {
    transport: sseContext(request.streamId, event.lastEventId, cursor.retryMs, cursor.resumedFrom),
    relatedUpstreamId: request.id,
  });
}

/**
 * An event too large to accept: a server request gets an error reply; anything that is not a
 * request or notification is taken for the answer, which fails the request with a too-large error.
 */
function onOversized(
  host: StreamHost,
  request: AnswerRequest,
  cursor: Cursor,
  head: string,
  chars: number,
): void {
  const o = host.options;
  host.countOversized(chars);
  if (sniffHead(head).keys.has('method') || request.flight.answered) {
    const verdict = judgeOversized(head, chars, o.maxMessageBytes);
    if (verdict.kind === 'request') host.send(JSON.stringify(verdict.reply), verdict.reply);
    return;
  }
  request.flight.answered = true;
  cursor.delivered++;
  host.out.deliver(tooLargeResponse(request.id, o.name, chars, o.maxMessageBytes), {
    transport: sseContext(request.streamId, '', cursor.retryMs, cursor.resumedFrom),
    relatedUpstreamId: request.id,
  });
}
