/**
 * A `SpaceConnection` over one WebSocket (package `ws`). Memory per connection is bounded by the
 * rule every outgoing stream of the gateway follows (`transports/stream-bound.ts`): a frame that
 * finds `space.maxBufferedBytes` not yet written (`bufferedAmount`: the socket's own buffer, never
 * a count of ours) is not queued. That participant reads slower than the space writes to it: it is
 * closed with 1013 ("try again later") and counted in `space_slow_consumers_total`, rather than
 * dropping envelopes silently or queueing without bound; it reconnects and asks the history for
 * what it missed. A single frame larger than the bound still goes to a participant with nothing
 * pending, which is not slow.
 *
 * Fan-out cost: a frame is serialized, converted to UTF-8 and framed once per dialect
 * (`OutgoingFrame`), and the same bytes are written to every socket, past `ws`'s per-socket
 * framing; the sockets written to in one turn of the event loop are corked and flushed together at
 * its end, one `writev` per socket for all the frames the turn gave it.
 */
import type { WebSocket } from 'ws';
import type { MeupProtocol } from '../meup/types.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { type BufferedStream, StreamBound } from '../transports/stream-bound.js';
import type { OutgoingFrame, SpaceConnection } from './space-connection.js';

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
/** `ws`'s `Sender` state `DEFAULT`: not compressing, not reading a Blob. */
const WS_SENDER_IDLE = 0;

/** `ws.send` options for a Buffer that is a text frame (opcode 1); ws neither copies nor masks it. */
const TEXT_FRAME = { binary: false } as const;

/** The socket under a `ws` WebSocket (`_socket`, a `net.Socket`): what writing frames to it needs. */
interface RawSocket {
  cork(): void;
  uncork(): void;
  write(chunk: Buffer): boolean;
}

/** `ws`'s frame writer (`_sender`): idle when nothing waits in its own queue (it queues only while compressing). */
interface WsSender {
  readonly _state: unknown;
  readonly _queue: readonly unknown[];
}

/**
 * The socket and frame writer under a `ws` (8.x) WebSocket, when they look as expected; else
 * undefined, and frames go through `ws.send` (same bytes on the wire, framed per socket).
 */
function internalsOf(ws: WebSocket): { socket: RawSocket; sender: WsSender } | undefined {
  const { _socket: socket, _sender: sender } = ws as unknown as {
    _socket?: Partial<RawSocket> | null;
    _sender?: Partial<WsSender> | null;
  };
  if (
    typeof socket?.cork !== 'function' ||
    typeof socket.uncork !== 'function' ||
    typeof socket.write !== 'function' ||
    sender?._state === undefined ||
    !Array.isArray(sender._queue)
  )
    return undefined;
  return { socket: socket as RawSocket, sender: sender as WsSender };
}

/**
 * The sockets written to during this turn of the event loop, corked, and uncorked together once
 * the turn's synchronous work is done (`process.nextTick`). A broadcast of k envelopes handled in
 * one turn (one read from the sender's socket may hold several) then reaches each recipient in one
 * `writev` of its k frames instead of k system calls. Order is unchanged: a socket's frames stay in
 * the order they were sent; corking only delays the write to the end of the turn.
 */
export class CorkedSockets {
  #corked: WsSpaceConnection[] = [];
  #scheduled = false;
  readonly #flush = (): void => {
    this.#scheduled = false;
    const corked = this.#corked;
    this.#corked = [];
    for (const connection of corked) connection.flush();
  };

  add(connection: WsSpaceConnection): void {
    this.#corked.push(connection);
    if (!this.#scheduled) {
      this.#scheduled = true;
      process.nextTick(this.#flush);
    }
  }
}

/** Shared by the connections of a process unless a test passes its own. */
const SHARED_CORKS = new CorkedSockets();

export class WsSpaceConnection implements SpaceConnection {
  readonly id: string;
  readonly participant: string;
  readonly roles: readonly string[];
  protocol: MeupProtocol;
  /** Answered the last ping (heartbeat). */
  alive = true;
  readonly #ws: WebSocket;
  readonly #bound: StreamBound;
  /** The connection as the bound reads it: what ws has not written yet. */
  readonly #unsent: BufferedStream;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  readonly #corks: CorkedSockets;
  /** `ws`'s socket and frame writer; undefined: frames go through `ws.send`. */
  readonly #raw: { readonly socket: RawSocket; readonly sender: WsSender } | undefined;
  /** Whether this connection has corked its socket (until the end of the turn). */
  #corked = false;
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
      readonly corks?: CorkedSockets;
    },
  ) {
    this.#ws = ws;
    this.id = params.id;
    this.participant = params.participant;
    this.roles = params.roles;
    this.protocol = params.protocol;
    this.#bound = new StreamBound(params.maxBufferedBytes);
    this.#unsent = {
      get writableLength() {
        return ws.bufferedAmount;
      },
      get destroyed() {
        return ws.readyState !== OPEN;
      },
    };
    this.#metrics = params.metrics;
    this.#logger = params.logger;
    this.#corks = params.corks ?? SHARED_CORKS;
    this.#raw = internalsOf(ws);
  }

  get closing(): boolean {
    return this.#closing;
  }

  /**
   * Queues the frame as a text frame: its bytes, converted and framed once for all its recipients,
   * are written to the socket as they are. The limit: a frame that finds `maxBufferedBytes` not
   * written yet (`bufferedAmount`) is refused and the connection closed as slow. Bytes held by this
   * turn's cork count as unwritten, so before refusing, a corked socket is flushed (written now, as
   * far as the kernel takes them) and the limit checked again: a connection is closed for what the
   * kernel would not take, as without corking, never for what the cork held back.
   */
  send(frame: OutgoingFrame): boolean {
    if (this.#closing || this.#ws.readyState !== OPEN) return false;
    const encoded = frame.ws;
    if (this.#bound.isBehind(this.#unsent)) {
      if (this.#corked) this.flush();
      if (this.#bound.isBehind(this.#unsent)) return this.#slow();
    }
    const raw = this.#raw;
    if (raw === undefined) {
      this.#ws.send(encoded.payload, TEXT_FRAME);
      return true;
    }
    const { socket, sender } = raw;
    if (!this.#corked) {
      socket.cork();
      this.#corked = true;
      this.#corks.add(this);
    }
    // Written past ws only while ws has nothing of its own queued, so that frames keep their order.
    if (sender._state === WS_SENDER_IDLE && sender._queue.length === 0) socket.write(encoded.frame);
    else this.#ws.send(encoded.payload, TEXT_FRAME);
    return true;
  }

  /** Writes what this turn corked (idempotent; `CorkedSockets` calls it at the end of the turn). */
  flush(): void {
    if (!this.#corked) return;
    this.#corked = false;
    this.#raw?.socket.uncork();
  }

  #slow(): false {
    this.#metrics.inc('space_slow_consumers_total');
    this.#logger.warn(
      { participant: this.participant, connection: this.id, buffered: this.#ws.bufferedAmount },
      'closing a slow space connection: it does not read what the space sends',
    );
    this.close(
      CloseCode.TryAgainLater,
      `slow consumer: ${this.#bound.maxBufferedBytes} bytes or more unsent`,
    );
    return false;
  }

  /** Sends a ping; false (and the connection cut) when the previous one was never answered. */
  heartbeat(): boolean {
    if (!this.alive) {
      this.#metrics.inc('space_heartbeat_timeouts_total');
      this.terminate();
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
      this.terminate();
      return;
    }
    setTimeout(() => this.#ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** Cuts the connection at once; what this turn corked is written first, as it would have been. */
  terminate(): void {
    this.#closing = true;
    this.flush();
    this.#ws.terminate();
  }
}
