/**
 * The spans of the MCP semantic conventions, made from the hops the router already reports and
 * from the requests it is about to write (docs/observability.md, "Traces"):
 *
 * - a SERVER span for each request the gateway receives (a client's call; a server's request to a
 *   client such as `sampling/createMessage`), from its arrival to the answer the gateway wrote;
 * - a CLIENT span for each request the gateway writes (to an upstream: a forwarded call, one per
 *   upstream of a fan-out, the gateway's own requests; to a client: a server's request passed on),
 *   from the write to the answer's arrival.
 *
 * It is a tap (it observes hops, never steers) and the router's {@link TraceContextWriter}: a CLIENT
 * span is started when its request is about to be written, so that its context goes into the
 * request's `params._meta` (SEP-414); the tap finds it again by the hop's envelope id. A span's
 * parent is the trace context the request carried in `_meta` (a client's, or an upstream's that
 * propagates), else the span of the request it belongs to (the gateway knows: the correlation of
 * the hop); an HTTP `traceparent` header on a client's POST becomes a link, since one MCP request
 * may span several HTTP requests. Every span carries `switchboard.envelope.id`, the MEUP envelope
 * id of the client request it belongs to, which `switchboard trace follow` takes.
 *
 * Loaded only when OpenTelemetry is on (`otel-runtime.ts`).
 */
import {
  type Context,
  isSpanContextValid,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { OutboundRequestHop, TraceContextWriter } from '../../core/router-types.js';
import type { HopEvent, Tap } from '../../core/taps.js';
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import {
  ATTR,
  type Attributes,
  networkTransport,
  requestAttributes,
  responseOutcome,
  spanName,
} from './mcp-attributes.js';

/** Spans open at once before the oldest are ended as `abandoned` (a call whose answer never came). */
export const MAX_OPEN_SPANS = 65_536;

/**
 * Ids of SERVER spans that ended, kept for the hops recorded right after (the trace tap sees the
 * final answer's hop after this tap ended its span; a late cancellation comes later still).
 */
const ENDED_IDS_KEPT = 4_096;

/** One span in flight, by the envelope id of the request it is about. */
class OpenSpan {
  #context: Context | undefined;
  constructor(
    readonly span: Span,
    readonly parent: Context,
    readonly kind: 'server' | 'client',
    /** Epoch milliseconds. */
    readonly start: number,
    /** `switchboard.envelope.id`: the client request this span belongs to. */
    readonly envelopeId: string,
    /** The client's `_meta.baggage`, kept for its upstream requests when forwarding is on. */
    readonly baggage: string | undefined,
  ) {}

  /** The span as a parent, for the spans under it (made when first asked: most spans have none). */
  get context(): Context {
    this.#context ??= trace.setSpan(this.parent, this.span);
    return this.#context;
  }
}

export interface McpSpansOptions {
  readonly tracer: Tracer;
  /** Pass a client's `_meta.baggage` on upstream (default: strip it). */
  readonly forwardBaggage: boolean;
  /** `server.address`/`server.port` of an HTTP upstream, by its name. */
  readonly upstreamAddress?: (name: string) => { address: string; port: number } | undefined;
  /** `client.address` of the request being handled, when the transport knows it. */
  readonly clientAddress?: () => string | undefined;
  readonly maxOpen?: number;
}

const propagator = new W3CTraceContextPropagator();

const metaGetter: TextMapGetter<Record<string, unknown>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
};

const headerGetter: TextMapGetter<Readonly<Record<string, string>>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

function metaOf(message: JsonRpcMessage): Record<string, unknown> | undefined {
  if (!('method' in message)) return undefined;
  const params = message.params as Record<string, unknown> | undefined;
  if (params === undefined || params === null || typeof params !== 'object' || Array.isArray(params))
    return undefined;
  const meta = params._meta;
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta)
    ? (meta as Record<string, unknown>)
    : undefined;
}

/** The trace context in a message's `_meta`, as a parent context; undefined when it has none valid. */
function metaContext(message: JsonRpcMessage): Context | undefined {
  const meta = metaOf(message);
  if (meta === undefined || typeof meta.traceparent !== 'string') return undefined;
  const extracted = propagator.extract(ROOT_CONTEXT, meta, metaGetter);
  return trace.getSpanContext(extracted) === undefined ? undefined : extracted;
}

/**
 * A copy of `source` with `key` set to `value` (in its place, or last when it had none): what
 * `{ ...source, [key]: value }` gives, copied key by key because on Node 20's V8 that spread takes a
 * slow path for an object that was itself made by a spread and extended, as the router's
 * requests are (about 1 µs against 0.3 µs per request, measured).
 */
function withKey<T extends object>(source: T, key: string, value: unknown): T {
  const from = source as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  let set = false;
  for (const k of Object.keys(from)) {
    if (k === key) {
      out[k] = value;
      set = true;
    } else out[k] = from[k];
  }
  if (!set) out[key] = value;
  return out as T;
}

export class McpSpans implements Tap, TraceContextWriter {
  readonly name = 'otel';
  readonly #o: McpSpansOptions;
  readonly #open = new Map<string, OpenSpan>();
  readonly #ended = new Map<string, { traceId: string; spanId: string }>();
  /**
   * The ids in `#ended`, oldest first, as a ring: evicting through `Map#keys().next()` walks the
   * holes the deletes leave at the front of V8's table, which made ending a span cost more than
   * starting it.
   */
  readonly #endedOrder: (string | undefined)[] = new Array(ENDED_IDS_KEPT);
  #endedNext = 0;
  readonly #maxOpen: number;

  constructor(options: McpSpansOptions) {
    this.#o = options;
    this.#maxOpen = options.maxOpen ?? MAX_OPEN_SPANS;
  }

  /** Spans started and not yet ended (tests, and the bound). */
  get openSpans(): number {
    return this.#open.size;
  }

  /** The trace and span id of the span for request envelope `id` while it is open (the MEUP trace keeps them). */
  idsOf(id: string): { traceId: string; spanId: string } | undefined {
    const open = this.#open.get(id);
    if (open === undefined) return undefined;
    const { traceId, spanId } = open.span.spanContext();
    return { traceId, spanId };
  }

  /**
   * The trace and span id of the call a hop belongs to, for the MEUP trace: the SERVER span of the
   * client request its context names (`<session>/<request envelope id>/...`), open or just ended;
   * for a hop outside any call (the gateway's own requests), its own span, if it has one.
   */
  callIds(event: HopEvent): { traceId: string; spanId: string } | undefined {
    const context = event.context;
    const slash = context.indexOf('/');
    if (slash >= 0) {
      const end = context.indexOf('/', slash + 1);
      const call = end < 0 ? context.slice(slash + 1) : context.slice(slash + 1, end);
      const found = this.idsOf(call) ?? this.#ended.get(call);
      if (found !== undefined) return found;
    }
    return this.idsOf(event.id) ?? this.#firstIds(event.correlationId);
  }

  #firstIds(ids: readonly string[] | undefined): { traceId: string; spanId: string } | undefined {
    if (ids === undefined) return undefined;
    for (const id of ids) {
      const found = this.idsOf(id) ?? this.#ended.get(id);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  /** Adds an event to the SERVER span of client request `envelopeId`, if it is open. */
  event(envelopeId: string, name: string, attributes: Attributes = {}): void {
    this.#open.get(envelopeId)?.span.addEvent(name, attributes);
  }

  /**
   * Starts an INTERNAL child span of the SERVER span of client request `envelopeId` (a durable
   * ledger write) and returns what ends it; undefined when that call has no open span.
   */
  child(envelopeId: string, name: string, attributes: Attributes): ((error?: string) => void) | undefined {
    const parent = this.#open.get(envelopeId);
    if (parent === undefined) return undefined;
    const span = this.#o.tracer.startSpan(
      name,
      { kind: SpanKind.INTERNAL, attributes: { ...attributes, [ATTR.envelopeId]: parent.envelopeId } },
      parent.context,
    );
    return (error) => {
      if (error !== undefined) {
        span.setAttribute(ATTR.errorType, error);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
  }

  // ------------------------------------------------------------ TraceContextWriter

  toUpstream(request: JsonRpcRequest, hop: OutboundRequestHop): JsonRpcRequest {
    // The writer's contract: it never throws (the router calls it on the forwarding path).
    try {
      return this.#toUpstream(request, hop);
    } catch {
      return request;
    }
  }

  toClient(request: JsonRpcRequest, hop: OutboundRequestHop): JsonRpcRequest {
    try {
      return this.#toClient(request, hop);
    } catch {
      return request;
    }
  }

  #toUpstream(request: JsonRpcRequest, hop: OutboundRequestHop): JsonRpcRequest {
    const { open, parent, attributes } = this.#startClientSpan(request, hop);
    if (attributes !== undefined) {
      if (hop.upstream !== undefined) {
        attributes[ATTR.upstream] = hop.upstream;
        const address = this.#o.upstreamAddress?.(hop.upstream);
        if (address) {
          attributes[ATTR.serverAddress] = address.address;
          attributes[ATTR.serverPort] = address.port;
          attributes[ATTR.networkTransport] = 'tcp';
          attributes[ATTR.networkProtocolName] = 'http';
        } else {
          attributes[ATTR.networkTransport] = 'pipe';
        }
      }
      open.span.setAttributes(attributes);
    }
    return this.#inject(request, open, parent?.baggage);
  }

  #toClient(request: JsonRpcRequest, hop: OutboundRequestHop): JsonRpcRequest {
    const { open, attributes } = this.#startClientSpan(request, hop);
    if (attributes !== undefined) open.span.setAttributes(attributes);
    // Baggage a client sent is its own; a server's request to it carries none of the gateway's.
    return this.#inject(request, open, undefined);
  }

  /**
   * The CLIENT span of a request the gateway writes (upstream or to a client), child of the call
   * it serves; with the request's attributes and the envelope id for the caller to complete, only
   * when the span records (an unsampled span gets none built).
   */
  #startClientSpan(
    request: JsonRpcRequest,
    hop: OutboundRequestHop,
  ): { open: OpenSpan; parent: OpenSpan | undefined; attributes: Attributes | undefined } {
    const parent = this.#parentOf(hop);
    const envelopeId = parent?.envelopeId ?? hop.id;
    const open = this.#start(
      hop.id,
      'client',
      spanName(request),
      envelopeId,
      parent?.context,
      undefined,
      parent,
    );
    if (!open.span.isRecording()) return { open, parent, attributes: undefined };
    const attributes = requestAttributes(request);
    attributes[ATTR.envelopeId] = envelopeId;
    return { open, parent, attributes };
  }

  // ------------------------------------------------------------ Tap

  observe(event: HopEvent): void {
    const message = event.message;
    if ('method' in message) {
      if (!('id' in message)) {
        if (message.method === 'notifications/cancelled') this.#cancelled(event);
        return;
      }
      // A request the gateway wrote: its CLIENT span was started by `toUpstream`/`toClient`.
      if (event.from === 'gateway') return;
      this.#received(event, message);
      return;
    }
    this.#answered(event, message);
  }

  /** A request that reached the gateway (from a client, or from an upstream): its SERVER span. */
  #received(event: HopEvent, request: JsonRpcRequest): void {
    const fromClient = event.from.startsWith('client-');
    const viaMeta = metaContext(request);
    const parent = fromClient ? undefined : this.#firstOpen(event.correlationId);
    let links: Link[] | undefined;
    const transport = event.transport;
    if (fromClient && transport.kind === 'http' && transport.headers.traceparent !== undefined) {
      const header = propagator.extract(ROOT_CONTEXT, transport.headers, headerGetter);
      const linked = trace.getSpanContext(header);
      if (linked !== undefined) links = [{ context: linked }];
    }
    const envelopeId = parent?.envelopeId ?? event.id;
    // Kept only to be forwarded, so read only when forwarding is on.
    const baggage = fromClient && this.#o.forwardBaggage ? metaOf(request)?.baggage : undefined;
    const open = this.#start(
      event.id,
      'server',
      spanName(request),
      envelopeId,
      viaMeta ?? parent?.context,
      links,
      undefined,
      event.receivedAt,
      typeof baggage === 'string' ? baggage : undefined,
    );
    if (!open.span.isRecording()) return;
    const attributes = requestAttributes(request);
    attributes[ATTR.envelopeId] = envelopeId;
    const network = networkTransport(transport.kind);
    if (network !== undefined) attributes[ATTR.networkTransport] = network;
    if (transport.kind === 'http') attributes[ATTR.networkProtocolName] = 'http';
    if (fromClient) {
      // The session as the hop saw it (not `event.envelope`, which would build the whole envelope).
      const session = event.sessionContext;
      if (session !== undefined) {
        attributes[ATTR.sessionId] = session.id;
        attributes[ATTR.protocolVersion] = session.protocolVersion;
      }
      const address = this.#o.clientAddress?.();
      if (address !== undefined) attributes[ATTR.clientAddress] = address;
    } else if (event.upstream !== undefined) {
      attributes[ATTR.upstream] = event.upstream;
    }
    open.span.setAttributes(attributes);
  }

  /** A response: it ends the span of the request it answers (named in its correlation). */
  #answered(event: HopEvent, response: JsonRpcResponse): void {
    const ids = event.correlationId;
    if (ids === undefined) return;
    for (const id of ids) {
      const open = this.#open.get(id);
      if (open === undefined) continue;
      // A SERVER span ends when the gateway writes the answer; a CLIENT span when one arrives.
      const written = event.from === 'gateway';
      if (written !== (open.kind === 'server')) continue;
      const outcome = responseOutcome(response);
      this.#end(id, open, written ? (event.sentAt ?? event.receivedAt) : event.receivedAt, outcome);
      return;
    }
  }

  /** A cancellation ends the span of the request it cancels: nobody will answer it. */
  #cancelled(event: HopEvent): void {
    const ids = event.correlationId;
    if (ids === undefined) return;
    const at = event.sentAt ?? event.receivedAt;
    for (const id of ids) {
      const open = this.#open.get(id);
      if (open === undefined) continue;
      this.#end(id, open, at, { errorType: 'cancelled' });
    }
  }

  // ------------------------------------------------------------ spans

  /**
   * Starts a span and keeps it open under `id`. Its attributes are the caller's to set, and only
   * when the span records (`span.isRecording()`): a span the sampler dropped costs its start, its
   * context in `_meta` and its entry here, nothing more. The SDK's samplers (always on/off,
   * trace-id ratio, parent-based) decide from the parent, the trace id and the kind, never from
   * the attributes, so none are passed at the start (the SDK would also copy and check them twice).
   */
  #start(
    id: string,
    kind: 'server' | 'client',
    name: string,
    envelopeId: string,
    parent: Context | undefined,
    links: Link[] | undefined,
    parentSpan: OpenSpan | undefined,
    start = Date.now(),
    baggage: string | undefined = parentSpan?.baggage,
  ): OpenSpan {
    const span = this.#o.tracer.startSpan(
      name,
      {
        kind: kind === 'server' ? SpanKind.SERVER : SpanKind.CLIENT,
        ...(links === undefined ? {} : { links }),
        startTime: start,
      },
      parent ?? ROOT_CONTEXT,
    );
    const open = new OpenSpan(span, parent ?? ROOT_CONTEXT, kind, start, envelopeId, baggage);
    this.#open.set(id, open);
    if (this.#open.size > this.#maxOpen) this.#evictOldest();
    return open;
  }

  #end(
    id: string,
    open: OpenSpan,
    at: number,
    outcome: { readonly errorType?: string; readonly statusCode?: string },
  ): void {
    this.#open.delete(id);
    const { span } = open;
    if (open.kind === 'server') {
      const { traceId, spanId } = span.spanContext();
      if (!this.#ended.has(id)) {
        const oldest = this.#endedOrder[this.#endedNext];
        if (oldest !== undefined) this.#ended.delete(oldest);
        this.#endedOrder[this.#endedNext] = id;
        this.#endedNext = (this.#endedNext + 1) % ENDED_IDS_KEPT;
      }
      this.#ended.set(id, { traceId, spanId });
    }
    if (!span.isRecording()) {
      span.end();
      return;
    }
    if (outcome.statusCode !== undefined) span.setAttribute(ATTR.statusCode, outcome.statusCode);
    if (outcome.errorType !== undefined) {
      span.setAttribute(ATTR.errorType, outcome.errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(Math.max(at, open.start));
  }

  #evictOldest(): void {
    const oldest = this.#open.entries().next();
    if (oldest.done === true) return;
    const [id, open] = oldest.value;
    this.#end(id, open, Date.now(), { errorType: 'abandoned' });
  }

  /** The open span a written request belongs to: named in its correlation, else its context's call. */
  #parentOf(hop: OutboundRequestHop): OpenSpan | undefined {
    const named = this.#firstOpen(hop.correlation);
    if (named !== undefined) return named;
    const segments = hop.context.split('/');
    for (let i = segments.length - 1; i >= 1; i--) {
      const open = this.#open.get(segments[i]!);
      if (open !== undefined) return open;
    }
    return undefined;
  }

  #firstOpen(ids: readonly string[] | undefined): OpenSpan | undefined {
    if (ids === undefined) return undefined;
    for (const id of ids) {
      const open = this.#open.get(id);
      if (open !== undefined) return open;
    }
    return undefined;
  }

  /**
   * `request` with the span's context in `params._meta` (`traceparent`, `tracestate`), replacing
   * whatever context it carried; `baggage` kept only when forwarding is on (and then the client's).
   */
  #inject(request: JsonRpcRequest, open: OpenSpan, baggage: string | undefined): JsonRpcRequest {
    const params = (request.params ?? {}) as Record<string, unknown>;
    // Copied key by key, not spread and then `delete`d: a delete turns the object into a slow
    // dictionary (about 0.7 µs per request on Node 20, measured).
    const meta: Record<string, unknown> = {};
    const old = metaOf(request);
    if (old !== undefined)
      for (const key of Object.keys(old))
        if (key !== 'traceparent' && key !== 'tracestate' && key !== 'baggage') meta[key] = old[key];
    // What W3CTraceContextPropagator.inject writes, without making a context to read it back from.
    const context = open.span.spanContext();
    if (isSpanContextValid(context)) {
      const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
      meta.traceparent = `00-${context.traceId}-${context.spanId}-${flags}`;
      if (context.traceState !== undefined) meta.tracestate = context.traceState.serialize();
    }
    if (this.#o.forwardBaggage && baggage !== undefined) meta.baggage = baggage;
    return withKey(request, 'params', withKey(params, '_meta', meta));
  }
}
