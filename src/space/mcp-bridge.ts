/**
 * MCP calls of space participants, executed through the router as the participant, exactly as an
 * MCP client's: one router session per participant and server (the single-upstream endpoint of
 * that server, as `/servers/<name>/mcp`), whose principal is the participant id and whose roles
 * are its roles, so routing, policy (and approvals), the ledger and the trace all apply. Each call
 * runs in a request scope naming the participant as client and the request envelope as request.
 *
 * The session is this module's `DownstreamPort`: the response comes back to the call that asked;
 * progress and log notifications of a call go to its caller; a server's own request (sampling,
 * elicitation, roots) cannot be answered by a participant and is refused at once, so the server
 * never waits.
 */
import { runInRequestScope } from '../audit/request-scope.js';
import type { SessionHost } from '../core/ports.js';
import { newSessionKey } from '../core/session-key.js';
import type { WebSocketTransportContext } from '../envelope/message-context.js';
import { boundMethod } from '../observe/label-vocabulary.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import type {
  JsonObject,
  JsonRpcMessage,
  JsonRpcNotification,
  JsonRpcResponse,
  RequestId,
} from '../protocol/jsonrpc/types.js';

/** One MCP request a participant sends to a server participant. */
export interface McpCall {
  readonly participant: string;
  readonly roles: readonly string[];
  readonly upstream: string;
  readonly method: string;
  readonly params?: JsonObject;
  /** The id the participant gave its JSON-RPC request (else its envelope id): the response carries it. */
  readonly clientId: RequestId;
  /** The `mcp/request` envelope: the request scope's request id. */
  readonly envelopeId: string;
  /** The response, with the participant's id, and the router's trace id of the call. */
  onResponse(response: JsonRpcResponse, traceId: string | undefined): void;
  /** A notification the server sent about this call (progress, log message). */
  onNotification(notification: JsonRpcNotification): void;
}

/** What the bridge needs from the serve gateway to open and close a session for one upstream. */
export interface McpSessionHooks {
  opened(key: string, upstream: string): void;
  closed(key: string): void;
}

interface Pending extends McpCall {
  traceId?: string;
}

class ParticipantSession {
  readonly pending = new Map<number, Pending>();
  counter = 0;
  releasing = false;
  constructor(
    readonly key: string,
    readonly participant: string,
    readonly upstream: string,
  ) {}
}

const TRANSPORT: WebSocketTransportContext = { kind: 'websocket' };

export class McpBridge {
  readonly #router: SessionHost;
  readonly #hooks: McpSessionHooks;
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #sessions = new Map<string, ParticipantSession>();
  readonly #byKey = new Map<string, ParticipantSession>();

  constructor(options: {
    readonly router: SessionHost;
    readonly hooks: McpSessionHooks;
    readonly logger: Logger;
    readonly metrics: Metrics;
  }) {
    this.#router = options.router;
    this.#hooks = options.hooks;
    this.#logger = options.logger;
    this.#metrics = options.metrics;
  }

  /** Whether `key` is one of the bridge's router sessions. */
  owns(key: string): boolean {
    return this.#byKey.has(key);
  }

  /**
   * The router session key of the participant's calls to `upstream`, opening the session if needed
   * (the space records the request envelope under it before sending the call).
   */
  sessionKey(participant: string, roles: readonly string[], upstream: string): string {
    return this.#session(participant, roles, upstream).key;
  }

  /** Sends the call through the router; the answer comes to `call.onResponse`. */
  call(call: McpCall): string {
    const session = this.#session(call.participant, call.roles, call.upstream);
    session.releasing = false;
    const id = ++session.counter;
    session.pending.set(id, { ...call });
    this.#metrics.inc('space_mcp_requests_total', { method: boundMethod(call.method) });
    const request: JsonRpcMessage = {
      jsonrpc: '2.0',
      id,
      method: call.method,
      ...(call.params === undefined ? {} : { params: call.params }),
    };
    runInRequestScope({ requestId: call.envelopeId, clientId: call.participant }, () =>
      this.#router.handleClientMessage(session.key, request, TRANSPORT),
    );
    return session.key;
  }

  /** Called by the space's call watcher before a call's response is delivered: its trace id. */
  noteTraceId(sessionKey: string, requestId: RequestId, traceId: string): void {
    const session = this.#byKey.get(sessionKey);
    const pending = typeof requestId === 'number' ? session?.pending.get(requestId) : undefined;
    if (pending) pending.traceId = traceId;
  }

  /**
   * The participant left: its sessions end once their calls are answered (a disconnect is not a
   * cancellation; the answers are kept in the history and the trace).
   */
  release(participant: string): void {
    for (const session of [...this.#sessions.values()]) {
      if (session.participant !== participant) continue;
      if (session.pending.size === 0) this.#close(session, 'the participant left the space');
      else session.releasing = true;
    }
  }

  /** Ends every session (the gateway is stopping). */
  close(): void {
    for (const session of [...this.#sessions.values()]) this.#close(session, 'the space is closing');
  }

  #session(participant: string, roles: readonly string[], upstream: string): ParticipantSession {
    const id = `${participant}\u0000${upstream}`;
    let session = this.#sessions.get(id);
    if (session) return session;
    session = new ParticipantSession(newSessionKey(), participant, upstream);
    const own = session;
    this.#router.openSession({
      key: session.key,
      port: { send: (_json, message, delivery) => this.#deliver(own, message, delivery) },
      transport: 'websocket',
      transportContext: TRANSPORT,
      principal: participant,
      roles,
    });
    this.#hooks.opened(session.key, upstream);
    this.#sessions.set(id, session);
    this.#byKey.set(session.key, session);
    return session;
  }

  #deliver(
    session: ParticipantSession,
    message: JsonRpcMessage,
    delivery: { readonly kind: string; readonly request?: RequestId },
  ): void {
    if ('method' in message && 'id' in message) {
      // A server's request to its client: a participant cannot answer it; refuse so nobody waits.
      this.#metrics.inc('space_server_requests_refused_total', { method: boundMethod(message.method) });
      this.#router.handleClientMessage(
        session.key,
        {
          jsonrpc: '2.0',
          id: message.id,
          error: {
            code: JsonRpcCode.MethodNotFound,
            message: `a participant of the MEUP space cannot answer ${message.method}`,
          },
        },
        TRANSPORT,
      );
      return;
    }
    const requestId = delivery.request;
    const pending = typeof requestId === 'number' ? session.pending.get(requestId) : undefined;
    if (!pending) {
      if (delivery.kind === 'response') this.#metrics.inc('space_mcp_orphan_responses_total');
      return;
    }
    if (delivery.kind === 'response' && !('method' in message)) {
      session.pending.delete(requestId as number);
      const response = { ...message, id: pending.clientId } as JsonRpcResponse;
      try {
        pending.onResponse(response, pending.traceId);
      } catch (err) {
        this.#logger.error({ err: String(err) }, 'the space failed to publish an MCP response');
      }
      if (session.releasing && session.pending.size === 0)
        this.#close(session, 'the participant left the space');
      return;
    }
    if ('method' in message) pending.onNotification(message as JsonRpcNotification);
  }

  #close(session: ParticipantSession, reason: string): void {
    this.#sessions.delete(`${session.participant}\u0000${session.upstream}`);
    this.#byKey.delete(session.key);
    // The hook first: it reports the session's end while the router still knows its principal.
    this.#hooks.closed(session.key);
    this.#router.closeSession(session.key, reason);
  }
}
