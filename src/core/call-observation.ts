/**
 * What the router's pieces tell its observers (`observations.ts`), one function per moment, so
 * that each place a call, an upstream request, a session or a link starts or ends says so in one
 * guarded line. Nothing here runs while no observer is registered: starts check
 * `Observations.active`, ends act only on what was observed to start.
 */

import type { JsonRpcErrorObject, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc/types.js';
import type { ClientCall, ClientTag } from './client-call.js';
import type { LinkId } from './correlation-table.js';
import type { Link } from './links.js';
import {
  type LinkPhase,
  type Observations,
  type ObservedCall,
  type ObservedOutcome,
  responseOutcome,
} from './observations.js';
import type { Session } from './session.js';
import { wallNow } from './trace-mapping.js';

/** A client call started: observers hear of it, and the call keeps what they saw. */
export function observeCallStart(observations: Observations, call: ClientCall): void {
  if (!observations.active) return;
  const observed: ObservedCall = {
    session: call.session,
    request: call.request,
    traceId: call.traceId,
    receivedAt: call.receivedAt,
  };
  call.observed = observed;
  observations.callStarted(observed);
}

/** A call observers saw start ended: `response` as sent, or none (cancelled, session ended). */
export function observeCallEnd(
  observations: Observations,
  call: ClientCall,
  response: JsonRpcResponse | undefined,
): void {
  const observed = call.observed;
  if (observed === undefined) return;
  // One literal, not spreads of partial objects: on Node 20's V8 an object made by a spread and
  // then given more properties takes a slow path (microseconds per call, on the forwarding path).
  let outcome: ObservedOutcome = 'cancelled';
  let errorCode: number | undefined;
  if (response !== undefined) {
    if (call.refused === true && 'error' in response) {
      outcome = 'refused';
      errorCode = response.error.code;
    } else ({ outcome, errorCode } = responseOutcome(response));
  }
  observations.callEnded(observed, {
    outcome,
    errorCode,
    upstream: call.upstream,
    routed: call.routed,
    response,
    durationMs: wallNow() - call.receivedAt,
  });
}

/** A request went into the correlation table toward `tag.upstream` on `link`. */
export function observeUpstreamStart(
  observations: Observations,
  tag: ClientTag,
  link: LinkId,
  request: JsonRpcRequest,
  call?: ObservedCall,
): void {
  if (!observations.active) return;
  const observed = call ?? tag.call?.observed;
  tag.observed = observations.upstreamStarted({
    upstream: tag.upstream,
    link,
    method: request.method,
    request,
    ...(observed === undefined ? {} : { call: observed }),
    traceSession: tag.traceSession,
    traceId: tag.upstreamTraceId,
  });
}

/** An upstream request ended (only its first end counts). */
export function observeUpstreamEnd(
  observations: Observations,
  tag: ClientTag,
  how: { readonly response: JsonRpcResponse } | { readonly error: JsonRpcErrorObject } | 'cancelled',
): void {
  if (tag.observed !== undefined) observations.upstreamEnded(tag.observed, how);
}

/** A link changed state (attached, ready, restarting, down). */
export function observeLink(observations: Observations, link: Link, phase: LinkPhase): void {
  if (!observations.active) return;
  observations.linkChanged(
    { link: link.id, upstream: link.name, transport: link.transportContext.kind },
    phase,
    phase === 'restarting' || phase === 'down' ? link.downReason : undefined,
  );
}

/** A session opened (`closedFor` undefined) or closed, and why. */
export function observeSession(
  observations: Observations,
  session: Session<ClientCall>,
  closedFor: string | undefined,
): void {
  if (!observations.active) return;
  const observed = {
    key: session.key,
    transport: session.transport,
    protocolVersion: session.protocolVersion,
    ...(session.principal === undefined ? {} : { principal: session.principal }),
  };
  if (closedFor === undefined) observations.sessionOpened(observed);
  else observations.sessionClosed(observed, session.protocolVersion, closedFor);
}
