/**
 * Taps observe every hop of every message and never steer: a tap cannot change, delay or drop a
 * message, and a tap that throws is logged and counted, never allowed to break forwarding.
 *
 * A hop costs nothing when nobody listens: the router asks the bus whether any tap `wants` the
 * message before it builds an event, and an event builds its `MessageEnvelope` and MEUP envelope
 * only when a tap reads them. A tap that cares about a few methods says so up front (`methods`), so
 * that it does not make every hop pay.
 *
 * Each hop is also published on the `diagnostics_channel` named {@link HOP_CHANNEL}, under the
 * same gate: a hop is built only while a tap wants it or the channel has subscribers. Standard Node
 * tooling (an APM agent, a `--require`d script, a debugger session) can then watch the gateway
 * without a line of its code. The channel carries the same `HopEvent` a tap gets; what Node does
 * with a subscriber that throws is Node's (it is re-thrown on the next tick, as for every channel),
 * so a subscriber must not throw, as the Node documentation asks of every subscriber.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import type { Direction } from '../envelope/direction.js';
import type { SessionState, TransportContext } from '../envelope/message-context.js';
import { MessageEnvelope } from '../envelope/message-envelope.js';
import type { MeupEnvelope } from '../meup/types.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { DEFAULT_REVISION, type ProtocolVersion } from '../protocol/mcp/revisions.js';
import type { SessionKey } from './correlation-table.js';
import { meupEnvelope } from './trace-mapping.js';

/** One message crossing one hop (client->gateway, gateway->upstream, upstream->gateway, gateway->client). */
export interface HopEvent {
  /** The MEUP envelope id of this hop. */
  readonly id: string;
  /** The message as it crossed this hop. */
  readonly message: JsonRpcMessage;
  readonly direction: Direction;
  /** Participant ids: `client-<session>`, `gateway`, `server-<name>`. */
  readonly from: string;
  readonly to: string;
  /** The MEUP context of this hop. */
  readonly context: string;
  /** The envelopes this hop answers or derives from (MEUP `correlation_id`); absent when none. */
  readonly correlationId?: readonly string[];
  readonly session: SessionKey;
  readonly transport: TransportContext;
  readonly upstream?: string;
  /** `JSON.stringify(message)`, when the gateway already had it. */
  readonly payloadJson?: string;
  /**
   * For a response `{jsonrpc, id, result}` the gateway serialised itself: where
   * `JSON.stringify(result)` starts in `payloadJson` (it ends before the last character), so that a
   * tap can read or hash the result without parsing the text again (`result-text.ts`).
   */
  readonly resultAt?: number;
  /** With `resultAt`: the result says `isError: true` (a tool's own failure). */
  readonly resultIsError?: boolean;
  /** Epoch ms (fractional) the gateway read the message. */
  readonly receivedAt: number;
  /** Epoch ms (fractional) the gateway wrote it to the next hop. */
  readonly sentAt?: number;
  /** The client session the hop concerns, as it was when the hop happened; absent for the gateway's own traffic. */
  readonly sessionContext?: HopSession | undefined;
  /** The hop as a `MessageEnvelope` (built on first access). */
  readonly envelope: MessageEnvelope;
  /** The hop as a MEUP envelope with its correlation and context (built on first access). */
  readonly meup: MeupEnvelope;
}

export interface Tap {
  readonly name: string;
  /**
   * When given, the tap sees only messages with one of these methods (requests and
   * notifications), and hops of other messages are not built for it. Without it, every hop.
   */
  readonly methods?: readonly string[];
  observe(event: HopEvent): void;
}

/** The session as a hop saw it, captured when the hop happened (the envelope is built later). */
export interface HopSession {
  /** The id the client knows the session by (its `Mcp-Session-Id`, else the internal key). */
  readonly id: string;
  readonly protocolVersion: ProtocolVersion;
  readonly state: SessionState;
}

/** What the router knows about a hop; {@link LazyHopEvent} derives the envelopes from it. */
export interface HopFields {
  readonly id: string;
  readonly message: JsonRpcMessage;
  readonly direction: Direction;
  readonly from: string;
  readonly to: string;
  readonly context: string;
  readonly correlationId?: readonly string[] | undefined;
  readonly session: SessionKey;
  /** The client session involved, if any; absent for the gateway's own traffic. */
  readonly sessionContext: HopSession | undefined;
  readonly transport: TransportContext;
  readonly upstream?: string | undefined;
  readonly payloadJson?: string | undefined;
  readonly resultAt?: number | undefined;
  readonly resultIsError?: boolean | undefined;
  readonly receivedAt: number;
  readonly sentAt?: number | undefined;
}

/**
 * A `HopEvent` that builds its `MessageEnvelope` and MEUP envelope on first access: the trace reads
 * the plain fields, and a tap that wants the envelopes pays for them alone.
 */
export class LazyHopEvent implements HopEvent {
  readonly id: string;
  readonly message: JsonRpcMessage;
  readonly direction: Direction;
  readonly from: string;
  readonly to: string;
  readonly context: string;
  readonly correlationId?: readonly string[];
  readonly session: SessionKey;
  readonly transport: TransportContext;
  readonly upstream?: string;
  readonly payloadJson?: string;
  readonly resultAt?: number;
  readonly resultIsError?: boolean;
  readonly receivedAt: number;
  readonly sentAt?: number;
  readonly #sessionContext: HopSession | undefined;
  #envelope: MessageEnvelope | undefined;
  #meup: MeupEnvelope | undefined;

  constructor(fields: HopFields) {
    this.id = fields.id;
    this.message = fields.message;
    this.direction = fields.direction;
    this.from = fields.from;
    this.to = fields.to;
    this.context = fields.context;
    if (fields.correlationId !== undefined && fields.correlationId.length > 0)
      this.correlationId = fields.correlationId;
    this.session = fields.session;
    this.transport = fields.transport;
    if (fields.upstream !== undefined) this.upstream = fields.upstream;
    if (fields.payloadJson !== undefined) this.payloadJson = fields.payloadJson;
    if (fields.resultAt !== undefined) {
      this.resultAt = fields.resultAt;
      this.resultIsError = fields.resultIsError === true;
    }
    this.receivedAt = fields.receivedAt;
    if (fields.sentAt !== undefined) this.sentAt = fields.sentAt;
    this.#sessionContext = fields.sessionContext;
  }

  get sessionContext(): HopSession | undefined {
    return this.#sessionContext;
  }

  get envelope(): MessageEnvelope {
    if (this.#envelope === undefined) {
      const session = this.#sessionContext;
      this.#envelope = new MessageEnvelope(this.message, {
        direction: this.direction,
        session: session
          ? { id: session.id, protocolVersion: session.protocolVersion, state: session.state }
          : { protocolVersion: DEFAULT_REVISION, state: 'active' },
        transport: this.transport,
        timing: {
          received: this.receivedAt - performance.timeOrigin,
          wallClock: this.receivedAt,
          ...(this.sentAt === undefined ? {} : { sent: this.sentAt - performance.timeOrigin }),
        },
      });
    }
    return this.#envelope;
  }

  get meup(): MeupEnvelope {
    if (this.#meup === undefined) {
      this.#meup = meupEnvelope({
        id: this.id,
        wall: this.sentAt ?? this.receivedAt,
        from: this.from,
        to: this.to,
        message: this.message,
        context: this.context,
        ...(this.correlationId === undefined ? {} : { correlationId: this.correlationId }),
      });
    }
    return this.#meup;
  }
}

/** The `diagnostics_channel` every hop is published on (a {@link HopEvent}). */
export const HOP_CHANNEL = 'switchboard:hop';

const hopChannel = diagnosticsChannel.channel(HOP_CHANNEL);

export class TapBus {
  /** Taps that see every hop. */
  readonly #all: Tap[] = [];
  /** Taps that see only some methods, by method. */
  readonly #byMethod = new Map<string, Tap[]>();
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #failedOnce = new Set<string>();

  constructor(logger: Logger, metrics: Metrics, taps: readonly Tap[] = []) {
    this.#logger = logger;
    this.#metrics = metrics;
    for (const tap of taps) this.add(tap);
  }

  /** False when nobody listens at all, so the router can skip building hops. */
  get active(): boolean {
    return this.#all.length > 0 || this.#byMethod.size > 0 || hopChannel.hasSubscribers;
  }

  /** Whether any tap (or channel subscriber) wants to see `message`: the router builds a hop only then. */
  wants(message: JsonRpcMessage): boolean {
    if (this.#all.length > 0 || hopChannel.hasSubscribers) return true;
    if (this.#byMethod.size === 0) return false;
    return 'method' in message && this.#byMethod.has(message.method);
  }

  add(tap: Tap): void {
    if (tap.methods === undefined) {
      this.#all.push(tap);
      return;
    }
    for (const method of new Set(tap.methods)) {
      const taps = this.#byMethod.get(method);
      if (taps) taps.push(tap);
      else this.#byMethod.set(method, [tap]);
    }
  }

  remove(tap: Tap): void {
    const i = this.#all.indexOf(tap);
    if (i >= 0) this.#all.splice(i, 1);
    for (const [method, taps] of this.#byMethod) {
      const j = taps.indexOf(tap);
      if (j >= 0) taps.splice(j, 1);
      if (taps.length === 0) this.#byMethod.delete(method);
    }
  }

  emit(event: HopEvent): void {
    if (hopChannel.hasSubscribers) hopChannel.publish(event);
    for (const tap of this.#all) this.#observe(tap, event);
    if (this.#byMethod.size === 0) return;
    const message = event.message;
    if (!('method' in message)) return;
    const taps = this.#byMethod.get(message.method);
    if (taps) for (const tap of taps) this.#observe(tap, event);
  }

  #observe(tap: Tap, event: HopEvent): void {
    try {
      tap.observe(event);
    } catch (error) {
      this.#metrics.inc('tap_errors_total', { tap: tap.name });
      if (!this.#failedOnce.has(tap.name)) {
        this.#failedOnce.add(tap.name);
        this.#logger.error(
          { tap: tap.name, err: String(error) },
          'a tap failed; the message was forwarded anyway',
        );
      }
    }
  }
}
