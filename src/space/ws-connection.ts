/**
 * A `SpaceConnection` over one WebSocket (package `ws`). Memory per connection is bounded: what the
 * socket has not written yet (`bufferedAmount`) may not exceed `space.maxBufferedBytes`. A
 * participant that reads slower than the space writes to it is closed with 1013 ("try again
 * later") and counted in `space_slow_consumers_total`, rather than dropping envelopes silently or
 * queueing without bound; it reconnects and asks the history for what it missed.
 */
import type { WebSocket } from 'ws';
import type { MeupProtocol } from '../meup/types.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { SpaceConnection } from './space-connection.js';

/** WebSocket close codes the space uses. */
export const CloseCode = {
  Normal: 1000,
  GoingAway: 1001,
  PolicyViolation: 1008,
  TooLarge: 1009,
  TryAgainLater: 1013,
} as const;

/** How long a closing connection may take to finish its close handshake before it is cut. */
const CLOSE_GRACE_MS = 2000;

const OPEN = 1;

export class WsSpaceConnection implements SpaceConnection {
  readonly id: string;
  readonly participant: string;
  readonly roles: readonly string[];
  protocol: MeupProtocol;
  /** Answered the last ping (heartbeat). */
  alive = true;
  readonly #ws: WebSocket;
  readonly #maxBuffered: number;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  #closing = false;

  constructor(
    ws: WebSocket,
    params: {
      readonly id: string;
      readonly participant: string;
      readonly roles: readonly string[];
      readonly protocol: MeupProtocol;
      readonly maxBufferedBytes: number;
      readonly metrics: Metrics;
      readonly logger: Logger;
    },
  ) {
    this.#ws = ws;
    this.id = params.id;
    this.participant = params.participant;
    this.roles = params.roles;
    this.protocol = params.protocol;
    this.#maxBuffered = params.maxBufferedBytes;
    this.#metrics = params.metrics;
    this.#logger = params.logger;
  }

  get closing(): boolean {
    return this.#closing;
  }

  sendText(text: string): boolean {
    if (this.#closing || this.#ws.readyState !== OPEN) return false;
    if (this.#ws.bufferedAmount + Buffer.byteLength(text) > this.#maxBuffered) {
      this.#metrics.inc('space_slow_consumers_total');
      this.#logger.warn(
        { participant: this.participant, connection: this.id, buffered: this.#ws.bufferedAmount },
        'closing a slow space connection: it does not read what the space sends',
      );
      this.close(CloseCode.TryAgainLater, `slow consumer: more than ${this.#maxBuffered} bytes unsent`);
      return false;
    }
    this.#ws.send(text);
    return true;
  }

  /** Sends a ping; false (and the connection cut) when the previous one was never answered. */
  heartbeat(): boolean {
    if (!this.alive) {
      this.#metrics.inc('space_heartbeat_timeouts_total');
      this.#ws.terminate();
      return false;
    }
    this.alive = false;
    if (this.#ws.readyState === OPEN) this.#ws.ping();
    return true;
  }

  close(code: number, reason: string): void {
    if (this.#closing) return;
    this.#closing = true;
    try {
      this.#ws.close(code, reason.slice(0, 120));
    } catch {
      this.#ws.terminate();
      return;
    }
    setTimeout(() => this.#ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  terminate(): void {
    this.#closing = true;
    this.#ws.terminate();
  }
}
