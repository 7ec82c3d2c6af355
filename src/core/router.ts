/**
 * The router: the one place where client sessions, links (connections to upstreams) and the
 * correlation table meet.
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

import type { TransportContext } from '../envelope/message-context.js';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { newEnvelopeId } from '../meup/ids.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import {
  idKey,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from '../protocol/jsonrpc/types.js';
import { cancelledNotification, progressTokenOf, rewriteRequest } from '../protocol/mcp/progress.js';
import type { ProtocolVersion } from '../protocol/mcp/revisions.js';
import { CallFinisher, NONE } from './call-finish.js';
import {
  observeCallStart,
  observeLink,
  observeSession,
  observeUpstreamEnd,
  observeUpstreamStart,
} from './call-observation.js';
import { runInterceptors } from './call-pipeline.js';
import {
  abortCall,
  type ClientCall,
  type ClientTag,
  callInfoOf,
  idInUse,
  type ServerTag,
  signalOf,
} from './client-call.js';
import { ClientDelivery } from './client-delivery.js';
import { ClientMessages } from './client-messages.js';
import {
  type ClientRequestEntry,
  CorrelationTable,
  type LinkId,
  type ServerRequestEntry,
  type SessionKey,
} from './correlation-table.js';
import { type GatewayRequestOptions, GatewayRequests } from './gateway-requests.js';
import { clientInHop } from './hops.js';
import { LinkRegistry, type LinkState } from './links.js';
import { Observations } from './observations.js';
import type {
  AddLink,
  DownstreamPort,
  InboundMeta,
  LinkHost,
  OpenSession,
  SessionHost,
  SessionView,
  UpstreamClose,
} from './ports.js';
import {
  type Admission,
  type CallInterceptor,
  DEFAULT_MAX_PENDING_ROUTES,
  type LocalAnswer,
  type LocalCall,
  type RequestResolver,
  type Resolution,
  type RouterOptions,
  type UpstreamReply,
} from './router-types.js';
import { Session } from './session.js';
import { type HopFields, LazyHopEvent, TapBus } from './taps.js';
import { asRpcError, errorText } from './thrown.js';
import { wallNow } from './trace-mapping.js';
import { UpstreamInbound } from './upstream-inbound.js';

export type { SessionState, SessionView } from './ports.js';
export {
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
export { INTERNAL_SESSION } from './session-key.js';

/** An interceptor that has an `admit`. */
type Admitter = CallInterceptor & Required<Pick<CallInterceptor, 'admit'>>;

/**
 * Routes every message between client sessions and upstream links (see the file's comment): the
 * transports open sessions and hand in messages through `SessionHost`, and attach links and hand in
 * upstream text through `LinkHost`; the gateway adds interceptors and sends its own requests.
 */
export class Router implements SessionHost, LinkHost {
  readonly #resolver: RequestResolver;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #taps: TapBus;
  readonly #table: CorrelationTable<ClientTag, ServerTag>;
  readonly #sessions = new Map<SessionKey, Session<ClientCall>>();
  readonly #links: LinkRegistry;
  readonly #gatewayRequests: GatewayRequests;
  readonly #upstreamInbound: UpstreamInbound;
  readonly #clientMessages: ClientMessages;
  /** How calls end (`finish`), and how many are in flight. */
  readonly #calls: CallFinisher;
  readonly #maxPendingRoutes: number;
  /** Writes messages to client sessions (trace context, serialisation, the port, the hop). */
  readonly #delivery: ClientDelivery;
  /** Who hears of calls, upstream requests, sessions and links (metrics, tracing): see observations.ts. */
  readonly observations: Observations;
  /**
   * The interceptors with an `admit`, in the order they were added. Replaced (never changed) when
   * one is added, so a call in progress keeps the list it started with.
   */
  #admitters: readonly CallInterceptor[] = [];
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #closed = false;
  /** Set by `beginDrain`: new client requests are refused. */
  #draining = false;

  /** A router with no sessions and no links yet; its taps default to an empty bus. */
  constructor(options: RouterOptions) {
    this.#resolver = options.resolver;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#taps = options.taps ?? new TapBus(options.logger, options.metrics);
    this.#table = new CorrelationTable(options.timeouts);
    this.#delivery = new ClientDelivery({
      logger: options.logger,
      metrics: options.metrics,
      traceContext: options.traceContext,
      hop: (fields) => this.#hop(fields),
    });
    this.observations = new Observations(options.logger, options.metrics, options.observers);
    const observations = this.observations;
    this.#calls = new CallFinisher({
      observations,
      logger: options.logger,
      metrics: options.metrics,
      taps: this.#taps,
      deliver: (session, message, delivery, trace, json) =>
        this.#delivery.send(session, message, delivery, trace, json),
    });
    this.#links = new LinkRegistry({
      logger: options.logger,
      metrics: options.metrics,
      maxQueued: options.maxQueuedPerLink ?? 10_000,
      traceContext: options.traceContext,
      hop: (fields) => this.#hop(fields),
      unsent: (link, id, error) => {
        const entry = this.#table.takeServerResponse(link.id, id);
        if (entry) this.#failClientRequest(entry, error);
      },
    });
    this.#gatewayRequests = new GatewayRequests({
      observations,
      table: this.#table,
      links: this.#links,
      session: (key) => this.#sessions.get(key),
      scheduleExpiry: () => this.#scheduleExpiry(),
      cancelUpstream: (entry, reason) => this.#sendCancelUpstream(entry, reason),
    });
    this.#clientMessages = new ClientMessages({
      observations,
      table: this.#table,
      links: this.#links,
      resolver: this.#resolver,
      logger: this.#logger,
      metrics: this.#metrics,
      hop: (fields) => this.#hop(fields),
      cancelled: (call) => {
        abortCall(call);
        this.#calls.finish(
          call,
          { error: gatewayError(SbErrorCode.Cancelled, 'cancelled by the client') },
          { deliver: false },
        );
      },
      scheduleExpiry: () => this.#scheduleExpiry(),
    });
    this.#upstreamInbound = new UpstreamInbound({
      observations,
      table: this.#table,
      links: this.#links,
      sessions: this.#sessions,
      resolver: this.#resolver,
      logger: this.#logger,
      metrics: this.#metrics,
      maxJsonDepth: options.maxJsonDepth,
      hop: (fields) => this.#hop(fields),
      deliver: (session, message, delivery, trace) => this.#delivery.send(session, message, delivery, trace),
      answered: (call, payload, traceId, upstream) =>
        this.#step(call, 'answer', () =>
          this.#calls.finish(call, payload, { derivedFrom: [traceId], upstream }),
        ),
      failClientRequest: (entry, error) => this.#failClientRequest(entry, error),
      scheduleExpiry: () => this.#scheduleExpiry(),
    });
    this.#maxPendingRoutes = options.maxPendingRoutes ?? DEFAULT_MAX_PENDING_ROUTES;
    for (const interceptor of options.interceptors ?? []) this.addInterceptor(interceptor);
  }

  /** Adds an interceptor; interceptors run in the order they were added. */
  addInterceptor(interceptor: CallInterceptor): void {
    if (interceptor.admit) this.#admitters = [...this.#admitters, interceptor];
    this.#calls.add(interceptor);
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
   * Attaches a connection to an upstream as link `id` (after a restart, the new connection takes
   * the place of the dead one under the same id).
   * A link added in state `starting` queues client traffic until `setLinkReady`.
   */
  addLink(params: AddLink): void {
    this.#links.add(params);
    params.transport.onmessage = (text, meta) => this.handleUpstreamText(params.id, text, meta);
    const link = this.#links.get(params.id);
    if (link) observeLink(this.observations, link, link.state === 'ready' ? 'ready' : 'starting');
  }

  /**
   * Marks link `id` ready (its initialize handshake done): sends what was queued for it, in order,
   * and settles `whenLinkReady` waits. Ignored for an unknown link or one that is down.
   */
  setLinkReady(id: LinkId): void {
    this.#links.setReady(id);
    const link = this.#links.get(id);
    if (link?.state === 'ready') observeLink(this.observations, link, 'ready');
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
    return this.#links.whenReady(id);
  }

  /** The upstream name of link `id` (what logs, metrics and the trace call it), if attached. */
  linkName(id: LinkId): string | undefined {
    return this.#links.get(id)?.name;
  }

  /**
   * Link `id`'s connection is gone. Every client request in flight on it is answered
   * with an error at once (never a hang), the gateway's own requests are rejected, and the clients
   * are told that the server's requests to them are cancelled.
   */
  linkClosed(id: LinkId, close: UpstreamClose, options: { readonly restarting?: boolean } = {}): void {
    const link = this.#links.closed(id, close, options.restarting === true);
    if (!link) return;
    observeLink(this.observations, link, options.restarting === true ? 'restarting' : 'down');
    const released = this.#table.closeLink(id);
    const error = gatewayError(SbErrorCode.UpstreamExited, `upstream ${link.name} closed: ${close.reason}`, {
      upstream: link.name,
      ...(close.code === undefined ? {} : { exitCode: close.code }),
      ...(close.signal ? { signal: close.signal } : {}),
    });
    for (const entry of released.clientRequests) this.#failClientRequest(entry, error);
    for (const entry of released.serverRequests)
      this.#cancelTowardClient(entry, `upstream ${link.name} closed`);
    this.#links.discard(link);
    this.#scheduleExpiry();
  }

  // ---------------------------------------------------------------- sessions

  /**
   * Registers a client session under `params.key` (state `uninitialized`, the default revision
   * unless given) with the port its messages go out by, and returns it.
   */
  openSession(params: OpenSession): SessionView {
    const session = new Session<ClientCall>(params);
    this.#sessions.set(params.key, session);
    observeSession(this.observations, session, undefined);
    return session;
  }

  /** Session `key` (live: see `SessionHost.session`), or undefined once it is closed or unknown. */
  session(key: SessionKey): SessionView | undefined {
    return this.#sessions.get(key);
  }

  /** Records the negotiated version for a session whose `initialize` the gateway answered itself. */
  setSessionProtocol(key: SessionKey, protocolVersion: ProtocolVersion): void {
    const record = this.#sessions.get(key);
    record?.negotiated(protocolVersion);
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
    record.close();
    this.#sessions.delete(key);
    observeSession(this.observations, record, reason);
    for (const call of record.callsInFlight()) {
      abortCall(call);
      this.#calls.finish(
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
    return this.#calls.inFlight;
  }

  /** Settles once no client request is in flight (at once if none is). Sets no timer. */
  whenNoCallsInFlight(): Promise<void> {
    return this.#calls.whenNone();
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
      for (const call of session.callsInFlight()) {
        if (call.done) continue;
        ended++;
        this.#step(call, 'drain', () => {
          abortCall(call);
          const entry = this.#table.cancelClientRequest(session.key, call.request.id, performance.now());
          if (entry) this.#sendCancelUpstream(entry, reason);
          this.#calls.finish(call, { error });
        });
      }
    }
    this.#scheduleExpiry();
    return ended;
  }

  /**
   * Whether a request of this session with this id is in flight (forwarded, held, or being
   * answered locally): a transport refuses another request under the same id itself, since two
   * answers under one id cannot be told apart (see `batch-plan.ts`).
   */
  hasCall(key: SessionKey, id: RequestId): boolean {
    return this.#sessions.get(key)?.hasCall(idKey(id)) ?? false;
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
        else this.#clientMessages.notification(session, message, transport, receivedAt, raw);
      } else {
        this.#clientMessages.response(session, message, transport, receivedAt, raw);
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
    session: Session<ClientCall>,
    request: JsonRpcRequest,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const traceId = newEnvelopeId();
    const context = `${session.key}/${traceId}`;
    this.#hop(clientInHop(session, transport, { id: traceId, message: request, context, receivedAt, raw }));
    const key = idKey(request.id);
    if (session.hasCall(key)) {
      // JSON-RPC ids must be unique among a sender's requests in flight: refuse, keep the first.
      this.#metrics.inc('duplicate_request_ids_total');
      this.#answerClient(session, request.id, { error: idInUse(request.id) }, [traceId], context, receivedAt);
      return;
    }
    if (request.method === 'initialize') session.initializing(request.params);
    // Every field present from the start, in one order, set later or not: calls keep one shape
    // (V8's hidden class) and their fields in the object, whatever happens to them.
    const call: ClientCall = {
      session,
      request,
      key,
      traceId,
      context,
      receivedAt,
      controller: undefined,
      aborted: false,
      info: undefined,
      upstream: undefined,
      routed: undefined,
      done: false,
      pendingRoutes: undefined,
      ended: false,
      refused: false,
      observed: undefined,
    };
    session.track(call);
    this.#calls.started();
    observeCallStart(this.observations, call);
    if (this.#draining) {
      this.#metrics.inc('drain_refused_total');
      this.#step(call, 'drain', () =>
        this.#calls.finish(call, {
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
      this.#calls.finish(call, {
        error: gatewayError(SbErrorCode.Internal, 'the gateway failed while handling this request'),
      });
    } catch (again) {
      // Even the error answer failed (a transport that throws on everything): the call is at
      // least released, so that its id is usable again and nothing waits for it.
      call.session.release(call);
      call.done = true;
      this.#calls.ended(call, {
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
      this.#calls.finish(call, { error: resolution.error });
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
      this.#calls.finish(call, {
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
          this.#calls.finish(call, {
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
      (interceptor) => (interceptor as Admitter).admit(callInfoOf(call)),
      (admission) => {
        if (admission.allow) return !call.done;
        call.refused = true;
        this.#calls.finish(call, { error: admission.error });
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
                this.#calls.finish(call, { error: a.error });
              }
            }),
          (error: unknown) =>
            this.#step(call, 'admit', () => {
              this.#logger.error(
                { interceptor: interceptor.name, err: String(error) },
                'an interceptor failed to admit a call',
              );
              this.#calls.finish(call, {
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
      this.#calls.finish(call, { error: this.#links.unavailable(linkId, link) });
      return;
    }
    const refusal = link.transport.refuse?.(call.routed ?? request);
    if (refusal) {
      this.#metrics.inc('upstream_requests_refused_total', { upstream: link.name });
      this.#calls.finish(call, { error: refusal });
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
      // Every field of a ClientTag, in its declared order (one shape for all tags; see `ClientTag`).
      tag: {
        call,
        traceId,
        upstreamTraceId,
        context,
        upstream: link.name,
        internal: undefined,
        traceSession: session.key,
        observed: undefined,
      },
      ...(progressToken === undefined ? {} : { progressToken }),
    });
    if (!opened.ok) {
      // Cannot happen while `calls` guards ids; kept so the table's own guard is never bypassed.
      this.#calls.finish(call, { error: idInUse(request.id) });
      return;
    }
    observeUpstreamStart(this.observations, opened.entry.tag, link.id, call.routed ?? request);
    const upstreamMessage = rewriteRequest(
      call.routed ?? request,
      opened.entry.upstreamId,
      opened.entry.upstreamProgressToken,
    );
    const sent = this.#links.send(link, upstreamMessage, {
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
      observeUpstreamEnd(this.observations, opened.entry.tag, { error });
      if (!call.done) this.#calls.finish(call, { error });
      return;
    }
    this.#scheduleExpiry();
  }

  #resolve(session: Session<ClientCall>, request: JsonRpcRequest): Resolution {
    try {
      return this.#resolver.resolve(session, request);
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
      session: session,
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
          this.#calls.finish(call, payload, { derivedFrom: result.derivedFrom ?? NONE });
        }),
      (error: unknown) =>
        this.#step(call, 'local', () => {
          if (!call.done)
            this.#logger.error({ err: String(error), method: request.method }, 'a local handler failed');
          this.#calls.finish(call, {
            error: asRpcError(error, SbErrorCode.Internal, 'the gateway failed to answer this request'),
          });
        }),
    );
  }

  // ---------------------------------------------------------------- from upstreams

  /**
   * Raw text from link `linkId` (see `UpstreamInbound.handleText`): each message in it is matched,
   * attributed or routed; unreadable text is counted, and never throws.
   */
  handleUpstreamText(linkId: LinkId, text: string, meta: InboundMeta): void {
    this.#upstreamInbound.handleText(linkId, text, meta);
  }

  /**
   * One message from link `linkId` that a transport parsed itself (`raw`: its text, for the
   * trace): see `UpstreamInbound.handleMessage`. Ignored for an unknown link.
   */
  handleUpstreamMessage(linkId: LinkId, message: JsonRpcMessage, meta: InboundMeta, raw?: string): void {
    this.#upstreamInbound.handleMessage(linkId, message, meta, raw);
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
    options: GatewayRequestOptions = {},
  ): Promise<UpstreamReply> {
    return this.#gatewayRequests.request(linkId, method, params, options);
  }

  /** Sends a notification from the gateway to an upstream (e.g. `notifications/initialized`). */
  notifyUpstream(
    linkId: LinkId,
    method: string,
    params?: JsonObject,
    options: { readonly bypassQueue?: boolean; readonly traceSession?: SessionKey } = {},
  ): void {
    this.#gatewayRequests.notify(linkId, method, params, options);
  }

  /** Sends a message from the gateway to a client session (notifications the gateway originates). */
  notifyClient(key: SessionKey, notification: JsonRpcNotification): void {
    const session = this.#sessions.get(key);
    if (!session) return;
    this.#delivery.send(
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
      observeUpstreamEnd(this.observations, entry.tag, { error });
      this.#sendCancelUpstream(entry, 'timed out in the gateway');
      this.#failClientRequest(entry, error);
    }
    for (const entry of expired.serverTimedOut) {
      const link = this.#links.get(entry.link);
      if (link)
        this.#links.answer(
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

  /**
   * Stops the router: its expiry timer is cleared and whoever waits for a link (`whenLinkReady`)
   * is rejected. It closes no connection and no session: those are the transports'. Idempotent.
   */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#links.close();
  }

  // ---------------------------------------------------------------- helpers

  #failClientRequest(entry: ClientRequestEntry<ClientTag>, error: JsonRpcErrorObject): void {
    observeUpstreamEnd(this.observations, entry.tag, { error });
    if (entry.tag.internal) {
      entry.tag.internal.reject(error);
      return;
    }
    const call = entry.tag.call;
    if (call)
      this.#step(call, 'fail', () => this.#calls.finish(call, { error }, { deliver: !entry.cancelled }));
  }

  #sendCancelUpstream(entry: ClientRequestEntry<ClientTag>, reason: string): void {
    observeUpstreamEnd(this.observations, entry.tag, 'cancelled');
    const link = this.#links.get(entry.link);
    if (!link || link.state === 'down') return;
    this.#links.send(link, cancelledNotification(entry.upstreamId, reason), {
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
    this.#delivery.send(
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
      this.#links.answer(link, entry.upstreamId, { error }, entry.tag.context, wallNow(), entry.tag.traceId);
  }

  #answerClient(
    session: Session<ClientCall>,
    id: RequestId,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    correlation: readonly string[],
    context: string,
    receivedAt: number,
  ): void {
    const message = { jsonrpc: '2.0', id, ...payload } as JsonRpcResponse;
    this.#delivery.send(
      session,
      message,
      { kind: 'response', request: id },
      { id: newEnvelopeId(), correlation, context, receivedAt },
    );
  }

  /** Hands a hop to the taps and the diagnostics channel, if anything wants it. */
  #hop(fields: HopFields): void {
    if (!this.#taps.wants(fields.message)) return;
    this.#taps.emit(new LazyHopEvent(fields));
  }
}
