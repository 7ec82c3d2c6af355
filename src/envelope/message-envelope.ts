/**
 * `MessageEnvelope` = a protocol message + its context (seed 001). Envelopes are immutable: every
 * builder returns a new envelope; the instance and its context (session, transport and its headers,
 * timing) are frozen copies, so a tap can keep one without copying and a caller that changes the
 * objects it built the context from changes nothing here. The message is the caller's value, not
 * copied (it can be large): treat it as read-only once wrapped.
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

/** `value` when frozen, else a frozen shallow copy (every part of a context is flat but HTTP's headers). */
function frozen<T extends object>(value: T): T {
  return Object.isFrozen(value) ? value : Object.freeze({ ...value });
}

function frozenTransport(transport: TransportContext): TransportContext {
  if (transport.kind !== 'http') return frozen(transport);
  const headers = frozen(transport.headers);
  return Object.isFrozen(transport) && headers === transport.headers
    ? transport
    : Object.freeze({ ...transport, headers });
}

/** `context` with every part frozen: itself when it already is, else a frozen copy. */
function frozenContext(context: MessageContext): MessageContext {
  const session = frozen(context.session);
  const transport = frozenTransport(context.transport);
  const timing = frozen(context.timing);
  if (
    Object.isFrozen(context) &&
    session === context.session &&
    transport === context.transport &&
    timing === context.timing
  )
    return context;
  return Object.freeze({ direction: context.direction, session, transport, timing });
}

/** The seed's `ProtocolMessage`: a JSON-RPC request, notification, result or error. */
export type ProtocolMessage = JsonRpcMessage;

export class MessageEnvelope {
  readonly message: ProtocolMessage;
  readonly context: MessageContext;

  constructor(message: ProtocolMessage, context: MessageContext = minimalContext()) {
    this.message = message;
    this.context = frozenContext(context);
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
