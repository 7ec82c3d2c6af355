/**
 * A client request as the router keeps it while it is in flight (`ClientCall`), what the
 * interceptors see of it (`CallView`), and the tags the correlation table carries for the router
 * on each entry: a request to an upstream (`ClientTag`) and a server's request to a client
 * (`ServerTag`).
 */

import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import type { JsonRpcErrorObject, JsonRpcRequest, RequestId } from '../protocol/jsonrpc/types.js';
import type { SessionKey } from './correlation-table.js';
import type { ObservedCall, ObservedUpstreamRequest } from './observations.js';
import type { SessionView } from './ports.js';
import type { CallInfo, UpstreamReply } from './router-types.js';
import type { Session } from './session.js';

/**
 * The router's own record of a client request (see `CallInfo`). Made with every field present,
 * those not known yet `undefined` (`Router`): one hidden class for every call, whichever fields a
 * call's life sets (a field added later moves the object to another shape and out of its
 * in-object slots, on the path of every request).
 */
export interface ClientCall {
  /** The session the request came on. */
  readonly session: Session<ClientCall>;
  /** The request as the client sent it (its id is the client's). */
  readonly request: JsonRpcRequest;
  /** The request id as a map key (`idKey`), the call's key in its session. */
  readonly key: string;
  /** The envelope id of the request's client→gateway hop. */
  readonly traceId: string;
  /** The call's MEUP context (`<session>/<traceId>`): everything it causes is traced there. */
  readonly context: string;
  /** When the request arrived (epoch milliseconds, `wallNow`). */
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
  /** The upstream the call was routed to, once it is. */
  upstream?: string;
  /** The request as the resolver routed it (before the gateway's id replaces the client's), once it is. */
  routed?: JsonRpcRequest;
  /** Set once the call has ended (`CallFinisher.finish`): later answers to it are dropped. */
  done: boolean;
  /** How many times the resolver answered `pending` for this call (it is routed once, at most). */
  pendingRoutes?: number;
  /** Set once the call no longer counts in `callsInFlight` (see `CallFinisher.ended`). */
  ended?: boolean;
  /** Set when an interceptor's `admit` refused it (for observers: `refused`, not `error`). */
  refused?: boolean;
  /** The call as observers saw it start; set only while observers are registered. */
  observed?: ObservedCall;
}

/**
 * What the correlation table keeps with a client→server request (a client's call or the gateway's
 * own). Made with every field present, in this order (`undefined` when absent), so that the tags
 * of forwarded calls and of the gateway's own requests share one shape.
 */
export interface ClientTag {
  /** The client request this upstream request serves (absent for the gateway's own). */
  readonly call?: ClientCall;
  /** The envelope id of the request as it came in (the client's hop, or the gateway's own). */
  readonly traceId: string;
  /** The envelope id of its gateway→upstream hop, which the response's hop correlates to. */
  readonly upstreamTraceId: string;
  /** The MEUP context the request and what it causes are traced in. */
  readonly context: string;
  /** The name of the upstream it was sent to. */
  readonly upstream: string;
  /** Set for the gateway's own requests: who waits for the answer. */
  readonly internal?: { resolve(reply: UpstreamReply): void; reject(error: JsonRpcErrorObject): void };
  /** The session whose trace the request belongs to (for internal requests, the one it serves). */
  readonly traceSession: SessionKey;
  /** The request as observers saw it start; set only while observers are registered. */
  observed?: ObservedUpstreamRequest;
}

/** What the correlation table keeps with a server→client request. */
export interface ServerTag {
  /** The envelope id of the request's upstream→gateway hop. */
  readonly traceId: string;
  /** The envelope id of its gateway→client hop, which the client's answer correlates to. */
  readonly downTraceId: string;
  /** The MEUP context it is traced in (one level below the call it was attributed to, if any). */
  readonly context: string;
  /** The name of the upstream that sent it. */
  readonly upstream: string;
  /** The upstream id of the client request it was attributed to, if any. */
  readonly parentUpstreamId?: RequestId;
}
/** The call's abort signal, made on first use (already aborted when the call was). */
export function signalOf(call: ClientCall): AbortSignal {
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
export class CallView implements CallInfo {
  /** The session the call came on (`CallInfo.session`). */
  readonly session: SessionView;
  /** The request as the client sent it (`CallInfo.request`). */
  readonly request: JsonRpcRequest;
  /** The envelope id of the request's client→gateway hop. */
  readonly traceId: string;
  /** The call's MEUP context. */
  readonly context: string;
  /** When the request arrived (epoch milliseconds, `wallNow`). */
  readonly receivedAt: number;
  /** The upstream it was routed to (interceptors see calls once they are routed). */
  readonly upstream: string | undefined;
  /** The request as routed (before the gateway's id replaces the client's). */
  readonly routed: JsonRpcRequest | undefined;
  /** What interceptors keep about the call between `admit` and `complete`, by their own keys. */
  readonly notes = new Map<string, unknown>();
  readonly #call: ClientCall;

  /** The view of `call`, as of now (its routing is copied, not followed). */
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

  /** Aborted when the call is (cancelled, or its session ended); made on first use. */
  get signal(): AbortSignal {
    return signalOf(this.#call);
  }
}

/** The call as interceptors see it: one object per call, shared by `admit` and `complete`. */
export function callInfoOf(call: ClientCall): CallInfo {
  // Made after routing: `upstream` and `routed` are set before the first `admit` and never change.
  call.info ??= new CallView(call, call.session);
  return call.info;
}

/** Aborts a call's signal, or makes it born aborted if nobody asked for it yet. */
export function abortCall(call: ClientCall): void {
  call.aborted = true;
  call.controller?.abort();
}

/**
 * The error of a request whose id is already in use by a request in flight from the same sender
 * (JSON-RPC ids must be unique among them; the first keeps the id).
 */
export function idInUse(id: RequestId): JsonRpcErrorObject {
  return {
    code: JsonRpcCode.InvalidRequest,
    message: `Invalid Request: id ${JSON.stringify(id)} is already in use by a request in flight`,
  };
}
