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

/** The router's own record of a client request (see `CallInfo`). */
export interface ClientCall {
  readonly session: Session<ClientCall>;
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
  /** Set once the call no longer counts in `callsInFlight` (see `CallFinisher.ended`). */
  ended?: boolean;
  /** Set when an interceptor's `admit` refused it (for observers: `refused`, not `error`). */
  refused?: boolean;
  /** The call as observers saw it start; set only while observers are registered. */
  observed?: ObservedCall;
}

export interface ClientTag {
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

export interface ServerTag {
  readonly traceId: string;
  readonly downTraceId: string;
  readonly context: string;
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
