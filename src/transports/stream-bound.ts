/**
 * The bound on what one outgoing stream may hold unsent: the one rule every writer toward a peer
 * applies — the SSE streams of the HTTP server, the gateway's stdout in `switchboard stdio`, the
 * stdin of a stdio upstream — so that a peer that stops reading costs the gateway a bounded amount
 * of memory, never more.
 *
 * "Unsent" is what Node itself still holds for the stream, `writableLength`: the bytes written and
 * not yet handed to the operating system (for an HTTP response, its own buffer plus its socket's).
 * It is never a count of our own, so it drains exactly as fast as the peer reads. A peer is
 * *behind* once that reaches the bound, counting only what the operating system would not take:
 * Node corks an HTTP response's socket for the rest of the turn on every write (so that one turn's
 * writes leave together), and a burst written in one turn would otherwise count as unsent however
 * fast the peer reads; before deciding, a corked stream is flushed (written now, as far as the
 * kernel takes it) and looked at again, as the space's WebSocket connections do. The caller of a
 * peer that is behind must not simply queue the next write: it
 * cuts the stream (an SSE stream: the client resumes from the event store) or stops feeding it
 * until the peer has caught up (stdio: backpressure through to the other side). Either way a
 * stream holds at most the bound plus the one message whose write crossed it; a single message
 * larger than the bound still goes to a peer that is not behind.
 *
 * "Caught up" is the stream's `'drain'` (Node emits it once everything written has been handed
 * over), or its end: a closed stream holds nothing. A bound below the stream's own high-water
 * mark can be reached without Node promising a `'drain'`; the wait then looks again every few
 * milliseconds instead.
 */

/**
 * What deciding whether a peer is behind reads: a Node `Writable` or `ServerResponse`, or a view
 * of another writer (a WebSocket's `bufferedAmount`).
 */
export interface BufferedStream {
  readonly writableLength: number;
  readonly destroyed: boolean;
  /** Writes held back by `cork()` (for a response: by its socket's) until as many `uncork()`s. */
  readonly writableCorked?: number;
  uncork?(): void;
}

/** A Node `Writable` (or `ServerResponse`): what waiting for its peer to catch up also reads. */
export interface OutgoingStream extends BufferedStream {
  readonly writableNeedDrain: boolean;
  on(event: 'drain', listener: () => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/** The gate a producer reads through (see `flow-gate.ts`). */
export interface Holdable {
  isHeldBy(holder: string): boolean;
  close(holder: string): void;
  reopen(holder: string): void;
}

/** The bound of every stream the gateway writes unless configured otherwise: 4 MiB. */
export const DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** How often a wait looks again when the stream promises no `'drain'` (a bound below its high-water mark). */
const RECHECK_MS = 5;

export class StreamBound {
  /** The most bytes a stream may hold unsent before its peer counts as behind. */
  readonly maxBufferedBytes: number;

  /** @throws RangeError when `maxBufferedBytes` is not a positive safe integer. */
  constructor(maxBufferedBytes: number) {
    if (!Number.isSafeInteger(maxBufferedBytes) || maxBufferedBytes < 1) {
      throw new RangeError(`a stream bound must be a positive number of bytes, got ${maxBufferedBytes}`);
    }
    this.maxBufferedBytes = maxBufferedBytes;
  }

  /** Bytes written to `stream` that its peer has not taken yet. */
  unsent(stream: BufferedStream): number {
    // A stream that is gone holds nothing anyone waits for.
    return stream.destroyed ? 0 : stream.writableLength;
  }

  /**
   * Whether `stream`'s peer is behind: it holds at least the bound unsent, even once what a cork
   * held back has been offered to the operating system (which this flushes).
   */
  isBehind(stream: BufferedStream): boolean {
    if (!(this.unsent(stream) >= this.maxBufferedBytes)) return false;
    return !flushCorked(stream) || this.unsent(stream) >= this.maxBufferedBytes;
  }

  /**
   * Calls `ready` once, from a later turn, when `stream`'s peer is no longer behind or the stream
   * has closed. Returns a function that cancels the wait.
   */
  whenCaughtUp(stream: OutgoingStream, ready: () => void): () => void {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const cancel = (): void => {
      settled = true;
      stream.off('drain', check);
      stream.off('close', finish);
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };
    const finish = (): void => {
      if (settled) return;
      cancel();
      ready();
    };
    // Without a pending 'drain' (a bound below the high-water mark) only looking again tells.
    const arm = (): void => {
      if (!stream.writableNeedDrain) timer = setTimeout(check, RECHECK_MS);
    };
    // Every 'drain', not once: one may find the peer behind again after more was written.
    const check = (): void => {
      if (settled) return;
      timer = undefined;
      if (this.isBehind(stream)) arm();
      else finish();
    };
    stream.on('drain', check);
    stream.once('close', finish);
    if (this.isBehind(stream)) arm();
    else setImmediate(check);
    return cancel;
  }

  /**
   * For a producer that pauses rather than cuts: when `stream`'s peer is behind, closes each of
   * `gates` as `holder` until it has caught up (a wait already armed by an earlier call is not
   * armed again). Returns whether the peer is behind.
   */
  holdWhileBehind(stream: OutgoingStream, gates: readonly Holdable[], holder: string): boolean {
    if (!this.isBehind(stream)) return false;
    const toHold = gates.filter((gate) => !gate.isHeldBy(holder));
    if (toHold.length === 0) return true;
    for (const gate of toHold) gate.close(holder);
    this.whenCaughtUp(stream, () => {
      for (const gate of toHold) gate.reopen(holder);
    });
    return true;
  }
}

/** Uncorks `stream` completely (its pending writes go to the OS now); whether it was corked. */
function flushCorked(stream: BufferedStream): boolean {
  const corked = stream.writableCorked ?? 0;
  if (corked === 0 || stream.uncork === undefined || stream.destroyed) return false;
  // Bounded by the count seen: an `uncork` that does not lower it (a response between sockets)
  // must not loop forever.
  for (let i = 0; i < corked && (stream.writableCorked ?? 0) > 0; i++) stream.uncork();
  return true;
}
