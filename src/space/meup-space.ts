/**
 * The MEUP space: participants joined over WebSocket (see `ws-endpoint.ts`) exchange MEUP
 * envelopes through the gateway, which validates each one, routes it, keeps a bounded history and
 * records it in the trace. No sockets here: connections are `SpaceConnection`s.
 *
 * Each frame from a participant goes through, in order (the first failure answers the sender with
 * `system/error`, `correlation_id: [the envelope's id]` when it could be read, and drops it):
 *
 * 1. the frame (text, size, not a MEW stream frame) and JSON;
 * 2. the envelope codec: exact protocol string, required fields, kind syntax, `correlation_id`
 *    per seed 000 (arrays; string form by `space.correlation`; required on `mcp/response`,
 *    `mcp/withdraw`, `mcp/reject`...), `context` per seed 004 (validated, then kept byte for byte);
 * 3. identity: `from` must be the connection's participant (refused, never overwritten);
 * 4. `system/*` kinds are the gateway's, whatever the participant's capabilities;
 * 5. capabilities: one of the sender's must match `{kind, payload}`, else `capability_violation`;
 * 6. recipients: every id in `to` must be known;
 * 7. the kind's own rules (MCP kinds, capability kinds, history), then delivery.
 *
 * Delivery: to the connections of the participants in `to`, or to every connection when `to` is
 * absent or empty (and, for a fulfilling `mcp/request`, to the proposers it names); never back to
 * the sending connection (the participant's other connections do receive it). Frames are handled one at a time and delivered synchronously, so envelopes from one
 * sender arrive in the order it sent them.
 */
import type { SpaceConfig } from '../config/sections/space.js';
import { decodeMeupEnvelope, type MeupCodecOptions } from '../meup/codec.js';
import { CorrelationMigration } from '../meup/correlation.js';
import { isKnownKind, isSystemKind } from '../meup/kinds.js';
import type { MeupEnvelope } from '../meup/types.js';
import { OTHER } from '../observe/label-vocabulary.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { parseJson } from '../protocol/jsonrpc/parse.js';
import type { TraceRecord } from '../trace/types.js';
import type { ApprovalBridge } from './approval-bridge.js';
import { acksOwnGrants, handleGrant, handleGrantAck, handleRevoke } from './capability-kinds.js';
import { anyCapabilityMatches } from './capability-matcher.js';
import { SpaceHistory, type Visibility } from './history.js';
import { handleHistory } from './history-kind.js';
import { readFrame } from './inbound-frame.js';
import { readJoinFrame } from './join-frame.js';
import { handleMcpProposal, handleMcpReject, handleMcpRequest, handleMcpWithdraw } from './mcp-kinds.js';
import { GATEWAY_ID, isReservedParticipantId } from './participant-id.js';
import { Participants } from './participants.js';
import { ProposalBook } from './proposals.js';
import { EnvelopeTexts, type SpaceConnection } from './space-connection.js';
import type { McpExecutor, PublishOptions, RouteOptions, SpaceCore } from './space-core.js';
import { SpaceErrorCode, type SystemErrorCode } from './space-error-codes.js';
import { errorEnvelope, presenceEnvelope, welcomeEnvelope } from './system-envelopes.js';

/** Where the space records envelopes (the gateway's trace recorder). */
export interface SpaceTraceSink {
  record(record: TraceRecord): void;
}

/** The trace session of space envelopes that belong to no MCP session. */
export const SPACE_TRACE_SESSION = 'space';

export interface MeupSpaceOptions {
  readonly config: SpaceConfig;
  /** Upstream names: each is the participant `server-<name>`. */
  readonly upstreams: readonly string[];
  readonly approverRoles: readonly string[];
  /** No authentication configured: every participant may decide held calls, as the HTTP API lets `local`. */
  readonly localIsTrusted: boolean;
  readonly mcp?: McpExecutor;
  readonly trace?: SpaceTraceSink;
  /** Deepest nesting accepted in a frame (`server.maxJsonDepth`); default `DEFAULT_MAX_JSON_DEPTH`. */
  readonly maxJsonDepth?: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export class MeupSpace implements SpaceCore {
  readonly participants: Participants;
  readonly proposals: ProposalBook;
  readonly history: SpaceHistory;
  readonly mcp: McpExecutor | undefined;
  readonly limits: { readonly maxFrameBytes: number; readonly maxHistoryResults: number };
  approvals: ApprovalBridge | undefined;
  readonly #o: MeupSpaceOptions;
  readonly #codec: MeupCodecOptions;
  readonly #observers = new Set<SpaceConnection>();

  constructor(options: MeupSpaceOptions) {
    this.#o = options;
    const { config } = options;
    this.participants = new Participants(config, options.upstreams);
    this.proposals = new ProposalBook(config.maxProposals);
    this.history = new SpaceHistory(config.history.maxEnvelopes, config.history.maxBytes);
    this.mcp = options.mcp;
    this.limits = { maxFrameBytes: config.maxFrameBytes, maxHistoryResults: config.history.maxResults };
    this.#codec = {
      protocols: config.protocols,
      correlation: config.correlation,
      context: config.context,
      migration: new CorrelationMigration({ logger: options.logger, metrics: options.metrics }),
    };
  }

  get config(): SpaceConfig {
    return this.#o.config;
  }

  /** Whether some connection currently receives the MCP traffic. */
  get observing(): boolean {
    return this.#observers.size > 0;
  }

  // ---------------------------------------------------------------- joining and leaving

  /** A connection whose participant is authenticated: welcome it, and tell the others. */
  join(connection: SpaceConnection): void {
    const first = this.participants.connect(connection);
    if (this.participants.observes(connection.participant)) this.#observers.add(connection);
    this.#o.metrics.inc('space_joins_total');
    this.#sendWelcome(connection);
    if (first) {
      this.publish(presenceEnvelope('join', this.participants.view(connection.participant)), {
        only: this.participants.allConnections(connection),
      });
    }
  }

  /** A connection closed. The participant leaves with its last connection. */
  leave(connection: SpaceConnection): void {
    this.#observers.delete(connection);
    if (!this.participants.disconnect(connection)) return;
    this.publish(presenceEnvelope('leave', this.participants.view(connection.participant)));
    this.mcp?.release(connection.participant);
  }

  welcome(participant: string): void {
    for (const connection of this.participants.connectionsOf(participant)) this.#sendWelcome(connection);
  }

  #sendWelcome(connection: SpaceConnection): void {
    const others = this.participants.present().filter((id) => id !== connection.participant);
    const envelope = welcomeEnvelope({
      you: this.participants.view(connection.participant),
      participants: [...others, ...this.participants.serverIds].map((id) => this.participants.view(id)),
      space: this.#o.config.name,
    });
    this.publish(envelope, { only: [connection], history: false });
  }

  isApprover(connection: SpaceConnection): boolean {
    return this.#o.localIsTrusted || connection.roles.some((r) => this.#o.approverRoles.includes(r));
  }

  // ---------------------------------------------------------------- from participants

  /** One frame from a joined connection. Never throws. */
  receive(connection: SpaceConnection, data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    try {
      this.#receive(connection, data, isBinary);
    } catch (err) {
      this.#o.logger.error(
        { err: err instanceof Error ? err.stack : String(err), participant: connection.participant },
        'the space failed to handle an envelope',
      );
      this.#o.metrics.inc('space_internal_errors_total');
      this.#refuse(
        connection,
        undefined,
        SpaceErrorCode.Internal,
        'the gateway failed to handle this envelope',
      );
    }
  }

  #receive(connection: SpaceConnection, data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    const frame = readFrame(data, isBinary, this.#o.config.maxFrameBytes);
    if (!frame.ok) {
      this.#refuse(connection, frame.envelopeId, frame.code, frame.message);
      return;
    }
    // Bounded in depth where the text becomes a value: the envelope is walked (codec, capability
    // patterns, history, trace) and serialised again, which a deeper one would overflow.
    const json = parseJson(
      frame.text,
      this.#o.maxJsonDepth === undefined ? {} : { maxDepth: this.#o.maxJsonDepth },
    );
    if (!json.ok) {
      if (json.error.code === JsonRpcCode.ParseError)
        this.#refuse(
          connection,
          undefined,
          'invalid_json',
          `not valid JSON: ${json.error.message.replace(/^Parse error: /, '')}`,
        );
      else
        this.#refuse(
          connection,
          typeof json.id === 'string' ? json.id : undefined,
          SpaceErrorCode.FrameTooDeep,
          json.error.message.replace(/^Invalid Request: the message/, 'the frame'),
        );
      return;
    }
    const value = json.value;
    if (readJoinFrame(value).kind !== 'other') {
      this.#refuse(
        connection,
        undefined,
        SpaceErrorCode.AlreadyJoined,
        `this connection has already joined as ${connection.participant}`,
      );
      return;
    }
    const decoded = decodeMeupEnvelope(value, this.#codec);
    if (!decoded.ok) {
      const { error } = decoded;
      this.#refuse(
        connection,
        error.envelopeId,
        error.code,
        error.message,
        error.field === undefined ? undefined : { field: error.field },
      );
      return;
    }
    for (const warning of decoded.warnings)
      this.#o.metrics.inc('space_codec_warnings_total', { code: warning.code });
    const envelope = decoded.envelope;
    connection.protocol = envelope.protocol;
    if (envelope.from !== connection.participant) {
      this.reject(
        connection,
        envelope,
        SpaceErrorCode.FromMismatch,
        `from must be your participant id ${JSON.stringify(connection.participant)}; the gateway does not overwrite it`,
      );
      return;
    }
    if (isSystemKind(envelope.kind)) {
      this.reject(
        connection,
        envelope,
        SpaceErrorCode.ReservedKind,
        `${envelope.kind}: system/* kinds are sent by the gateway only`,
      );
      return;
    }
    const subject = { kind: envelope.kind, payload: envelope.payload };
    const allowed =
      anyCapabilityMatches(this.participants.compiledCapabilities(connection.participant), subject) ||
      (envelope.kind === 'capability/grant-ack' && acksOwnGrants(this, envelope));
    if (!allowed) {
      this.reject(
        connection,
        envelope,
        SpaceErrorCode.CapabilityViolation,
        `no capability of yours allows sending ${envelope.kind} with this payload`,
        {
          attempted_kind: envelope.kind,
          your_capabilities: this.participants.capabilities(connection.participant),
        },
      );
      return;
    }
    const unknown = (envelope.to ?? []).filter((id) => !this.#isKnownRecipient(id));
    if (unknown.length > 0) {
      this.reject(
        connection,
        envelope,
        SpaceErrorCode.UnknownParticipant,
        'to names participants this space does not know',
        {
          participants: unknown,
        },
      );
      return;
    }
    // A participant allowed `*` may send any kind: counted by the MEUP kinds, else `other`.
    this.#o.metrics.inc('space_envelopes_total', {
      kind: isKnownKind(envelope.kind) ? envelope.kind : OTHER,
    });
    this.#dispatch(connection, envelope);
  }

  #dispatch(connection: SpaceConnection, envelope: MeupEnvelope): void {
    const handler = HANDLERS[envelope.kind];
    if (handler) handler(this, connection, envelope);
    else if (envelope.kind === 'space/history')
      handleHistory(this, connection, envelope, this.#observers.has(connection));
    else this.route(connection, envelope);
  }

  #isKnownRecipient(id: string): boolean {
    if (this.participants.isKnown(id)) return true;
    // An MCP client whose held call is proposed may be answered (e.g. a reject addressed to it).
    return id.startsWith('client-') && this.proposals.hasOpenFrom(id);
  }

  // ---------------------------------------------------------------- out

  reject(
    connection: SpaceConnection,
    envelope: MeupEnvelope,
    code: SystemErrorCode,
    message: string,
    details?: Record<string, unknown>,
  ): void {
    this.#refuse(connection, envelope.id, code, message, details);
  }

  #refuse(
    connection: SpaceConnection,
    offendingId: string | undefined,
    code: SystemErrorCode,
    message: string,
    details?: Record<string, unknown>,
  ): void {
    this.#o.metrics.inc('space_rejections_total', { code });
    this.#o.logger.debug(
      { participant: connection.participant, code, offendingId },
      'space envelope refused',
    );
    this.publish(
      errorEnvelope({
        to: connection.participant,
        code,
        message,
        offendingId,
        ...(details === undefined ? {} : { details }),
      }),
      { only: [connection] },
    );
  }

  route(connection: SpaceConnection, envelope: MeupEnvelope, options: RouteOptions = {}): void {
    const { targets, visibility } = this.#recipients(
      envelope,
      connection,
      options.broadcastIfVirtual ?? false,
      options.alsoTo,
    );
    const texts = new EnvelopeTexts(envelope, false);
    this.#deliver(targets, texts);
    this.history.add(envelope, visibility, texts.size());
    this.record(envelope, options.traceSession);
  }

  record(envelope: MeupEnvelope, traceSession?: string): void {
    const trace = this.#o.trace;
    if (!trace) return;
    try {
      trace.record({
        envelope,
        session: traceSession ?? SPACE_TRACE_SESSION,
        direction: 'internal',
        transport: 'websocket',
        receivedAt: performance.timeOrigin + performance.now(),
      });
    } catch (err) {
      this.#o.metrics.inc('space_trace_errors_total');
      this.#o.logger.warn({ err: String(err) }, 'could not record a space envelope in the trace');
    }
  }

  publish(envelope: MeupEnvelope, options: PublishOptions = {}): void {
    let targets: readonly SpaceConnection[];
    let visibility: Visibility;
    if (options.only !== undefined) {
      targets = options.only;
      visibility = {
        kind: 'participants',
        ids: new Set([...(envelope.to ?? []), ...options.only.map((c) => c.participant)]),
      };
    } else
      ({ targets, visibility } = this.#recipients(envelope, undefined, options.broadcastIfVirtual ?? false));
    const texts = new EnvelopeTexts(envelope, true);
    this.#deliver(targets, texts);
    if (options.history !== false) this.history.add(envelope, visibility, texts.size());
    if (options.trace !== false) this.record(envelope, options.traceSession);
  }

  /**
   * An MCP message through the gateway (a router hop, the same envelope the trace keeps), to the
   * connections allowed to observe. Kept in the history for observers.
   */
  observe(envelope: MeupEnvelope): void {
    const texts = new EnvelopeTexts(envelope, true);
    if (this.#observers.size > 0) {
      this.#o.metrics.inc('space_observations_total');
      this.#deliver([...this.#observers], texts);
    }
    if (this.history.maxEnvelopes > 0) this.history.add(envelope, OBSERVERS, texts.size());
  }

  #deliver(targets: Iterable<SpaceConnection>, texts: EnvelopeTexts): void {
    for (const connection of targets) {
      if (!connection.send(texts.for(connection))) this.#o.metrics.inc('space_deliveries_dropped_total');
    }
  }

  #recipients(
    envelope: MeupEnvelope,
    sender: SpaceConnection | undefined,
    broadcastIfVirtual: boolean,
    alsoTo: readonly string[] = [],
  ): { targets: SpaceConnection[]; visibility: Visibility } {
    const to = envelope.to ?? [];
    const real = to.filter((id) => !isReservedParticipantId(id));
    if (to.length === 0 || (real.length === 0 && broadcastIfVirtual)) {
      const targets = this.participants.allConnections(sender);
      return { targets, visibility: EVERYONE };
    }
    const extra = alsoTo.filter((id) => !isReservedParticipantId(id));
    const targets: SpaceConnection[] = [];
    for (const id of new Set([...real, ...extra])) {
      for (const c of this.participants.connectionsOf(id)) if (c !== sender) targets.push(c);
    }
    return {
      targets,
      visibility: { kind: 'participants', ids: new Set([envelope.from, ...to, ...extra, GATEWAY_ID]) },
    };
  }
}

type Handler = (core: SpaceCore, connection: SpaceConnection, envelope: MeupEnvelope) => void;

/** The kinds with rules of their own; every other kind is routed as it is. */
const HANDLERS: Readonly<Record<string, Handler>> = {
  'mcp/request': handleMcpRequest,
  'mcp/proposal': handleMcpProposal,
  'mcp/reject': handleMcpReject,
  'mcp/withdraw': handleMcpWithdraw,
  'capability/grant': handleGrant,
  'capability/revoke': handleRevoke,
  'capability/grant-ack': handleGrantAck,
};

const EVERYONE: Visibility = { kind: 'everyone' };
const OBSERVERS: Visibility = { kind: 'observers' };
