/**
 * The 2026-07-28 replacement of the legacy GET stream: one `subscriptions/listen` request kept
 * open, whose SSE answer carries the change notifications the gateway opted in to (tools, prompts
 * and resources list changes as the upstream's capabilities allow, `notifications/resources/updated`
 * for the URIs the router subscribed to). It is what lets a legacy client behind the gateway keep
 * receiving `list_changed` and resource updates from a server that has no sessions.
 *
 * - The server acknowledges first (`notifications/subscriptions/acknowledged`, with the subset it
 *   agreed to); what it left out is logged. The acknowledgement is not handed on: legacy clients
 *   have no such notification.
 * - Every notification is tagged with `io.modelcontextprotocol/subscriptionId`; the tag is removed
 *   (it names a request of this transport that no client knows) and the notification is delivered
 *   without `relatedUpstreamId`, as GET-stream messages were.
 * - When the stream drops (or the server ends it with its final response) it is opened again after
 *   a backoff that starts over once a stream was acknowledged; a server without the method (404,
 *   -32601) is left alone. Changing the filter means stopping this stream and starting another.
 */
import type { Dispatcher } from 'undici';
import type { TransportContext } from '../../../envelope/message-context.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import { DEFAULT_MAX_JSON_DEPTH, parseJson as parseBoundedJson } from '../../../protocol/jsonrpc/parse.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import { Backoff } from '../../backoff.js';
import { type SseEvent, SseParser } from '../sse/sse-parser.js';
import { describeNetworkError } from './describe-error.js';
import type { HttpConnection } from './http-connection.js';
import type { ResolvedHttpUpstreamOptions } from './http-upstream-options.js';
import { errorObjectOf } from './modern-errors.js';
import { META } from './request-envelope.js';
import { mediaTypeOf, readBodyText } from './response-body.js';
import { isEmptyData, pumpSse } from './sse-body.js';
import { sseContext } from './sse-context.js';

/** The `notifications` filter of `subscriptions/listen`. */
export interface SubscriptionFilter {
  readonly toolsListChanged?: boolean;
  readonly promptsListChanged?: boolean;
  readonly resourcesListChanged?: boolean;
  readonly resourceSubscriptions?: readonly string[];
}

/** What the stream needs from the transport that owns it. */
export interface ListenHost {
  readonly options: ResolvedHttpUpstreamOptions;
  readonly http: HttpConnection;
  readonly path: string;
  /** A fresh JSON-RPC id for the next `subscriptions/listen` request. */
  nextId(): string;
  /** The headers and body of a `subscriptions/listen` request. */
  request(id: string, filter: SubscriptionFilter): { headers: Record<string, string>; body: string };
  /** Hands an (untagged) notification to the router. */
  deliver(text: string, transport: TransportContext): void;
  /** A notification is about to be delivered (the transport forgets tools on tools/list_changed). */
  observe(method: string): void;
  /** Whether the transport is closed. */
  closed(): boolean;
}

const BOOLEAN_KEYS = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const;

/**
 * The filter to ask for: each list change the server's capabilities announce (`listChanged`), and
 * the subscribed URIs when it supports `resources.subscribe`. Undefined when there is nothing to
 * listen to (then no stream is opened at all).
 */
export function subscriptionFilter(
  capabilities: JsonObject | undefined,
  uris: ReadonlySet<string>,
): SubscriptionFilter | undefined {
  const listChanged = (name: string): boolean => {
    const capability = capabilities?.[name];
    return isObject(capability) && capability.listChanged === true;
  };
  const resources = capabilities?.resources;
  const filter: {
    toolsListChanged?: boolean;
    promptsListChanged?: boolean;
    resourcesListChanged?: boolean;
    resourceSubscriptions?: string[];
  } = {};
  if (listChanged('tools')) filter.toolsListChanged = true;
  if (listChanged('prompts')) filter.promptsListChanged = true;
  if (listChanged('resources')) filter.resourcesListChanged = true;
  if (uris.size > 0 && isObject(resources) && resources.subscribe === true)
    filter.resourceSubscriptions = [...uris].sort();
  return Object.keys(filter).length > 0 ? filter : undefined;
}

/** Whether two filters ask for the same notifications. */
export function sameFilter(a: SubscriptionFilter | undefined, b: SubscriptionFilter | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** The notification without the subscription tag (and without an `_meta` left empty by that). */
export function untagged(message: JsonObject): JsonObject {
  const params = message.params;
  if (!isObject(params) || !isObject(params._meta) || !(META.subscriptionId in params._meta)) return message;
  const meta = { ...params._meta };
  delete meta[META.subscriptionId];
  const rest = { ...params };
  if (Object.keys(meta).length === 0) delete rest._meta;
  else rest._meta = meta;
  return { ...message, params: rest };
}

/** How one connection of the stream went. */
type Outcome = 'acknowledged' | 'refused' | 'unsupported';

/** One `subscriptions/listen` stream with a fixed filter, kept open until stopped. */
export class ListenStream {
  readonly filter: SubscriptionFilter;
  readonly #host: ListenHost;
  #stopped = false;
  #controller: AbortController | undefined;
  #wake: (() => void) | undefined;
  #acknowledged: SubscriptionFilter | undefined;
  #connections = 0;

  constructor(host: ListenHost, filter: SubscriptionFilter) {
    this.#host = host;
    this.filter = filter;
  }

  /** What the server agreed to on the last acknowledged connection. */
  get acknowledged(): SubscriptionFilter | undefined {
    return this.#acknowledged;
  }

  /** Starts the stream; it runs until `stop()` or the transport closes. Never rejects. */
  start(): Promise<void> {
    return this.#run().catch((error: unknown) =>
      this.#host.options.logger.error(
        { upstream: this.#host.options.name, err: String(error) },
        'the subscriptions/listen stream failed unexpectedly',
      ),
    );
  }

  /** Closes the stream (closing it is how a subscription is cancelled over HTTP). Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#controller?.abort();
    this.#wake?.();
  }

  get #done(): boolean {
    return this.#stopped || this.#host.closed();
  }

  async #run(): Promise<void> {
    const o = this.#host.options;
    let backoff = new Backoff(o.reconnectBackoff);
    while (!this.#done) {
      const id = this.#host.nextId();
      const controller = new AbortController();
      this.#controller = controller;
      let outcome: Outcome;
      try {
        const { headers, body } = this.#host.request(id, this.filter);
        const response = await this.#host.http.request({
          method: 'POST',
          path: this.#host.path,
          headers,
          body,
          signal: controller.signal,
          headersTimeoutMs: o.streamIdleTimeoutMs,
          bodyTimeoutMs: o.streamIdleTimeoutMs,
        });
        outcome = await this.#read(response, id);
      } catch (error) {
        if (this.#done) return;
        o.logger.debug(
          { upstream: o.name, err: describeNetworkError(error) },
          'the subscriptions/listen stream could not be opened',
        );
        outcome = 'refused';
      }
      if (this.#done) return;
      if (outcome === 'unsupported') {
        o.logger.info({ upstream: o.name }, 'the upstream offers no subscriptions/listen (404, -32601)');
        return;
      }
      // A stream that was acknowledged worked: its end is a reconnection, not a failure.
      if (outcome === 'acknowledged') backoff = new Backoff(o.reconnectBackoff);
      await this.#sleep(backoff.next(0));
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }

  async #read(response: Dispatcher.ResponseData, id: string): Promise<Outcome> {
    const o = this.#host.options;
    const { statusCode: status, headers, body } = response;
    if (status >= 200 && status < 300 && mediaTypeOf(headers) === 'text/event-stream') {
      const streamId = `listen-${++this.#connections}`;
      let first = true;
      let acknowledged = false;
      const parser = new SseParser(
        {
          onEvent: (event) => {
            const was = first;
            first = false;
            if (this.#onEvent(event, id, streamId, was)) acknowledged = true;
          },
          onOversized: (_head, chars) => {
            o.metrics.inc('oversized_messages_total', { side: 'upstream', upstream: o.name });
            o.logger.warn({ upstream: o.name, chars }, 'upstream notification too large; dropped');
          },
        },
        { maxEventChars: o.maxMessageBytes },
      );
      await pumpSse(body, parser);
      return acknowledged ? 'acknowledged' : 'refused';
    }
    const read = await readBodyText(body, 64 * 1024);
    const error = read.kind === 'text' ? errorObjectOf(parseJson(read.text)) : undefined;
    if (error?.code === -32601) return 'unsupported';
    o.metrics.inc('upstream_http_errors_total', { upstream: o.name, status: String(status) });
    o.logger.debug(
      { upstream: o.name, status, error: error?.message },
      'the subscriptions/listen stream was refused',
    );
    return 'refused';
  }

  /** One event of the stream; true when it is the acknowledgement. */
  #onEvent(event: SseEvent, id: string, streamId: string, first: boolean): boolean {
    const o = this.#host.options;
    if (event.type !== 'message' || isEmptyData(event.data)) return false;
    // Within the depth limit, since it is serialised again below: a deeper one is dropped.
    const message = parseJson(event.data, o.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH);
    if (!isObject(message)) {
      o.metrics.inc('upstream_malformed_total', { upstream: o.name });
      return false;
    }
    if (typeof message.method !== 'string') {
      // The server ended the subscription (a result) or refused it (an error); the stream ends.
      const error = errorObjectOf(message);
      if (error)
        o.logger.warn(
          { upstream: o.name, error: error.message },
          'the upstream refused subscriptions/listen',
        );
      return false;
    }
    if ('id' in message) {
      o.metrics.inc('upstream_protocol_violations_total', { upstream: o.name });
      o.logger.warn(
        { upstream: o.name, method: message.method },
        'a request on the subscriptions/listen stream; dropped',
      );
      return false;
    }
    if (message.method === 'notifications/subscriptions/acknowledged') {
      this.#acknowledge(message, id);
      return true;
    }
    if (first) {
      o.metrics.inc('upstream_protocol_violations_total', { upstream: o.name });
      o.logger.warn(
        { upstream: o.name },
        'the subscriptions/listen stream did not start with its acknowledgement',
      );
    }
    this.#host.observe(message.method);
    this.#host.deliver(JSON.stringify(untagged(message)), sseContext(streamId, event.lastEventId));
    return false;
  }

  #acknowledge(message: JsonObject, id: string): void {
    const o = this.#host.options;
    const params = isObject(message.params) ? message.params : {};
    const agreed = isObject(params.notifications) ? params.notifications : {};
    const meta = isObject(params._meta) ? params._meta : {};
    if (meta[META.subscriptionId] !== id)
      o.logger.debug({ upstream: o.name }, 'the acknowledgement names another subscription id');
    const missing: string[] = BOOLEAN_KEYS.filter((key) => this.filter[key] === true && agreed[key] !== true);
    const uris = Array.isArray(agreed.resourceSubscriptions) ? agreed.resourceSubscriptions : [];
    for (const uri of this.filter.resourceSubscriptions ?? []) if (!uris.includes(uri)) missing.push(uri);
    if (missing.length > 0)
      o.logger.warn(
        { upstream: o.name, missing },
        'the upstream did not agree to every notification asked for on subscriptions/listen',
      );
    const acknowledged: {
      toolsListChanged?: boolean;
      promptsListChanged?: boolean;
      resourcesListChanged?: boolean;
      resourceSubscriptions?: string[];
    } = {};
    for (const key of BOOLEAN_KEYS) if (agreed[key] === true) acknowledged[key] = true;
    const strings = uris.filter((u): u is string => typeof u === 'string');
    if (strings.length > 0) acknowledged.resourceSubscriptions = strings;
    this.#acknowledged = acknowledged;
  }
}

function parseJson(text: string, maxDepth = Number.POSITIVE_INFINITY): unknown {
  const json = parseBoundedJson(text, { maxDepth });
  return json.ok ? json.value : undefined;
}
