/**
 * The port between the space and one participant connection. The WebSocket adapter
 * (`ws-connection.ts`) implements it; the space never sees a socket. Envelopes are written as
 * JSON text in the connection's dialect: the protocol string the participant speaks, so that
 * replies to a `mew/v0.4` participant say `mew/v0.4`.
 */
import { encodeMeupEnvelope } from '../meup/codec.js';
import type { MeupEnvelope, MeupProtocol } from '../meup/types.js';

export interface SpaceConnection {
  /** Unique per connection (several connections may share one participant). */
  readonly id: string;
  readonly participant: string;
  /** The roles its credentials gave (approvers: `policy.approvals.approverRoles`). */
  readonly roles: readonly string[];
  /** Its dialect: set at join, then the protocol of its latest accepted envelope. */
  protocol: MeupProtocol;
  /**
   * Queues one frame of text. Never throws; false when the connection is closing or has been
   * closed for being too slow (the frame is then dropped and counted by the adapter).
   */
  sendText(text: string): boolean;
  /** Closes the connection with a WebSocket close code and a reason (idempotent). */
  close(code: number, reason: string): void;
}

/**
 * JSON texts of envelopes, each encoded once per protocol string it is sent with: a broadcast to
 * N connections serializes once per dialect present, not N times.
 */
export class EnvelopeTexts {
  readonly #envelope: MeupEnvelope;
  readonly #restamp: boolean;
  readonly #texts = new Map<string, string>();

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
    const first = this.#texts.values().next();
    return first.done ? this.for(this.#envelope).length : first.value.length;
  }

  for(connection: Pick<SpaceConnection, 'protocol'>): string {
    const protocol = this.#restamp ? connection.protocol : this.#envelope.protocol;
    let text = this.#texts.get(protocol);
    if (text === undefined) {
      text = JSON.stringify(encodeMeupEnvelope({ ...this.#envelope, protocol }));
      this.#texts.set(protocol, text);
    }
    return text;
  }
}
