/**
 * The upstream client for MCP servers that speak only the 2024-11-05 HTTP+SSE transport: one GET
 * stream carries everything the server sends (as `message` events), and the client POSTs each of
 * its messages to the URI the server named in its first, `endpoint`, event.
 *
 * - `start()` opens the stream and resolves once the endpoint is known. The endpoint must be on the
 *   URL's origin: the configured headers (an API key) are never sent anywhere else.
 * - The session lives as long as that one connection: when it ends, the transport closes (the
 *   supervisor re-initializes on a new one). There is no resumption in this revision.
 * - This transport cannot tell which request a server message relates to, so messages carry no
 *   `relatedUpstreamId`; the router falls back to its other attribution rules.
 * - A POST that fails (network error, non-2xx) fails its request with a synthesized error.
 * - POSTs go one after the other, in the order `send` was called: each waits until the previous
 *   one has its status (a 2024-11-05 server answers 202 at once; the answer comes on the stream),
 *   for at most `endpointTimeoutMs`. Sent at once on several connections, a pipelined `initialize`,
 *   `notifications/initialized` and first request could reach the server out of order, and a
 *   server that checks the lifecycle refuses a request before the handshake.
 * - The `initialize`'s answer (it comes on the stream) is awaited at most `handshakeTimeoutMs`;
 *   then the `initialize` fails with `SB_UPSTREAM_UNAVAILABLE` and the transport closes, so the
 *   supervisor reconnects as for any dead upstream (`handshake-deadline.ts`).
 * - Messages leave as a 2024-11-05 client sends them: the 2026-07-28 envelope members of a modern
 *   client's `_meta` (and the gateway's own `switchboard.dev/` members) are taken out of the body.
 */

import type { Dispatcher } from 'undici';
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../../core/ports.js';
import type { HttpTransportContext } from '../../../envelope/message-context.js';
import { SbErrorCode, SwitchboardError } from '../../../errors/switchboard-error.js';
import {
  isRequest,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type RequestId,
} from '../../../protocol/jsonrpc/types.js';
import { legacyPeerRefusal } from '../../../protocol/mcp/legacy-peer-refusal.js';
import { toLegacyWire, type Wire } from '../../../protocol/mcp/reserved-meta.js';
import { judgeOversized } from '../../oversized.js';
import { type SseEvent, SseParser } from '../sse/sse-parser.js';
import { describeNetworkError } from './describe-error.js';
import { HandshakeDeadline } from './handshake-deadline.js';
import { HttpConnection } from './http-connection.js';
import {
  type HttpUpstreamOptions,
  type ResolvedHttpUpstreamOptions,
  resolveHttpUpstreamOptions,
} from './http-upstream-options.js';
import { configuredHeaders, POST_ACCEPT, STREAM_ACCEPT } from './request-headers.js';
import { discardBody, mediaTypeOf, readErrorDetail } from './response-body.js';
import { isEmptyData, pumpSse } from './sse-body.js';
import { sseContext } from './sse-context.js';
import { withTraceHeaders } from './trace-headers.js';
import { UpstreamOutlet } from './upstream-outlet.js';

/** The stream id in the trace of messages from the 2024-11-05 stream. */
const STREAM_ID = 'sse';

/** The 2024-11-05 HTTP+SSE transport (see the file comment for the contract). */
export class LegacySseTransport implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  onerror?: (error: Error) => void;

  readonly #o: ResolvedHttpUpstreamOptions;
  readonly #http: HttpConnection;
  readonly #base: Record<string, string>;
  readonly #postHeaders: Record<string, string>;
  readonly #context: HttpTransportContext;
  readonly #out: UpstreamOutlet;
  #endpointPath: string | undefined;
  readonly #handshake: HandshakeDeadline;
  /** The `initialize` sent, until the stream carries its answer. */
  #initializeId: RequestId | undefined;
  /** Settles when the last POST asked for has its status (or failed): the next one waits for it. */
  #lastPost: Promise<void> = Promise.resolve();
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: HttpUpstreamOptions) {
    this.#o = resolveHttpUpstreamOptions(options);
    this.#http = new HttpConnection(this.#o.url, options.dispatcher, options.maxConnections);
    this.#base = configuredHeaders(options.headers);
    this.#postHeaders = { ...this.#base, accept: POST_ACCEPT, 'content-type': 'application/json' };
    this.#context = {
      kind: 'http',
      method: 'GET',
      path: this.#o.url.pathname + this.#o.url.search,
      headers: {},
    };
    this.#out = new UpstreamOutlet(this, {
      name: this.#o.name,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
      context: this.#context,
    });
    this.#handshake = new HandshakeDeadline(this.#o.handshakeTimeoutMs, () => this.#handshakeExpired());
  }

  /** The era-specific kind, as the factory names it. */
  get kind(): 'sse' {
    return 'sse';
  }

  /** Describes the link for the router (the SSE stream's URL path). */
  get transportContext(): HttpTransportContext {
    return this.#context;
  }

  /** The path messages are POSTed to, once the server named it. */
  get endpoint(): string | undefined {
    return this.#endpointPath;
  }

  /**
   * Opens the stream and waits for the `endpoint` event. Rejects with SB_UPSTREAM_UNAVAILABLE when
   * the stream cannot be opened, ends first, or names no usable endpoint in time.
   */
  start(): Promise<void> {
    this.#starting ??= this.#open();
    return this.#starting;
  }

  /** A legacy server cannot resume a 2026-07-28 `requestState` (see `legacyPeerRefusal`). */
  refuse(request: JsonRpcRequest): JsonRpcErrorObject | undefined {
    return legacyPeerRefusal(request, this.#o.name);
  }

  send(json: string, message: JsonRpcMessage): Wire | undefined {
    if (this.#out.closed) {
      this.#o.metrics.inc('upstream_write_errors_total', { upstream: this.#o.name });
      return undefined;
    }
    const id = isRequest(message) ? message.id : undefined;
    const path = this.#endpointPath;
    if (path === undefined) {
      this.#out.fail(id, `upstream ${this.#o.name} is not connected yet (no endpoint event)`);
      return undefined;
    }
    if (isRequest(message) && message.method === 'initialize' && this.#initializeId === undefined) {
      this.#initializeId = message.id;
      this.#handshake.arm('initialize');
    }
    const wire = toLegacyWire(json, message);
    const previous = this.#lastPost;
    let settled: () => void = () => {};
    this.#lastPost = new Promise<void>((resolve) => {
      settled = resolve;
    });
    const headers = withTraceHeaders(this.#postHeaders, wire.message);
    this.#post(path, wire.json, id, headers, previous, settled)
      .catch((error: unknown) => this.#out.report(`POST failed unexpectedly: ${String(error)}`))
      .finally(settled);
    return wire.json === json ? undefined : wire;
  }

  /** Ends the stream (which ends the 2024-11-05 session), then `onclose`. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #open(): Promise<void> {
    let endpointKnown: (() => void) | undefined;
    let endpointFailed: ((error: Error) => void) | undefined;
    const endpoint = new Promise<void>((resolve, reject) => {
      endpointKnown = resolve;
      endpointFailed = reject;
    });
    const unavailable = (message: string, status?: number): SwitchboardError =>
      new SwitchboardError(
        SbErrorCode.UpstreamUnavailable,
        message,
        status === undefined ? undefined : { details: { status } },
      );
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#http.request({
        method: 'GET',
        path: this.#context.path,
        headers: { ...this.#base, accept: STREAM_ACCEPT },
        headersTimeoutMs: this.#o.endpointTimeoutMs,
        bodyTimeoutMs: this.#o.streamIdleTimeoutMs,
      });
    } catch (error) {
      throw unavailable(
        `cannot open the SSE stream of upstream ${this.#o.name}: ${describeNetworkError(error)}`,
      );
    }
    const { statusCode: status, headers, body } = response;
    if (status < 200 || status >= 300 || mediaTypeOf(headers) !== 'text/event-stream') {
      const detail =
        status >= 200 && status < 300
          ? `content type ${mediaTypeOf(headers) || 'none'}`
          : await readErrorDetail(body);
      discardBody(body);
      throw unavailable(
        `the SSE stream of upstream ${this.#o.name} was refused: HTTP ${status}${detail ? ` (${detail})` : ''}`,
        status,
      );
    }
    const parser = new SseParser(
      {
        onEvent: (event) => {
          if (event.type === 'endpoint') {
            const error = this.#adoptEndpoint(event.data);
            if (error) endpointFailed?.(unavailable(error));
            else endpointKnown?.();
          } else this.#message(event);
        },
        onOversized: (head, chars) => this.#oversized(head, chars),
      },
      { maxEventChars: this.#o.maxMessageBytes },
    );
    void pumpSse(body, parser).then((end) => {
      const reason =
        end.kind === 'ended'
          ? 'the upstream SSE stream ended'
          : `the upstream SSE stream broke: ${describeNetworkError(end.error)}`;
      endpointFailed?.(unavailable(`${reason} before naming its endpoint`));
      this.#ended(reason);
    });
    const timer = setTimeout(
      () =>
        endpointFailed?.(
          unavailable(`upstream ${this.#o.name} named no endpoint within ${this.#o.endpointTimeoutMs} ms`),
        ),
      this.#o.endpointTimeoutMs,
    );
    try {
      await endpoint;
    } catch (error) {
      this.#http.abort();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Takes the first `endpoint` event; returns why it is unusable, if it is. */
  #adoptEndpoint(data: string): string | undefined {
    if (this.#endpointPath !== undefined) {
      this.#o.logger.debug({ upstream: this.#o.name }, 'a second endpoint event was ignored');
      return undefined;
    }
    let url: URL;
    try {
      url = new URL(data.trim(), this.#o.url);
    } catch {
      return `upstream ${this.#o.name} named an invalid endpoint`;
    }
    if (url.origin !== this.#o.url.origin)
      return `upstream ${this.#o.name} named an endpoint on another origin (${url.origin})`;
    this.#endpointPath = url.pathname + url.search;
    return undefined;
  }

  #message(event: SseEvent): void {
    if (event.type !== 'message' || isEmptyData(event.data)) return;
    if (this.#initializeId !== undefined && answers(event.data, this.#initializeId)) {
      this.#initializeId = undefined;
      this.#handshake.settle('initialize');
    }
    this.#out.deliver(event.data, { transport: sseContext(STREAM_ID, event.lastEventId) });
  }

  #oversized(head: string, chars: number): void {
    this.#o.metrics.inc('oversized_messages_total', { side: 'upstream', upstream: this.#o.name });
    this.#o.logger.warn(
      { upstream: this.#o.name, bytes: chars, limit: this.#o.maxMessageBytes },
      'upstream message too large; dropped',
    );
    const verdict = judgeOversized(head, chars, this.#o.maxMessageBytes);
    if (verdict.kind === 'response')
      this.#out.deliver(JSON.stringify(verdict.replacement), { transport: sseContext(STREAM_ID, '') });
    else if (verdict.kind === 'request') this.send(JSON.stringify(verdict.reply), verdict.reply);
  }

  /** POSTs one message once `previous` (the POST before it) settled or waited long enough. */
  async #post(
    path: string,
    json: string,
    id: RequestId | undefined,
    headers: Readonly<Record<string, string>>,
    previous: Promise<void>,
    settled: () => void,
  ): Promise<void> {
    await this.#inTurn(previous);
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#http.request({
        method: 'POST',
        path,
        headers,
        body: json,
        headersTimeoutMs: this.#o.streamIdleTimeoutMs,
        bodyTimeoutMs: this.#o.streamIdleTimeoutMs,
      });
    } catch (error) {
      settled();
      this.#unanswerable(id);
      this.#out.fail(id, `POST to upstream ${this.#o.name} failed: ${describeNetworkError(error)}`);
      return;
    }
    settled();
    const { statusCode: status, body } = response;
    if (status >= 200 && status < 300) {
      discardBody(body);
      return;
    }
    this.#unanswerable(id);
    const detail = await readErrorDetail(body);
    this.#o.metrics.inc('upstream_http_errors_total', { upstream: this.#o.name, status: String(status) });
    this.#out.fail(
      id,
      `upstream ${this.#o.name} answered HTTP ${status}${detail ? `: ${detail}` : ''}`,
      status,
    );
  }

  /**
   * Waits for the previous POST's status, at most `endpointTimeoutMs`: a server that never answers
   * one POST delays the next by that much, never forever (the late one may then overtake it).
   */
  async #inTurn(previous: Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#o.endpointTimeoutMs);
    });
    try {
      await Promise.race([previous, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Request `id` failed here: when it is the `initialize`, the handshake has its outcome. */
  #unanswerable(id: RequestId | undefined): void {
    if (id === undefined || id !== this.#initializeId) return;
    this.#initializeId = undefined;
    this.#handshake.settle('initialize');
  }

  /**
   * The `initialize` got no answer within `handshakeTimeoutMs`: it fails, and the transport closes
   * (the supervisor reconnects with backoff). Requests POSTed behind it fail with the close.
   */
  #handshakeExpired(): void {
    const id = this.#initializeId;
    if (this.#out.closed || id === undefined) return;
    const reason = `upstream ${this.#o.name} did not finish its handshake within ${this.#handshake.ms} ms (no answer to initialize)`;
    this.#o.metrics.inc('upstream_handshake_timeouts_total', { upstream: this.#o.name });
    this.#o.logger.warn(
      { upstream: this.#o.name, step: 'initialize', timeoutMs: this.#handshake.ms },
      reason,
    );
    this.#out.fail(id, reason);
    this.#out.finish({ reason });
    this.#http.abort();
    void this.#http.release();
  }

  /** The stream is gone, and the 2024-11-05 session with it. */
  #ended(reason: string): void {
    if (this.#out.closed || this.#endpointPath === undefined) return;
    this.#o.logger.warn({ upstream: this.#o.name }, reason);
    this.#out.finish({ reason });
    void this.#http.release();
  }

  async #shutdown(): Promise<void> {
    this.#out.stop();
    this.#handshake.dispose();
    await this.#http.release();
    this.#out.finish({ reason: 'closed' });
  }
}

/**
 * Whether `text` is the response to request `id`. Read only while the handshake waits (a handful
 * of messages), so parsing it here costs nothing that matters.
 */
function answers(text: string, id: RequestId): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return (
      typeof parsed === 'object' &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      (parsed as { id?: unknown }).id === id &&
      ('result' in parsed || 'error' in parsed)
    );
  } catch {
    return false;
  }
}
