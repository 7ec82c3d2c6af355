/**
 * What comes from upstreams: raw text read into messages, then each message handled by kind. A
 * response is matched to its request through the correlation table and answers the client call
 * (or the gateway's own request) it belongs to; a server's request is attributed to a session
 * (`attribution.ts`) and handed to its client under a gateway id; progress and cancellations go
 * to the call they concern with the client's token and id; any other notification goes to the
 * session whose request it came with, else to the sessions the resolver names. Malformed input is
 * counted and logged, and a broken response still fails the call it answers, so nothing hangs.
 */

import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { newEnvelopeId } from '../meup/ids.js';
import { boundMethod } from '../observe/label-vocabulary.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import type {
  JsonRpcErrorObject,
  JsonRpcMessage,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResponse,
} from '../protocol/jsonrpc/types.js';
import {
  cancelledRequestId,
  progressNotificationToken,
  progressTokenOf,
  withCancelledRequestId,
  withProgressToken,
} from '../protocol/mcp/progress.js';
import { MODERN_REVISION } from '../protocol/mcp/revisions.js';
import { type Attribution, attributeServerRequest } from './attribution.js';
import { observeUpstreamEnd } from './call-observation.js';
import { type ClientCall, type ClientTag, idInUse, type ServerTag } from './client-call.js';
import type { ClientRequestEntry, CorrelationTable, LinkId, SessionKey } from './correlation-table.js';
import { fromUpstreamHop, type ToClientTrace } from './hops.js';
import { type InboundItem, readInbound } from './inbound.js';
import type { Link, LinkRegistry } from './links.js';
import type { Observations } from './observations.js';
import type { Delivery, InboundMeta } from './ports.js';
import type { RequestResolver } from './router-types.js';
import type { Session } from './session.js';
import { INTERNAL_SESSION } from './session-key.js';
import type { HopFields } from './taps.js';
import { errorText } from './thrown.js';
import { GATEWAY_TRACE_SESSION, wallNow } from './trace-mapping.js';

/** What handling upstream traffic needs of the router. */
export interface UpstreamInboundOptions {
  /** Who hears of calls, upstream requests, sessions and links (`observations.ts`). */
  readonly observations: Observations;
  /** The router's correlation table: every request in flight, both directions. */
  readonly table: CorrelationTable<ClientTag, ServerTag>;
  /** The router's links (connections to upstreams), to look up and write to. */
  readonly links: LinkRegistry;
  /** The live client sessions by key. */
  readonly sessions: ReadonlyMap<SessionKey, Session<ClientCall>>;
  /** Where notifications and server requests that belong to no call go. */
  readonly resolver: Pick<RequestResolver, 'notificationTargets' | 'sessionsFor'>;
  /** Where warnings (dropped, malformed or unroutable messages) are logged. */
  readonly logger: Logger;
  /** Where the counters of what happened are kept. */
  readonly metrics: Metrics;
  /** The nesting bound of what is parsed here (`server.maxJsonDepth`), if any. */
  readonly maxJsonDepth: number | undefined;
  /** Hands a hop to the taps (the router's gate applies). */
  readonly hop: (fields: HopFields) => void;
  /** Sends a message to a client session, and traces it. */
  readonly deliver: (
    session: Session<ClientCall>,
    message: JsonRpcMessage,
    delivery: Delivery,
    trace: ToClientTrace,
  ) => void;
  /** An upstream answered client call `call` (its trace id `traceId`): the call ends with it. */
  readonly answered: (
    call: ClientCall,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    traceId: string,
    upstream: string,
  ) => void;
  /** A request in flight failed (the client's call ends with `error`; the gateway's own is rejected). */
  readonly failClientRequest: (entry: ClientRequestEntry<ClientTag>, error: JsonRpcErrorObject) => void;
  /** A request was opened or answered in the table: the router's timer follows the next deadline. */
  readonly scheduleExpiry: () => void;
}

/** A server request's own trace: its hop's id and context, and when it arrived. */
interface ServerRequestTrace {
  readonly traceId: string;
  readonly context: string;
  readonly receivedAt: number;
}

/** Handles what upstreams send (`text`, from `Router.handleUpstreamText`), one message at a time. */
export class UpstreamInbound {
  readonly #o: UpstreamInboundOptions;

  /** Keeps nothing of its own: all state is the router's, reached through `options`. */
  constructor(options: UpstreamInboundOptions) {
    this.#o = options;
  }

  /**
   * Raw text from an upstream. Malformed text is logged and counted; a malformed response whose id
   * can be read still answers the client request it belongs to, with an error, so nothing hangs.
   */
  handleText(linkId: LinkId, text: string, meta: InboundMeta): void {
    const link = this.#o.links.get(linkId);
    if (!link) return;
    const payload = readInbound(
      text,
      this.#o.maxJsonDepth === undefined
        ? { allowBatch: true }
        : { allowBatch: true, maxDepth: this.#o.maxJsonDepth },
    );
    if (payload.error) {
      this.#o.metrics.inc('upstream_malformed_total', { upstream: link.name });
      this.#o.logger.warn(
        { upstream: link.name, error: payload.error.message },
        'unreadable message from upstream; dropped',
      );
      return;
    }
    for (const item of payload.items) {
      try {
        this.#item(link, item, meta, payload.batch ? undefined : text);
      } catch (error) {
        this.#o.metrics.inc('message_failures_total', { direction: 'server->client', upstream: link.name });
        this.#o.logger.error(
          { upstream: link.name, err: errorText(error) },
          'the gateway failed while handling an upstream message',
        );
      }
    }
  }

  /** One item of what an upstream sent (see `handleUpstreamText`). */
  #item(link: Link, item: InboundItem, meta: InboundMeta, text: string | undefined): void {
    const linkId = link.id;
    if (item.kind === 'message') {
      this.handleMessage(linkId, item.message, meta, text === undefined ? undefined : (item.raw ?? text));
      return;
    }
    this.#o.metrics.inc('upstream_malformed_total', { upstream: link.name });
    if (item.kind === 'drop') {
      this.#o.logger.warn(
        { upstream: link.name, error: item.error.message },
        'invalid JSON-RPC message from upstream; dropped',
      );
    } else if (item.kind === 'reply') {
      // A broken request of the server's: answer it, like any client would. Its id is in the
      // server's own id space, so it must never be matched against the gateway's requests.
      this.#o.logger.warn(
        { upstream: link.name, error: item.response.error.message },
        'invalid request from upstream; answered with an error',
      );
      this.#o.links.send(link, item.response, {
        id: newEnvelopeId(),
        session: undefined,
        sessionKey: INTERNAL_SESSION,
        correlation: [],
        context: GATEWAY_TRACE_SESSION,
        receivedAt: wallNow(),
      });
    } else {
      // A broken response: the client request it answers fails instead of waiting for a timeout.
      this.#o.logger.warn(
        { upstream: link.name, error: item.response.error.message },
        'invalid response from upstream',
      );
      const id = item.response.id;
      const entry = id === null ? undefined : this.#o.table.takeServerResponse(linkId, id);
      if (entry) {
        this.#o.failClientRequest(
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
  handleMessage(linkId: LinkId, message: JsonRpcMessage, meta: InboundMeta, raw?: string): void {
    const link = this.#o.links.get(linkId);
    if (!link) return;
    const receivedAt = wallNow();
    if (!('method' in message)) this.#response(link, message, meta, receivedAt, raw);
    else if ('id' in message) this.#request(link, message, meta, receivedAt, raw);
    else this.#notification(link, message, meta, receivedAt, raw);
  }

  #response(
    link: Link,
    response: JsonRpcResponse,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const entry = response.id === null ? undefined : this.#o.table.takeServerResponse(link.id, response.id);
    const traceId = this.#hopOfCall(link, meta, response, entry, receivedAt, raw);
    if (!entry) {
      this.#o.metrics.inc('orphan_responses_total', { direction: 'server->client', upstream: link.name });
      this.#o.logger.warn(
        { upstream: link.name, id: response.id },
        'an upstream response matches no request in flight; dropped',
      );
      return;
    }
    this.#o.scheduleExpiry();
    observeUpstreamEnd(this.#o.observations, entry.tag, { response });
    if (entry.tag.internal) {
      entry.tag.internal.resolve({ response, traceId });
      return;
    }
    const session = this.#deliverable(entry, link, 'late_responses_total');
    if (!session) return;
    if (entry.method === 'initialize' && 'result' in response && isObject(response.result)) {
      const version = response.result.protocolVersion;
      if (typeof version === 'string') session.negotiated(version);
    }
    const call = entry.tag.call;
    if (!call) return;
    const payload = 'error' in response ? { error: response.error } : { result: response.result };
    this.#o.answered(call, payload, traceId, link.name);
  }

  /**
   * Records `message` from `link` (a response or progress) as its hop, under a fresh envelope id it
   * returns: in the context of client request `entry` and after its gateway->upstream hop, or, for
   * no entry, as the gateway's own traffic.
   */
  #hopOfCall(
    link: Link,
    meta: InboundMeta,
    message: JsonRpcMessage,
    entry: ClientRequestEntry<ClientTag> | undefined,
    receivedAt: number,
    raw: string | undefined,
  ): string {
    const traceId = newEnvelopeId();
    this.#o.hop(
      fromUpstreamHop(
        link.name,
        meta.transport,
        entry ? this.#o.sessions.get(entry.tag.traceSession) : undefined,
        entry?.tag.traceSession,
        {
          id: traceId,
          message,
          context: entry ? entry.tag.context : GATEWAY_TRACE_SESSION,
          receivedAt,
          raw,
          correlation: entry ? [entry.tag.upstreamTraceId] : undefined,
        },
      ),
    );
    return traceId;
  }

  /**
   * The session to hand what answers or concerns client request `entry` to: none when the client
   * cancelled it (counted as `cancelledCounter{upstream}`: it asked to hear no more of it) or its
   * session has ended.
   */
  #deliverable(
    entry: ClientRequestEntry<ClientTag>,
    link: Link,
    cancelledCounter: 'late_responses_total' | 'progress_after_cancel_total',
  ): Session<ClientCall> | undefined {
    if (entry.cancelled) {
      this.#o.metrics.inc(cancelledCounter, { upstream: link.name });
      return undefined;
    }
    return this.#o.sessions.get(entry.session);
  }

  /** A notification from an upstream: progress, a server's cancellation of its own request, or anything else. */
  #notification(
    link: Link,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    if (notification.method === 'notifications/progress')
      this.#progress(link, notification, meta, receivedAt, raw);
    else if (notification.method === 'notifications/cancelled')
      this.#cancelled(link, notification, meta, receivedAt, raw);
    else this.#otherNotification(link, notification, meta, receivedAt, raw);
  }

  /** Progress from an upstream: to the client request that carried the token, with the client's token. */
  #progress(
    link: Link,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const token = progressNotificationToken(notification);
    const entry =
      token === undefined ? undefined : this.#o.table.routeProgress(link.id, token, performance.now());
    const traceId = this.#hopOfCall(link, meta, notification, entry, receivedAt, raw);
    if (!entry || entry.downstreamProgressToken === undefined || entry.tag.internal) {
      this.#o.metrics.inc('progress_unroutable_total', { direction: 'server->client', upstream: link.name });
      return;
    }
    // A cancelled request's progress is recorded above in its context; its client asked to hear no more of it.
    const session = this.#deliverable(entry, link, 'progress_after_cancel_total');
    if (!session) return;
    this.#o.deliver(
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
  #cancelled(
    link: Link,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const requestId = cancelledRequestId(notification);
    const entry = requestId === undefined ? undefined : this.#o.table.cancelServerRequest(link.id, requestId);
    const traceId = newEnvelopeId();
    const session = entry ? this.#o.sessions.get(entry.session) : undefined;
    this.#o.hop(
      fromUpstreamHop(link.name, meta.transport, session, entry?.session, {
        id: traceId,
        message: notification,
        context: entry ? entry.tag.context : GATEWAY_TRACE_SESSION,
        receivedAt,
        raw,
        correlation: entry ? [entry.tag.traceId] : undefined,
      }),
    );
    if (!entry || !session) {
      this.#o.metrics.inc('cancellations_ignored_total', { direction: 'server->client' });
      return;
    }
    this.#o.deliver(
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
  #otherNotification(
    link: Link,
    notification: JsonRpcNotification,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const related =
      meta.relatedUpstreamId === undefined
        ? undefined
        : this.#o.table.findByUpstreamId(link.id, meta.relatedUpstreamId);
    let targets: readonly SessionKey[];
    if (related && !related.tag.internal) targets = [related.session];
    else {
      try {
        targets = this.#o.resolver.notificationTargets(link.id, notification);
      } catch (error) {
        this.#o.logger.error({ err: String(error) }, 'the resolver failed on an upstream notification');
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
      this.#o.sessions.get(guessed.session)?.protocolVersion === MODERN_REVISION
        ? guessed
        : undefined;
    const traceId = newEnvelopeId();
    const first = targets.length === 1 ? this.#o.sessions.get(targets[0]!) : undefined;
    this.#o.hop(
      fromUpstreamHop(link.name, meta.transport, first, undefined, {
        id: traceId,
        message: notification,
        context:
          related && !related.tag.internal ? related.tag.context : (first?.key ?? GATEWAY_TRACE_SESSION),
        receivedAt,
        raw,
        correlation: related ? [related.tag.upstreamTraceId] : undefined,
      }),
    );
    if (targets.length === 0)
      this.#o.metrics.inc('notifications_undelivered_total', {
        upstream: link.name,
        method: boundMethod(notification.method),
      });
    for (const key of targets) {
      const session = this.#o.sessions.get(key);
      if (!session) continue;
      const delivery: Delivery =
        related && related.session === key
          ? { kind: 'related', request: related.downstreamId }
          : guessedFor && guessedFor.session === key
            ? { kind: 'related', request: guessedFor.downstreamId }
            : { kind: 'unrelated' };
      this.#o.deliver(session, notification, delivery, {
        id: newEnvelopeId(),
        correlation: related ? [related.tag.traceId, traceId] : [traceId],
        context: related && related.session === key ? related.tag.context : session.key,
        receivedAt,
        upstream: link.name,
      });
    }
  }

  /**
   * A server's request to a client: attributed to a session (`#attribute`), traced in the context
   * of the call that caused it, and handed to that client under a gateway id; a request nobody can
   * be found for is answered by the gateway (`#unattributed`).
   */
  #request(
    link: Link,
    request: JsonRpcRequest,
    meta: InboundMeta,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const cause = this.#attribute(link, meta);
    const session = cause ? this.#o.sessions.get(cause.session) : undefined;
    const traceId = newEnvelopeId();
    const context = session
      ? `${cause?.parent ? cause.parent.tag.context : session.key}/${traceId}`
      : GATEWAY_TRACE_SESSION;
    this.#o.hop(
      fromUpstreamHop(link.name, meta.transport, session, undefined, {
        id: traceId,
        message: request,
        context,
        receivedAt,
        raw,
        correlation: cause?.parent ? [cause.parent.tag.upstreamTraceId] : undefined,
      }),
    );
    const trace = { traceId, context, receivedAt };
    if (!session) this.#unattributed(link, request, trace);
    else this.#toClient(link, request, session, cause?.parent, trace);
  }

  /**
   * A server request no session could be found for: a ping is answered by the gateway (it is alive,
   * which is what ping checks); anything else gets `SB_UNROUTABLE`.
   */
  #unattributed(link: Link, request: JsonRpcRequest, trace: ServerRequestTrace): void {
    const { traceId, context, receivedAt } = trace;
    if (request.method === 'ping') {
      this.#o.links.answer(link, request.id, { result: {} }, context, receivedAt, traceId);
      return;
    }
    this.#o.metrics.inc('server_requests_unattributed_total', {
      upstream: link.name,
      method: boundMethod(request.method),
    });
    this.#o.logger.warn(
      { upstream: link.name, method: request.method },
      'cannot tell which client session a server request is for',
    );
    const error = gatewayError(
      SbErrorCode.Unroutable,
      'the gateway cannot tell which client session this request is for (several share this upstream); use sharing: pooled (or per-session) for this upstream',
    );
    this.#o.links.answer(link, request.id, { error }, context, receivedAt, traceId);
  }

  /** Opens the server request in the table and hands it to the session's client, under a gateway id. */
  #toClient(
    link: Link,
    request: JsonRpcRequest,
    session: Session<ClientCall>,
    parent: ClientRequestEntry<ClientTag> | undefined,
    trace: ServerRequestTrace,
  ): void {
    const { traceId, context, receivedAt } = trace;
    const downTraceId = newEnvelopeId();
    const token = progressTokenOf(request);
    const opened = this.#o.table.openServerRequest({
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
        ...(parent ? { parentUpstreamId: parent.upstreamId } : {}),
      },
    });
    if (!opened.ok) {
      this.#o.links.answer(link, request.id, { error: idInUse(request.id) }, context, receivedAt, traceId);
      return;
    }
    const down: JsonRpcRequest = { ...request, id: opened.entry.downstreamId };
    const delivery: Delivery = parent
      ? { kind: 'related', request: parent.downstreamId }
      : { kind: 'unrelated' };
    this.#o.deliver(session, down, delivery, {
      id: downTraceId,
      correlation: [traceId],
      context,
      receivedAt,
      upstream: link.name,
    });
    this.#o.scheduleExpiry();
  }

  /**
   * Which session a server->client request belongs to: the request it travelled with (HTTP upstream
   * streams tell), else the one call in flight on this link that is not already blocked on a
   * request to the client (or at least its session), else the one session using the link.
   */
  #attribute(link: Link, meta: InboundMeta): Attribution<ClientTag> | undefined {
    return attributeServerRequest(this.#o.table, {
      link: link.id,
      relatedUpstreamId: meta.relatedUpstreamId,
      asksNothingFor: link.transport.asksNothingFor?.bind(link.transport),
      sessionsUsingLink: () => this.#o.resolver.sessionsFor(link.id).filter((s) => this.#o.sessions.has(s)),
    });
  }
}
