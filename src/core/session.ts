/**
 * A client session as the core keeps it: one object per session, which is at once the router's
 * record (its port, its calls in flight) and the `SessionView` everything else reads (resolvers,
 * interceptors, transports through `SessionHost.session`). Reads are live: whoever holds the
 * session sees its state as it is now (an `initialize` that completes changes the revision every
 * reader sees), and nothing copies it.
 */

import type { TransportContext, TransportKind } from '../envelope/message-context.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import { idKey, type JsonObject, type RequestId } from '../protocol/jsonrpc/types.js';
import { DEFAULT_REVISION, type ProtocolVersion } from '../protocol/mcp/revisions.js';
import type { SessionKey } from './correlation-table.js';
import type { DownstreamPort, OpenSession, SessionState, SessionView } from './ports.js';

/** What a session holds of each client request in flight: the key it is tracked under. */
export interface TrackedCall {
  /** `idKey` of the request's id: unique among the session's requests in flight. */
  readonly key: string;
}

/**
 * One client session. The fields a transport set when it opened the session never change; the
 * session's life (`state`), its agreed revision and its `initialize` params change only through
 * the methods below, which name the protocol step that changes them.
 */
export class Session<C extends TrackedCall = TrackedCall> implements SessionView {
  /** The router's key of the session (`SessionView.key`). */
  readonly key: SessionKey;
  /** The kind of transport the client is on. */
  readonly transport: TransportKind;
  /** The transport's details, recorded on the session's hops (the trace). */
  readonly transportContext: TransportContext;
  /** The `Mcp-Session-Id` the client knows the session by, when the transport issued one. */
  readonly mcpSessionId?: string;
  /** Who is calling, as authentication established it. */
  readonly principal?: string;
  /** The principal's roles, as authentication established them. */
  readonly roles?: readonly string[];
  /** Where the session's messages go out; replaced when the transport reconnects. */
  port: DownstreamPort;
  #protocolVersion: ProtocolVersion;
  #state: SessionState = 'uninitialized';
  #initializeParams: JsonObject | undefined;
  /** Every client request in flight, by `idKey` (forwarded, held, or answered locally). */
  readonly #calls = new Map<string, C>();

  /** A session in state `uninitialized`, at the revision given (else the default one). */
  constructor(params: OpenSession) {
    this.key = params.key;
    this.transport = params.transport;
    this.transportContext = params.transportContext;
    this.port = params.port;
    this.#protocolVersion = params.protocolVersion ?? DEFAULT_REVISION;
    if (params.mcpSessionId !== undefined) this.mcpSessionId = params.mcpSessionId;
    if (params.principal !== undefined) this.principal = params.principal;
    if (params.roles !== undefined) this.roles = params.roles;
  }

  /** The revision the session speaks (the default until `initialize` agrees on one). */
  get protocolVersion(): ProtocolVersion {
    return this.#protocolVersion;
  }

  /** Where the session is in its life: `uninitialized`, then through the methods below. */
  get state(): SessionState {
    return this.#state;
  }

  /** The params of the client's `initialize`, once it sent one. */
  get initializeParams(): JsonObject | undefined {
    return this.#initializeParams;
  }

  /** The client sent `initialize`: the session is `initializing`, and its params are kept if they are an object. */
  initializing(params: unknown): void {
    this.#state = 'initializing';
    if (isObject(params)) this.#initializeParams = params;
  }

  /** The client sent `notifications/initialized`: the session is `active`. */
  initialized(): void {
    this.#state = 'active';
  }

  /** The revision agreed with the client (an upstream's or the gateway's answer to `initialize`). */
  negotiated(protocolVersion: ProtocolVersion): void {
    this.#protocolVersion = protocolVersion;
  }

  /** The session ended: nothing more is sent to it. */
  close(): void {
    this.#state = 'closed';
  }

  /** Whether the session has ended. */
  get closed(): boolean {
    return this.#state === 'closed';
  }

  /** The call in flight under request id `id`, if any. */
  call(id: RequestId): C | undefined {
    return this.#calls.get(idKey(id));
  }

  /** Whether a call is in flight under `key` (an `idKey`). */
  hasCall(key: string): boolean {
    return this.#calls.has(key);
  }

  /** Tracks `call` as in flight (its key must be free: see `hasCall`). */
  track(call: C): void {
    this.#calls.set(call.key, call);
  }

  /** Stops tracking `call`, unless another call has taken its key since. */
  release(call: C): void {
    if (this.#calls.get(call.key) === call) this.#calls.delete(call.key);
  }

  /** The calls in flight now (a copy: ending them while iterating is safe). */
  callsInFlight(): C[] {
    return [...this.#calls.values()];
  }
}
