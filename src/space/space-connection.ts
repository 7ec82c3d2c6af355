/**
 * The port between the space and one participant connection. The WebSocket adapter
 * (`ws-connection.ts`) implements it; the space never sees a socket. Envelopes are written as
 * JSON text in the connection's dialect: the protocol string the participant speaks, so that
 * replies to a `mew/v0.4` participant say `mew/v0.4`.
 *
 * A broadcast sends one `OutgoingFrame` per dialect to all its recipients: the envelope is
 * serialized once per dialect, and its UTF-8 bytes made once, then shared by every socket it is
 * written to.
 */
import { encodeMeupEnvelope } from '../meup/codec.js';
import type { MeupEnvelope, MeupProtocol } from '../meup/types.js';
import { type ServerTextFrame, serverTextFrame } from './ws-frame.js';

export interface SpaceConnection {
  /** Unique per connection (several connections may share one participant). */
  readonly id: string;
  readonly participant: string;
  /** The roles its credentials gave (approvers: `policy.approvals.approverRoles`). */
  readonly roles: readonly string[];
  /** Its dialect: set at join, then the protocol of its latest accepted envelope. */
  protocol: MeupProtocol;
  /**
   * Queues one text frame. Never throws; false when the connection is closing or has been closed
   * for being too slow (the frame is then dropped and counted by the adapter). The frame may be
   * shared with other connections: it is never modified.
   */
  send(frame: OutgoingFrame): boolean;
  /** Closes the connection with a WebSocket close code and a reason (idempotent). */
  close(code: number, reason: string): void;
}

/**
 * One text frame as it goes out: its text, and its WebSocket frame (the UTF-8 bytes behind the
 * header) made on first use and kept, so that a frame written to N sockets is converted and framed
 * once, not N times (the WebSocket adapter writes the bytes, an in-memory one keeps the text).
 */
export class OutgoingFrame {
  readonly text: string;
  #ws: ServerTextFrame | undefined;

  constructor(text: string) {
    this.text = text;
  }

  /** The text as a server's WebSocket text frame, shared: never write into it. */
  get ws(): ServerTextFrame {
    if (this.#ws === undefined) this.#ws = serverTextFrame(this.text);
    return this.#ws;
  }

  /** The text as UTF-8 (the frame's payload), shared: never write into it. */
  get bytes(): Buffer {
    return this.ws.payload;
  }
}

/**
 * JSON texts of envelopes, each encoded once per protocol string it is sent with: a broadcast to
 * N connections serializes once per dialect present, not N times.
 */
export class EnvelopeTexts {
  readonly #envelope: MeupEnvelope;
  readonly #restamp: boolean;
  readonly #frames = new Map<string, OutgoingFrame>();

  /** `restamp`: the gateway's own envelopes take each connection's protocol; forwarded ones keep theirs. */
  constructor(envelope: MeupEnvelope, restamp: boolean) {
    this.#envelope = envelope;
    this.#restamp = restamp;
  }

  get envelope(): MeupEnvelope {
    return this.#envelope;
  }

  /** The length of its text (one encoding, made now if none was): what the history counts. */
  size(): number {
    const first = this.#frames.values().next();
    return (first.done ? this.for(this.#envelope) : first.value).text.length;
  }

  /** The frame for a connection (its dialect when restamped): the same object for every connection of one dialect. */
  for(connection: Pick<SpaceConnection, 'protocol'>): OutgoingFrame {
    const protocol = this.#restamp ? connection.protocol : this.#envelope.protocol;
    let frame = this.#frames.get(protocol);
    if (frame === undefined) {
      frame = new OutgoingFrame(JSON.stringify(encodeMeupEnvelope({ ...this.#envelope, protocol })));
      this.#frames.set(protocol, frame);
    }
    return frame;
  }
}
