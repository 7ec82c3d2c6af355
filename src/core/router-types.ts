/**
 * The router's public vocabulary, apart from the class: what a resolver answers, what a local
 * handler and an interceptor see, and the router's options. `router.ts` re-exports all of it, so
 * importers keep importing from there.
 */

import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type {
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResponse,
} from '../protocol/jsonrpc/types.js';
import type { CorrelationTimeouts, LinkId, SessionKey } from './correlation-table.js';
import type { CallObserver } from './observations.js';
import type { SessionView } from './ports.js';
import type { TapBus } from './taps.js';

/** A local handler's answer to a client request: a result or an error, and what it was built from. */
export interface LocalAnswer {
  readonly result?: unknown;
  readonly error?: JsonRpcErrorObject;
  /** Trace ids of the upstream responses this answer was built from (fan-in). */
  readonly derivedFrom?: readonly string[];
}

/** An upstream's response to a request a local handler sent (`LocalCall.requestUpstream`). */
export interface UpstreamReply {
  readonly response: JsonRpcResponse;
  /** Trace id of the upstream response envelope, for fan-in correlation. */
  readonly traceId: string;
}

/** What a local handler may do while answering a client request itself. */
export interface LocalCall {
  readonly session: SessionView;
  readonly request: JsonRpcRequest;
  readonly traceId: string;
  readonly context: string;
  readonly signal: AbortSignal;
  requestUpstream(link: LinkId, method: string, params?: JsonObject): Promise<UpstreamReply>;
}

/** What a `RequestResolver` decides for one client request: forward it, answer it, refuse it, or wait. */
export type Resolution =
  /** Forward to `link`, optionally as a rewritten message (e.g. a namespaced tool name removed). */
  | { readonly kind: 'forward'; readonly link: LinkId; readonly message?: JsonRpcRequest }
  /** The gateway answers itself (initialize of an aggregated endpoint, merged lists, ping). */
  | { readonly kind: 'local'; readonly handle: (call: LocalCall) => Promise<LocalAnswer> }
  | { readonly kind: 'error'; readonly error: JsonRpcErrorObject }
  /**
   * Not routable yet (e.g. the session's own upstream connection is being created, or restarting):
   * the router asks again once `ready` settles. A rejection is answered to the client as the error
   * it holds. `ready` must settle when the route may have changed (not at once with an old answer)
   * and within a bound of the resolver's own; the router asks again in a later turn of the event
   * loop, never in the same one, and at most `maxPendingRoutes` times in a row before it answers
   * `SB_ROUTE_UNRESOLVED`, so no resolver can make it spin.
   */
  | { readonly kind: 'pending'; readonly ready: Promise<unknown> };

/**
 * The routing policy of a deployment: which link (connection to an upstream) a client message goes
 * to and which sessions an upstream's message concerns. The stdio gateway's resolver is a straight pass-through; `serve`
 * aggregates.
 */
export interface RequestResolver {
  resolve(session: SessionView, request: JsonRpcRequest): Resolution;
  /** Links that receive a client notification (other than cancellations and progress). */
  notificationLinks(session: SessionView, notification: JsonRpcNotification): readonly LinkId[];
  /** Sessions a server->client request from `link` may belong to when no pending request says which. */
  sessionsFor(link: LinkId): readonly SessionKey[];
  /** Sessions that receive an upstream notification not tied to any request. */
  notificationTargets(link: LinkId, notification: JsonRpcNotification): readonly SessionKey[];
}

/**
 * One client request while the gateway handles it, as interceptors (policy, audit) see it. The
 * router creates it when the request arrives and completes it exactly once, however the request
 * ends: answered, refused, failed, timed out, cancelled by the client, or cut off by the session's
 * end.
 */
export interface CallInfo {
  readonly session: SessionView;
  readonly request: JsonRpcRequest;
  /** Trace id of the client's request envelope (the root of the call's context). */
  readonly traceId: string;
  readonly context: string;
  /** Epoch milliseconds (fractional) the request arrived. */
  readonly receivedAt: number;
  /** The upstream it was routed to, and the message as forwarded (before id rewriting). */
  readonly upstream?: string;
  readonly routed?: JsonRpcRequest;
  /** Aborted when the client cancels the request or its session ends. */
  readonly signal: AbortSignal;
  /** Scratch space for interceptors (e.g. the policy decision, for the audit record). */
  readonly notes: Map<string, unknown>;
}

/** An interceptor's verdict on a routed request before it goes out: let it through, or refuse it with an error. */
export type Admission =
  | { readonly allow: true }
  | { readonly allow: false; readonly error: JsonRpcErrorObject };

/** How a call ended, as `CallInterceptor.complete` sees it. */
export interface CallOutcome {
  /** False when the response never reaches the client (cancelled by it, or its session ended). */
  readonly delivered: boolean;
}

/**
 * Sits on the forwarding path of client requests: `admit` decides before a routed request goes out
 * (and may hold it: an approval), `complete` sees the final response before delivery and may
 * replace it (filtering a list) or hold it (until an audit record is durable). Both may be async;
 * both must not throw (a throw is logged and answered as an internal error).
 */
export interface CallInterceptor {
  readonly name: string;
  admit?(call: CallInfo): Admission | Promise<Admission>;
  complete?(
    call: CallInfo,
    response: JsonRpcResponse,
    outcome: CallOutcome,
  ): JsonRpcResponse | undefined | Promise<JsonRpcResponse | undefined>;
  /**
   * Once the call's final response went out, in the same turn, right after it was sent; or once it
   * was not (the client cancelled, or its session ended): once per client call, after every
   * interceptor's `complete`. `resultText` is the `result` exactly as the client got it
   * (`JSON.stringify(result)`, read from the delivered text: see protocol/jsonrpc/result-text.ts);
   * undefined for an error or a response that was not delivered. It observes: nothing it does
   * changes the answer. A record kept for later should keep the text, not the call.
   */
  delivered?(call: CallInfo, resultText: string | undefined): void;
}

/** What a `Router` is built with: the routing policy, logging and metrics, and its limits. */
export interface RouterOptions {
  readonly resolver: RequestResolver;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly taps?: TapBus;
  readonly timeouts?: Partial<CorrelationTimeouts>;
  /** Maximum messages held for a link that is (re)starting before new ones are refused. */
  readonly maxQueuedPerLink?: number;
  readonly interceptors?: readonly CallInterceptor[];
  /**
   * How many `pending` answers in a row one client request may get from the resolver before it is
   * answered with `SB_ROUTE_UNRESOLVED` (default {@link DEFAULT_MAX_PENDING_ROUTES}).
   */
  readonly maxPendingRoutes?: number;
  /**
   * Deepest nesting accepted in a message from an upstream (`server.maxJsonDepth`); default
   * `DEFAULT_MAX_JSON_DEPTH`. A deeper response fails the call it answers.
   */
  readonly maxJsonDepth?: number;
  /**
   * Where the gateway's distributed-trace context goes into what it sends (OpenTelemetry, SEP-414).
   * Undefined (the default): requests go out as they are, at the cost of one comparison each.
   */
  readonly traceContext?: TraceContextWriter;
  /**
   * Who hears of client calls, upstream requests and sessions as they start and end (metrics,
   * tracing; `observations.ts`). More can be added later (`Router.observations.add`).
   */
  readonly observers?: readonly CallObserver[];
}

/** A request the gateway is about to write, as a {@link TraceContextWriter} is told of it. */
export interface OutboundRequestHop {
  /** The MEUP envelope id its hop will have. */
  readonly id: string;
  /** The hop's MEUP context (`<session>/<client request envelope id>[/...]`, or the gateway's). */
  readonly context: string;
  /** The envelopes the hop will name (its MEUP `correlation_id`). */
  readonly correlation: readonly string[];
  /** The upstream it goes to (toward an upstream) or that asked it (toward a client), if any. */
  readonly upstream?: string;
}

/**
 * Puts the gateway's place in a distributed trace into a request it is about to write: W3C trace
 * context in `params._meta` (`traceparent`, `tracestate`; SEP-414). Unlike a tap it changes the
 * message, and only that way: it returns the request to write (the same object when it adds
 * nothing, else a copy), never throws, and answers synchronously; the hop recorded afterwards is
 * the message as written. Called for every request toward an upstream (client calls, the gateway's
 * own requests, fan-outs: one call per upstream) and toward a client (a server's request passed on).
 */
export interface TraceContextWriter {
  toUpstream(request: JsonRpcRequest, hop: OutboundRequestHop): JsonRpcRequest;
  toClient(request: JsonRpcRequest, hop: OutboundRequestHop): JsonRpcRequest;
}

/**
 * A request waits for its route at most this many times in a row. A route being built settles in
 * one or two waits (a per-session connection's first handshake, then its link marked ready); more
 * means the resolver keeps answering `pending` without the route changing.
 */
export const DEFAULT_MAX_PENDING_ROUTES = 16;
