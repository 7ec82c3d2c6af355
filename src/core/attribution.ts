/**
 * Attribution of server requests (docs/architecture.md, "Attribution of server requests"): which
 * client session, and which of its calls, a server->client request from a link belongs to. Pure
 * functions over the correlation table; the router supplies what only it knows (the transport's
 * promise to ask nothing for some calls, the sessions using the link).
 */

import { idKey, type JsonRpcRequest, type RequestId } from '../protocol/jsonrpc/types.js';
import type { ClientRequestEntry, CorrelationTable, LinkId, SessionKey } from './correlation-table.js';
import { INTERNAL_SESSION } from './session-key.js';

/** What attribution reads of a client request's tag: whether it is the gateway's own, and its call. */
export interface AttributableTag {
  /** Set for the gateway's own requests, which no server request belongs to. */
  readonly internal?: unknown;
  /** The client call the request serves: the request as received, and as forwarded. */
  readonly call?:
    | { readonly request: JsonRpcRequest; readonly routed?: JsonRpcRequest | undefined }
    | undefined;
}

/** What attribution reads of a server request's tag: the client request it was attributed to. */
export interface BlockingTag {
  /** The upstream id of the client request it was attributed to, if any. */
  readonly parentUpstreamId?: RequestId | undefined;
}

/** A server request's origin as the router knows it when the request arrives. */
export interface ServerRequestOrigin {
  /** The link the request came on. */
  readonly link: LinkId;
  /** The upstream id of the request whose response stream carried it (`InboundMeta`), if told. */
  readonly relatedUpstreamId?: RequestId | undefined;
  /** The transport's promise that the peer asks nothing for this call (`UpstreamTransport.asksNothingFor`). */
  readonly asksNothingFor?: ((request: JsonRpcRequest) => boolean) | undefined;
  /** The open sessions using the link (asked only when no call in flight decides). */
  readonly sessionsUsingLink: () => readonly SessionKey[];
}

/** The session a server request belongs to, and the client request that caused it when known. */
export interface Attribution<C> {
  /** The session the request goes to. */
  readonly session: SessionKey;
  /** The table's entry of the client request that caused it, when known. */
  readonly parent?: ClientRequestEntry<C>;
}

/** The client request whose response stream carried the server request, unless the gateway's own. */
export function relatedCall<C extends AttributableTag>(
  table: CorrelationTable<C, unknown>,
  origin: ServerRequestOrigin,
): ClientRequestEntry<C> | undefined {
  if (origin.relatedUpstreamId === undefined) return undefined;
  const parent = table.findByUpstreamId(origin.link, origin.relatedUpstreamId);
  return parent && !parent.tag.internal ? parent : undefined;
}

/**
 * The client calls in flight on the link that the server request may belong to: not the gateway's
 * own, not cancelled, and not calls the peer promised to ask nothing for (left in, one in flight
 * would make another client's server request on the same link unroutable).
 */
export function candidateCalls<C extends AttributableTag>(
  table: CorrelationTable<C, unknown>,
  origin: ServerRequestOrigin,
): ClientRequestEntry<C>[] {
  const asksNothing = origin.asksNothingFor;
  return table
    .sessionsWaitingOn(origin.link)
    .filter((s) => s !== INTERNAL_SESSION)
    .flatMap((s) =>
      table
        .clientRequestsOf(s)
        .filter(
          (e) =>
            e.link === origin.link &&
            !(asksNothing && e.tag.call && asksNothing(e.tag.call.routed ?? e.tag.call.request)),
        ),
    );
}

/**
 * Of several candidate calls, those not already blocked on a request of their own to the client
 * (servers await those answers, so the new request is another call's); all of them if none is free.
 */
export function unblockedCalls<C, S extends BlockingTag>(
  table: CorrelationTable<C, S>,
  link: LinkId,
  calls: ClientRequestEntry<C>[],
): ClientRequestEntry<C>[] {
  const blocked = new Set(
    table
      .serverRequestsOn(link)
      .map((e) => e.tag.parentUpstreamId)
      .filter((id) => id !== undefined)
      .map((id) => idKey(id)),
  );
  const free = calls.filter((e) => !blocked.has(idKey(e.upstreamId)));
  return free.length > 0 ? free : calls;
}

/**
 * Which session a server->client request belongs to: the request it travelled with, else the one
 * free call in flight on the link (or at least the one session of the free calls), else the one
 * session using the link; undefined when that does not single one out.
 */
export function attributeServerRequest<C extends AttributableTag, S extends BlockingTag>(
  table: CorrelationTable<C, S>,
  origin: ServerRequestOrigin,
): Attribution<C> | undefined {
  const related = relatedCall(table, origin);
  if (related) return { session: related.session, parent: related };
  let pending = candidateCalls(table, origin);
  if (pending.length > 0) {
    if (pending.length > 1) pending = unblockedCalls(table, origin.link, pending);
    const sessions = new Set(pending.map((e) => e.session));
    if (sessions.size !== 1) return undefined;
    const session = pending[0]!.session;
    return pending.length === 1 ? { session, parent: pending[0]! } : { session };
  }
  const candidates = origin.sessionsUsingLink();
  return candidates.length === 1 ? { session: candidates[0]! } : undefined;
}
