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
  /** `client->server` on the way from a client toward an upstream, `server->client` the other way. */
  readonly direction: Direction;
  /** Participant ids: `client-<session>`, `gateway`, `server-<name>`. */
  readonly from: string;
  /** The participant id of the receiving side (see `from`). */
  readonly to: string;
  /** The MEUP context of this hop. */
  readonly context: string;
  /** The envelopes this hop answers or derives from (MEUP `correlation_id`); absent when none. */
  readonly correlationId?: readonly string[];
  /** The session the hop is traced under: a client session's key, or `gateway` for the gateway's own. */
  readonly session: SessionKey;
  /** The transport of the hop's far side: the client's for a hop to or from a client, else the upstream's. */
  readonly transport: TransportContext;
  /** The upstream's configured name, for a hop to or from one (and a client's final response). */
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

/** An observer of hops, added to the `TapBus`: it sees every hop (or its `methods`') and steers none. */
export interface Tap {
  /** Names the tap in logs and in `tap_errors_total{tap}` when it throws. */
  readonly name: string;
  /**
   * When given, the tap sees only messages with one of these methods (requests and
   * notifications), and hops of other messages are not built for it. Without it, every hop.
   */
  readonly methods?: readonly string[];
  /** Called synchronously for each hop it sees; its return is ignored and a throw is caught. */
  observe(event: HopEvent): void;
}

/** The session as a hop saw it, captured when the hop happened (the envelope is built later). */
export interface HopSession {
  /** The id the client knows the session by (its `Mcp-Session-Id`, else the internal key). */
  readonly id: string;
  /** The session's protocol version at the hop (the negotiated one once known). */
  readonly protocolVersion: ProtocolVersion;
  /** Where the session was in its life at the hop. */
  readonly state: SessionState;
}

/**
 * What the router knows about a hop: a `HopEvent`'s plain fields; {@link LazyHopEvent} derives the
 * envelopes from them.
 */
export interface HopFields extends Omit<HopEvent, 'envelope' | 'meup' | 'sessionContext'> {
  /** The client session involved; undefined for the gateway's own traffic (required: every builder says). */
  readonly sessionContext: HopSession | undefined;
}

/**
 * A `HopEvent` that builds its `MessageEnvelope` and MEUP envelope on first access: the trace reads
 * the plain fields, and a tap that wants the envelopes pays for them alone.
 */
export class LazyHopEvent implements HopEvent {
  /** The hop's MEUP envelope id. */
  readonly id: string;
  /** The message as it crossed the hop. */
  readonly message: JsonRpcMessage;
  /** Which way the message went (`HopEvent.direction`). */
  readonly direction: Direction;
  /** The sending participant's id. */
  readonly from: string;
  /** The receiving participant's id. */
  readonly to: string;
  /** The hop's MEUP context. */
  readonly context: string;
  /** The envelope ids the hop answers or follows; absent when none (an empty list is left out). */
  readonly correlationId?: readonly string[];
  /** The session the hop is traced under. */
  readonly session: SessionKey;
  /** The transport of the hop's far side (`HopEvent.transport`). */
  readonly transport: TransportContext;
  /** The upstream's configured name, when the hop has one. */
  readonly upstream?: string;
  /** The message's JSON text, when the gateway had it. */
  readonly payloadJson?: string;
  /** Where the result starts in `payloadJson` (`HopEvent.resultAt`). */
  readonly resultAt?: number;
  /** With `resultAt` (and only then, as a boolean): the result says `isError: true`. */
  readonly resultIsError?: boolean;
  /** Epoch ms (fractional) the gateway read the message. */
  readonly receivedAt: number;
  /** Epoch ms (fractional) the gateway wrote it to the next hop. */
  readonly sentAt?: number;
  readonly #sessionContext: HopSession | undefined;
  #envelope: MessageEnvelope | undefined;
  #meup: MeupEnvelope | undefined;

  /** Copies `fields`, leaving out the optional ones that are undefined; builds no envelope yet. */
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

  /** The client session as it was at the hop; undefined for the gateway's own traffic. */
  get sessionContext(): HopSession | undefined {
    return this.#sessionContext;
  }

  /**
   * The hop as a `MessageEnvelope`, built on first access and kept; without a client session, one
   * with the default revision, `active`.
   */
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

  /** The hop as a MEUP envelope, built on first access and kept; its `ts` is `sentAt`, else `receivedAt`. */
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

/**
 * The taps of one router, and the one place that calls them: first those of every hop, then those
 * of the message's method, each in the order added. A tap that throws is counted, logged once, never rethrown.
 */
export class TapBus {
  /** Taps that see every hop. */
  readonly #all: Tap[] = [];
  /** Taps that see only some methods, by method. */
  readonly #byMethod = new Map<string, Tap[]>();
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #failedOnce = new Set<string>();

  /** A bus with `taps`; tap failures go to `logger` (once per tap) and `metrics`. */
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

  /** Adds `tap`, for every hop or, with `methods`, for those methods only. */
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

  /** Removes `tap`; it sees no later hop. Removing one never added does nothing. */
  remove(tap: Tap): void {
    const i = this.#all.indexOf(tap);
    if (i >= 0) this.#all.splice(i, 1);
    for (const [method, taps] of this.#byMethod) {
      const j = taps.indexOf(tap);
      if (j >= 0) taps.splice(j, 1);
      if (taps.length === 0) this.#byMethod.delete(method);
    }
  }

  /**
   * Hands `event` to the hop channel's subscribers, then to every tap that sees it; returns after
   * all of them, never throwing for a tap (a channel subscriber's throw is Node's business).
   */
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
