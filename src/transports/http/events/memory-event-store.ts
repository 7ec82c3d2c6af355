/**
 * The default `EventStore`: events in process memory, bounded per session by count and age and
 * globally by bytes, with no timers of its own.
 *
 * It is sized for many idle sessions (10,000 sessions each holding a GET stream): a session with
 * no events costs one small object, one record per stream and their index entries; its event
 * queue is allocated on the first append and released when the last event leaves. Age is
 * enforced lazily (on append and replay of that session) and by `prune(now)`, which the server
 * calls from one periodic timer.
 *
 * Eviction is always oldest first within a session, which keeps the gap bookkeeping to a few
 * numbers per stream: the events a stream has lost are exactly those up to its
 * `lastEvictedSeq`, so a replay after seq `n` missed something iff `lastEvictedSeq > n`.
 * @module
 */
import { formatEventId, isStreamId, parseEventId } from './event-id.js';
import type {
  EventStore,
  EventStoreLimits,
  EventStoreStats,
  ReplayResult,
  StoredEvent,
} from './event-store.js';

/** Options of `MemoryEventStore`; every bound has a default. */
export interface MemoryEventStoreOptions extends EventStoreLimits {
  /**
   * Budget for all sessions together, counted as UTF-8 data plus `EVENT_OVERHEAD_BYTES` per
   * event. Past it the largest sessions lose their oldest events until the total is 15/16 of the
   * budget (the slack makes the sort over sessions rare). Default 64 MiB.
   */
  readonly maxTotalBytes?: number;
  /**
   * Stream records kept per session. Beyond it, records of streams that hold no events are
   * forgotten, least recently used first (in the order they last became idle: primed, or emptied
   * by eviction), and a resume on them gets `unknown-stream` instead of a gap. Streams that still
   * hold events are never forgotten. Default 64.
   */
  readonly maxStreamsPerSession?: number;
}

/** Default bounds. */
export const MEMORY_EVENT_STORE_DEFAULTS = {
  maxEventsPerSession: 1000,
  maxEventAgeMs: 5 * 60_000,
  maxTotalBytes: 64 * 1024 * 1024,
  maxStreamsPerSession: 64,
} as const;

/**
 * Bytes charged per event on top of its data: the measured heap of an event's entry (88 bytes on
 * 64-bit Node: the entry object, its boxed timestamp and its queue slot), rounded up, so that
 * many tiny events still count against the budget.
 */
export const EVENT_OVERHEAD_BYTES = 96;

interface StreamState {
  readonly id: string;
  readonly session: SessionState;
  /** The session's streams: an intrusive doubly linked list, lighter than a set per session. */
  next: StreamState | undefined;
  prev: StreamState | undefined;
  /**
   * The session's idle streams (no events held), least recently used first: another intrusive
   * list, so that finding the stream to forget is O(1). `idle` says whether it is on it.
   */
  idleNext: StreamState | undefined;
  idlePrev: StreamState | undefined;
  idle: boolean;
  /** The first sequence number the store knows on this stream (a priming or an event). */
  readonly firstSeq: number;
  lastSeq: number;
  /** Events of this stream still stored. */
  live: number;
  /** Sequence numbers of the first and last evicted events; 0 while none was evicted. */
  firstEvictedSeq: number;
  lastEvictedSeq: number;
}

interface Entry {
  readonly seq: number;
  readonly stream: StreamState;
  readonly data: string;
  readonly at: number;
  readonly bytes: number;
}

interface SessionState {
  seq: number;
  bytes: number;
  /** Stored events oldest first, from `head`; undefined while there are none. */
  queue: (Entry | undefined)[] | undefined;
  head: number;
  /** The session's streams (in no particular order) and how many there are. */
  streams: StreamState | undefined;
  streamCount: number;
  /** Ends of the session's idle list: the least recently used idle stream first. */
  idleHead: StreamState | undefined;
  idleTail: StreamState | undefined;
}

/** Compact the queue once this many evicted slots lead it and they are the majority. */
const COMPACT_AFTER = 256;

/** `EventStore` in process memory; see the module comment for its bounds and costs. */
export class MemoryEventStore implements EventStore {
  readonly #maxEvents: number;
  readonly #maxAgeMs: number;
  readonly #maxBytes: number;
  readonly #shedTo: number;
  readonly #maxStreams: number;
  readonly #sessions = new Map<string, SessionState>();
  /** Every known stream, by id: places a `Last-Event-ID` and tells other sessions' streams apart. */
  readonly #streams = new Map<string, StreamState>();
  #events = 0;
  #bytes = 0;

  /**
   * An empty store; each option left out is taken from `MEMORY_EVENT_STORE_DEFAULTS`.
   * @throws RangeError when an option is not a positive safe integer.
   */
  constructor(options: MemoryEventStoreOptions = {}) {
    const d = MEMORY_EVENT_STORE_DEFAULTS;
    this.#maxEvents = positive('maxEventsPerSession', options.maxEventsPerSession ?? d.maxEventsPerSession);
    this.#maxAgeMs = positive('maxEventAgeMs', options.maxEventAgeMs ?? d.maxEventAgeMs);
    this.#maxBytes = positive('maxTotalBytes', options.maxTotalBytes ?? d.maxTotalBytes);
    this.#maxStreams = positive(
      'maxStreamsPerSession',
      options.maxStreamsPerSession ?? d.maxStreamsPerSession,
    );
    this.#shedTo = Math.floor((this.#maxBytes * 15) / 16);
  }

  /** `EventStore.prime`: expires the session's old events first, then takes the next sequence number. */
  prime(session: string, streamId: string, now: number): string {
    const state = this.#session(session);
    this.#expire(state, now);
    const stream = this.#stream(state, streamId);
    stream.lastSeq = ++state.seq;
    if (stream.live === 0) markIdle(state, stream);
    return formatEventId(streamId, state.seq);
  }

  /** `EventStore.append`: evicts by age, then by count, then sheds across sessions over `maxTotalBytes`. */
  append(session: string, streamId: string, data: string, now: number): string {
    const state = this.#session(session);
    this.#expire(state, now);
    const stream = this.#stream(state, streamId);
    const seq = ++state.seq;
    const bytes = Buffer.byteLength(data, 'utf8') + EVENT_OVERHEAD_BYTES;
    stream.lastSeq = seq;
    if (stream.live === 0 && stream.idle) unmarkIdle(state, stream);
    stream.live += 1;
    if (state.queue === undefined) state.queue = [];
    state.queue.push({ seq, stream, data, at: now, bytes });
    state.bytes += bytes;
    this.#events += 1;
    this.#bytes += bytes;
    while (state.queue !== undefined && state.queue.length - state.head > this.#maxEvents) {
      this.#evictOldest(state);
    }
    if (this.#bytes > this.#maxBytes) this.#shed();
    return formatEventId(streamId, seq);
  }

  /** `EventStore.replayAfter`; nothing is expired before the id is placed and checked against `session`. */
  replayAfter(session: string, lastEventId: string, now: number): ReplayResult {
    const position = parseEventId(lastEventId);
    if (position === undefined) return { ok: false, reason: 'malformed' };
    const stream = this.#streams.get(position.streamId);
    if (stream === undefined) return { ok: false, reason: 'unknown-stream' };
    if (this.#sessions.get(session) !== stream.session) return { ok: false, reason: 'other-session' };
    const after = position.seq;
    if (after > stream.lastSeq) return { ok: false, reason: 'malformed' };
    const state = stream.session;
    this.#expire(state, now);
    const events: StoredEvent[] = [];
    const queue = state.queue;
    if (queue !== undefined && stream.live > 0) {
      for (let i = firstAfter(queue, state.head, after); i < queue.length; i++) {
        const entry = queue[i]!;
        if (entry.stream === stream) {
          events.push({ id: formatEventId(stream.id, entry.seq), data: entry.data });
        }
      }
    }
    const streamId = stream.id;
    // Below the first position known for the stream (a stream forgotten and seen again, or a
    // made-up number) the store cannot vouch for what came in between: report a gap.
    if (after < stream.firstSeq) return { ok: true, streamId, events, gap: true };
    if (stream.lastEvictedSeq <= after) return { ok: true, streamId, events, gap: false };
    // Evicted events are a prefix of the stream: when it starts after `after`, its first is
    // exactly the first event the client missed.
    return stream.firstEvictedSeq > after
      ? { ok: true, streamId, events, gap: true, missedFrom: stream.firstEvictedSeq }
      : { ok: true, streamId, events, gap: true };
  }

  /** `EventStore.prune`: expires every session's old events; visits every session. */
  prune(now: number): void {
    for (const state of this.#sessions.values()) this.#expire(state, now);
  }

  /** `EventStore.dropSession`: forgets its streams, events and bytes at once. */
  dropSession(session: string): void {
    const state = this.#sessions.get(session);
    if (state === undefined) return;
    for (let s = state.streams; s !== undefined; s = s.next) this.#streams.delete(s.id);
    if (state.queue !== undefined) this.#events -= state.queue.length - state.head;
    this.#bytes -= state.bytes;
    this.#sessions.delete(session);
  }

  /** `EventStore.stats`, kept up to date on every change (no walk). */
  stats(): EventStoreStats {
    return {
      sessions: this.#sessions.size,
      streams: this.#streams.size,
      events: this.#events,
      bytes: this.#bytes,
    };
  }

  #session(key: string): SessionState {
    let state = this.#sessions.get(key);
    if (state === undefined) {
      state = {
        seq: 0,
        bytes: 0,
        queue: undefined,
        head: 0,
        streams: undefined,
        streamCount: 0,
        idleHead: undefined,
        idleTail: undefined,
      };
      this.#sessions.set(key, state);
    }
    return state;
  }

  #stream(state: SessionState, streamId: string): StreamState {
    const known = this.#streams.get(streamId);
    if (known !== undefined) {
      if (known.session !== state) throw new RangeError('stream belongs to another session');
      return known;
    }
    if (!isStreamId(streamId)) throw new RangeError(`not a stream id: ${JSON.stringify(streamId)}`);
    const stream: StreamState = {
      id: streamId,
      session: state,
      next: state.streams,
      prev: undefined,
      idleNext: undefined,
      idlePrev: undefined,
      idle: false,
      firstSeq: state.seq + 1,
      lastSeq: 0,
      live: 0,
      firstEvictedSeq: 0,
      lastEvictedSeq: 0,
    };
    this.#streams.set(streamId, stream);
    if (state.streams !== undefined) state.streams.prev = stream;
    state.streams = stream;
    state.streamCount += 1;
    if (state.streamCount > this.#maxStreams) this.#forgetIdleStreams(state);
    return stream;
  }

  /**
   * Drops the least recently used records of streams without events, down to the limit: the
   * heads of the idle list, so O(1) per stream forgotten. The stream being registered (never
   * primed nor appended to yet) is not on that list.
   */
  #forgetIdleStreams(state: SessionState): void {
    while (state.streamCount > this.#maxStreams && state.idleHead !== undefined) {
      const stream = state.idleHead;
      unmarkIdle(state, stream);
      if (stream.prev !== undefined) stream.prev.next = stream.next;
      else state.streams = stream.next;
      if (stream.next !== undefined) stream.next.prev = stream.prev;
      stream.next = undefined;
      stream.prev = undefined;
      state.streamCount -= 1;
      this.#streams.delete(stream.id);
    }
  }

  #expire(state: SessionState, now: number): void {
    const queue = state.queue;
    if (queue === undefined) return;
    const oldest = now - this.#maxAgeMs;
    while (state.queue !== undefined && queue[state.head]!.at < oldest) this.#evictOldest(state);
  }

  #evictOldest(state: SessionState): void {
    const queue = state.queue!;
    const entry = queue[state.head]!;
    queue[state.head] = undefined;
    state.head += 1;
    const stream = entry.stream;
    stream.live -= 1;
    if (stream.live === 0) markIdle(state, stream);
    if (stream.firstEvictedSeq === 0) stream.firstEvictedSeq = entry.seq;
    stream.lastEvictedSeq = entry.seq;
    state.bytes -= entry.bytes;
    this.#bytes -= entry.bytes;
    this.#events -= 1;
    if (state.head === queue.length) {
      state.queue = undefined;
      state.head = 0;
    } else if (state.head >= COMPACT_AFTER && state.head * 2 >= queue.length) {
      queue.splice(0, state.head);
      state.head = 0;
    }
  }

  /**
   * Brings the total down to `#shedTo` by levelling the largest sessions: it finds the level L
   * such that cutting every session above L down to L frees enough, then evicts those sessions'
   * oldest events until each is at or below L. Smaller sessions keep everything.
   */
  #shed(): void {
    const excess = this.#bytes - this.#shedTo;
    const holders = [...this.#sessions.values()].filter((s) => s.bytes > 0).sort((a, b) => b.bytes - a.bytes);
    let sum = 0;
    for (let k = 0; k < holders.length; k++) {
      sum += holders[k]!.bytes;
      const next = holders[k + 1]?.bytes ?? 0;
      if (sum - (k + 1) * next < excess) continue;
      const level = Math.floor((sum - excess) / (k + 1));
      for (const state of holders.slice(0, k + 1)) {
        while (state.bytes > level) this.#evictOldest(state);
      }
      return;
    }
  }
}

/** Puts `stream` last (most recently used) on its session's idle list. */
function markIdle(state: SessionState, stream: StreamState): void {
  if (stream.idle) unmarkIdle(state, stream);
  stream.idle = true;
  stream.idlePrev = state.idleTail;
  stream.idleNext = undefined;
  if (state.idleTail !== undefined) state.idleTail.idleNext = stream;
  else state.idleHead = stream;
  state.idleTail = stream;
}

/** Takes `stream` off its session's idle list. */
function unmarkIdle(state: SessionState, stream: StreamState): void {
  if (stream.idlePrev !== undefined) stream.idlePrev.idleNext = stream.idleNext;
  else state.idleHead = stream.idleNext;
  if (stream.idleNext !== undefined) stream.idleNext.idlePrev = stream.idlePrev;
  else state.idleTail = stream.idlePrev;
  stream.idleNext = undefined;
  stream.idlePrev = undefined;
  stream.idle = false;
}

/** Index of the first entry after `seq` in the queue (sequence numbers increase along it). */
function firstAfter(queue: readonly (Entry | undefined)[], head: number, seq: number): number {
  let lo = head;
  let hi = queue.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (queue[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}
