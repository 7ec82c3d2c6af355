/**
 * Reading the answer to one POST sent to a 2026-07-28 upstream, whatever its shape: a JSON body
 * (one message, or notifications then the response, `json-answer.ts`), an SSE stream of related notifications ending with the response, or an HTTP error whose body may be
 * a JSON-RPC error (400 -32020, 404 -32601...). The caller gets the response as soon as it is seen;
 * notifications before it are handed over one by one as they arrive.
 *
 * What 2026-07-28 changed is enforced here: a stream cannot be resumed (no `Last-Event-ID`), so
 * one that ends before its response fails the request; the server must not send requests on it (it
 * asks through `input_required` results instead), so a request found there is dropped and counted.
 * Memory stays bounded by the message limit: a larger response becomes an `oversized` answer, a
 * larger notification is dropped.
 */
import type { Dispatcher } from 'undici';
import {
  type HttpTransportContext,
  safeHeaders,
  type TransportContext,
} from '../../../envelope/message-context.js';
import { type Logger, silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import { DEFAULT_MAX_JSON_DEPTH, parseJson } from '../../../protocol/jsonrpc/parse.js';
import type { JsonObject, JsonRpcErrorObject, RequestId } from '../../../protocol/jsonrpc/types.js';
import { sniffHead } from '../../sniff-head.js';
import { type SseEvent, SseParser } from '../sse/sse-parser.js';
import { describeNetworkError } from './describe-error.js';
import { readJsonAnswer } from './json-answer.js';
import { errorObjectOf } from './modern-errors.js';
import { declaredLengthOf, discardBody, mediaTypeOf, readBodyText } from './response-body.js';
import { isEmptyData, pumpSse } from './sse-body.js';
import { sseContext } from './sse-context.js';

/** How long a stream may stay open after its response before it is dropped (the spec: it SHOULD end). */
const LINGER_MS = 1000;
/** The most of an HTTP error body read to find a JSON-RPC error in it. */
const ERROR_BODY_LIMIT = 64 * 1024;

/** Who reads, and the limits. */
export interface AnswerReader {
  readonly upstream: string;
  readonly maxMessageBytes: number;
  /** Deepest nesting accepted in a message; default `DEFAULT_MAX_JSON_DEPTH`. */
  readonly maxJsonDepth?: number;
  /** The endpoint's path, for the transport context of JSON answers. */
  readonly path: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** The outcome of one POST. */
export type ModernAnswer =
  /** A JSON-RPC response (result or error) to the request, with a 2xx status. */
  | {
      readonly kind: 'response';
      readonly response: JsonObject;
      readonly text: string;
      readonly transport: TransportContext;
    }
  /** A non-2xx status; `error` when the body was a JSON-RPC error (the modern servers' way). */
  | {
      readonly kind: 'refused';
      readonly status: number;
      readonly transport: HttpTransportContext;
      readonly error?: JsonRpcErrorObject;
      readonly detail?: string;
    }
  /** The response was larger than the message limit. */
  | { readonly kind: 'oversized'; readonly bytes: number; readonly transport: TransportContext }
  /**
   * No response can be had; `reason` says why, for the synthesized error. `broken`: the connection
   * failed (network error, timeout, abort), as opposed to the server answering without a response.
   * `malformed`: the server answered, with something that cannot be read (`SB_UPSTREAM_PROTOCOL`).
   */
  | {
      readonly kind: 'failed';
      readonly reason: string;
      readonly status?: number;
      readonly broken?: true;
      readonly malformed?: true;
    };

/** A notification that came with the answer, parsed, with the context it arrived in. */
export type OnNotification = (text: string, message: JsonObject, transport: TransportContext) => void;

function parse(text: string): unknown {
  const json = parseJson(text, { maxDepth: Number.POSITIVE_INFINITY });
  return json.ok ? json.value : undefined;
}

/**
 * A message of the upstream's within the depth limit; `deep` when it nests deeper (it is never
 * walked or serialised then), undefined when it is not JSON.
 */
function parseBounded(reader: AnswerReader, text: string): { value: unknown } | { deep: string } | undefined {
  const json = parseJson(text, reader.maxJsonDepth === undefined ? {} : { maxDepth: reader.maxJsonDepth });
  if (json.ok) return { value: json.value };
  if (json.error.code !== JsonRpcCode.InvalidRequest) return undefined;
  reader.metrics.inc('upstream_malformed_total', { upstream: reader.upstream });
  return { deep: json.error.message.replace(/^Invalid Request: the message/, 'its message') };
}

/** Whether `value` is a response to `id` (an error without id counts: it refused this request). */
function isResponseTo(value: JsonObject, id: RequestId): boolean {
  if ('method' in value || !('result' in value || 'error' in value)) return false;
  return value.id === id || (value.id === null && 'error' in value);
}

/**
 * The answer to a question the gateway asks a server on its own while finding its era (the era
 * and handshake probes): read whole (at most 1 MiB), notifications ignored, nothing logged or
 * counted, since no client call stands behind it. Never rejects.
 */
export function readProbeAnswer(
  upstream: string,
  path: string,
  response: Dispatcher.ResponseData,
  id: RequestId,
): Promise<ModernAnswer> {
  const reader = {
    upstream,
    maxMessageBytes: 1024 * 1024,
    path,
    logger: silentLogger,
    metrics: new Metrics(),
  };
  return readModernAnswer(reader, response, id, 'probe', () => {});
}

/** Reads the answer to request `id` from `response` (see the file comment). Never rejects. */
export async function readModernAnswer(
  reader: AnswerReader,
  response: Dispatcher.ResponseData,
  id: RequestId,
  streamId: string,
  onNotification: OnNotification,
): Promise<ModernAnswer> {
  const { statusCode: status, headers, body } = response;
  const http: HttpTransportContext = {
    kind: 'http',
    method: 'POST',
    path: reader.path,
    headers: safeHeaders(headers),
    status,
  };
  if (status < 200 || status > 299) return readRefusal(reader, response, http);
  const type = mediaTypeOf(headers);
  if (type === 'text/event-stream') return readStream(reader, response, id, streamId, onNotification);
  if (type !== 'application/json') {
    discardBody(body);
    const what = status === 202 ? 'HTTP 202 without a response' : `content type ${type || '(none)'}`;
    return {
      kind: 'failed',
      reason: `upstream ${reader.upstream} answered a request with ${what}`,
      status,
      malformed: true,
    };
  }
  const read = await readBodyText(body, reader.maxMessageBytes, declaredLengthOf(headers));
  if (read.kind === 'oversized') return { kind: 'oversized', bytes: read.bytes, transport: http };
  if (read.kind === 'failed')
    return {
      kind: 'failed',
      reason: `the answer of upstream ${reader.upstream} broke off: ${describeNetworkError(read.error)}`,
      status,
      broken: true,
    };
  return readJsonBody(reader, read.text, id, http, onNotification);
}

/**
 * A JSON body: its notifications handed over in order, then the response (`json-answer.ts` says
 * which bodies are accepted). A request among them is dropped and counted, as on a stream; a
 * notification nested past the depth limit is dropped.
 */
function readJsonBody(
  reader: AnswerReader,
  text: string,
  id: RequestId,
  http: HttpTransportContext,
  onNotification: OnNotification,
): ModernAnswer {
  const status = http.status;
  const answer = readJsonAnswer(text, id, {
    allowBatch: false,
    maxDepth: reader.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
  });
  for (const related of answer.related) {
    if (related.deep !== undefined) {
      reader.metrics.inc('upstream_malformed_total', { upstream: reader.upstream });
      reader.logger.warn(
        { upstream: reader.upstream, error: related.deep },
        'a message too deep in a JSON answer; dropped',
      );
    } else if ('id' in related.message) droppedRequest(reader, related.message);
    else onNotification(related.text, related.message, http);
  }
  if (!answer.ok) {
    reader.metrics.inc('upstream_malformed_total', { upstream: reader.upstream });
    return {
      kind: 'failed',
      reason: `upstream ${reader.upstream} answered HTTP ${status} with ${answer.fault}`,
      ...(status === undefined ? {} : { status }),
      malformed: true,
    };
  }
  return { kind: 'response', response: answer.response.message, text: answer.response.text, transport: http };
}

/** 2026-07-28: servers ask through input_required results, never with requests of their own. */
function droppedRequest(reader: AnswerReader, message: JsonObject): void {
  reader.metrics.inc('upstream_protocol_violations_total', { upstream: reader.upstream });
  reader.logger.warn(
    { upstream: reader.upstream, method: message.method },
    'a 2026-07-28 upstream sent a request with its answer; dropped',
  );
}

async function readRefusal(
  reader: AnswerReader,
  response: Dispatcher.ResponseData,
  http: HttpTransportContext,
): Promise<ModernAnswer> {
  const read = await readBodyText(response.body, ERROR_BODY_LIMIT);
  const text = read.kind === 'text' ? read.text.trim() : '';
  const error = errorObjectOf(parse(text));
  reader.metrics.inc('upstream_http_errors_total', {
    upstream: reader.upstream,
    status: String(http.status),
  });
  if (error) return { kind: 'refused', status: response.statusCode, transport: http, error };
  const detail = text.length > 200 ? `${text.slice(0, 197)}...` : text;
  return detail
    ? { kind: 'refused', status: response.statusCode, transport: http, detail }
    : { kind: 'refused', status: response.statusCode, transport: http };
}

function readStream(
  reader: AnswerReader,
  response: Dispatcher.ResponseData,
  id: RequestId,
  streamId: string,
  onNotification: OnNotification,
): Promise<ModernAnswer> {
  const body = response.body;
  return new Promise<ModernAnswer>((resolve) => {
    let settled = false;
    let linger: NodeJS.Timeout | undefined;
    const settle = (answer: ModernAnswer, ended = false): void => {
      if (settled) return;
      settled = true;
      resolve(answer);
      if (ended) return;
      // Done with this request: a stream the server keeps open afterwards is let go.
      linger = setTimeout(() => body.destroy(), LINGER_MS);
      linger.unref();
    };
    const onEvent = (event: SseEvent): void => {
      if (settled || event.type !== 'message' || isEmptyData(event.data)) return;
      const context = sseContext(streamId, event.lastEventId);
      const bounded = parseBounded(reader, event.data);
      if (bounded && 'deep' in bounded) {
        // Too deep to look into: a response to this request (its id is at the top, readable
        // without walking) fails it; anything else is dropped.
        const head = parse(event.data);
        if (isObject(head) && isResponseTo(head, id))
          settle({
            kind: 'failed',
            reason: `upstream ${reader.upstream} answered with a message too deep: ${bounded.deep}`,
            malformed: true,
          });
        else
          reader.logger.warn(
            { upstream: reader.upstream, error: bounded.deep },
            'a message too deep on an answer stream; dropped',
          );
        return;
      }
      const value = bounded?.value;
      if (!isObject(value)) {
        reader.metrics.inc('upstream_malformed_total', { upstream: reader.upstream });
        reader.logger.warn({ upstream: reader.upstream }, 'unreadable event on an answer stream; dropped');
        return;
      }
      if ('method' in value) {
        if ('id' in value) {
          droppedRequest(reader, value);
          return;
        }
        onNotification(event.data, value, context);
        return;
      }
      if (!isResponseTo(value, id)) return;
      // A refusal without id gets the request's, so that it finds its way back.
      if (value.id === null) {
        const response = { ...value, id };
        settle({ kind: 'response', response, text: JSON.stringify(response), transport: context });
      } else settle({ kind: 'response', response: value, text: event.data, transport: context });
    };
    const parser = new SseParser(
      {
        onEvent,
        onOversized: (head, chars) => {
          if (settled) return;
          reader.metrics.inc('oversized_messages_total', { side: 'upstream', upstream: reader.upstream });
          reader.logger.warn(
            { upstream: reader.upstream, chars, limit: reader.maxMessageBytes },
            'upstream message too large; dropped',
          );
          if (!sniffHead(head).keys.has('method'))
            settle({ kind: 'oversized', bytes: chars, transport: sseContext(streamId, '') });
        },
      },
      { maxEventChars: reader.maxMessageBytes },
    );
    void pumpSse(body, parser).then((end) => {
      if (linger) clearTimeout(linger);
      const why = end.kind === 'broken' ? `broke off (${describeNetworkError(end.error)})` : 'ended';
      const reason = `the answer stream of upstream ${reader.upstream} ${why} before the response (2026-07-28 streams cannot be resumed)`;
      settle(
        end.kind === 'broken' ? { kind: 'failed', reason, broken: true } : { kind: 'failed', reason },
        true,
      );
    });
  });
}
