/**
 * The router: the one place where client sessions, upstream links and the correlation table meet.
 *
 * Transports hand it parsed client messages (`handleClientMessage`) and raw upstream text
 * (`handleUpstreamText`); it decides, with a `RequestResolver`, where each message goes, rewrites
 * ids and progress tokens through the correlation table, answers errors itself when something
 * cannot be delivered, and emits every hop to the tap bus as a MEUP envelope with its correlation
 * and context. It owns no sockets and no files.
 *
 * Trace contexts: `<session>` for session-level traffic; a client request opens
 * `<session>/<request-envelope-id>` and everything it causes lives there; a server->client request
 * caused by it opens one level deeper.
 */

import type { TransportContext, TransportKind } from '../envelope/message-context.js';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError, rejectionAsJsonRpcError } from '../errors/to-jsonrpc-error.js';
import { newEnvelopeId } from '../meup/ids.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import { resultTextOffset } from '../protocol/jsonrpc/result-text.js';
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
} from '../protocol/jsonrpc/types.js';
import {
  cancelledNotification,
  cancelledRequestId,
  progressNotificationToken,
  progressTokenOf,
  rewriteRequest,
  withCancelledRequestId,
  withProgressToken,
} from '../protocol/mcp/progress.js';
import { DEFAULT_REVISION, MODERN_REVISION, type ProtocolVersion } from '../protocol/mcp/revisions.js';
import { type Attribution, attributeServerRequest } from './attribution.js';
import { runInterceptors } from './call-pipeline.js';
import {
  type ClientRequestEntry,
  CorrelationTable,
  type LinkId,
  type ServerRequestEntry,
  type SessionKey,
} from './correlation-table.js';
import { clientInHop, fromUpstreamHop, toClientHop, toUpstreamHop } from './hops.js';
import { type InboundItem, readInbound } from './inbound.js';
import {
  type LinkPhase,
  Observations,
  type ObservedCall,
  type ObservedUpstreamRequest,
  responseOutcome,
} from './observations.js';
import type {
  AddLink,
  Delivery,
  DownstreamPort,
  InboundMeta,
  LinkHost,
  OpenSession,
  SessionHost,
  SessionState,
  SessionView,
  UpstreamClose,
  UpstreamTransport,
} from './ports.js';
import {
  type Admission,
  type CallInfo,
  type CallInterceptor,
  type CallOutcome,
  DEFAULT_MAX_PENDING_ROUTES,
  type LocalAnswer,
  type LocalCall,
  type RequestResolver,
  type Resolution,
  type RouterOptions,
  type TraceContextWriter,
  type UpstreamReply,
} from './router-types.js';
import { INTERNAL_SESSION } from './session-key.js';
import { type HopFields, LazyHopEvent, TapBus } from './taps.js';
import { GATEWAY_PARTICIPANT, wallNow } from './trace-mapping.js';

export type { SessionState, SessionView } from './ports.js';
export {
  type Admission,
  type CallInfo,
  type CallInterceptor,
  type CallOutcome,
  DEFAULT_MAX_PENDING_ROUTES,
  type LocalAnswer,
  type LocalCall,
  type OutboundRequestHop,
  type RequestResolver,
  type Resolution,
  type RouterOptions,
  type TraceContextWriter,
  type UpstreamReply,
} from './router-types.js';
export { INTERNAL_SESSION } from './session-key.js';

/** The router's own record of a client request (see `CallInfo`). */
interface ClientCall {
  readonly session: SessionRecord;
  readonly request: JsonRpcRequest;
  readonly key: string;
  readonly traceId: string;
  readonly context: string;
  readonly receivedAt: number;
  /**
   * Made when someone first asks for the call's signal: creating an `AbortSignal` costs several
   * microseconds (and garbage), and most calls end without anyone listening for their abort.
   */
  controller?: AbortController;
  /** Set when the call is aborted (cancelled, or its session ended), signal made or not. */
  aborted: boolean;
  /** What the interceptors see, made once per call when the first interceptor needs it. */
  info?: CallInfo;
  upstream?: string;
  routed?: JsonRpcRequest;
  done: boolean;
  /** How many times the resolver answered `pending` for this call (it is routed once, at most). */
  pendingRoutes?: number;
  /** Set once the call no longer counts in `callsInFlight` (see `#callEnded`). */
  ended?: boolean;
  /** Set when an interceptor's `admit` refused it (for observers: `refused`, not `error`). */
  refused?: boolean;
  /** The call as observers saw it start; set only while observers are registered. */
  observed?: ObservedCall;
}

interface ClientTag {
  /** The client request this upstream request serves (absent for the gateway's own). */
  readonly call?: ClientCall;
  readonly traceId: string;
  readonly upstreamTraceId: string;
  readonly context: string;
  readonly upstream: string;
  /** Set for the gateway's own requests: who waits for the answer. */
  readonly internal?: { resolve(reply: UpstreamReply): void; reject(error: JsonRpcErrorObject): void };
  /** The session whose trace the request belongs to (for internal requests, the one it serves). */
  readonly traceSession: SessionKey;
  /** The request as observers saw it start; set only while observers are registered. */
  observed?: ObservedUpstreamRequest;
}

interface ServerTag {
  readonly traceId: string;
  readonly downTraceId: string;
  readonly context: string;
  readonly upstream: string;
  /** The upstream id of the client request it was attributed to, if any. */
  readonly parentUpstreamId?: RequestId;
}

interface SessionRecord {
  key: SessionKey;
  mcpSessionId?: string;
  principal?: string;
  roles?: readonly string[];
  transport: TransportKind;
  protocolVersion: ProtocolVersion;
  state: SessionState;
  initializeParams?: JsonObject;
  port: DownstreamPort;
  transportContext: TransportContext;
  /** Every client request in flight, by downstream id key (forwarded, held, or answered locally). */
  calls: Map<string, ClientCall>;
  /** The session as resolvers and interceptors see it (see `LiveSessionView`), made on first use. */
  live?: SessionView;
}

type LinkState = 'ready' | 'starting' | 'down';

/** A wait for a link to become ready (see `Router.whenLinkReady`). */
interface LinkWaiter {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: JsonRpcErrorObject): void;
}

interface LinkRecord {
  readonly id: LinkId;
  readonly name: string;
  transport: UpstreamTransport;
  transportContext: TransportContext;
  state: LinkState;
  downReason?: string;
  queue: { json: string; message: JsonRpcMessage }[];
}

/** A tool result that says `isError: true` (the tool's own failure, not a JSON-RPC error). */
function isErrorResult(result: unknown): boolean {
  return typeof result === 'object' && result !== null && (result as { isError?: unknown }).isError === true;
}

/** How a call ends, carried through its interceptors' `complete` (see `Router.#finish`). */
type Admitter = CallInterceptor & Required<Pick<CallInterceptor, 'admit'>>;
type Completer = CallInterceptor & Required<Pick<CallInterceptor, 'complete'>>;

/** How a call ends, beyond its payload (`Router.#finish`). */
interface FinishOptions {
  /** Trace ids of the upstream responses the answer was built from (default none). */
  readonly derivedFrom?: readonly string[];
  /** False when the client no longer wants the response: cancelled, or its session ended (default true). */
  readonly deliver?: boolean;
  /** The upstream that answered, for the trace. */
  readonly upstream?: string;
}

interface Ending {
  readonly call: ClientCall;
  readonly derivedFrom: readonly string[];
  /** False when the client no longer wants the response (cancelled, or its session ended). */
  readonly deliver: boolean;
  readonly upstream: string | undefined;
  /** The completers when the call ended (the list is replaced, never changed, when one is added). */
  readonly completers: readonly CallInterceptor[];
  /** The interceptors with a `delivered`, when the call ended (likewise). */
  readonly deliverers: readonly CallInterceptor[];
  readonly outcome: CallOutcome;
}

const NONE: readonly string[] = Object.freeze([]);

/** The call's abort signal, made on first use (already aborted when the call was). */
function signalOf(call: ClientCall): AbortSignal {
  if (call.controller === undefined) {
    call.controller = new AbortController();
    if (call.aborted) call.controller.abort();
  }
  return call.controller.signal;
}

/**
 * A call as interceptors see it (`CallInfo`): one per call, shared by `admit` and `complete`. A
 * class, not an object literal with a getter, so that making one is a plain allocation.
 */
class CallView implements CallInfo {
  readonly session: SessionView;
  readonly request: JsonRpcRequest;
  readonly traceId: string;
  readonly context: string;
  readonly receivedAt: number;
  readonly upstream: string | undefined;
  readonly routed: JsonRpcRequest | undefined;
  readonly notes = new Map<string, unknown>();
  readonly #call: ClientCall;

  constructor(call: ClientCall, session: SessionView) {
    this.#call = call;
    this.session = session;
    this.request = call.request;
    this.traceId = call.traceId;
    this.context = call.context;
    this.receivedAt = call.receivedAt;
    this.upstream = call.upstream;
    this.routed = call.routed;
  }

  get signal(): AbortSignal {
    return signalOf(this.#call);
  }
}

/**
 * A `SessionView` that reads the session's record whenever it is read, so one object serves every
 * request of the session (resolution, interceptors) instead of a copy per request, and a call's
 * interceptors see the session as it is when they run (an `initialize` completes with the
 * negotiated version). Callers of `Router.session()` get a snapshot instead.
 */
class LiveSessionView implements SessionView {
  readonly #record: SessionRecord;

  constructor(record: SessionRecord) {
    this.#record = record;
  }

  get key(): SessionKey {
    return this.#record.key;
  }

  get mcpSessionId(): string | undefined {
    return this.#record.mcpSessionId;
  }

  get principal(): string | undefined {
    return this.#record.principal;
  }

  get roles(): readonly string[] | undefined {
    return this.#record.roles;
  }

  get transport(): TransportKind {
    return this.#record.transport;
  }

  get protocolVersion(): ProtocolVersion {
    return this.#record.protocolVersion;
  }

  get state(): SessionState {
    return this.#record.state;
  }

  get initializeParams(): JsonObject | undefined {
    return this.#record.initializeParams;
  }
}

/** What the log says of something thrown: its stack when it has one. */
function errorText(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/**
 * A JSON-RPC error object from anything rejected (`rejectionAsJsonRpcError`); anything else becomes
 * `message` under `code`, without the thrown text (internals stay in the log, not on the wire).
 */
function asRpcError(error: unknown, code: SbErrorCode, message: string): JsonRpcErrorObject {
  return rejectionAsJsonRpcError(error, () => gatewayError(code, message));
}

export class Router implements SessionHost, LinkHost {
  readonly #resolver: RequestResolver;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #taps: TapBus;
  readonly #table: CorrelationTable<ClientTag, ServerTag>;
  readonly #sessions = new Map<SessionKey, SessionRecord>();
  readonly #links = new Map<LinkId, LinkRecord>();
  /** Who waits for a link to be ready (`whenLinkReady`): one wait per link while it is not. */
  readonly #linkWaiters = new Map<LinkId, LinkWaiter>();
  readonly #maxQueued: number;
  readonly #maxPendingRoutes: number;
  readonly #maxJsonDepth: number | undefined;
  /** Writes the gateway's trace context into the requests it sends (OpenTelemetry on), else undefined. */
  readonly #traceContext: TraceContextWriter | undefined;
  /** Who hears of calls, upstream requests and sessions (metrics, tracing): see observations.ts. */
  readonly observations: Observations;
  #internalCounter = 0;
  /**
   * The interceptors with an `admit`, and those with a `complete`, in the order they were added.
   * Replaced (never changed) when one is added, so a call in progress keeps the list it started with.
   */
  #admitters: readonly CallInterceptor[] = [];
  #completers: readonly CallInterceptor[] = [];
  #deliverers: readonly CallInterceptor[] = [];
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #closed = false;
  /** Set by `beginDrain`: new client requests are refused. */
  #draining = false;
  /** Client requests received and not yet answered (or dropped): see `callsInFlight`. */
  #inFlight = 0;
  /** Who waits for `#inFlight` to reach 0 (`whenNoCallsInFlight`). */
  #idleWaiters: (() => void)[] = [];

  /** A router with no sessions and no links yet; its taps default to an empty bus. */
  constructor(options: RouterOptions) {
    this.#resolver = options.resolver;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#taps = options.taps ?? new TapBus(options.logger, options.metrics);
    this.#table = new CorrelationTable(options.timeouts);
    this.#maxQueued = options.maxQueuedPerLink ?? 10_000;
    this.#maxPendingRoutes = options.maxPendingRoutes ?? DEFAULT_MAX_PENDING_ROUTES;
    this.#maxJsonDepth = options.maxJsonDepth;
    this.#traceContext = options.traceContext;
    this.observations = new Observations(options.logger, options.metrics, options.observers);
    for (const interceptor of options.interceptors ?? []) this.addInterceptor(interceptor);
  }

  /** Adds an interceptor; interceptors run in the order they were added. */
  addInterceptor(interceptor: CallInterceptor): void {
    if (interceptor.admit) this.#admitters = [...this.#admitters, interceptor];
    if (interceptor.complete) this.#completers = [...this.#completers, interceptor];
    if (interceptor.delivered) this.#deliverers = [...this.#deliverers, interceptor];
  }

  /** The tap bus every hop is emitted to (add a tap to it to observe traffic). */
  get taps(): TapBus {
    return this.#taps;
  }

  /** How many requests to upstreams are in the correlation table (cancelled ones awaiting a late answer too). */
  get pendingRequests(): number {
    return this.#table.clientRequestCount;
  }

  // ---------------------------------------------------------------- links

  /**
   * Attaches an upstream connection as `id` (replacing a dead one with the same id after a restart).
   * A link added in state `starting` queues client traffic until `setLinkReady`.
   */
  addLink(params: AddLink): void {
    // A link re-added after a restart keeps what clients sent during the backoff: those messages
    // were queued after the old connection's in-flight work was failed, and belong to the new one.
    const previous = this.#links.get(params.id);
    const link: LinkRecord = {
      id: params.id,
      name: params.name,
      transport: params.transport,
      transportContext: params.transportContext,
      state: params.state ?? 'ready',
      queue: previous && previous.state !== 'down' ? previous.queue : [],
    };
    this.#links.set(params.id, link);
    params.transport.onmessage = (text, meta) => this.handleUpstreamText(params.id, text, meta);
    if (this.observations.active) this.#observeLink(link, link.state);
  }

  /**
   * Marks link `id` ready (its initialize handshake done): sends what was queued for it, in order,
   * and settles `whenLinkReady` waits. Ignored for an unknown link or one that is down.
   */
  setLinkReady(id: LinkId): void {
    const link = this.#links.get(id);
    if (!link || link.state === 'down') return;
    link.state = 'ready';
    if (this.observations.active) this.#observeLink(link, 'ready');
    const queued = link.queue.splice(0);
    for (const item of queued) {
      try {
        link.transport.send(item.json, item.message);
      } catch (error) {
        this.#sendFailed(link, item.message, error);
      }
    }
    const waiter = this.#linkWaiters.get(id);
    if (waiter) {
      this.#linkWaiters.delete(id);
      waiter.resolve();
    }
  }

  /** Link `id`'s state (`starting`, `ready`, `down`), or undefined if it was never attached. */
  linkState(id: LinkId): LinkState | undefined {
    return this.#links.get(id)?.state;
  }

  /**
   * Settles when the link is next ready: at once if it is; else when `setLinkReady` marks it ready
   * (after a first start or a restart); rejected when it goes down for good, or the router closes.
   * A link not attached yet is waited for too. Each time the link leaves `ready` a new wait begins,
   * so a promise from this never answers for an earlier state of the link. It sets no timer: a
   * caller bounds its own wait.
   */
  whenLinkReady(id: LinkId): Promise<void> {
    const link = this.#links.get(id);
    if (link?.state === 'ready') return Promise.resolve();
    if (link?.state === 'down' || this.#closed) return Promise.reject(this.#linkGone(id, link));
    let waiter = this.#linkWaiters.get(id);
    if (!waiter) {
      let settle: Omit<LinkWaiter, 'promise'> = { resolve() {}, reject() {} };
      const promise = new Promise<void>((resolve, reject) => {
        settle = { resolve, reject };
      });
      // Nobody may be waiting any more when it is rejected.
      promise.catch(() => undefined);
      waiter = { promise, ...settle };
      this.#linkWaiters.set(id, waiter);
    }
    return waiter.promise;
  }

  /** The error of a wait for a link that is down for good (or a router that closed). */
  #linkGone(id: LinkId, link: LinkRecord | undefined): JsonRpcErrorObject {
    const name = link?.name ?? id;
    if (this.#closed && link?.state !== 'down')
      return gatewayError(
        SbErrorCode.UpstreamUnavailable,
        `upstream ${name} is not available: the gateway is closing`,
        {
          upstream: name,
        },
      );
    const why = link?.downReason ? `: ${link.downReason}` : '';
    return gatewayError(SbErrorCode.UpstreamUnavailable, `upstream ${name} is not available${why}`, {
      upstream: name,
    });
  }

  /** The upstream name of link `id` (what logs, metrics and the trace call it), if attached. */
  linkName(id: LinkId): string | undefined {
    return this.#links.get(id)?.name;
  }

  /**
   * The upstream connection behind `id` is gone. Every client request in flight on it is answered
   * with an error at once (never a hang), the gateway's own requests are rejected, and the clients
   * are told that the server's requests to them are cancelled.
   */
  linkClosed(id: LinkId, close: UpstreamClose, options: { readonly restarting?: boolean } = {}): void {
    const link = this.#links.get(id);
    if (!link) return;
    link.state = options.restarting ? 'starting' : 'down';
    link.downReason = close.reason;
    if (this.observations.active) this.#observeLink(link, options.restarting ? 'restarting' : 'down');
    const released = this.#table.closeLink(id);
    const error = gatewayError(SbErrorCode.UpstreamExited, `upstream ${link.name} closed: ${close.reason}`, {
      upstream: link.name,
      ...(close.code === undefined ? {} : { exitCode: close.code }),
      ...(close.signal ? { signal: close.signal } : {}),
    });
    for (const entry of released.clientRequests) this.#failClientRequest(entry, error);
    for (const entry of released.serverRequests)
      this.#cancelTowardClient(entry, `upstream ${link.name} closed`);
    // Whatever waited for this connection is void: its requests were just answered with an error
    // (sending them to a new connection would run calls the client was told failed, under ids the
    // new connection hands out again), and the rest referred to the old connection's state.
    const dropped = link.queue.splice(0);
    if (dropped.length > 0)
      this.#metrics.inc('queued_dropped_total', { upstream: link.name }, dropped.length);
    const waiter = this.#linkWaiters.get(id);
    if (waiter && link.state === 'down') {
      this.#linkWaiters.delete(id);
      waiter.reject(this.#linkGone(id, link));
    }
    this.#scheduleExpiry();
  }

  // ---------------------------------------------------------------- sessions

  /**
   * Registers a client session under `params.key` (state `uninitialized`, the default revision
   * unless given) with the port its messages go out by, and returns a snapshot of it.
   */
  openSession(params: OpenSession): SessionView {
    const record: SessionRecord = {
      key: params.key,
      transport: params.transport,
      transportContext: params.transportContext,
      protocolVersion: params.protocolVersion ?? DEFAULT_REVISION,
      state: 'uninitialized',
      port: params.port,
      calls: new Map(),
    };
    if (params.mcpSessionId !== undefined) record.mcpSessionId = params.mcpSessionId;
    if (params.principal !== undefined) record.principal = params.principal;
    if (params.roles !== undefined) record.roles = params.roles;
    this.#sessions.set(params.key, record);
    if (this.observations.active) this.#observeSession(record, undefined);
    return this.#view(record);
  }

  /** A snapshot (a copy, not live) of session `key`, or undefined once it is closed or unknown. */
  session(key: SessionKey): SessionView | undefined {
    const record = this.#sessions.get(key);
    return record ? this.#view(record) : undefined;
  }

  /** A session's negotiated protocol version, without copying the session as `session()` does. */
  sessionProtocol(key: SessionKey): ProtocolVersion | undefined {
    return this.#sessions.get(key)?.protocolVersion;
  }

  /** Records the negotiated version for a session whose `initialize` the gateway answered itself. */
  setSessionProtocol(key: SessionKey, protocolVersion: ProtocolVersion): void {
    const record = this.#sessions.get(key);
    if (record) record.protocolVersion = protocolVersion;
  }

  /** Replaces the way out of a session (a transport reconnecting). */
  setSessionPort(key: SessionKey, port: DownstreamPort): void {
    const record = this.#sessions.get(key);
    if (record) record.port = port;
  }

  /**
   * Ends a session: its requests still in flight are cancelled upstream, the servers' requests to
   * it are answered with an error so no server waits forever, and local work is aborted.
   */
  closeSession(key: SessionKey, reason: string): void {
    const record = this.#sessions.get(key);
    if (!record) return;
    record.state = 'closed';
    this.#sessions.delete(key);
    if (this.observations.active) this.#observeSession(record, reason);
    for (const call of [...record.calls.values()]) {
      this.#abortCall(call);
      this.#finish(
        call,
        { error: gatewayError(SbErrorCode.Internal, `client session closed: ${reason}`) },
        { deliver: false },
      );
    }
    const released = this.#table.closeSession(key);
    for (const entry of released.clientRequests) {
      if (!entry.cancelled) this.#sendCancelUpstream(entry, reason);
    }
    for (const entry of released.serverRequests) {
      this.#answerUpstream(entry, {
        code: JsonRpcCode.UpstreamClosed,
        message: `client session closed: ${reason}`,
      });
    }
  }

  /** How many client sessions are open. */
  get sessionCount(): number {
    return this.#sessions.size;
  }

  // ---------------------------------------------------------------- draining

  /**
   * The gateway is shutting down: from now on every new client request is answered at once with
   * `SB_SHUTTING_DOWN` (its own id, through the interceptors, so the ledger records the refusal).
   * Everything else goes on: calls in flight, their progress, the servers' requests to clients and
   * the clients' answers, cancellations. Irreversible.
   */
  beginDrain(): void {
    this.#draining = true;
  }

  /** Whether `beginDrain` was called: new client requests are then refused. */
  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Client requests received and not answered yet: forwarded, held by an interceptor, answered
   * locally, waiting for a route, or with their answer held by an interceptor's `complete` (an
   * audit record being made durable). A request counts until its answer is written to its session
   * (or dropped: cancelled, session ended).
   */
  get callsInFlight(): number {
    return this.#inFlight;
  }

  /** Settles once no client request is in flight (at once if none is). Sets no timer. */
  whenNoCallsInFlight(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Ends every client request still in flight with `error`, delivered to its client under its own
   * id like any answer; forwarded ones are cancelled upstream (`notifications/cancelled` with
   * `reason`), and a late answer from the upstream is dropped. Answers whose `complete` is already
   * under way are left to it. Returns how many requests were ended.
   */
  endCallsInFlight(error: JsonRpcErrorObject, reason: string): number {
    let ended = 0;
    for (const session of this.#sessions.values()) {
      for (const call of [...session.calls.values()]) {
        if (call.done) continue;
        ended++;
        this.#step(call, 'drain', () => {
          this.#abortCall(call);
          const entry = this.#table.cancelClientRequest(session.key, call.request.id, performance.now());
          if (entry) this.#sendCancelUpstream(entry, reason);
          this.#finish(call, { error });
        });
      }
    }
    this.#scheduleExpiry();
    return ended;
  }

  /**
   * A client request got its answer (`response`, as sent), or will never get one (undefined): it
   * is no longer in flight.
   */
  #callEnded(call: ClientCall, response: JsonRpcResponse | undefined): void {
    // Once per call, whichever way it ends (an answer, a drop, or a failure of both).
    if (call.ended) return;
    call.ended = true;
    if (call.observed !== undefined) this.#observeCallEnd(call, call.observed, response);
    this.#inFlight--;
    if (this.#inFlight > 0 || this.#idleWaiters.length === 0) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /**
   * Whether a request of this session with this id is in flight (forwarded, held, or being
   * answered locally): a transport refuses another request under the same id itself, since two
   * answers under one id cannot be told apart (see `batch-plan.ts`).
   */
  hasCall(key: SessionKey, id: RequestId): boolean {
    return this.#sessions.get(key)?.calls.has(idKey(id)) ?? false;
  }

  // ---------------------------------------------------------------- from clients

  /**
   * One valid message from a client session. (Transports parse and answer malformed input
   * themselves; see `inbound.ts`.) `raw` is the message's own JSON text when the transport has it.
   */
  handleClientMessage(
    key: SessionKey,
    message: JsonRpcMessage,
    transport: TransportContext,
    raw?: string,
  ): void {
    const session = this.#sessions.get(key);
    if (!session) {
      this.#metrics.inc('unknown_session_messages_total');
      return;
    }
    const receivedAt = wallNow();
    try {
      if ('method' in message) {
        if ('id' in message) this.#clientRequest(session, message, transport, receivedAt, raw);
        else this.#clientNotification(session, message, transport, receivedAt, raw);
      } else {
        this.#clientResponse(session, message, transport, receivedAt, raw);
      }
    } catch (error) {
      // A request's own failures end it (`#step`); this is everything else: logged, counted, and
      // the transport that called goes on.
      this.#metrics.inc('message_failures_total', { direction: 'client->server' });
      this.#logger.error(
        { session: key, err: errorText(error) },
        'the gateway failed while handling a client message',
      );
    }
  }

  #clientRequest(
    session: SessionRecord,
    request: JsonRpcRequest,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const traceId = newEnvelopeId();
    const context = `${session.key}/${traceId}`;
    this.#hop(clientInHop(session, transport, { id: traceId, message: request, context, receivedAt, raw }));
    const key = idKey(request.id);
    if (session.calls.has(key)) {
      // JSON-RPC ids must be unique among a sender's requests in flight: refuse, keep the first.
      this.#metrics.inc('duplicate_request_ids_total');
      const error = {
        code: JsonRpcCode.InvalidRequest,
        message: `Invalid Request: id ${JSON.stringify(request.id)} is already in use by a request in flight`,
      };
      this.#answerClient(session, request.id, { error }, [traceId], context, receivedAt);
      return;
    }
    if (request.method === 'initialize') {
      session.state = 'initializing';
      if (isObject(request.params)) session.initializeParams = request.params;
    }
    const call: ClientCall = {
      session,
      request,
      key,
      traceId,
      context,
      receivedAt,
      aborted: false,
      done: false,
    };
    session.calls.set(key, call);
    this.#inFlight++;
    if (this.observations.active) this.#observeCallStart(call);
    if (this.#draining) {
      this.#metrics.inc('drain_refused_total');
      this.#step(call, 'drain', () =>
        this.#finish(call, {
          error: gatewayError(
            SbErrorCode.ShuttingDown,
            'the gateway is shutting down and takes no new requests; send it again once it is back',
          ),
        }),
      );
      return;
    }
    this.#step(call, 'route', () => this.#route(call));
  }

  /**
   * Runs one step of a call's handling (its routing, or a continuation after something it waited
   * for). Whatever the step throws ends that call, never the process nor the caller: see
   * `#crashed`. Every path of a request goes through here, synchronous or not.
   */
  #step(call: ClientCall, stage: string, step: () => void): void {
    try {
      step();
    } catch (error) {
      this.#crashed(call, stage, error);
    }
  }

  /**
   * A call whose handling threw: logged with the stage and counted; released from the
   * correlation table (and cancelled upstream, in case it went out); answered with an internal
   * error under its own id, unless it was already answered. Its id is usable again at once.
   */
  #crashed(call: ClientCall, stage: string, error: unknown): void {
    this.#metrics.inc('request_failures_total', { stage });
    this.#logger.error(
      { session: call.session.key, method: call.request.method, stage, err: errorText(error) },
      'the gateway failed while handling a request; it is answered with an error',
    );
    try {
      const entry = this.#table.findClientRequest(call.session.key, call.request.id);
      if (entry && entry.tag.call === call) {
        this.#table.takeServerResponse(entry.link, entry.upstreamId);
        this.#sendCancelUpstream(entry, 'the gateway failed while handling the request');
      }
      this.#finish(call, {
        error: gatewayError(SbErrorCode.Internal, 'the gateway failed while handling this request'),
      });
    } catch (again) {
      // Even the error answer failed (a transport that throws on everything): the call is at
      // least released, so that its id is usable again and nothing waits for it.
      if (call.session.calls.get(call.key) === call) call.session.calls.delete(call.key);
      call.done = true;
      this.#callEnded(call, {
        jsonrpc: '2.0',
        id: call.request.id,
        error: gatewayError(SbErrorCode.Internal, 'the gateway failed while handling this request'),
      });
      this.#logger.error({ err: errorText(again) }, 'the error answer of a failed request failed too');
    }
  }

  #route(call: ClientCall): void {
    if (call.done) return;
    const { session, request } = call;
    const resolution = this.#resolve(session, request);
    if (resolution.kind === 'error') {
      this.#finish(call, { error: resolution.error });
      return;
    }
    if (resolution.kind === 'pending') {
      this.#waitForRoute(call, resolution.ready);
      return;
    }
    if (resolution.kind === 'forward') {
      const link = this.#links.get(resolution.link);
      call.upstream = link?.name ?? resolution.link;
      call.routed = resolution.message ?? request;
    }
    this.#admit(call, resolution, this.#admitters, 0);
  }

  /**
   * A call whose route is not ready waits for `ready`, then is routed again in a later turn of the
   * event loop (`setImmediate`, not the promise's own microtask): a resolver that answers `pending`
   * with a promise already settled would otherwise loop without ever letting a timer, a socket or a
   * signal handler run. After `maxPendingRoutes` waits in a row the call ends with an error.
   */
  #waitForRoute(call: ClientCall, ready: Promise<unknown>): void {
    call.pendingRoutes = (call.pendingRoutes ?? 0) + 1;
    if (call.pendingRoutes > this.#maxPendingRoutes) {
      this.#metrics.inc('route_unresolved_total');
      this.#logger.warn(
        { method: call.request.method, waits: this.#maxPendingRoutes },
        'a request never got a route; answered with an error',
      );
      this.#finish(call, {
        error: gatewayError(
          SbErrorCode.RouteUnresolved,
          `no route for ${call.request.method} after waiting ${this.#maxPendingRoutes} times for its upstream`,
        ),
      });
      return;
    }
    // `Promise.resolve` also accepts a resolver's thenable (or a value) without throwing here.
    Promise.resolve(ready).then(
      () => {
        if (!call.done) setImmediate(() => this.#step(call, 'route', () => this.#route(call)));
      },
      (error: unknown) =>
        this.#step(call, 'route', () =>
          this.#finish(call, {
            error: asRpcError(
              error,
              SbErrorCode.UpstreamUnavailable,
              'the upstream for this request could not be reached',
            ),
          }),
        ),
    );
  }

  /**
   * Runs the interceptors' `admit` in order from `index`, then sends the call on its way; the first
   * refusal answers the client. Admissions decided synchronously go on in the same turn (no promise,
   * no closure): only an interceptor that answers with a promise makes the call wait for it.
   */
  #admit(
    call: ClientCall,
    resolution: Extract<Resolution, { kind: 'forward' | 'local' }>,
    admitters: readonly CallInterceptor[],
    index: number,
  ): void {
    if (call.done) return;
    const ranThrough = runInterceptors<Admission, CallInterceptor>(
      admitters,
      index,
      (interceptor) => (interceptor as Admitter).admit(this.#callInfo(call)),
      (admission) => {
        if (admission.allow) return !call.done;
        call.refused = true;
        this.#finish(call, { error: admission.error });
        return false;
      },
      (admission, interceptor, i) =>
        admission.then(
          (a) =>
            this.#step(call, 'admit', () => {
              if (call.done) return;
              if (a.allow) this.#admit(call, resolution, admitters, i + 1);
              else {
                call.refused = true;
                this.#finish(call, { error: a.error });
              }
            }),
          (error: unknown) =>
            this.#step(call, 'admit', () => {
              this.#logger.error(
                { interceptor: interceptor.name, err: String(error) },
                'an interceptor failed to admit a call',
              );
              this.#finish(call, {
                error: gatewayError(SbErrorCode.Internal, 'the gateway could not decide on this request'),
              });
            }),
        ),
    );
    if (!ranThrough || call.done) return;
    if (resolution.kind === 'local') this.#runLocal(call, resolution.handle);
    else this.#forward(call, resolution.link);
  }

  #forward(call: ClientCall, linkId: LinkId): void {
    const { session, request, traceId, context, receivedAt } = call;
    const link = this.#links.get(linkId);
    if (!link || link.state === 'down') {
      const name = link?.name ?? linkId;
      const why = link?.downReason ? `: ${link.downReason}` : '';
      const error = gatewayError(SbErrorCode.UpstreamUnavailable, `upstream ${name} is not available${why}`, {
        upstream: name,
      });
      this.#finish(call, { error });
      return;
    }
    const refusal = link.transport.refuse?.(call.routed ?? request);
    if (refusal) {
      this.#metrics.inc('upstream_requests_refused_total', { upstream: link.name });
      this.#finish(call, { error: refusal });
      return;
    }
    const progressToken = progressTokenOf(request);
    const upstreamTraceId = newEnvelopeId();
    const opened = this.#table.openClientRequest({
      session: session.key,
      downstreamId: request.id,
      link: link.id,
      method: request.method,
      now: performance.now(),
      tag: { call, traceId, upstreamTraceId, context, upstream: link.name, traceSession: session.key },
      ...(progressToken === undefined ? {} : { progressToken }),
    });
    if (!opened.ok) {
      // Cannot happen while `calls` guards ids; kept so the table's own guard is never bypassed.
      this.#finish(call, {
        error: {
          code: JsonRpcCode.InvalidRequest,
          message: `Invalid Request: id ${JSON.stringify(request.id)} is already in use by a request in flight`,
        },
      });
      return;
    }
    if (this.observations.active)
      this.#observeUpstreamStart(opened.entry.tag, link.id, call.routed ?? request);
    const upstreamMessage = rewriteRequest(
      call.routed ?? request,
      opened.entry.upstreamId,
      opened.entry.upstreamProgressToken,
    );
    const sent = this.#sendToLink(link, upstreamMessage, {
      id: upstreamTraceId,
      session,
      correlation: [traceId],
      context,
      receivedAt,
    });
    if (!sent) {
      // Nothing went out (or the transport cannot say it did): the entry goes, the call fails now.
      this.#table.takeServerResponse(link.id, opened.entry.upstreamId);
      const error = gatewayError(
        SbErrorCode.Internal,
        `the gateway could not send this request to upstream ${link.name}`,
        { upstream: link.name },
      );
      this.#observeUpstreamEnd(opened.entry.tag, { error });
      if (!call.done) this.#finish(call, { error });
      return;
    }
    this.#scheduleExpiry();
  }

  #resolve(session: SessionRecord, request: JsonRpcRequest): Resolution {
    try {
      return this.#resolver.resolve(this.#liveView(session), request);
    } catch (error) {
      this.#logger.error({ err: String(error), method: request.method }, 'the resolver failed');
      return {
        kind: 'error',
        error: gatewayError(SbErrorCode.Internal, 'the gateway could not route this request'),
      };
    }
  }

  #runLocal(call: ClientCall, handle: (call: LocalCall) => Promise<LocalAnswer>): void {
    const { session, request, traceId, context } = call;
    const signal = signalOf(call);
    const local: LocalCall = {
      session: this.#liveView(session),
      request,
      traceId,
      context,
      signal,
      requestUpstream: (link, method, params) =>
        this.requestUpstream(link, method, params, {
          traceSession: session.key,
          context,
          correlation: [traceId],
          signal,
          observedCall: call.observed,
        }),
    };
    let answer: Promise<LocalAnswer>;
    try {
      answer = handle(local);
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (result) =>
        this.#step(call, 'local', () => {
          const payload = result.error ? { error: result.error } : { result: result.result ?? {} };
          this.#finish(call, payload, { derivedFrom: result.derivedFrom ?? NONE });
        }),
      (error: unknown) =>
        this.#step(call, 'local', () => {
          if (!call.done)
            this.#logger.error({ err: String(error), method: request.method }, 'a local handler failed');
          this.#finish(call, {
            error: asRpcError(error, SbErrorCode.Internal, 'the gateway failed to answer this request'),
          });
        }),
    );
  }

  /** The call as interceptors see it: one object per call, shared by `admit` and `complete`. */
  #callInfo(call: ClientCall): CallInfo {
    // Made after routing: `upstream` and `routed` are set before the first `admit` and never change.
    call.info ??= new CallView(call, this.#liveView(call.session));
    return call.info;
  }

  /** Aborts a call's signal, or makes it born aborted if nobody asked for it yet. */
  #abortCall(call: ClientCall): void {
    call.aborted = true;
    call.controller?.abort();
  }

  #liveView(record: SessionRecord): SessionView {
    record.live ??= new LiveSessionView(record);
    return record.live;
  }

  /**
   * The one way a client request ends. The interceptors' `complete` see the response (and may
   * replace or hold it); then it is delivered, unless the client no longer wants it (`deliver`
   * false: cancelled, or its session ended). Idempotent: only the first call counts.
   */
  #finish(
    call: ClientCall,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    options: FinishOptions = {},
  ): void {
    if (call.done) return;
    const { derivedFrom = NONE, deliver = true, upstream } = options;
    call.done = true;
    if (call.session.calls.get(call.key) === call) call.session.calls.delete(call.key);
    const response = { jsonrpc: '2.0', id: call.request.id, ...payload } as JsonRpcResponse;
    const ending: Ending = {
      call,
      derivedFrom,
      deliver,
      upstream,
      completers: this.#completers,
      deliverers: this.#deliverers,
      outcome: { delivered: deliver && call.session.state !== 'closed' },
    };
    if (ending.completers.length === 0) this.#sendResponse(ending, response);
    else this.#complete(ending, response, 0);
  }

  /**
   * Runs the interceptors' `complete` in order from `index`, then delivers. Completions answered
   * synchronously go on in the same turn; one that answers with a promise holds the response
   * until it settles.
   */
  #complete(ending: Ending, response: JsonRpcResponse, index: number): void {
    const { call, completers, outcome } = ending;
    const info = this.#callInfo(call);
    let current = response;
    const ranThrough = runInterceptors<JsonRpcResponse | undefined, CallInterceptor>(
      completers,
      index,
      (interceptor) => (interceptor as Completer).complete(info, current, outcome),
      (next) => {
        if (next !== undefined) current = next;
        return true;
      },
      (next, interceptor, i) => {
        const held = current;
        next.then(
          (replaced) => this.#settle(ending, () => this.#complete(ending, replaced ?? held, i + 1)),
          (error: unknown) =>
            this.#settle(ending, () => {
              this.#logger.error(
                { interceptor: interceptor.name, err: String(error) },
                'an interceptor failed to complete a call',
              );
              this.#complete(
                ending,
                {
                  jsonrpc: '2.0',
                  id: call.request.id,
                  error: gatewayError(
                    SbErrorCode.Internal,
                    'the gateway failed while completing this request',
                  ),
                },
                i + 1,
              );
            }),
        );
      },
    );
    if (ranThrough) this.#sendResponse(ending, current);
  }

  /**
   * A continuation of a call that has already ended (its interceptors' `complete` settling):
   * whatever it throws is logged and counted, and the client still gets an answer under its id.
   */
  #settle(ending: Ending, step: () => void): void {
    try {
      step();
    } catch (error) {
      this.#metrics.inc('request_failures_total', { stage: 'complete' });
      this.#logger.error(
        { method: ending.call.request.method, err: errorText(error) },
        'the gateway failed while completing a request; it is answered with an error',
      );
      this.#sendResponse(ending, {
        jsonrpc: '2.0',
        id: ending.call.request.id,
        error: gatewayError(SbErrorCode.Internal, 'the gateway failed while completing this request'),
      });
    }
  }

  /**
   * Delivers a call's final response, unless the client no longer wants it. A response that
   * cannot be serialised (nothing from a peer can be too deep, but a local answer or an
   * interceptor's replacement could hold anything) is replaced by an error under the same id.
   */
  #sendResponse(ending: Ending, chosen: JsonRpcResponse): void {
    const { call, upstream } = ending;
    if (!ending.deliver || call.session.state === 'closed') {
      this.#callEnded(call, undefined);
      if (call.session.state !== 'closed') this.#dropped(call);
      this.#delivered(ending, undefined);
      return;
    }
    let response = chosen;
    let json: string;
    let resultAt: number | undefined;
    try {
      json = JSON.stringify(response);
      // Where the result is in the delivered text, when someone reads it: the ledger hashes that
      // slice instead of serialising the result again, the trace digests it without parsing.
      resultAt =
        'result' in response && (ending.deliverers.length > 0 || this.#taps.wants(response))
          ? resultTextOffset(json, response)
          : undefined;
    } catch (error) {
      this.#metrics.inc('request_failures_total', { stage: 'serialise' });
      this.#logger.error(
        { method: call.request.method, err: errorText(error) },
        'a response could not be serialised; the client gets an error in its place',
      );
      response = {
        jsonrpc: '2.0',
        id: call.request.id,
        error: gatewayError(
          SbErrorCode.Internal,
          'the gateway could not serialise the response to this request',
        ),
      };
      json = JSON.stringify(response);
      resultAt = undefined;
    }
    this.#deliver(
      call.session,
      response,
      { kind: 'response', request: call.request.id },
      {
        id: newEnvelopeId(),
        correlation: [call.traceId, ...ending.derivedFrom],
        context: call.context,
        receivedAt: call.receivedAt,
        ...(upstream === undefined ? {} : { upstream }),
        ...(resultAt === undefined
          ? {}
          : { resultAt, resultIsError: isErrorResult((response as { result: unknown }).result) }),
      },
      json,
    );
    this.#callEnded(call, response);
    // A slice of the delivered text, not a copy.
    if (ending.deliverers.length > 0)
      this.#delivered(ending, resultAt === undefined ? undefined : json.slice(resultAt, -1));
  }

  /** Tells the session's transport that nothing will be sent for this call (`DownstreamPort.dropped`). */
  #dropped(call: ClientCall): void {
    try {
      call.session.port.dropped?.(call.request.id);
    } catch (error) {
      this.#metrics.inc('delivery_errors_total');
      this.#logger.error(
        { session: call.session.key, err: errorText(error) },
        'a downstream transport failed to let go of a cancelled request',
      );
    }
  }

  /** Runs the interceptors' `delivered` (see `CallInterceptor.delivered`). */
  #delivered(ending: Ending, resultText: string | undefined): void {
    if (ending.deliverers.length === 0) return;
    const info = this.#callInfo(ending.call);
    for (const interceptor of ending.deliverers) {
      try {
        interceptor.delivered?.(info, resultText);
      } catch (error) {
        this.#logger.error(
          { interceptor: interceptor.name, err: String(error) },
          'an interceptor failed after a call was answered',
        );
      }
    }
  }

  #clientNotification(
    session: SessionRecord,
    notification: JsonRpcNotification,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    if (notification.method === 'notifications/cancelled') {
      const requestId = cancelledRequestId(notification);
      const entry =
        requestId === undefined
          ? undefined
          : this.#table.cancelClientRequest(session.key, requestId, performance.now());
      const context = entry ? entry.tag.context : session.key;
      const traceId = newEnvelopeId();
      this.#hop(
        clientInHop(session, transport, {
          id: traceId,
          message: notification,
          context,
          receivedAt,
          raw,
          correlation: entry ? [entry.tag.traceId] : undefined,
        }),
      );
      const call = requestId === undefined ? undefined : session.calls.get(idKey(requestId));
      if (call) {
        this.#abortCall(call);
        this.#finish(
          call,
          { error: gatewayError(SbErrorCode.Cancelled, 'cancelled by the client') },
          { deliver: false },
        );
      }
      if (entry) {
        this.#observeUpstreamEnd(entry.tag, 'cancelled');
        const link = this.#links.get(entry.link);
        if (link) {
          this.#sendToLink(link, withCancelledRequestId(notification, entry.upstreamId), {
            id: newEnvelopeId(),
            session,
            correlation: [traceId, entry.tag.upstreamTraceId],
            context,
            receivedAt,
          });
        }
        this.#scheduleExpiry();
        return;
      }
      if (call) return;
      // MCP: cancellations of unknown or finished requests are ignored.
      this.#metrics.inc('cancellations_ignored_total');
      return;
    }
    if (notification.method === 'notifications/initialized') session.state = 'active';
    const traceId = newEnvelopeId();
    this.#hop(
      clientInHop(session, transport, {
        id: traceId,
        message: notification,
        context: session.key,
        receivedAt,
        raw,
      }),
    );
    let links: readonly LinkId[];
    if (notification.method === 'notifications/progress') {
      // Progress from a client concerns a server->client request that carried the token.
      links = this.#linksForClientProgress(session, notification);
    } else {
      try {
        links = this.#resolver.notificationLinks(this.#liveView(session), notification);
      } catch (error) {
        this.#logger.error({ err: String(error) }, 'the resolver failed on a notification');
        links = [];
      }
    }
    for (const id of links) {
      const link = this.#links.get(id);
      if (!link || link.state === 'down') continue;
      this.#sendToLink(link, notification, {
        id: newEnvelopeId(),
        session,
        correlation: [traceId],
        context: session.key,
        receivedAt,
      });
    }
  }

  #linksForClientProgress(session: SessionRecord, notification: JsonRpcNotification): LinkId[] {
    const token = progressNotificationToken(notification);
    if (token === undefined) return [];
    const links: LinkId[] = [];
    for (const link of this.#links.values()) {
      // Server request tokens are not rewritten, so match on the token the server chose.
      if (this.#table.hasServerProgressToken(session.key, link.id, token)) links.push(link.id);
    }
    if (links.length === 0) this.#metrics.inc('progress_unroutable_total', { direction: 'client->server' });
    return links;
  }

  #clientResponse(
    session: SessionRecord,
    response: JsonRpcResponse,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const id = response.id;
    const entry = id === null ? undefined : this.#table.takeClientResponse(session.key, id);
    const traceId = newEnvelopeId();
    this.#hop(
      clientInHop(session, transport, {
        id: traceId,
        message: response,
        context: entry ? entry.tag.context : session.key,
        receivedAt,
        raw,
        correlation: entry ? [entry.tag.downTraceId] : undefined,
      }),
    );
    if (!entry) {
      this.#metrics.inc('orphan_responses_total', { direction: 'client->server' });
      this.#logger.warn(
        { session: session.key, id },
        'a client response matches no server request in flight; dropped',
      );
      return;
    }
    const link = this.#links.get(entry.link);
    if (!link || link.state === 'down') return;
    const upstream = { ...response, id: entry.upstreamId } as JsonRpcResponse;
    this.#sendToLink(link, upstream, {
      id: newEnvelopeId(),
      session,
      correlation: [entry.tag.traceId, traceId],
      context: entry.tag.context,
      receivedAt,
    });
  }

  // ---------------------------------------------------------------- from upstreams

  /**
   * Raw text from an upstream. Malformed text is logged and counted; a malformed response whose id
   * can be read still answers the client request it belongs to, with an error, so nothing hangs.
   */
  handleUpstreamText(linkId: LinkId, text: string, meta: InboundMeta): void {
    const link = this.#links.get(linkId);
    if (!link) return;
    const payload = readInbound(
      text,
      this.#maxJsonDepth === undefined
        ? { allowBatch: true }
        : { allowBatch: true, maxDepth: this.#maxJsonDepth },
    );
    if (payload.error) {
      this.#metrics.inc('upstream_malformed_total', { upstream: link.name });
      this.#logger.warn(
        { upstream: link.name, error: payload.error.message },
        'unreadable message from upstream; dropped',
      );
      return;
    }
    for (const item of payload.items) {
      try {
        this.#upstreamItem(link, item, meta, payload.batch ? undefined : text);
      } catch (error) {
        this.#metrics.inc('message_failures_total', { direction: 'server->client', upstream: link.name });
        this.#logger.error(
          { upstream: link.name, err: errorText(error) },
          'the gateway failed while handling an upstream message',
        );
      }
    }
  }

  /** One item of what an upstream sent (see `handleUpstreamText`). */
  #upstreamItem(link: LinkRecord, item: InboundItem, meta: InboundMeta, text: string | undefined): void {
    const linkId = link.id;
    if (item.kind === 'message') {
      this.handleUpstreamMessage(
        linkId,
        item.message,
        meta,
        text === undefined ? undefined : (item.raw ?? text),
      );
      return;
    }
    this.#metrics.inc('upstream_malformed_total', { upstream: link.name });
    if (item.kind === 'drop') {
      this.#logger.warn(
        { upstream: link.name, error: item.error.message },
        'invalid JSON-RPC message from upstream; dropped',
      );
    } else if (item.kind === 'reply') {
      // A broken request of the server's: answer it, like any client would. Its id is in the
      // server's own id space, so it must never be matched against the gateway's requests.
      this.#logger.warn(
        { upstream: link.name, error: item.response.error.message },
        'invalid request from upstream; answered with an error',
      );
      this.#sendToLink(link, item.response, {
        id: newEnvelopeId(),
        session: undefined,
        sessionKey: INTERNAL_SESSION,
        correlation: [],
        context: GATEWAY_PARTICIPANT,
        receivedAt: wallNow(),
      });
    } else {
      // A broken response: the client request it answers fails instead of waiting for a timeout.
      this.#logger.warn(
        { upstream: link.name, error: item.response.error.message },
        'invalid response from upstream',
      );
      const id = item.response.id;
      const entry = id === null ? undefined : this.#table.takeServerResponse(linkId, id);
      if (entry) {
        this.#failClientRequest(
          entry,
          gatewayError(
            SbErrorCode.UpstreamProtocol,
            `upstream ${link.name} sent an ${item.response.error.message.replace(/^invalid response from the peer: /, 'invalid response: ')}`,
            { upstream: link.name },
          ),
        );
      }
    }
  }

  /**
   * Handles one message from link `linkId` that a transport parsed itself (`raw`: its text, for the
   * trace): a response is matched to its request, a request is attributed to a session, a
   * notification is routed. Ignored for an unknown link.
   */
  handleUpstreamMessage(linkId: LinkId, message: JsonRpcMessage, meta: InboundMeta, raw?: string): void {
    const link = this.#links.get(linkId);
    if (!link) return;
    const receivedAt = wallNow();
    if (!('method' in message)) this.#upstreamResponse(link, message, meta, receivedAt, raw);
    else if ('id' in message) this.#upstreamRequest(link, message, meta, receivedAt, raw);
    else this.#upstreamNotification(link, message, meta, receivedAt, raw);
  }

  #upstreamResponse(
    link: LinkRecord,
    response: JsonRpcResponse,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const entry = response.id === null ? undefined : this.#table.takeServerResponse(link.id, response.id);
    const traceId = newEnvelopeId();
    const traceSession = entry ? this.#sessions.get(entry.tag.traceSession) : undefined;
    this.#hop(
      fromUpstreamHop(link.name, meta.transport, traceSession, entry?.tag.traceSession, {
        id: traceId,
        message: response,
        context: entry ? entry.tag.context : GATEWAY_PARTICIPANT,
        receivedAt,
        raw,
        correlation: entry ? [entry.tag.upstreamTraceId] : undefined,
      }),
    );
    if (!entry) {
      this.#metrics.inc('orphan_responses_total', { direction: 'server->client', upstream: link.name });
      this.#logger.warn(
        { upstream: link.name, id: response.id },
        'an upstream response matches no request in flight; dropped',
      );
      return;
    }
    this.#scheduleExpiry();
    this.#observeUpstreamEnd(entry.tag, { response });
    if (entry.tag.internal) {
      entry.tag.internal.resolve({ response, traceId });
      return;
    }
    if (entry.cancelled) {
      this.#metrics.inc('late_responses_total', { upstream: link.name });
      return;
    }
    const session = this.#sessions.get(entry.session);
    if (!session) return;
    if (entry.method === 'initialize' && 'result' in response && isObject(response.result)) {
      const version = response.result.protocolVersion;
      if (typeof version === 'string') session.protocolVersion = version;
    }
    const call = entry.tag.call;
    if (!call) return;
    const payload = 'error' in response ? { error: response.error } : { result: response.result };
    this.#step(call, 'answer', () =>
      this.#finish(call, payload, { derivedFrom: [traceId], upstream: link.name }),
    );
  }

  /** A notification from an upstream: progress, a server's cancellation of its own request, or anything else. */
  #upstreamNotification(
    link: LinkRecord,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    if (notification.method === 'notifications/progress')
      this.#upstreamProgress(link, notification, meta, receivedAt, raw);
    else if (notification.method === 'notifications/cancelled')
      this.#upstreamCancelled(link, notification, meta, receivedAt, raw);
    else this.#upstreamOtherNotification(link, notification, meta, receivedAt, raw);
  }

  /** Progress from an upstream: to the client request that carried the token, with the client's token. */
  #upstreamProgress(
    link: LinkRecord,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const token = progressNotificationToken(notification);
    const entry =
      token === undefined ? undefined : this.#table.routeProgress(link.id, token, performance.now());
    const traceId = newEnvelopeId();
    this.#hop(
      fromUpstreamHop(
        link.name,
        meta.transport,
        entry ? this.#sessions.get(entry.tag.traceSession) : undefined,
        entry?.tag.traceSession,
        {
          id: traceId,
          message: notification,
          context: entry ? entry.tag.context : GATEWAY_PARTICIPANT,
          receivedAt,
          raw,
          correlation: entry ? [entry.tag.upstreamTraceId] : undefined,
        },
      ),
    );
    if (!entry || entry.downstreamProgressToken === undefined || entry.tag.internal) {
      this.#metrics.inc('progress_unroutable_total', { direction: 'server->client', upstream: link.name });
      return;
    }
    if (entry.cancelled) {
      // Recorded above in the cancelled request's context; the client asked to hear no more of it.
      this.#metrics.inc('progress_after_cancel_total', { upstream: link.name });
      return;
    }
    const session = this.#sessions.get(entry.session);
    if (!session) return;
    this.#deliver(
      session,
      withProgressToken(notification, entry.downstreamProgressToken),
      { kind: 'related', request: entry.downstreamId },
      {
        id: newEnvelopeId(),
        correlation: [entry.tag.traceId, traceId],
        context: entry.tag.context,
        receivedAt,
        upstream: link.name,
      },
    );
  }

  /** A server cancels its own request to a client: the client is told, under the gateway's id. */
  #upstreamCancelled(
    link: LinkRecord,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const requestId = cancelledRequestId(notification);
    const entry = requestId === undefined ? undefined : this.#table.cancelServerRequest(link.id, requestId);
    const traceId = newEnvelopeId();
    const session = entry ? this.#sessions.get(entry.session) : undefined;
    this.#hop(
      fromUpstreamHop(link.name, meta.transport, session, entry?.session, {
        id: traceId,
        message: notification,
        context: entry ? entry.tag.context : GATEWAY_PARTICIPANT,
        receivedAt,
        raw,
        correlation: entry ? [entry.tag.traceId] : undefined,
      }),
    );
    if (!entry || !session) {
      this.#metrics.inc('cancellations_ignored_total', { direction: 'server->client' });
      return;
    }
    this.#deliver(
      session,
      withCancelledRequestId(notification, entry.downstreamId),
      { kind: 'unrelated' },
      {
        id: newEnvelopeId(),
        correlation: [entry.tag.downTraceId, traceId],
        context: entry.tag.context,
        receivedAt,
        upstream: link.name,
      },
    );
  }

  /** Any other upstream notification: to the session whose request it came with, else to whom the resolver says. */
  #upstreamOtherNotification(
    link: LinkRecord,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const related =
      meta.relatedUpstreamId === undefined
        ? undefined
        : this.#table.findByUpstreamId(link.id, meta.relatedUpstreamId);
    let targets: readonly SessionKey[];
    if (related && !related.tag.internal) targets = [related.session];
    else {
      try {
        targets = this.#resolver.notificationTargets(link.id, notification);
      } catch (error) {
        this.#logger.error({ err: String(error) }, 'the resolver failed on an upstream notification');
        targets = [];
      }
    }
    // A log message that came without its request (stdio has no way to say) is delivered as part
    // of the one call in flight on the link, when there is exactly one and its client speaks
    // 2026-07-28: such a client has no stream but its calls' to receive it on. (Legacy clients get
    // it unrelated, on their standalone stream, as before.)
    const guessed =
      related === undefined && notification.method === 'notifications/message'
        ? this.#attribute(link, meta)?.parent
        : undefined;
    const guessedFor =
      guessed &&
      !guessed.tag.internal &&
      this.#sessions.get(guessed.session)?.protocolVersion === MODERN_REVISION
        ? guessed
        : undefined;
    const traceId = newEnvelopeId();
    const first = targets.length === 1 ? this.#sessions.get(targets[0]!) : undefined;
    this.#hop(
      fromUpstreamHop(link.name, meta.transport, first, undefined, {
        id: traceId,
        message: notification,
        context: related && !related.tag.internal ? related.tag.context : (first?.key ?? GATEWAY_PARTICIPANT),
        receivedAt,
        raw,
        correlation: related ? [related.tag.upstreamTraceId] : undefined,
      }),
    );
    if (targets.length === 0)
      this.#metrics.inc('notifications_undelivered_total', {
        upstream: link.name,
        method: notification.method,
      });
    for (const key of targets) {
      const session = this.#sessions.get(key);
      if (!session) continue;
      const delivery: Delivery =
        related && related.session === key
          ? { kind: 'related', request: related.downstreamId }
          : guessedFor && guessedFor.session === key
            ? { kind: 'related', request: guessedFor.downstreamId }
            : { kind: 'unrelated' };
      this.#deliver(session, notification, delivery, {
        id: newEnvelopeId(),
        correlation: related ? [related.tag.traceId, traceId] : [traceId],
        context: related && related.session === key ? related.tag.context : session.key,
        receivedAt,
        upstream: link.name,
      });
    }
  }

  #upstreamRequest(
    link: LinkRecord,
    request: JsonRpcRequest,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const cause = this.#attribute(link, meta);
    const session = cause ? this.#sessions.get(cause.session) : undefined;
    const traceId = newEnvelopeId();
    const context = session
      ? `${cause?.parent ? cause.parent.tag.context : session.key}/${traceId}`
      : GATEWAY_PARTICIPANT;
    this.#hop(
      fromUpstreamHop(link.name, meta.transport, session, undefined, {
        id: traceId,
        message: request,
        context,
        receivedAt,
        raw,
        correlation: cause?.parent ? [cause.parent.tag.upstreamTraceId] : undefined,
      }),
    );
    if (!session) {
      if (request.method === 'ping') {
        // Nobody in particular to ask: the gateway itself is alive, which is what ping checks.
        this.#answerUpstreamRequest(link, request.id, { result: {} }, context, receivedAt, traceId);
        return;
      }
      this.#metrics.inc('server_requests_unattributed_total', {
        upstream: link.name,
        method: request.method,
      });
      this.#logger.warn(
        { upstream: link.name, method: request.method },
        'cannot tell which client session a server request is for',
      );
      this.#answerUpstreamRequest(
        link,
        request.id,
        {
          error: gatewayError(
            SbErrorCode.Unroutable,
            'the gateway cannot tell which client session this request is for (several share this upstream); use sharing: pooled (or per-session) for this upstream',
          ),
        },
        context,
        receivedAt,
        traceId,
      );
      return;
    }
    const downTraceId = newEnvelopeId();
    const token = progressTokenOf(request);
    const opened = this.#table.openServerRequest({
      link: link.id,
      upstreamId: request.id,
      session: session.key,
      method: request.method,
      ...(token === undefined ? {} : { progressToken: token }),
      now: performance.now(),
      tag: {
        traceId,
        downTraceId,
        context,
        upstream: link.name,
        ...(cause?.parent ? { parentUpstreamId: cause.parent.upstreamId } : {}),
      },
    });
    if (!opened.ok) {
      this.#answerUpstreamRequest(
        link,
        request.id,
        {
          error: {
            code: JsonRpcCode.InvalidRequest,
            message: `Invalid Request: id ${JSON.stringify(request.id)} is already in use by a request in flight`,
          },
        },
        context,
        receivedAt,
        traceId,
      );
      return;
    }
    const down: JsonRpcRequest = { ...request, id: opened.entry.downstreamId };
    const delivery: Delivery = cause?.parent
      ? { kind: 'related', request: cause.parent.downstreamId }
      : { kind: 'unrelated' };
    this.#deliver(session, down, delivery, {
      id: downTraceId,
      correlation: [traceId],
      context,
      receivedAt,
      upstream: link.name,
    });
    this.#scheduleExpiry();
  }

  /**
   * Which session a server->client request belongs to: the request it travelled with (HTTP upstream
   * streams tell), else the one call in flight on this link that is not already blocked on a
   * request to the client (or at least its session), else the one session using the link.
   */
  #attribute(link: LinkRecord, meta: InboundMeta): Attribution<ClientTag> | undefined {
    return attributeServerRequest(this.#table, {
      link: link.id,
      relatedUpstreamId: meta.relatedUpstreamId,
      asksNothingFor: link.transport.asksNothingFor?.bind(link.transport),
      sessionsUsingLink: () => this.#resolver.sessionsFor(link.id).filter((s) => this.#sessions.has(s)),
    });
  }

  // ---------------------------------------------------------------- gateway-originated

  /**
   * A request from the gateway itself to an upstream (re-initialization after a restart, fan-out of
   * an aggregated list). Resolves with the upstream's response, success or error; rejects with a
   * JSON-RPC error object when the link is down, times out or is aborted.
   */
  requestUpstream(
    linkId: LinkId,
    method: string,
    params: JsonObject | undefined,
    options: {
      readonly traceSession?: SessionKey;
      readonly context?: string;
      readonly correlation?: readonly string[];
      readonly signal?: AbortSignal;
      /** Send even while the link is `starting` (the re-initialization itself). */
      readonly bypassQueue?: boolean;
      /** The client call it serves, as observers saw it (a fan-out of a local answer). */
      readonly observedCall?: ObservedCall | undefined;
    } = {},
  ): Promise<UpstreamReply> {
    const link = this.#links.get(linkId);
    if (!link || link.state === 'down') {
      return Promise.reject(
        gatewayError(SbErrorCode.UpstreamUnavailable, `upstream ${link?.name ?? linkId} is not available`),
      );
    }
    if (options.signal?.aborted) return Promise.reject(gatewayError(SbErrorCode.Internal, 'aborted'));
    return new Promise<UpstreamReply>((resolve, reject) => {
      const traceSession = options.traceSession ?? INTERNAL_SESSION;
      const context =
        options.context ?? (this.#sessions.has(traceSession) ? traceSession : GATEWAY_PARTICIPANT);
      const upstreamTraceId = newEnvelopeId();
      this.#internalCounter++;
      const opened = this.#table.openClientRequest({
        session: INTERNAL_SESSION,
        downstreamId: this.#internalCounter,
        link: link.id,
        method,
        now: performance.now(),
        tag: {
          traceId: upstreamTraceId,
          upstreamTraceId,
          context,
          upstream: link.name,
          traceSession,
          internal: { resolve, reject },
        },
      });
      if (!opened.ok) {
        reject(gatewayError(SbErrorCode.Internal, 'internal request id collision'));
        return;
      }
      const message: JsonRpcRequest =
        params === undefined
          ? { jsonrpc: '2.0', id: opened.entry.upstreamId, method }
          : { jsonrpc: '2.0', id: opened.entry.upstreamId, method, params };
      if (this.observations.active)
        this.#observeUpstreamStart(opened.entry.tag, link.id, message, options.observedCall);
      options.signal?.addEventListener(
        'abort',
        () => {
          const entry = this.#table.cancelClientRequest(
            INTERNAL_SESSION,
            opened.entry.downstreamId,
            performance.now(),
          );
          if (entry) this.#sendCancelUpstream(entry, 'the client cancelled the request');
          reject(gatewayError(SbErrorCode.Internal, 'aborted'));
        },
        { once: true },
      );
      const sent = this.#sendToLink(
        link,
        message,
        {
          id: upstreamTraceId,
          session: this.#sessions.get(traceSession),
          sessionKey: traceSession,
          correlation: options.correlation ?? [],
          context,
          receivedAt: wallNow(),
        },
        options.bypassQueue === true,
      );
      if (!sent) {
        this.#table.takeServerResponse(link.id, opened.entry.upstreamId);
        const error = gatewayError(
          SbErrorCode.Internal,
          `the gateway could not send ${method} to upstream ${link.name}`,
        );
        this.#observeUpstreamEnd(opened.entry.tag, { error });
        reject(error);
        return;
      }
      this.#scheduleExpiry();
    });
  }

  /** Sends a notification from the gateway to an upstream (e.g. `notifications/initialized`). */
  notifyUpstream(
    linkId: LinkId,
    method: string,
    params?: JsonObject,
    options: { readonly bypassQueue?: boolean; readonly traceSession?: SessionKey } = {},
  ): void {
    const link = this.#links.get(linkId);
    if (!link || link.state === 'down') return;
    const message: JsonRpcNotification =
      params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
    const traceSession = options.traceSession ?? INTERNAL_SESSION;
    this.#sendToLink(
      link,
      message,
      {
        id: newEnvelopeId(),
        session: this.#sessions.get(traceSession),
        sessionKey: traceSession,
        correlation: [],
        context: this.#sessions.has(traceSession) ? traceSession : GATEWAY_PARTICIPANT,
        receivedAt: wallNow(),
      },
      options.bypassQueue === true,
    );
  }

  /** Sends a message from the gateway to a client session (notifications the gateway originates). */
  notifyClient(key: SessionKey, notification: JsonRpcNotification): void {
    const session = this.#sessions.get(key);
    if (!session) return;
    this.#deliver(
      session,
      notification,
      { kind: 'unrelated' },
      { id: newEnvelopeId(), correlation: [], context: session.key, receivedAt: wallNow() },
    );
  }

  // ---------------------------------------------------------------- timeouts

  /**
   * Arms the one timer for the earliest deadline. A timer armed for a deadline that has since gone
   * (its request answered) is left to fire: `expireNow` then finds nothing due and re-arms for
   * whatever is next. Clearing it when the table empties and arming a new one for the next request
   * would cost a timer list and a libuv timer start per call on a sequential client; this costs one
   * spurious wake-up per request timeout (10 minutes by default). The timer never holds the process.
   */
  #scheduleExpiry(): void {
    if (this.#closed) return;
    const next = this.#table.nextDeadline();
    if (next === Number.POSITIVE_INFINITY) return;
    if (this.#timer && next >= this.#timerAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = next;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAt = Number.POSITIVE_INFINITY;
        this.expireNow();
      },
      Math.max(0, next - performance.now()) + 1,
    );
    this.#timer.unref();
  }

  /** Applies every timeout due now (also called by the timer). */
  expireNow(): void {
    const expired = this.#table.expire(performance.now());
    for (const entry of expired.timedOut) {
      this.#metrics.inc('request_timeouts_total', { upstream: entry.tag.upstream });
      const seconds = Math.round((performance.now() - entry.openedAt) / 1000);
      const error = gatewayError(
        SbErrorCode.RequestTimeout,
        `request timed out after ${seconds}s waiting for upstream ${entry.tag.upstream}`,
        { upstream: entry.tag.upstream },
      );
      this.#observeUpstreamEnd(entry.tag, { error });
      this.#sendCancelUpstream(entry, 'timed out in the gateway');
      this.#failClientRequest(entry, error);
    }
    for (const entry of expired.serverTimedOut) {
      const link = this.#links.get(entry.link);
      if (link)
        this.#answerUpstreamRequest(
          link,
          entry.upstreamId,
          { error: gatewayError(SbErrorCode.RequestTimeout, 'the client did not answer in time') },
          entry.tag.context,
          wallNow(),
          entry.tag.traceId,
        );
      this.#cancelTowardClient(entry, 'timed out in the gateway');
    }
    this.#scheduleExpiry();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const [id, waiter] of this.#linkWaiters) waiter.reject(this.#linkGone(id, this.#links.get(id)));
    this.#linkWaiters.clear();
  }

  // ---------------------------------------------------------------- observations

  /** Tells the observers a client call started (`observations.ts`); only while any is registered. */
  #observeCallStart(call: ClientCall): void {
    const observed: ObservedCall = {
      session: this.#liveView(call.session),
      request: call.request,
      traceId: call.traceId,
      receivedAt: call.receivedAt,
    };
    call.observed = observed;
    this.observations.callStarted(observed);
  }

  /** Tells the observers how a call they saw start ended: `response` as sent, or none. */
  #observeCallEnd(call: ClientCall, observed: ObservedCall, response: JsonRpcResponse | undefined): void {
    const how =
      response === undefined
        ? { outcome: 'cancelled' as const }
        : call.refused === true && 'error' in response
          ? { outcome: 'refused' as const, errorCode: response.error.code, response }
          : { ...responseOutcome(response), response };
    this.observations.callEnded(observed, {
      ...how,
      ...(call.upstream === undefined ? {} : { upstream: call.upstream }),
      ...(call.routed === undefined ? {} : { routed: call.routed }),
      durationMs: wallNow() - call.receivedAt,
    });
  }

  /** Tells the observers a request went into the correlation table toward `tag.upstream`. */
  #observeUpstreamStart(tag: ClientTag, link: LinkId, request: JsonRpcRequest, call?: ObservedCall): void {
    const observed = call ?? tag.call?.observed;
    tag.observed = this.observations.upstreamStarted({
      upstream: tag.upstream,
      link,
      method: request.method,
      request,
      ...(observed === undefined ? {} : { call: observed }),
      traceSession: tag.traceSession,
      traceId: tag.upstreamTraceId,
    });
  }

  /** Tells the observers an upstream request ended (only its first end counts). */
  #observeUpstreamEnd(
    tag: ClientTag,
    how: { readonly response: JsonRpcResponse } | { readonly error: JsonRpcErrorObject } | 'cancelled',
  ): void {
    if (tag.observed !== undefined) this.observations.upstreamEnded(tag.observed, how);
  }

  /** Tells the observers a link changed state (attached, ready, restarting, down). */
  #observeLink(link: LinkRecord, phase: LinkPhase): void {
    this.observations.linkChanged(
      { link: link.id, upstream: link.name, transport: link.transportContext.kind },
      phase,
      phase === 'restarting' || phase === 'down' ? link.downReason : undefined,
    );
  }

  /** Tells the observers a session opened (`closedFor` undefined) or closed, and why. */
  #observeSession(record: SessionRecord, closedFor: string | undefined): void {
    const session = {
      key: record.key,
      transport: record.transport,
      protocolVersion: record.protocolVersion,
      ...(record.principal === undefined ? {} : { principal: record.principal }),
    };
    if (closedFor === undefined) this.observations.sessionOpened(session);
    else this.observations.sessionClosed(session, record.protocolVersion, closedFor);
  }

  // ---------------------------------------------------------------- helpers

  #view(record: SessionRecord): SessionView {
    const view: { -readonly [K in keyof SessionView]: SessionView[K] } = {
      key: record.key,
      transport: record.transport,
      protocolVersion: record.protocolVersion,
      state: record.state,
    };
    if (record.mcpSessionId !== undefined) view.mcpSessionId = record.mcpSessionId;
    if (record.principal !== undefined) view.principal = record.principal;
    if (record.roles !== undefined) view.roles = record.roles;
    if (record.initializeParams !== undefined) view.initializeParams = record.initializeParams;
    return view;
  }

  #failClientRequest(entry: ClientRequestEntry<ClientTag>, error: JsonRpcErrorObject): void {
    this.#observeUpstreamEnd(entry.tag, { error });
    if (entry.tag.internal) {
      entry.tag.internal.reject(error);
      return;
    }
    const call = entry.tag.call;
    if (call) this.#step(call, 'fail', () => this.#finish(call, { error }, { deliver: !entry.cancelled }));
  }

  #sendCancelUpstream(entry: ClientRequestEntry<ClientTag>, reason: string): void {
    this.#observeUpstreamEnd(entry.tag, 'cancelled');
    const link = this.#links.get(entry.link);
    if (!link || link.state === 'down') return;
    this.#sendToLink(link, cancelledNotification(entry.upstreamId, reason), {
      id: newEnvelopeId(),
      session: this.#sessions.get(entry.tag.traceSession),
      sessionKey: entry.tag.traceSession,
      correlation: [entry.tag.upstreamTraceId],
      context: entry.tag.context,
      receivedAt: wallNow(),
    });
  }

  #cancelTowardClient(entry: ServerRequestEntry<ServerTag>, reason: string): void {
    const session = this.#sessions.get(entry.session);
    if (!session) return;
    this.#deliver(
      session,
      cancelledNotification(entry.downstreamId, reason),
      { kind: 'unrelated' },
      {
        id: newEnvelopeId(),
        correlation: [entry.tag.downTraceId],
        context: entry.tag.context,
        receivedAt: wallNow(),
      },
    );
  }

  #answerUpstream(entry: ServerRequestEntry<ServerTag>, error: JsonRpcErrorObject): void {
    const link = this.#links.get(entry.link);
    if (link)
      this.#answerUpstreamRequest(
        link,
        entry.upstreamId,
        { error },
        entry.tag.context,
        wallNow(),
        entry.tag.traceId,
      );
  }

  #answerUpstreamRequest(
    link: LinkRecord,
    id: RequestId,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    context: string,
    receivedAt: number,
    requestTraceId: string,
  ): void {
    const message = { jsonrpc: '2.0', id, ...payload } as JsonRpcResponse;
    this.#sendToLink(link, message, {
      id: newEnvelopeId(),
      session: undefined,
      sessionKey: INTERNAL_SESSION,
      correlation: [requestTraceId],
      context,
      receivedAt,
    });
  }

  #answerClient(
    session: SessionRecord,
    id: RequestId,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    correlation: readonly string[],
    context: string,
    receivedAt: number,
  ): void {
    const message = { jsonrpc: '2.0', id, ...payload } as JsonRpcResponse;
    this.#deliver(
      session,
      message,
      { kind: 'response', request: id },
      { id: newEnvelopeId(), correlation, context, receivedAt },
    );
  }

  #deliver(
    session: SessionRecord,
    message: JsonRpcMessage,
    delivery: Delivery,
    trace: {
      id: string;
      correlation: readonly string[];
      context: string;
      receivedAt: number;
      upstream?: string;
      resultAt?: number;
      resultIsError?: boolean;
    },
    given?: string,
  ): void {
    if (this.#traceContext !== undefined && isRequest(message)) {
      const traced = this.#traceContext.toClient(message, {
        id: trace.id,
        context: trace.context,
        correlation: trace.correlation,
        ...(trace.upstream === undefined ? {} : { upstream: trace.upstream }),
      });
      if (traced !== message) {
        message = traced;
        given = undefined;
      }
    }
    let json: string;
    try {
      json = given ?? JSON.stringify(message);
    } catch (error) {
      // Only a value the gateway built from something deeper than it accepts could get here.
      this.#metrics.inc('delivery_errors_total');
      this.#logger.error(
        { session: session.key, err: errorText(error) },
        'a message for a client could not be serialised; dropped',
      );
      return;
    }
    try {
      session.port.send(json, message, delivery);
    } catch (error) {
      this.#metrics.inc('delivery_errors_total');
      this.#logger.error(
        { session: session.key, err: String(error) },
        'a downstream transport failed to send',
      );
    }
    this.#hop(
      toClientHop(
        session,
        {
          id: trace.id,
          message,
          context: trace.context,
          receivedAt: trace.receivedAt,
          raw: json,
          correlation: trace.correlation,
        },
        wallNow(),
        trace,
      ),
    );
  }

  #sendToLink(
    link: LinkRecord,
    message: JsonRpcMessage,
    trace: {
      id: string;
      session: SessionRecord | undefined;
      sessionKey?: SessionKey;
      correlation: readonly string[];
      context: string;
      receivedAt: number;
    },
    bypassQueue = false,
  ): boolean {
    if (this.#traceContext !== undefined && isRequest(message))
      message = this.#traceContext.toUpstream(message, {
        id: trace.id,
        context: trace.context,
        correlation: trace.correlation,
        upstream: link.name,
      });
    let json: string;
    try {
      json = JSON.stringify(message);
    } catch (error) {
      this.#metrics.inc('upstream_send_errors_total', { upstream: link.name });
      this.#logger.error(
        { upstream: link.name, err: errorText(error) },
        'a message for an upstream could not be serialised; not sent',
      );
      return false;
    }
    let wire = json;
    let sent = message;
    if (link.state === 'starting' && !bypassQueue) {
      if (link.queue.length >= this.#maxQueued) {
        this.#metrics.inc('queued_dropped_total', { upstream: link.name });
        this.#logger.warn(
          { upstream: link.name },
          'too many messages waiting for a restarting upstream; dropped',
        );
        if (isRequest(message)) {
          const entry = this.#table.takeServerResponse(link.id, message.id);
          if (entry)
            this.#failClientRequest(
              entry,
              gatewayError(
                SbErrorCode.LimitExceeded,
                `upstream ${link.name} is restarting and its queue is full`,
              ),
            );
        }
        return true;
      }
      link.queue.push({ json, message });
    } else {
      // The trace keeps what went on the wire: a transport for a legacy peer rewrites some messages.
      let written: ReturnType<UpstreamTransport['send']>;
      try {
        written = link.transport.send(json, message);
      } catch (error) {
        this.#metrics.inc('upstream_send_errors_total', { upstream: link.name });
        this.#logger.error(
          { upstream: link.name, err: errorText(error) },
          'an upstream transport failed to send; not sent',
        );
        return false;
      }
      if (written) {
        wire = written.json;
        sent = written.message;
      }
    }
    this.#hop(
      toUpstreamHop(
        link,
        trace.session,
        trace.sessionKey,
        {
          id: trace.id,
          message: sent,
          context: trace.context,
          receivedAt: trace.receivedAt,
          raw: wire,
          correlation: trace.correlation,
        },
        wallNow(),
      ),
    );
    return true;
  }

  /** A queued message the transport refused when the link became ready: its request fails. */
  #sendFailed(link: LinkRecord, message: JsonRpcMessage, error: unknown): void {
    this.#metrics.inc('upstream_send_errors_total', { upstream: link.name });
    this.#logger.error(
      { upstream: link.name, err: errorText(error) },
      'an upstream transport failed to send a queued message; not sent',
    );
    if (!isRequest(message)) return;
    const entry = this.#table.takeServerResponse(link.id, message.id);
    if (entry)
      this.#failClientRequest(
        entry,
        gatewayError(
          SbErrorCode.Internal,
          `the gateway could not send this request to upstream ${link.name}`,
          {
            upstream: link.name,
          },
        ),
      );
  }

  /** Hands a hop to the taps and the diagnostics channel, if anything wants it. */
  #hop(fields: HopFields): void {
    if (!this.#taps.wants(fields.message)) return;
    this.#taps.emit(new LazyHopEvent(fields));
  }
}
