/**
 * The standalone GET stream of a Streamable HTTP session: messages not tied to any request
 * (list_changed, logs, server requests of their own), delivered without `relatedUpstreamId`. It is
 * kept open until the transport closes: when it ends it is reopened with `Last-Event-ID` after the
 * server's `retry` (default 1000 ms); when it cannot be opened, after an exponential backoff (never
 * shorter than `retry`). 405 means the server offers none, which is fine; 404 means the session is
 * gone. A response it carries (a server resuming there) marks its request answered.
 */
import { idKey } from '../../../protocol/jsonrpc/types.js';
import { Backoff } from '../../backoff.js';
import { judgeOversized } from '../../oversized.js';
import { type SseEvent, SseParser } from '../sse/sse-parser.js';
import type { Flight } from './answer-stream.js';
import { describeNetworkError } from './describe-error.js';
import { discardBody, mediaTypeOf } from './response-body.js';
import { responseIds } from './response-watch.js';
import { isEmptyData, pumpSse } from './sse-body.js';
import { sseContext } from './sse-context.js';
import type { StreamHost } from './stream-host.js';

/** The stream id of the GET stream in traces. */
const STREAM_ID = 'get';

/** Runs the GET stream until the transport closes. Never rejects. */
export async function runStandaloneStream(
  host: StreamHost,
  flights: ReadonlyMap<string, Flight>,
): Promise<void> {
  const o = host.options;
  let backoff = new Backoff(o.reconnectBackoff);
  let lastEventId = '';
  let retryMs: number | undefined;
  for (;;) {
    if (host.out.closed) return;
    let delay: number;
    try {
      const { statusCode: status, headers, body } = await host.get(lastEventId);
      if (status === 405) {
        discardBody(body);
        o.logger.debug({ upstream: o.name }, 'the upstream offers no GET stream (405)');
        return;
      }
      if (status === 404 && host.hasSession()) {
        discardBody(body);
        host.expired();
        return;
      }
      if (status >= 200 && status < 300 && mediaTypeOf(headers) === 'text/event-stream') {
        if (lastEventId !== '')
          o.metrics.inc('upstream_sse_resumptions_total', { upstream: o.name, stream: 'get' });
        const resumedFrom = lastEventId;
        const parser: SseParser = new SseParser(
          {
            onEvent: (event) => onEvent(host, flights, event, parser.retryMs ?? retryMs, resumedFrom),
            onOversized: (head, chars) => onOversized(host, head, chars),
          },
          { maxEventChars: o.maxMessageBytes, lastEventId },
        );
        await pumpSse(body, parser);
        lastEventId = parser.lastEventId;
        retryMs = parser.retryMs ?? retryMs;
        // The connection worked: a drop now is the server's polling, not a failure.
        backoff = new Backoff(o.reconnectBackoff);
        delay = retryMs ?? o.defaultRetryMs;
      } else {
        discardBody(body);
        o.metrics.inc('upstream_http_errors_total', { upstream: o.name, status: String(status) });
        o.logger.debug({ upstream: o.name, status }, 'the GET stream was refused');
        delay = Math.max(retryMs ?? 0, backoff.next(0));
      }
    } catch (error) {
      if (host.out.closed) return;
      o.logger.debug(
        { upstream: o.name, err: describeNetworkError(error) },
        'the GET stream could not be opened',
      );
      delay = Math.max(retryMs ?? 0, backoff.next(0));
    }
    if (host.out.closed) return;
    await host.http.sleep(delay);
  }
}

function onEvent(
  host: StreamHost,
  flights: ReadonlyMap<string, Flight>,
  event: SseEvent,
  retryMs: number | undefined,
  resumedFrom: string,
): void {
  if (event.type !== 'message' || isEmptyData(event.data)) return;
  if (flights.size > 0) {
    for (const id of responseIds(event.data)) {
      const flight = flights.get(idKey(id));
      if (flight) flight.answered = true;
    }
  }
  host.out.deliver(event.data, { transport: sseContext(STREAM_ID, event.lastEventId, retryMs, resumedFrom) });
}

/** Too large: a response is replaced by an error for its id, a request answered with one. */
function onOversized(host: StreamHost, head: string, chars: number): void {
  host.countOversized(chars);
  const verdict = judgeOversized(head, chars, host.options.maxMessageBytes);
  if (verdict.kind === 'response')
    host.out.deliver(JSON.stringify(verdict.replacement), { transport: sseContext(STREAM_ID, '') });
  else if (verdict.kind === 'request') host.send(JSON.stringify(verdict.reply), verdict.reply);
}
