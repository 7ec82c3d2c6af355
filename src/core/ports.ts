/**
 * The ports the core defines and the adapters implement. Transports never see the correlation
 * table and the core never sees a socket: adapters hand the router parsed messages and the router
 * hands adapters serialized messages with a delivery hint.
 */
import type { TransportContext, TransportKind } from '../envelope/message-context.js';
import type {
  JsonObject,
  JsonRpcErrorObject,
  JsonRpcMessage,
  JsonRpcRequest,
  RequestId,
} from '../protocol/jsonrpc/types.js';
import type { Wire } from '../protocol/mcp/reserved-meta.js';
import type { ProtocolVersion } from '../protocol/mcp/revisions.js';
import type { LinkId, SessionKey } from './correlation-table.js';

/**
 * Where a message for a client belongs. HTTP transports map this onto streams (the POST stream of
 * `request`, else the session's GET stream); stdio writes everything to the one pipe.
 */
export type Delivery =
  /** The response to the client's request `request`. */
  | { readonly kind: 'response'; readonly request: RequestId }
  /** A notification or server request caused by the client's request `request`. */
  | { readonly kind: 'related'; readonly request: RequestId }
  /** Not tied to any client request (list_changed, log messages, unattributed server requests). */
  | { readonly kind: 'unrelated' };

/** A client session's way out, implemented by each downstream transport. */
export interface DownstreamPort {
  /**
   * Sends one message to the client. `json` is exactly `JSON.stringify(message)`. Must not throw;
   * a transport that cannot deliver counts and logs, and may keep the message for resumption.
   */
  send(json: string, message: JsonRpcMessage, delivery: Delivery): void;
  /**
   * The router will send nothing for this client request: the client cancelled it (MCP: a
   * cancelled request gets no response). A transport that keeps a place for its answer (a batch's
   * answer, a POST waiting for its JSON body) settles without it, so the other answers are not
   * held back and nothing waits forever. Optional; must not throw.
   */
  dropped?(request: RequestId): void;
}

/** What a transport tells the router about a message it hands in, beyond its text. */
export interface InboundMeta {
  /** The transport the message arrived on (child pid, HTTP details, SSE event id...). */
  readonly transport: TransportContext;
  /**
   * The upstream id of the gateway's request this message is related to, when the transport knows
   * (an upstream HTTP POST's response stream). Lets the router attribute server->client requests
   * exactly even on a shared upstream.
   */
  readonly relatedUpstreamId?: RequestId;
}

/** Why a link's connection ended, as its transport reports it (`onclose`). */
export interface UpstreamClose {
  /** A human-readable reason, for logs and the errors clients get. */
  readonly reason: string;
  /** The child process's exit code, when a process ended. */
  readonly code?: number | null;
  /** The signal that ended the child process, if one did. */
  readonly signal?: string | null;
}

/**
 * A connection to one MCP server session. Contract (after the MCP SDK's Transport):
 * - set the callbacks before `start()`, or messages may be lost;
 * - `send` never throws; failures surface through `onerror` or `onclose`; it returns what it wrote
 *   when it rewrote the message (a transport for a legacy peer drops the 2026-07-28 envelope and
 *   the gateway's own `_meta` members; the trace records what went on the wire), and nothing when
 *   it wrote the message as given (or will write it later, or cannot);
 * - `refuse`, when present, is asked about each client request before it is correlated and sent:
 *   an error there answers the client and nothing is sent (a request the peer's protocol cannot
 *   honour, e.g. a 2026-07-28 `requestState` for a legacy peer, which never issues one);
 * - `asksNothingFor`, when present and true for a request, promises that the peer will send no
 *   server->client request on its behalf (a 2026-07-28 request to an upstream that speaks both
 *   eras: its questions come back as `input_required`), so the router leaves that call out when it
 *   guesses which call an unrelated server request belongs to;
 * - `onclose` is called exactly once, after which nothing more is delivered;
 * - `close()` is idempotent.
 */
export interface UpstreamTransport {
  /** Connects (spawns the process, opens the session); resolves once messages can be sent. */
  start(): Promise<void>;
  /** Writes `message` (serialised as `json`) to the peer; returns the rewritten copy, if any (above). */
  send(json: string, message: JsonRpcMessage): Wire | undefined;
  /** The error to answer `request` with instead of sending it, or `undefined` to send it. */
  refuse?(request: JsonRpcRequest): JsonRpcErrorObject | undefined;
  /** Whether the peer will never ask the client anything on behalf of `request` (see above). */
  asksNothingFor?(request: JsonRpcRequest): boolean;
  /** Ends the connection; resolves once it is closed. Idempotent. */
  close(): Promise<void>;
  /** Called with each message's text from the peer, and what the transport knows about it. */
  onmessage?: (text: string, meta: InboundMeta) => void;
  /** Called exactly once when the connection ends, for whatever reason. */
  onclose?: (close: UpstreamClose) => void;
  /** Called on a failure that does not (yet) end the connection. */
  onerror?: (error: Error) => void;
}

// ------------------------------------------------------------------ the core's side

/** Where a client session is in its life (the legacy handshake, then use, then the end). */
export type SessionState = 'uninitialized' | 'initializing' | 'active' | 'closing' | 'closed';

/**
 * What the rest of the system may know about a client session: read-only, and live (the core's
 * one session object, `core/session.ts`, implements it; nobody gets a copy).
 */
export interface SessionView {
  /** Internal key: a valid MEUP context segment and the root of the session's trace contexts. */
  readonly key: SessionKey;
  /** The `Mcp-Session-Id` the client knows the session by, when the transport issued one. */
  readonly mcpSessionId?: string;
  /** Who is calling (authentication's principal; `local` without it). */
  readonly principal?: string;
  /** The principal's roles, as authentication established them. */
  readonly roles?: readonly string[];
  /** The kind of transport the client is on. */
  readonly transport: TransportKind;
  /** The MCP revision agreed with the client (the default until it says). */
  readonly protocolVersion: ProtocolVersion;
  /** Where the session is in its life. */
  readonly state: SessionState;
  /** The client's `initialize` params, once seen (clientInfo, capabilities, protocolVersion). */
  readonly initializeParams?: JsonObject;
}

/** What a downstream says when it opens a client session. */
export interface OpenSession {
  /** The internal session key (`newSessionKey()`): unique, and the root of its trace contexts. */
  readonly key: SessionKey;
  /** Where the core sends the session's messages. */
  readonly port: DownstreamPort;
  /** The kind of transport the client is on. */
  readonly transport: TransportKind;
  /** The transport's details, recorded on the session's hops (the trace). */
  readonly transportContext: TransportContext;
  /** The `Mcp-Session-Id` the client knows the session by, when the transport issues one. */
  readonly mcpSessionId?: string;
  /** Who is calling (authentication's principal; `local` without it) and their roles. */
  readonly principal?: string;
  /** The principal's roles. */
  readonly roles?: readonly string[];
  /** The revision already agreed (a 2026-07-28 request, a header), before any `initialize`. */
  readonly protocolVersion?: ProtocolVersion;
}

/**
 * What a downstream transport needs of the core: open a client session, hand in what the client
 * sends, read the session back, and end it. The transports depend on this, never on the router
 * class, so that a transport can be tested against any host and the router can change shape.
 */
export interface SessionHost {
  /** Registers a client session whose messages go out through `params.port`, and returns it. */
  openSession(params: OpenSession): SessionView;
  /**
   * The session, or undefined once it is closed or unknown. Live, not a copy: each read gives the
   * session as it is then (its state, its agreed revision).
   */
  session(key: SessionKey): SessionView | undefined;
  /**
   * Hands in one parsed message the client sent on session `key`. Never throws: a message the
   * core cannot take is answered (a request) or counted (anything else). `raw` is its exact text,
   * when the transport has it, so the trace records what came on the wire.
   */
  handleClientMessage(
    key: SessionKey,
    message: JsonRpcMessage,
    transport: TransportContext,
    raw?: string,
  ): void;
  /**
   * Ends session `key`: its calls in flight are cancelled upstream and nothing more is sent to its
   * port. Idempotent.
   */
  closeSession(key: SessionKey, reason: string): void;
}

/** What an upstream supervisor says when it attaches a connection as a link. */
export interface AddLink {
  /** The link's id (kept across restarts: a restarted connection is attached under the same id). */
  readonly id: LinkId;
  /** The upstream's name, as the configuration names it. */
  readonly name: string;
  /** The connection; the router sets its `onmessage`. */
  readonly transport: UpstreamTransport;
  /** The transport's details, recorded on the link's hops (the trace). */
  readonly transportContext: TransportContext;
  /** `starting` queues client traffic until `setLinkReady`; default `ready`. */
  readonly state?: 'ready' | 'starting';
}

/**
 * What an upstream supervisor needs of the core: attach a connection, say when it is ready (after
 * its `initialize`), and say when it closed, so the core fails or keeps what was in flight.
 */
export interface LinkHost {
  /** Attaches `params.transport` as link `params.id`, replacing a dead one with that id. */
  addLink(params: AddLink): void;
  /** The link finished its handshake: traffic queued while it started is sent, in order. */
  setLinkReady(id: LinkId): void;
  /**
   * The link's connection closed. Its requests in flight fail with `SB_UPSTREAM_EXITED`; with
   * `restarting`, the link waits in `starting` for the next `addLink` instead of going down.
   */
  linkClosed(id: LinkId, close: UpstreamClose, options?: { readonly restarting?: boolean }): void;
}
