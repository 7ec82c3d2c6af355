/**
 * A `SpaceConnection` that keeps what it is sent, in memory: for embedding the space in-process
 * (a participant living in the gateway) and for tests. It can be made slow: with `capacity`, it
 * refuses frames beyond that many, as the WebSocket connection refuses beyond its byte budget.
 */
import type { MeupProtocol } from '../meup/types.js';
import type { OutgoingFrame, SpaceConnection } from './space-connection.js';

let counter = 0;

export class MemoryConnection implements SpaceConnection {
  readonly id: string;
  readonly participant: string;
  readonly roles: readonly string[];
  protocol: MeupProtocol;
  /** Every frame sent, as text. */
  readonly texts: string[] = [];
  closedWith: { readonly code: number; readonly reason: string } | undefined;
  readonly #capacity: number;

  constructor(
    participant: string,
    options: {
      readonly roles?: readonly string[];
      readonly protocol?: MeupProtocol;
      readonly capacity?: number;
    } = {},
  ) {
    this.id = `m${++counter}`;
    this.participant = participant;
    this.roles = options.roles ?? [];
    this.protocol = options.protocol ?? 'meup/v0.2';
    this.#capacity = options.capacity ?? Number.POSITIVE_INFINITY;
  }

  send(frame: OutgoingFrame): boolean {
    if (this.closedWith || this.texts.length >= this.#capacity) return false;
    this.texts.push(frame.text);
    return true;
  }

  close(code: number, reason: string): void {
    this.closedWith ??= { code, reason };
  }

  /** The frames sent, parsed. */
  get received(): Record<string, unknown>[] {
    return this.texts.map((t) => JSON.parse(t) as Record<string, unknown>);
  }

  /** The envelopes of a kind received, in order. */
  ofKind(kind: string): Record<string, unknown>[] {
    return this.received.filter((e) => e.kind === kind);
  }

  /** Forgets what was received so far. */
  clear(): void {
    this.texts.length = 0;
  }
}
