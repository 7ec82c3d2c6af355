/**
 * The transport of an upstream that speaks both eras (the probe's `dual` verdict): each request
 * goes to the server in the era of the client that sent it, so neither kind of client loses what
 * its era has and the bridge cannot reproduce.
 *
 * - A request carrying a 2026-07-28 envelope (`_meta["io.modelcontextprotocol/protocolVersion"]`,
 *   only a modern client's requests have one) goes to a `ModernHttpTransport`, which sends it with
 *   its own envelope and hands its results back untouched (`input_required` included, with the
 *   server's own input keys and `requestState`).
 * - Everything else goes to a `LegacyStreamableHttpTransport`, a real 2025 session: the gateway's
 *   (or a per-session client's) `initialize`, the requests of 2025 clients and of the gateway
 *   itself, `notifications/initialized` (which opens the GET stream), answers to the server's
 *   requests (sampling, elicitation, roots: only the session sends those), and log levels and
 *   resource subscriptions, which the session holds natively. The server's notifications, its
 *   `list_changed` and `resources/updated` included, arrive on that session's GET stream.
 * - `notifications/cancelled` goes where the cancelled request went.
 *
 * The modern half never sees `initialize`, so it opens no `subscriptions/listen` stream: the
 * session's GET stream already carries every notification, and a second copy would duplicate them.
 * The link lives as long as the session: when either half closes (the session expired, say), the
 * other is closed too and the supervisor reconnects both.
 */
import type { InboundMeta, UpstreamClose } from '../../../core/ports.js';
import type { HttpTransportContext } from '../../../envelope/message-context.js';
import {
  isRequest,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcRequest,
} from '../../../protocol/jsonrpc/types.js';
import { cancelledRequestId } from '../../../protocol/mcp/progress.js';
import type { Wire } from '../../../protocol/mcp/reserved-meta.js';
import type { EraTransport } from './era-transport.js';
import { type InitializeRejection, LegacyStreamableHttpTransport } from './legacy-streamable-http.js';
import { type ModernHttpOptions, ModernHttpTransport } from './modern-http.js';
import { hasModernEnvelope } from './request-envelope.js';

/** The options of both halves, plus what to do when the server refuses the session after all. */
export interface DualEraOptions extends ModernHttpOptions {
  /** The `initialize` POST got 400, 404 or 405: the server no longer takes the 2025 handshake. */
  readonly onInitializeRejected?: (rejection: InitializeRejection) => void;
}

/** Both eras to one server, chosen per request (see the file comment). */
export class DualEraTransport implements EraTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  onerror?: (error: Error) => void;

  readonly #legacy: LegacyStreamableHttpTransport;
  readonly #modern: ModernHttpTransport;
  #closed = false;

  constructor(options: DualEraOptions) {
    const { onInitializeRejected, onDiscoverFailed: _unused, ...common } = options;
    this.#legacy = new LegacyStreamableHttpTransport({
      ...common,
      ...(onInitializeRejected ? { onInitializeRejected } : {}),
    });
    this.#modern = new ModernHttpTransport(common);
    for (const half of [this.#legacy, this.#modern]) {
      half.onmessage = (text, meta) => this.onmessage?.(text, meta);
      half.onerror = (error) => this.onerror?.(error);
      half.onclose = (close) => this.#halfClosed(close);
    }
  }

  get kind(): 'dual-http' {
    return 'dual-http';
  }

  /** The session's context: the link is described by its 2025 half, which lives as long as it. */
  get transportContext(): HttpTransportContext {
    return this.#legacy.transportContext;
  }

  get sessionId(): string | undefined {
    return this.#legacy.sessionId;
  }

  /** The version the session negotiated (a modern request names its own in its envelope). */
  get protocolVersion(): string | undefined {
    return this.#legacy.protocolVersion;
  }

  async start(): Promise<void> {
    await Promise.all([this.#legacy.start(), this.#modern.start()]);
  }

  send(json: string, message: JsonRpcMessage): Wire | undefined {
    if (isRequest(message))
      return hasModernEnvelope(message.params)
        ? this.#modern.send(json, message)
        : this.#legacy.send(json, message);
    if ('method' in message && message.method === 'notifications/cancelled') {
      const id = cancelledRequestId(message);
      if (id !== undefined && this.#modern.inFlight(id)) return this.#modern.send(json, message);
    }
    return this.#legacy.send(json, message);
  }

  /**
   * A modern client's request goes to the modern half, which refuses nothing: its `requestState`
   * is the server's own. Any other request goes to the session, which refuses as a 2025 server
   * must (`legacyPeerRefusal`).
   */
  refuse(request: JsonRpcRequest): JsonRpcErrorObject | undefined {
    return hasModernEnvelope(request.params) ? undefined : this.#legacy.refuse(request);
  }

  /**
   * A 2026-07-28 request goes to the stateless half, where the server cannot ask the client
   * anything (its questions come back as `input_required`): the router must not take a server
   * request arriving on the session's GET stream for that call's.
   */
  asksNothingFor(request: JsonRpcRequest): boolean {
    return hasModernEnvelope(request.params);
  }

  async close(): Promise<void> {
    await Promise.all([this.#legacy.close(), this.#modern.close()]);
  }

  /** The first half to close closes the link: `onclose` once, with its reason; the other follows. */
  #halfClosed(close: UpstreamClose): void {
    if (this.#closed) return;
    this.#closed = true;
    void this.close();
    this.onclose?.(close);
  }
}
