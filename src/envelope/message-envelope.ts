/**
 * `MessageEnvelope` = a protocol message + its context (seed 001). Envelopes are immutable: every
 * builder returns a new envelope and the instance is frozen, so a tap can keep one without copying.
 */
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { type Direction, reverseDirection } from './direction.js';
import {
  type MessageContext,
  minimalContext,
  type SessionContext,
  type TimingContext,
  type TransportContext,
  timingNow,
} from './message-context.js';

/** The seed's `ProtocolMessage`: a JSON-RPC request, notification, result or error. */
export type ProtocolMessage = JsonRpcMessage;

export class MessageEnvelope {
  readonly message: ProtocolMessage;
  readonly context: MessageContext;

  constructor(message: ProtocolMessage, context: MessageContext = minimalContext()) {
    this.message = message;
    this.context = context;
    Object.freeze(this);
  }

  /** An envelope with the minimal context (unknown direction and transport, anonymous session). */
  static of(message: ProtocolMessage): MessageEnvelope {
    return new MessageEnvelope(message);
  }

  /**
   * The envelope of a response to `request`: it inherits the reversed direction and the session
   * and transport of its request, with fresh timing.
   */
  static responseTo(request: MessageEnvelope, response: ProtocolMessage): MessageEnvelope {
    return new MessageEnvelope(response, {
      direction: reverseDirection(request.context.direction),
      session: request.context.session,
      transport: request.context.transport,
      timing: timingNow(),
    });
  }

  get direction(): Direction {
    return this.context.direction;
  }

  withDirection(direction: Direction): MessageEnvelope {
    return new MessageEnvelope(this.message, { ...this.context, direction });
  }

  withSession(session: SessionContext): MessageEnvelope {
    return new MessageEnvelope(this.message, { ...this.context, session });
  }

  withTransport(transport: TransportContext): MessageEnvelope {
    return new MessageEnvelope(this.message, { ...this.context, transport });
  }

  withTiming(timing: TimingContext): MessageEnvelope {
    return new MessageEnvelope(this.message, { ...this.context, timing });
  }

  withMessage(message: ProtocolMessage): MessageEnvelope {
    return new MessageEnvelope(message, this.context);
  }

  /** The same envelope travelling the other way (e.g. an error answered to its sender). */
  reverse(): MessageEnvelope {
    return this.withDirection(reverseDirection(this.context.direction));
  }

  markProcessingStarted(at: number = performance.now()): MessageEnvelope {
    return this.withTiming({ ...this.context.timing, processingStarted: at });
  }

  markProcessingCompleted(at: number = performance.now()): MessageEnvelope {
    return this.withTiming({ ...this.context.timing, processingCompleted: at });
  }

  markSent(at: number = performance.now()): MessageEnvelope {
    return this.withTiming({ ...this.context.timing, sent: at });
  }

  /** Enough context to route: a known direction and a session id (seed 001's `is_complete`). */
  isComplete(): boolean {
    return this.context.direction !== 'unknown' && this.context.session.id !== undefined;
  }

  /** Milliseconds between processing start and completion, when both are known. */
  processingDuration(): number | undefined {
    const { processingStarted, processingCompleted } = this.context.timing;
    return processingStarted !== undefined && processingCompleted !== undefined
      ? processingCompleted - processingStarted
      : undefined;
  }
}
