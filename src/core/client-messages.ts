/**
 * What a client sends that is not a call: its notifications (a cancellation of its own request,
 * progress on a server's request, `initialized`, anything else the resolver routes) and its
 * answers to servers' requests. Each is traced as it came, then sent to the link it concerns under
 * that link's ids. (A client's requests are calls: `Router` and `call-finish.ts`.)
 */

import type { TransportContext } from '../envelope/message-context.js';
import { newEnvelopeId } from '../meup/ids.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { JsonRpcNotification, JsonRpcResponse } from '../protocol/jsonrpc/types.js';
import {
  cancelledRequestId,
  progressNotificationToken,
  withCancelledRequestId,
} from '../protocol/mcp/progress.js';
import { observeUpstreamEnd } from './call-observation.js';
import type { ClientCall, ClientTag, ServerTag } from './client-call.js';
import type { CorrelationTable, LinkId } from './correlation-table.js';
import { clientInHop } from './hops.js';
import type { LinkRegistry } from './links.js';
import type { Observations } from './observations.js';
import type { RequestResolver } from './router-types.js';
import type { Session } from './session.js';
import type { HopFields } from './taps.js';

/** What handling a client's notifications and answers needs of the router. */
export interface ClientMessagesOptions {
  /** Who hears of calls, upstream requests, sessions and links (`observations.ts`). */
  readonly observations: Observations;
  readonly table: CorrelationTable<ClientTag, ServerTag>;
  readonly links: LinkRegistry;
  readonly resolver: Pick<RequestResolver, 'notificationLinks'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Hands a hop to the taps (the router's gate applies). */
  readonly hop: (fields: HopFields) => void;
  /** The client cancelled call `call`: it ends, without an answer. */
  readonly cancelled: (call: ClientCall) => void;
  /** A request was cancelled in the table: the router's timer follows the next deadline. */
  readonly scheduleExpiry: () => void;
}

export class ClientMessages {
  readonly #o: ClientMessagesOptions;

  constructor(options: ClientMessagesOptions) {
    this.#o = options;
  }

  /** A notification from the client (`notifications/cancelled`, progress, anything else). */
  notification(
    session: Session<ClientCall>,
    notification: JsonRpcNotification,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    if (notification.method === 'notifications/cancelled')
      this.#cancelled(session, notification, transport, receivedAt, raw);
    else this.#other(session, notification, transport, receivedAt, raw);
  }

  /**
   * The client cancels its request: the call ends without an answer (MCP: a cancelled request gets
   * none), and the upstream it went to is told, under its own id. Cancellations of unknown or
   * finished requests are ignored.
   */
  #cancelled(
    session: Session<ClientCall>,
    notification: JsonRpcNotification,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const requestId = cancelledRequestId(notification);
    const entry =
      requestId === undefined
        ? undefined
        : this.#o.table.cancelClientRequest(session.key, requestId, performance.now());
    const context = entry ? entry.tag.context : session.key;
    const traceId = newEnvelopeId();
    this.#o.hop(
      clientInHop(session, transport, {
        id: traceId,
        message: notification,
        context,
        receivedAt,
        raw,
        correlation: entry ? [entry.tag.traceId] : undefined,
      }),
    );
    const call = requestId === undefined ? undefined : session.call(requestId);
    if (call) this.#o.cancelled(call);
    if (entry) {
      observeUpstreamEnd(this.#o.observations, entry.tag, 'cancelled');
      const link = this.#o.links.get(entry.link);
      if (link) {
        this.#o.links.send(link, withCancelledRequestId(notification, entry.upstreamId), {
          id: newEnvelopeId(),
          session,
          correlation: [traceId, entry.tag.upstreamTraceId],
          context,
          receivedAt,
        });
      }
      this.#o.scheduleExpiry();
      return;
    }
    // MCP: cancellations of unknown or finished requests are ignored.
    if (!call) this.#o.metrics.inc('cancellations_ignored_total');
  }

  /**
   * Any other notification: `initialized` moves the session on; progress goes to the links whose
   * server request carried its token; the rest goes to the links the resolver names.
   */
  #other(
    session: Session<ClientCall>,
    notification: JsonRpcNotification,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    if (notification.method === 'notifications/initialized') session.initialized();
    const traceId = newEnvelopeId();
    this.#o.hop(
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
      links = this.#linksForProgress(session, notification);
    } else {
      try {
        links = this.#o.resolver.notificationLinks(session, notification);
      } catch (error) {
        this.#o.logger.error({ err: String(error) }, 'the resolver failed on a notification');
        links = [];
      }
    }
    for (const id of links) {
      const link = this.#o.links.get(id);
      if (!link || link.state === 'down') continue;
      this.#o.links.send(link, notification, {
        id: newEnvelopeId(),
        session,
        correlation: [traceId],
        context: session.key,
        receivedAt,
      });
    }
  }

  /** The links whose server request (in flight, to this session) carried the progress token. */
  #linksForProgress(session: Session<ClientCall>, notification: JsonRpcNotification): LinkId[] {
    const token = progressNotificationToken(notification);
    if (token === undefined) return [];
    const links: LinkId[] = [];
    for (const link of this.#o.links.all()) {
      // Server request tokens are not rewritten, so match on the token the server chose.
      if (this.#o.table.hasServerProgressToken(session.key, link.id, token)) links.push(link.id);
    }
    if (links.length === 0) this.#o.metrics.inc('progress_unroutable_total', { direction: 'client->server' });
    return links;
  }

  /** The client answers a server's request: to the link it came from, under the server's id. */
  response(
    session: Session<ClientCall>,
    response: JsonRpcResponse,
    transport: TransportContext,
    receivedAt: number,
    raw: string | undefined,
  ): void {
    const id = response.id;
    const entry = id === null ? undefined : this.#o.table.takeClientResponse(session.key, id);
    const traceId = newEnvelopeId();
    this.#o.hop(
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
      this.#o.metrics.inc('orphan_responses_total', { direction: 'client->server' });
      this.#o.logger.warn(
        { session: session.key, id },
        'a client response matches no server request in flight; dropped',
      );
      return;
    }
    const link = this.#o.links.get(entry.link);
    if (!link || link.state === 'down') return;
    const upstream = { ...response, id: entry.upstreamId } as JsonRpcResponse;
    this.#o.links.send(link, upstream, {
      id: newEnvelopeId(),
      session,
      correlation: [entry.tag.traceId, traceId],
      context: entry.tag.context,
      receivedAt,
    });
  }
}
