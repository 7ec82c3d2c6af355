/**
 * The router session behind 2026-07-28 clients: one per principal and endpoint (the era has no
 * sessions; the trace roots a modern client's traffic at its principal). It is the session's
 * `DownstreamPort`: each message the router delivers goes to the POST waiting for it, which the
 * call's gateway-assigned id names, never to another.
 *
 * - The response ends the POST (JSON, or the last SSE event), in modern form.
 * - Progress goes on the POST's stream; log messages only when the request set a log level, and
 *   only at or above it.
 * - A server->client request (a legacy upstream's sampling, elicitation or roots) becomes an
 *   input-required result (MRTR): the POST is answered, the upstream call stays open ("parked"),
 *   and the client's retry with `inputResponses` and the gateway's `requestState` resumes it. A
 *   client that did not declare the capability gets -32021 and the upstream call is cancelled.
 * - A closed POST stream is a cancellation: the upstream call is cancelled, nothing more is sent.
 * - Notifications not tied to a call go to `subscriptions/listen` streams that asked for them.
 * - Every stream is bounded (`slow-reader-cut.ts`): a client that stops reading a call's stream is
 *   cut, which cancels the call; a listen stream that is cut ends, and the client may listen again.
 */
import type { ServerResponse } from 'node:http';
import type { Delivery, DownstreamPort } from '../../../../core/ports.js';
import { type Logger, silentLogger } from '../../../../observe/logger.js';
import type { Metrics } from '../../../../observe/metrics.js';
import { JsonRpcCode } from '../../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../../protocol/jsonrpc/json-object.js';
import {
  idKey,
  type JsonObject,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../../../../protocol/jsonrpc/types.js';
import { mcpLogSeverity } from '../../../../protocol/mcp/log-levels.js';
import {
  META_CAPABILITIES,
  META_LOG_LEVEL,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
} from '../../../../protocol/mcp/modern-meta.js';
import { DEFAULT_MAX_BUFFERED_BYTES } from '../../../stream-bound.js';
import { formatEvent } from '../../sse/sse-writer.js';
import { SlowReaderCut } from '../slow-reader-cut.js';
import { adaptResponse, statusOfError } from './adapt-response.js';
import type { RequestStateCodec } from './request-state.js';

export const MODERN_SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** Which client capability a server->client request needs. */
const CAPABILITY_OF: Readonly<Record<string, string>> = {
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
  'roots/list': 'roots',
};

/** One call of a modern client while the gateway handles it. */
export interface ModernCall {
  /** The id the gateway gave it on the router session (unique there). */
  readonly downstreamId: string;
  /** The request as the client sent it (its latest attempt). */
  request: JsonRpcRequest;
  res: ServerResponse | undefined;
  mode: 'json' | 'sse';
  capabilities: JsonObject;
  logLevel?: string;
  /** Server requests waiting for the client's input, by the key they got in `inputRequests`. */
  readonly inputs: Map<string, JsonRpcRequest>;
  parkedUntil?: number;
  done: boolean;
}

export interface ListenStream {
  readonly id: RequestId;
  readonly res: ServerResponse;
  readonly filter: {
    readonly tools: boolean;
    readonly prompts: boolean;
    readonly resources: boolean;
    readonly uris: ReadonlySet<string>;
  };
}

export interface ModernSessionOptions {
  readonly key: string;
  readonly principal: string;
  readonly metrics: Metrics;
  readonly states: RequestStateCodec;
  readonly serverInfo: JsonObject;
  /** How long a parked call waits for the client's retry. */
  readonly parkMs: number;
  /** Hands the router a message from this session (an answer to a server request, a cancellation). */
  readonly toRouter: (message: JsonRpcMessage) => void;
  /** Unsent bytes a stream may hold before it is cut. Default `DEFAULT_MAX_BUFFERED_BYTES`. */
  readonly maxBufferedBytes?: number;
  /** Where cut streams are logged. Default: nowhere. */
  readonly logger?: Logger;
}

export class ModernSession implements DownstreamPort {
  readonly key: string;
  readonly principal: string;
  readonly #o: ModernSessionOptions;
  readonly #calls = new Map<string, ModernCall>();
  readonly listeners = new Set<ListenStream>();
  readonly #cut: SlowReaderCut;
  #counter = 0;
  lastActivity = Date.now();

  constructor(options: ModernSessionOptions) {
    this.#o = options;
    this.key = options.key;
    this.principal = options.principal;
    this.#cut = new SlowReaderCut({
      maxBufferedBytes: options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES,
      metrics: options.metrics,
      logger: options.logger ?? silentLogger,
    });
  }

  /** Open streams: calls whose POST still waits for its answer, and `subscriptions/listen` streams. */
  get openStreams(): number {
    return this.#calls.size + this.listeners.size;
  }

  get idle(): boolean {
    return this.#calls.size === 0 && this.listeners.size === 0;
  }

  /**
   * A fresh id for a call on the router session: the client's own id (shortened) and a counter,
   * e.g. `7#12`, so that the trace still shows which request it was while two clients of one
   * principal may both use id 7 at once.
   */
  nextId(clientId: RequestId | string): string {
    this.#counter++;
    return `${String(clientId).slice(0, 64)}#${this.#counter}`;
  }

  /** Starts waiting for the router's answer to a call. */
  track(call: ModernCall): void {
    this.#calls.set(idKey(call.downstreamId), call);
    this.lastActivity = Date.now();
    this.#watch(call);
  }

  call(downstreamId: string): ModernCall | undefined {
    return this.#calls.get(idKey(downstreamId));
  }

  /**
   * Resumes a parked call with the client's retry: its answers go to the server requests that
   * were waiting, and the retry's POST waits for what comes next. Returns the keys still missing.
   */
  resume(
    call: ModernCall,
    retry: JsonRpcRequest,
    res: ServerResponse,
    mode: 'json' | 'sse',
    responses: JsonObject,
  ): string[] {
    call.request = retry;
    call.res = res;
    call.mode = mode;
    delete call.parkedUntil;
    const params = isObject(retry.params) ? retry.params : {};
    const meta = isObject(params._meta) ? params._meta : {};
    call.capabilities = isObject(meta[META_CAPABILITIES]) ? meta[META_CAPABILITIES] : {};
    const level = meta[META_LOG_LEVEL];
    if (typeof level === 'string') call.logLevel = level;
    else delete call.logLevel;
    this.lastActivity = Date.now();
    const missing: string[] = [];
    for (const [key, serverRequest] of [...call.inputs]) {
      const answer = responses[key];
      if (!isObject(answer)) {
        missing.push(key);
        continue;
      }
      call.inputs.delete(key);
      this.#o.toRouter({ jsonrpc: '2.0', id: serverRequest.id, result: answer });
    }
    if (mode === 'sse') this.#openStream(res);
    this.#watch(call);
    if (missing.length > 0) this.#askForInput(call);
    return missing;
  }

  send(_json: string, message: JsonRpcMessage, delivery: Delivery): void {
    if (delivery.kind === 'unrelated') {
      this.#unrelated(message);
      return;
    }
    const call = this.#calls.get(idKey(delivery.request));
    if (!call || call.done) {
      if ('method' in message && 'id' in message)
        this.#refuseServerRequest(message.id, 'the call it belongs to is over');
      this.#o.metrics.inc('modern_deliveries_dropped_total');
      return;
    }
    if (delivery.kind === 'response') {
      this.#finish(call, message as JsonRpcResponse);
      return;
    }
    if ('method' in message && 'id' in message) {
      this.#serverRequest(call, message);
      return;
    }
    if (!('method' in message)) return;
    if (message.method === 'notifications/message') {
      const level = isObject(message.params) ? message.params.level : undefined;
      if (call.logLevel === undefined || mcpLogSeverity(level) < mcpLogSeverity(call.logLevel)) return;
    }
    this.#write(call, message);
  }

  #serverRequest(call: ModernCall, request: JsonRpcRequest): void {
    const capability = CAPABILITY_OF[request.method];
    if (capability === undefined) {
      this.#refuseServerRequest(request.id, `a 2026-07-28 client cannot be asked ${request.method}`);
      return;
    }
    if (!isObject(call.capabilities[capability])) {
      // The client cannot do what the server needs: -32021, and the upstream call is abandoned.
      this.#refuseServerRequest(request.id, `the client did not declare the ${capability} capability`);
      this.#o.metrics.inc('modern_missing_capability_total', { capability });
      this.#finish(call, {
        jsonrpc: '2.0',
        id: call.downstreamId,
        error: {
          code: JsonRpcCode.MissingRequiredClientCapability,
          message: `This request needs the client capability "${capability}", which the request did not declare`,
          data: { requiredCapabilities: { [capability]: {} } },
        },
      });
      this.#o.toRouter({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: call.downstreamId, reason: 'missing client capability' },
      });
      return;
    }
    const key = `${request.method.split('/')[0]}-${String(request.id)}`;
    call.inputs.set(key, request);
    // Answer at once: a legacy server waits for this one answer before it asks anything else.
    queueMicrotask(() => this.#askForInput(call));
  }

  /** Answers the POST with an input-required result for every server request still unanswered. */
  #askForInput(call: ModernCall): void {
    if (call.done || !call.res || call.inputs.size === 0) return;
    const inputRequests: JsonObject = {};
    for (const [key, request] of call.inputs) {
      inputRequests[key] =
        request.params === undefined
          ? { method: request.method }
          : { method: request.method, params: request.params };
    }
    const params = isObject(call.request.params) ? call.request.params : {};
    const state = this.#o.states.seal({
      call: call.downstreamId,
      principal: this.principal,
      method: call.request.method,
      name: String(params.name ?? params.uri ?? ''),
      exp: Date.now() + this.#o.parkMs,
    });
    const result = { resultType: 'input_required', inputRequests, requestState: state };
    this.#end(call, {
      jsonrpc: '2.0',
      id: call.request.id,
      result: { ...result, _meta: { [META_SERVER_INFO]: this.#o.serverInfo } },
    });
    call.parkedUntil = Date.now() + this.#o.parkMs;
    this.#o.metrics.inc('modern_input_required_total');
  }

  #finish(call: ModernCall, response: JsonRpcResponse): void {
    if (call.done) return;
    call.done = true;
    this.#calls.delete(idKey(call.downstreamId));
    this.#end(call, adaptResponse(call.request, response, call.request.id, this.#o.serverInfo));
    for (const request of call.inputs.values()) this.#refuseServerRequest(request.id, 'the call ended');
    call.inputs.clear();
    this.lastActivity = Date.now();
  }

  /** Writes the final message of the current POST and closes it. */
  #end(call: ModernCall, response: JsonRpcResponse): void {
    const res = call.res;
    call.res = undefined;
    if (!res || res.writableEnded) return;
    const json = JSON.stringify(response);
    if (call.mode === 'sse') {
      res.end(formatEvent({ data: json }));
      return;
    }
    const status = 'error' in response ? statusOfError(response.error.code) : 200;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(json);
  }

  /** An event on the call's stream; a client that is behind is cut, which cancels the call (`#watch`). */
  #write(call: ModernCall, message: JsonRpcMessage): void {
    const res = call.res;
    if (!res || res.writableEnded || res.destroyed || call.mode !== 'sse') return;
    const event = formatEvent({ data: JSON.stringify(message) });
    if (this.#cut.cutIfBehind(res, 'modern-call', { session: this.key }, event)) return;
    res.write(event);
  }

  #openStream(res: ServerResponse): void {
    res.writeHead(200, MODERN_SSE_HEADERS);
    res.flushHeaders();
  }

  /** A closed POST before the answer is a cancellation of the call (2026-07-28). */
  #watch(call: ModernCall): void {
    const res = call.res;
    if (!res) return;
    res.once('close', () => {
      if (call.res !== res || call.done || res.writableEnded) return;
      call.res = undefined;
      call.done = true;
      this.#calls.delete(idKey(call.downstreamId));
      this.#o.metrics.inc('modern_cancelled_by_close_total');
      this.#o.toRouter({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: call.downstreamId, reason: 'the client closed the response stream' },
      });
    });
  }

  #refuseServerRequest(id: RequestId, why: string): void {
    this.#o.toRouter({
      jsonrpc: '2.0',
      id,
      error: { code: JsonRpcCode.MethodNotFound, message: `The client cannot answer: ${why}` },
    });
  }

  #unrelated(message: JsonRpcMessage): void {
    if ('method' in message && 'id' in message) {
      this.#refuseServerRequest(message.id, 'requests outside a call cannot reach a 2026-07-28 client');
      return;
    }
    if (!('method' in message)) return;
    for (const listener of this.listeners) {
      if (!wants(listener, message.method, isObject(message.params) ? message.params : {})) continue;
      const params = isObject(message.params) ? message.params : {};
      const meta = isObject(params._meta) ? params._meta : {};
      const tagged = {
        ...message,
        params: { ...params, _meta: { ...meta, [META_SUBSCRIPTION_ID]: listener.id } },
      };
      const res = listener.res;
      if (res.writableEnded || res.destroyed) continue;
      // A listener that is behind is cut; its 'close' removes it (`ModernEndpoint`).
      const event = formatEvent({ data: JSON.stringify(tagged) });
      if (this.#cut.cutIfBehind(res, 'listen', { session: this.key }, event)) continue;
      res.write(event);
    }
  }

  /** Parked calls whose client never came back: cancelled upstream, their server requests refused. */
  expireParked(now: number): number {
    let expired = 0;
    for (const call of [...this.#calls.values()]) {
      if (call.parkedUntil === undefined || call.parkedUntil > now) continue;
      expired++;
      call.done = true;
      this.#calls.delete(idKey(call.downstreamId));
      for (const request of call.inputs.values())
        this.#refuseServerRequest(request.id, 'the client did not come back with its input');
      this.#o.toRouter({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: call.downstreamId, reason: 'the client did not retry' },
      });
    }
    return expired;
  }

  close(): void {
    for (const listener of this.listeners) listener.res.end();
    this.listeners.clear();
    for (const call of this.#calls.values()) call.res?.end();
    this.#calls.clear();
  }
}

function wants(listener: ListenStream, method: string, params: JsonObject): boolean {
  switch (method) {
    case 'notifications/tools/list_changed':
      return listener.filter.tools;
    case 'notifications/prompts/list_changed':
      return listener.filter.prompts;
    case 'notifications/resources/list_changed':
      return listener.filter.resources;
    case 'notifications/resources/updated':
      return typeof params.uri === 'string' && listener.filter.uris.has(params.uri);
    default:
      // Progress and log messages never go on a listen stream; nothing else is defined for it.
      return false;
  }
}
