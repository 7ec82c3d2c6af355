/**
 * The upstream client for MCP servers of the 2026-07-28 era (stateless Streamable HTTP), presented
 * to the router as a legacy server: the router keeps speaking the handshake-based shape (initialize,
 * server->client requests, `notifications/cancelled`) and this transport translates at the edge.
 *
 * - `initialize` is answered here from `server/discover`: the requested legacy version (or
 *   2025-11-25), the discovered capabilities, `serverInfo` from the result's `_meta` (a placeholder
 *   without it) and `instructions`. Its `clientInfo` and `capabilities`, and the level of
 *   `logging/setLevel`, go into the `_meta` envelope of every later request that has none of its
 *   own. `notifications/initialized` is swallowed (it opens the listen stream); `ping`,
 *   `logging/setLevel`, `resources/subscribe` and `resources/unsubscribe` are answered here.
 * - Every other request is one POST with the mirrored headers (`modern-request-headers.ts`),
 *   `Mcp-Param-*` computed from the tool's `x-mcp-header` parameters (the tools are listed once
 *   when a call names one never seen) plus those a modern client sent, handed on unchanged. The
 *   answer is JSON or SSE; its notifications are delivered with `relatedUpstreamId` = the request.
 * - A request with its own modern envelope (from a modern client of the gateway) keeps it, and its
 *   results and errors go back untouched. For the others, an `input_required` result is bridged
 *   (`input-bridge.ts`): each input request becomes a server->client request, and once the router
 *   has sent back every answer, the request is sent again with `inputResponses` and the
 *   `requestState`, round after round (at most `maxInputRounds`); errors are translated
 *   (`modern-errors.ts`).
 * - `notifications/cancelled` aborts the request's POST: closing the stream is the cancellation in
 *   2026-07-28, and nothing more is delivered for it (bridged requests still waiting on the client
 *   are cancelled toward it).
 * - One `subscriptions/listen` stream stands in for the GET stream (`listen-stream.ts`).
 *
 * There is no session, so nothing ever expires: the transport closes only when told to.
 */

import type { Dispatcher } from 'undici';
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../../core/ports.js';
import type { HttpTransportContext, TransportContext } from '../../../envelope/message-context.js';
import { SbErrorCode } from '../../../errors/switchboard-error.js';
import { gatewayError } from '../../../errors/to-jsonrpc-error.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import {
  idKey,
  isRequest,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../../../protocol/jsonrpc/types.js';
import { isMcpLogLevel, MCP_LOG_LEVELS } from '../../../protocol/mcp/log-levels.js';
import { cancelledRequestId } from '../../../protocol/mcp/progress.js';
import {
  isModernMetaKey,
  type Wire,
  wireWithout,
  withoutHeldMeta,
} from '../../../protocol/mcp/reserved-meta.js';
import { MODERN_REVISION } from '../../../protocol/mcp/revisions.js';
import { type ParamHeaderValue, paramHeaderValues } from '../../../protocol/mcp/x-mcp-header.js';
import { describeNetworkError } from './describe-error.js';
import { initializeFromDiscover } from './discover-initialize.js';
import { HttpConnection } from './http-connection.js';
import {
  type HttpUpstreamOptions,
  type ResolvedHttpUpstreamOptions,
  resolveHttpUpstreamOptions,
} from './http-upstream-options.js';
import {
  InputRound,
  isInputRequired,
  legacyInputRequest,
  readInputRequired,
  retryParams,
} from './input-bridge.js';
import { type InternalRequester, internalRequest, listAllTools } from './internal-request.js';
import {
  type ListenHost,
  ListenStream,
  type SubscriptionFilter,
  sameFilter,
  subscriptionFilter,
} from './listen-stream.js';
import { type AnswerReader, type ModernAnswer, readModernAnswer } from './modern-answer.js';
import { errorForLegacyClient, errorObjectOf } from './modern-errors.js';
import { modernRequestHeaders } from './modern-request-headers.js';
import { envelopeMeta, envelopeVersion, prepareParams, type SessionEnvelope } from './request-envelope.js';
import { configuredHeaders } from './request-headers.js';
import { tooLargeResponse } from './synthesized-response.js';
import { ToolHeaderCatalog } from './tool-header-catalog.js';
import { withTraceHeadersOf } from './trace-headers.js';
import { UpstreamOutlet } from './upstream-outlet.js';

/** The common options, plus the bound of the input bridge. */
export interface ModernHttpOptions extends HttpUpstreamOptions {
  /**
   * How many `input_required` results one request may get before it fails (default 10). Each
   * round costs a POST, and a server that keeps asking would otherwise hold the request forever.
   */
  readonly maxInputRounds?: number;
  /** Longest wait for a request the transport makes itself (`tools/list`), default 30000 ms. */
  readonly internalTimeoutMs?: number;
  /**
   * The `server/discover` behind `initialize` got no JSON-RPC answer (an HTTP error without one, a
   * network failure): the server may not be modern after all, and its cached era should go.
   */
  readonly onDiscoverFailed?: () => void;
}

/** The log levels of MCP (`logging/setLevel`, `io.modelcontextprotocol/logLevel`). */

/** A request of the router's in flight (see the file comment). */
interface Flight {
  /** The router's id: what every answer and related message carries toward it. */
  readonly id: RequestId;
  readonly key: string;
  readonly method: string;
  /** Carried its own modern envelope: results go back untouched. */
  readonly modern: boolean;
  /** The `initialize` answered from `server/discover`, with the version the client asked for. */
  readonly initialize?: { readonly requested: unknown };
  /** The params of the first round (the envelope included). */
  params: JsonObject;
  /** The params of the last round sent. */
  sent: JsonObject;
  headers: Readonly<Record<string, string>>;
  forwarded?: unknown;
  computed: readonly ParamHeaderValue[];
  readonly controller: AbortController;
  done: boolean;
  rounds: number;
  headerRetried: boolean;
  round?: InputRound;
}

/** A 2026-07-28 result in the legacy shape: without `resultType` and the 2026-07-28 `_meta` members. */
function legacyResult(result: JsonObject): JsonObject {
  let out = result;
  if ('resultType' in out) {
    const { resultType: _dropped, ...rest } = out;
    out = rest;
  }
  return withoutHeldMeta(out, isModernMetaKey);
}

/** The 2026-07-28 upstream transport (see the file comment). */
export class ModernHttpTransport implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  onerror?: (error: Error) => void;

  readonly #o: ResolvedHttpUpstreamOptions;
  readonly #maxRounds: number;
  readonly #onDiscoverFailed: (() => void) | undefined;
  readonly #http: HttpConnection;
  readonly #path: string;
  readonly #base: Record<string, string>;
  readonly #context: HttpTransportContext;
  readonly #out: UpstreamOutlet;
  readonly #reader: AnswerReader;
  readonly #envelope: SessionEnvelope = { clientCapabilities: {} };
  readonly #tools: ToolHeaderCatalog;
  /** The router's requests in flight, by id key. */
  readonly #flights = new Map<string, Flight>();
  /** Bridged input requests waiting for the client, by the id key of the bridge request. */
  readonly #bridged = new Map<string, Flight>();
  /** Resource URIs the router subscribed to. */
  readonly #subscriptions = new Set<string>();
  /** Aborts the requests the transport makes itself, on close. */
  readonly #internal = new AbortController();
  readonly #listenHost: ListenHost;
  #capabilities: JsonObject | undefined;
  #listenWanted = false;
  #listen: ListenStream | undefined;
  #counter = 0;
  #streams = 0;
  #closing: Promise<void> | undefined;

  constructor(options: ModernHttpOptions) {
    this.#o = resolveHttpUpstreamOptions(options);
    this.#maxRounds = options.maxInputRounds ?? 10;
    this.#onDiscoverFailed = options.onDiscoverFailed;
    this.#http = new HttpConnection(this.#o.url, options.dispatcher, options.maxConnections);
    this.#path = this.#o.url.pathname + this.#o.url.search;
    this.#base = configuredHeaders(options.headers);
    this.#context = { kind: 'http', method: 'POST', path: this.#path, headers: {} };
    this.#out = new UpstreamOutlet(this, {
      name: this.#o.name,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
      context: this.#context,
    });
    this.#reader = {
      upstream: this.#o.name,
      maxMessageBytes: this.#o.maxMessageBytes,
      ...(this.#o.maxJsonDepth === undefined ? {} : { maxJsonDepth: this.#o.maxJsonDepth }),
      path: this.#path,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
    };
    const requester: InternalRequester = {
      http: this.#http,
      path: this.#path,
      reader: this.#reader,
      signal: this.#internal.signal,
      timeoutMs: options.internalTimeoutMs ?? 30_000,
      nextId: () => this.#nextId(),
      params: (extra) => ({ ...extra, _meta: envelopeMeta(this.#envelope) }),
      headers: (method, params) => this.#headersFor(method, params),
    };
    this.#tools = new ToolHeaderCatalog(
      () => listAllTools((method, extra) => internalRequest(requester, method, extra)),
      this.#o.logger,
      this.#o.name,
    );
    this.#listenHost = {
      options: this.#o,
      http: this.#http,
      path: this.#path,
      nextId: () => this.#nextId(),
      request: (id, filter) => {
        const params: JsonObject = { _meta: envelopeMeta(this.#envelope), notifications: { ...filter } };
        return {
          headers: this.#headersFor('subscriptions/listen', params),
          body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params }),
        };
      },
      deliver: (text, transport) => this.#out.deliver(text, { transport }),
      observe: (method) => {
        if (method === 'notifications/tools/list_changed') this.#tools.forget();
      },
      closed: () => this.#out.closed,
    };
  }

  /** The era-specific kind, as the factory names it. */
  get kind(): 'modern-http' {
    return 'modern-http';
  }

  /** 2026-07-28 has no sessions. */
  get sessionId(): undefined {
    return undefined;
  }

  /** The protocol version spoken upstream. */
  get protocolVersion(): string {
    return MODERN_REVISION;
  }

  /** Describes the link for the router (method and path of the endpoint). */
  get transportContext(): HttpTransportContext {
    return this.#context;
  }

  /** The filter of the open `subscriptions/listen` stream and what the server acknowledged. */
  get subscription(): { readonly filter?: SubscriptionFilter; readonly acknowledged?: SubscriptionFilter } {
    const listen = this.#listen;
    if (!listen) return {};
    return listen.acknowledged
      ? { filter: listen.filter, acknowledged: listen.acknowledged }
      : { filter: listen.filter };
  }

  /** Nothing to connect before the first POST: HTTP connections open on demand. */
  start(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Whether the router's request `id` is in flight here: a transport that shares the link with
   * another (`dual-era-transport.ts`) sends a cancellation where its request went.
   */
  inFlight(id: RequestId): boolean {
    return this.#flights.has(idKey(id));
  }

  /**
   * Returns the request as it goes out (with the 2026-07-28 envelope in `_meta`) when it is
   * forwarded; nothing for what this transport answers or handles itself (`initialize`, `ping`,
   * `logging/setLevel`, subscriptions, notifications), which never goes out as such.
   */
  send(_json: string, message: JsonRpcMessage): Wire | undefined {
    if (this.#out.closed) {
      this.#o.metrics.inc('upstream_write_errors_total', { upstream: this.#o.name });
      return undefined;
    }
    if (isRequest(message)) return this.#request(message);
    if ('method' in message) this.#notification(message);
    else this.#response(message);
    return undefined;
  }

  /** Stops every stream and request, then `onclose`. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  // ---------------------------------------------------------------- from the router

  /** Handles a request; returns it as forwarded, when it is. */
  #request(request: JsonRpcRequest): Wire | undefined {
    switch (request.method) {
      case 'initialize':
        this.#initialize(request);
        return undefined;
      case 'ping':
        this.#answerLocally(request.id, { result: {} });
        return undefined;
      case 'logging/setLevel':
        this.#setLevel(request);
        return undefined;
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        this.#subscribe(request);
        return undefined;
    }
    const prepared = prepareParams(request.params, this.#envelope);
    if (!prepared) {
      this.#answerLocally(request.id, {
        error: { code: JsonRpcCode.InvalidParams, message: 'params must be an object' },
      });
      return undefined;
    }
    // Registered before anything is awaited, so a cancellation sent right after is seen.
    const flight = this.#register(request.id, request.method, prepared.params, prepared.modern);
    if (prepared.forwarded !== undefined) flight.forwarded = prepared.forwarded;
    this.#begin(flight).catch((error: unknown) =>
      this.#fail(flight, `the request failed unexpectedly: ${String(error)}`),
    );
    const written: JsonRpcRequest = { ...request, params: prepared.params };
    return { json: JSON.stringify(written), message: written };
  }

  #notification(notification: JsonRpcNotification): void {
    switch (notification.method) {
      case 'notifications/cancelled': {
        const id = cancelledRequestId(notification);
        if (id !== undefined) this.#cancel(id);
        return;
      }
      case 'notifications/initialized':
        this.#listenWanted = true;
        this.#refreshListen();
        return;
      default:
        // 2026-07-28 defines no client notifications over HTTP (roots/list_changed was removed).
        // No method label: clients choose method names, and labels must stay few.
        this.#o.metrics.inc('upstream_notifications_dropped_total', { upstream: this.#o.name });
        this.#o.logger.debug(
          { upstream: this.#o.name, method: notification.method },
          'a 2026-07-28 upstream takes no client notifications; dropped',
        );
    }
  }

  /** An answer to a bridged input request: recorded; the last one of a round sends the retry. */
  #response(response: JsonRpcResponse): void {
    if (response.id === null) return;
    const key = idKey(response.id);
    const flight = this.#bridged.get(key);
    this.#bridged.delete(key);
    const round = flight?.round;
    const input = round?.get(key);
    if (!flight || !round || !input || flight.done) {
      this.#o.logger.debug(
        { upstream: this.#o.name, id: response.id },
        'an answer to no bridged request; dropped',
      );
      return;
    }
    if ('error' in response) {
      const error = response.error;
      round.remove(key);
      this.#finishWithError(flight, {
        code: error.code,
        message: `the client could not answer the ${input.method} request (input ${JSON.stringify(input.key)}) that upstream ${this.#o.name} needs: ${error.message}`,
        ...(error.data === undefined ? {} : { data: error.data }),
      });
      return;
    }
    if (!round.answer(key, response.result)) return;
    flight.round = undefined;
    this.#send(flight, retryParams(flight.params, round.responses, round.requestState));
  }

  // ---------------------------------------------------------------- answered here

  #initialize(request: JsonRpcRequest): void {
    const params = isObject(request.params) ? request.params : {};
    if (isObject(params.clientInfo)) this.#envelope.clientInfo = params.clientInfo;
    this.#envelope.clientCapabilities = isObject(params.capabilities) ? params.capabilities : {};
    const discover: JsonObject = { _meta: envelopeMeta(this.#envelope) };
    const flight = this.#register(request.id, 'server/discover', discover, false, {
      requested: params.protocolVersion,
    });
    flight.headers = this.#headersFor('server/discover', discover);
    this.#post(flight, discover, request.id).catch((error: unknown) =>
      this.#fail(flight, `server/discover failed unexpectedly: ${String(error)}`),
    );
  }

  #setLevel(request: JsonRpcRequest): void {
    const level = isObject(request.params) ? request.params.level : undefined;
    if (!isMcpLogLevel(level)) {
      this.#answerLocally(request.id, {
        error: {
          code: JsonRpcCode.InvalidParams,
          message: `params.level must be one of ${MCP_LOG_LEVELS.join(', ')}`,
        },
      });
      return;
    }
    this.#envelope.logLevel = level;
    this.#answerLocally(request.id, { result: {} });
  }

  #subscribe(request: JsonRpcRequest): void {
    const uri = isObject(request.params) ? request.params.uri : undefined;
    if (typeof uri !== 'string') {
      this.#answerLocally(request.id, {
        error: { code: JsonRpcCode.InvalidParams, message: 'params.uri must be a string' },
      });
      return;
    }
    const resources = this.#capabilities?.resources;
    if (this.#capabilities !== undefined && !(isObject(resources) && resources.subscribe === true)) {
      this.#answerLocally(request.id, {
        error: {
          code: JsonRpcCode.MethodNotFound,
          message: `upstream ${this.#o.name} does not offer resource subscriptions (no resources.subscribe capability)`,
        },
      });
      return;
    }
    if (request.method === 'resources/subscribe') this.#subscriptions.add(uri);
    else this.#subscriptions.delete(uri);
    this.#answerLocally(request.id, { result: {} });
    this.#refreshListen();
  }

  /**
   * Answers a request without asking the upstream. Delivered after the current call returns: the
   * router records what it sent only after `send` returns, and the answer must come after that.
   */
  #answerLocally(id: RequestId, payload: { result: unknown } | { error: JsonRpcErrorObject }): void {
    const text = JSON.stringify({ jsonrpc: '2.0', id, ...payload });
    queueMicrotask(() => this.#out.deliver(text, { transport: this.#context, relatedUpstreamId: id }));
  }

  // ---------------------------------------------------------------- requests upstream

  #register(
    id: RequestId,
    method: string,
    params: JsonObject,
    modern: boolean,
    initialize?: { readonly requested: unknown },
  ): Flight {
    const flight: Flight = {
      id,
      key: idKey(id),
      method,
      modern,
      params,
      sent: params,
      headers: {},
      computed: [],
      controller: new AbortController(),
      done: false,
      rounds: 0,
      headerRetried: false,
      ...(initialize ? { initialize } : {}),
    };
    this.#flights.set(flight.key, flight);
    return flight;
  }

  /** Works out the headers (listing the tools first when needed), then sends the first round. */
  async #begin(flight: Flight): Promise<void> {
    if (flight.method === 'tools/call') {
      const name = flight.params.name;
      const tool = typeof name === 'string' ? await this.#tools.lookup(name) : undefined;
      if (flight.done) return;
      if (tool && !tool.ok) {
        this.#finishWithError(flight, {
          code: JsonRpcCode.InvalidParams,
          message: `tool ${JSON.stringify(name)} of upstream ${this.#o.name} has an invalid x-mcp-header annotation (${tool.reason}); the gateway does not call it`,
        });
        return;
      }
      if (tool) flight.computed = paramHeaderValues(tool.headers, flight.params.arguments);
    }
    if (!this.#buildHeaders(flight)) return;
    await this.#post(flight, flight.params, flight.id);
  }

  /** Sets the flight's headers; false (and the request answered) when they cannot be built. */
  #buildHeaders(flight: Flight): boolean {
    const built = modernRequestHeaders({
      base: this.#base,
      version: envelopeVersion(flight.params),
      method: flight.method,
      params: flight.params,
      computed: flight.computed,
      ...(flight.forwarded === undefined ? {} : { forwarded: flight.forwarded }),
    });
    if (!built.ok) {
      this.#finishWithError(flight, built.error);
      return false;
    }
    flight.headers = withTraceHeadersOf(built.headers, flight.params);
    return true;
  }

  /** Sends a later round of the flight (a retry) under a fresh id, as MRTR requires. */
  #send(flight: Flight, params: JsonObject): void {
    this.#post(flight, params, this.#nextId()).catch((error: unknown) =>
      this.#fail(flight, `the request failed unexpectedly: ${String(error)}`),
    );
  }

  /** One POST of the flight with `params` under `wireId`, and what follows from its answer. */
  async #post(flight: Flight, params: JsonObject, wireId: RequestId): Promise<void> {
    flight.sent = params;
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#http.request({
        method: 'POST',
        path: this.#path,
        headers: flight.headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: wireId, method: flight.method, params }),
        signal: flight.controller.signal,
        // The router owns request deadlines: a JSON-answering server may take long to reply.
        headersTimeoutMs: 0,
        bodyTimeoutMs: this.#o.streamIdleTimeoutMs,
      });
    } catch (error) {
      if (flight.done) return;
      this.#fail(flight, `POST to upstream ${this.#o.name} failed: ${describeNetworkError(error)}`);
      return;
    }
    const answer = await readModernAnswer(
      this.#reader,
      response,
      wireId,
      `post-${++this.#streams}`,
      (text, message, transport) => {
        if (flight.done) return;
        // A legacy client gets the legacy shape here too: no 2026-07-28 `_meta` members.
        const wire = flight.modern
          ? text
          : wireWithout(text, message as unknown as JsonRpcMessage, isModernMetaKey).json;
        this.#out.deliver(wire, { transport, relatedUpstreamId: flight.id });
      },
    );
    if (flight.done) return;
    await this.#settle(flight, answer, wireId);
  }

  async #settle(flight: Flight, answer: ModernAnswer, wireId: RequestId): Promise<void> {
    switch (answer.kind) {
      case 'failed':
        if (answer.malformed) this.#failMalformed(flight, answer.reason, answer.status);
        else this.#fail(flight, answer.reason, answer.status);
        return;
      case 'oversized':
        this.#o.metrics.inc('oversized_messages_total', { side: 'upstream', upstream: this.#o.name });
        this.#finishWith(
          flight,
          tooLargeResponse(flight.id, this.#o.name, answer.bytes, this.#o.maxMessageBytes),
          answer.transport,
        );
        return;
      case 'refused':
        if (answer.error) await this.#settleError(flight, answer.error, answer.transport);
        else
          this.#fail(
            flight,
            `upstream ${this.#o.name} answered HTTP ${answer.status}${answer.detail ? `: ${answer.detail}` : ''}`,
            answer.status,
          );
        return;
      case 'response': {
        const response = answer.response;
        if ('error' in response) {
          const error = errorObjectOf(response) ?? {
            code: JsonRpcCode.InternalError,
            message: `upstream ${this.#o.name} sent a malformed error`,
          };
          const verbatim = wireId === flight.id && !flight.initialize ? answer.text : undefined;
          await this.#settleError(flight, error, answer.transport, verbatim);
        } else this.#settleResult(flight, response.result, answer.text, answer.transport, wireId);
        return;
      }
    }
  }

  /** An error answer: retried once after a header mismatch on a tool call, else translated. */
  async #settleError(
    flight: Flight,
    error: JsonRpcErrorObject,
    transport: TransportContext,
    verbatim?: string,
  ): Promise<void> {
    if (flight.initialize) {
      const mapped = errorForLegacyClient('server/discover', error, this.#o.name);
      this.#finishWith(
        flight,
        JSON.stringify({
          jsonrpc: '2.0',
          id: flight.id,
          error: {
            ...mapped,
            message: `upstream ${this.#o.name} refused server/discover: ${mapped.message}`,
          },
        }),
        transport,
      );
      return;
    }
    if (
      flight.method === 'tools/call' &&
      error.code === JsonRpcCode.HeaderMismatch &&
      !flight.headerRetried
    ) {
      // The spec's advice: the tool's schema may have changed; list again, retry with new headers.
      flight.headerRetried = true;
      if (await this.#relearnHeaders(flight)) {
        this.#o.metrics.inc('upstream_header_retries_total', { upstream: this.#o.name });
        this.#send(flight, flight.sent);
        return;
      }
    }
    const mapped = flight.modern ? error : errorForLegacyClient(flight.method, error, this.#o.name);
    if (mapped === error && verbatim !== undefined) this.#finishWith(flight, verbatim, transport);
    else
      this.#finishWith(flight, JSON.stringify({ jsonrpc: '2.0', id: flight.id, error: mapped }), transport);
  }

  /** Lists the tools again; true when the call's headers came out different (worth a retry). */
  async #relearnHeaders(flight: Flight): Promise<boolean> {
    const name = flight.params.name;
    if (typeof name !== 'string') return false;
    this.#tools.forget();
    const tool = await this.#tools.lookup(name);
    if (flight.done || !tool?.ok) return false;
    const before = JSON.stringify(flight.computed);
    flight.computed = paramHeaderValues(tool.headers, flight.params.arguments);
    if (JSON.stringify(flight.computed) === before) return false;
    return this.#buildHeaders(flight);
  }

  #settleResult(
    flight: Flight,
    result: unknown,
    text: string,
    transport: TransportContext,
    wireId: RequestId,
  ): void {
    if (flight.initialize) {
      this.#settleInitialize(flight, result, transport);
      return;
    }
    if (!flight.modern && isInputRequired(result)) {
      this.#bridge(flight, result);
      return;
    }
    let out = result;
    if (flight.method === 'tools/list' && isObject(result) && Array.isArray(result.tools)) {
      const kept = this.#tools.learn(result.tools);
      if (kept !== result.tools) out = { ...result, tools: kept };
    }
    // `resultType` and the 2026-07-28 `_meta` members (the server's `serverInfo`) are 2026-07-28
    // vocabulary (a legacy result is always complete, and names no server): a legacy client gets
    // the legacy shape.
    if (!flight.modern && isObject(out)) out = legacyResult(out);
    if (out === result && wireId === flight.id) this.#finishWith(flight, text, transport);
    else this.#finishWith(flight, JSON.stringify({ jsonrpc: '2.0', id: flight.id, result: out }), transport);
  }

  /** The `InitializeResult` made of a `DiscoverResult` (`discover-initialize.ts`). */
  #settleInitialize(flight: Flight, result: unknown, transport: TransportContext): void {
    const made = initializeFromDiscover(result, flight.initialize?.requested, this.#o.name);
    if (!made.ok) {
      this.#finishWithError(flight, made.error);
      return;
    }
    this.#capabilities = made.capabilities;
    this.#finishWith(
      flight,
      JSON.stringify({ jsonrpc: '2.0', id: flight.id, result: made.result }),
      transport,
    );
    this.#refreshListen();
  }

  /** Turns an `InputRequiredResult` into server->client requests (or an immediate retry). */
  #bridge(flight: Flight, result: JsonObject): void {
    const read = readInputRequired(result);
    if (!read.ok) {
      this.#finishWithError(
        flight,
        gatewayError(
          SbErrorCode.UpstreamProtocol,
          `upstream ${this.#o.name} answered with an input_required result the gateway cannot use: ${read.reason}`,
        ),
      );
      return;
    }
    if (++flight.rounds > this.#maxRounds) {
      this.#finishWithError(
        flight,
        gatewayError(
          SbErrorCode.UpstreamProtocol,
          `upstream ${this.#o.name} still asked for input after ${this.#maxRounds} rounds; the gateway gave up on the request`,
        ),
      );
      return;
    }
    this.#o.metrics.inc('upstream_input_rounds_total', { upstream: this.#o.name });
    if (read.requests.length === 0) {
      // Only a state to echo (e.g. the server shedding load): MRTR allows retrying at once.
      this.#send(flight, retryParams(flight.params, {}, read.requestState));
      return;
    }
    const round = new InputRound(read.requestState);
    flight.round = round;
    for (const input of read.requests) {
      const id = `${this.#nextId()}-${input.key}`;
      const key = idKey(id);
      round.add(key, id, input);
      this.#bridged.set(key, flight);
      this.#out.deliver(JSON.stringify(legacyInputRequest(id, input)), {
        transport: this.#context,
        relatedUpstreamId: flight.id,
      });
    }
  }

  // ---------------------------------------------------------------- endings

  #cancel(id: RequestId): void {
    const flight = this.#flights.get(idKey(id));
    if (!flight || flight.initialize || flight.done) return;
    this.#o.metrics.inc('upstream_requests_cancelled_total', { upstream: this.#o.name });
    this.#end(flight, 'the request was cancelled');
    flight.controller.abort();
  }

  /** The flight ends: no more deliveries for it; bridged requests still open are cancelled. */
  #end(flight: Flight, reason: string): void {
    flight.done = true;
    if (this.#flights.get(flight.key) === flight) this.#flights.delete(flight.key);
    const round = flight.round;
    flight.round = undefined;
    for (const waiting of round?.drain() ?? []) {
      this.#bridged.delete(waiting.key);
      this.#out.deliver(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: waiting.id, reason },
        }),
        { transport: this.#context },
      );
    }
  }

  #finishWith(
    flight: Flight,
    text: string,
    transport: TransportContext,
    reason = 'the request was answered',
  ): void {
    if (flight.done) return;
    this.#end(flight, reason);
    this.#out.deliver(text, { transport, relatedUpstreamId: flight.id });
  }

  #finishWithError(flight: Flight, error: JsonRpcErrorObject): void {
    this.#finishWith(
      flight,
      JSON.stringify({ jsonrpc: '2.0', id: flight.id, error }),
      this.#context,
      'the request failed',
    );
  }

  /** The request cannot be answered by the upstream: a synthesized error (see `UpstreamOutlet.fail`). */
  #fail(flight: Flight, message: string, status?: number): void {
    if (flight.done) return;
    this.#end(flight, 'the request failed');
    this.#out.fail(flight.id, message, status);
    if (flight.initialize) this.#onDiscoverFailed?.();
  }

  /** The upstream answered with something unreadable: `SB_UPSTREAM_PROTOCOL` naming what. */
  #failMalformed(flight: Flight, message: string, status?: number): void {
    if (flight.done) return;
    this.#end(flight, 'the request failed');
    this.#out.failMalformed(flight.id, message, status);
    if (flight.initialize) this.#onDiscoverFailed?.();
  }

  // ---------------------------------------------------------------- helpers

  #nextId(): string {
    return `switchboard-${++this.#counter}`;
  }

  /** The headers of a request the transport makes itself (no tool parameters, nothing forwarded). */
  #headersFor(method: string, params: JsonObject): Record<string, string> {
    const built = modernRequestHeaders({ base: this.#base, version: MODERN_REVISION, method, params });
    if (!built.ok) throw new Error(built.error.message);
    return built.headers;
  }

  /** Opens, re-opens or closes the listen stream to match the capabilities and subscriptions. */
  #refreshListen(): void {
    if (!this.#listenWanted || !this.#o.standaloneStream || this.#out.closed) return;
    if (this.#capabilities === undefined) return;
    const filter = subscriptionFilter(this.#capabilities, this.#subscriptions);
    if (sameFilter(filter, this.#listen?.filter)) return;
    this.#listen?.stop();
    this.#listen = undefined;
    if (!filter) return;
    const listen = new ListenStream(this.#listenHost, filter);
    this.#listen = listen;
    void listen.start();
  }

  async #shutdown(): Promise<void> {
    if (this.#out.closed) return;
    this.#out.stop();
    this.#listen?.stop();
    for (const flight of this.#flights.values()) {
      flight.done = true;
      flight.controller.abort();
    }
    this.#flights.clear();
    this.#bridged.clear();
    this.#internal.abort();
    await this.#http.release();
    this.#out.finish({ reason: 'closed' });
  }
}
