/**
 * Requests and notifications the gateway itself sends to an upstream, on no client's behalf or on
 * behalf of a call it answers itself: the re-initialization of a restarted connection, the fan-out
 * of an aggregated list, a ping. They go through the correlation table like a client's call, under
 * the table key `INTERNAL_SESSION` with ids the gateway numbers, so timeouts, a link that closes
 * and a late answer are handled as for any request; the answer settles a promise instead of going
 * to a client.
 */

import { rejection } from '../errors/rpc-error.js';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { newEnvelopeId } from '../meup/ids.js';
import type {
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcNotification,
  JsonRpcRequest,
  RequestId,
} from '../protocol/jsonrpc/types.js';
import { observeUpstreamEnd, observeUpstreamStart } from './call-observation.js';
import type { ClientTag, ServerTag } from './client-call.js';
import type { ClientRequestEntry, CorrelationTable, LinkId, SessionKey } from './correlation-table.js';
import type { Link, LinkRegistry } from './links.js';
import type { Observations, ObservedCall } from './observations.js';
import type { UpstreamReply } from './router-types.js';
import type { Session } from './session.js';
import { INTERNAL_SESSION } from './session-key.js';
import { GATEWAY_TRACE_SESSION, wallNow } from './trace-mapping.js';

/** How a request of the gateway's own is traced and sent (`Router.requestUpstream`). */
export interface GatewayRequestOptions {
  /** The session whose trace the request belongs to (default: the gateway's own). */
  readonly traceSession?: SessionKey;
  /** Its trace context (default: the trace session's, else the gateway's). */
  readonly context?: string;
  /** The trace ids it was caused by. */
  readonly correlation?: readonly string[];
  /** Aborting it cancels the request upstream and rejects the promise. */
  readonly signal?: AbortSignal;
  /** Send even while the link is `starting` (the re-initialization itself). */
  readonly bypassQueue?: boolean;
  /** The client call it serves, as observers saw it (a fan-out of a local answer). */
  readonly observedCall?: ObservedCall | undefined;
}

/** What gateway requests need of the router. */
export interface GatewayRequestsOptions {
  /** Who hears of calls, upstream requests, sessions and links (`observations.ts`). */
  readonly observations: Observations;
  /** The router's correlation table: every request in flight, both directions. */
  readonly table: CorrelationTable<ClientTag, ServerTag>;
  /** The router's links (connections to upstreams), to look up and write to. */
  readonly links: LinkRegistry;
  /** The live session under `key`, if any (its hops are traced under it). */
  readonly session: (key: SessionKey) => Session | undefined;
  /** A request was opened in the table: the router's timer must cover its deadline. */
  readonly scheduleExpiry: () => void;
  /** Sends `notifications/cancelled` for a request in flight. */
  readonly cancelUpstream: (entry: ClientRequestEntry<ClientTag>, reason: string) => void;
}

type Waiter = { resolve(reply: UpstreamReply): void; reject(error: JsonRpcErrorObject): void };

/** Sends the gateway's own requests and notifications upstream and settles their promises. */
export class GatewayRequests {
  readonly #o: GatewayRequestsOptions;
  /** The gateway's own request ids, in the table under `INTERNAL_SESSION`. */
  #counter = 0;

  /** Requests numbered from 1, none in flight. */
  constructor(options: GatewayRequestsOptions) {
    this.#o = options;
  }

  /** See `Router.requestUpstream`. */
  request(
    linkId: LinkId,
    method: string,
    params: JsonObject | undefined,
    options: GatewayRequestOptions,
  ): Promise<UpstreamReply> {
    const link = this.#o.links.get(linkId);
    if (!link || link.state === 'down') {
      return Promise.reject(
        rejection(
          gatewayError(SbErrorCode.UpstreamUnavailable, `upstream ${link?.name ?? linkId} is not available`),
        ),
      );
    }
    if (options.signal?.aborted)
      return Promise.reject(rejection(gatewayError(SbErrorCode.Internal, 'aborted')));
    return new Promise<UpstreamReply>((resolve, reject) =>
      this.#send(link, method, params, options, { resolve, reject: (error) => reject(rejection(error)) }),
    );
  }

  /** See `Router.notifyUpstream`. */
  notify(
    linkId: LinkId,
    method: string,
    params: JsonObject | undefined,
    options: { readonly bypassQueue?: boolean; readonly traceSession?: SessionKey },
  ): void {
    const link = this.#o.links.get(linkId);
    if (!link || link.state === 'down') return;
    const message: JsonRpcNotification =
      params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params };
    const traceSession = options.traceSession ?? INTERNAL_SESSION;
    this.#o.links.send(
      link,
      message,
      {
        id: newEnvelopeId(),
        session: this.#o.session(traceSession),
        sessionKey: traceSession,
        correlation: [],
        context: this.#contextOf(traceSession),
        receivedAt: wallNow(),
      },
      options.bypassQueue === true,
    );
  }

  /** Opens the request in the table and sends it; `waiter` settles with its answer. */
  #send(
    link: Link,
    method: string,
    params: JsonObject | undefined,
    options: GatewayRequestOptions,
    waiter: Waiter,
  ): void {
    const traceSession = options.traceSession ?? INTERNAL_SESSION;
    const context = options.context ?? this.#contextOf(traceSession);
    const upstreamTraceId = newEnvelopeId();
    this.#counter++;
    const opened = this.#o.table.openClientRequest({
      session: INTERNAL_SESSION,
      downstreamId: this.#counter,
      link: link.id,
      method,
      now: performance.now(),
      // Every field of a ClientTag, in its declared order (one shape for all tags; see `ClientTag`).
      tag: {
        call: undefined,
        traceId: upstreamTraceId,
        upstreamTraceId,
        context,
        upstream: link.name,
        internal: waiter,
        traceSession,
        observed: undefined,
      },
    });
    if (!opened.ok) {
      waiter.reject(gatewayError(SbErrorCode.Internal, 'internal request id collision'));
      return;
    }
    const { upstreamId, downstreamId } = opened.entry;
    const message: JsonRpcRequest =
      params === undefined
        ? { jsonrpc: '2.0', id: upstreamId, method }
        : { jsonrpc: '2.0', id: upstreamId, method, params };
    observeUpstreamStart(this.#o.observations, opened.entry.tag, link.id, message, options.observedCall);
    options.signal?.addEventListener('abort', () => this.#aborted(downstreamId, waiter), { once: true });
    const trace = {
      id: upstreamTraceId,
      session: this.#o.session(traceSession),
      sessionKey: traceSession,
      correlation: options.correlation ?? [],
      context,
      receivedAt: wallNow(),
    };
    if (!this.#o.links.send(link, message, trace, options.bypassQueue === true)) {
      this.#o.table.takeServerResponse(link.id, upstreamId);
      const error = gatewayError(
        SbErrorCode.Internal,
        `the gateway could not send ${method} to upstream ${link.name}`,
      );
      observeUpstreamEnd(this.#o.observations, opened.entry.tag, { error });
      waiter.reject(error);
      return;
    }
    this.#o.scheduleExpiry();
  }

  /** The request's signal aborted: it is cancelled upstream (if still in flight) and rejected. */
  #aborted(downstreamId: RequestId, waiter: Waiter): void {
    const entry = this.#o.table.cancelClientRequest(INTERNAL_SESSION, downstreamId, performance.now());
    if (entry) this.#o.cancelUpstream(entry, 'the client cancelled the request');
    waiter.reject(gatewayError(SbErrorCode.Internal, 'aborted'));
  }

  /** A trace context for the gateway's traffic on behalf of `key`: the session's, else the gateway's. */
  #contextOf(key: SessionKey): string {
    return this.#o.session(key) ? key : GATEWAY_TRACE_SESSION;
  }
}
