/**
 * The port through which the Streamable HTTP server makes its SSE streams resumable (MCP
 * 2025-03-26 to 2025-11-25, "Resumability and Redelivery"): every event written on a stream is
 * appended here first and sent with the id it gets; a client that reconnects with `Last-Event-ID`
 * receives the later events of that one stream and nothing from any other stream or session.
 *
 * What the store promises, whatever keeps the events (memory here, Redis later; both run
 * `eventStoreContract`):
 * - ids are unique within a session (one sequence per session, shared by its streams) and name
 *   their stream (`<streamId>.<seq>`, see `event-id.ts`);
 * - a stream belongs to the session that first used it, and ids from one session never replay
 *   anything in another, even when a client guesses or copies them;
 * - a session keeps at most `maxEventsPerSession` events, none older than `maxEventAgeMs`,
 *   evicting oldest first, so what a stream still holds is always its most recent events;
 * - a replay never skips silently: when events after `Last-Event-ID` have been evicted it says so
 *   (`gap: true`), and an id it cannot place is refused with a reason.
 *
 * The methods are synchronous because the server's write path is (an event's id must be known
 * before its frame is written). A networked store cannot answer synchronously; for one, the port
 * would become `T | Promise<T>`, which `eventStoreContract` is already written to accept.
 * @module
 */

/** An event as replayed: its id (to send again as `id:`) and its data. */
export interface StoredEvent {
  /** The id `append` returned for it (`<streamId>.<seq>`). */
  readonly id: string;
  /** The data as appended. */
  readonly data: string;
}

/**
 * Why a `Last-Event-ID` cannot be resumed:
 * - `malformed`: not an id this store writes, or a sequence number its stream never reached;
 * - `unknown-stream`: a well-formed id of a stream the store does not know (never existed, its
 *   session was dropped, or it was forgotten after all its events were evicted);
 * - `other-session`: the stream belongs to a different session.
 *
 * None of them may become an empty replay: the server answers the GET with an error instead (not
 * 404, which MCP clients read as "session gone, re-initialize"). It should answer
 * `unknown-stream` and `other-session` alike, so that the distinction serves logs and metrics
 * without telling a client that a stream exists in someone else's session.
 */
export type ReplayRefusal = 'malformed' | 'unknown-stream' | 'other-session';

/**
 * The outcome of `replayAfter`. On success, `events` are the stored events of `streamId` that
 * come after `Last-Event-ID`, oldest first. `gap: true` means some events of that stream after it
 * are no longer stored, so the client has missed them; `events` then holds what remains, and
 * `missedFrom`, when present, is the sequence number of the first missed event (present only when
 * the store knows it exactly).
 */
export type ReplayResult =
  | {
      readonly ok: true;
      readonly streamId: string;
      readonly events: readonly StoredEvent[];
      readonly gap: false;
    }
  | {
      readonly ok: true;
      readonly streamId: string;
      readonly events: readonly StoredEvent[];
      readonly gap: true;
      readonly missedFrom?: number;
    }
  | { readonly ok: false; readonly reason: ReplayRefusal };

/** Counters for metrics and limits; `bytes` is the store's own estimate of what it holds. */
export interface EventStoreStats {
  /** Sessions with any state (streams or events) until `dropSession`. */
  readonly sessions: number;
  /** Streams the store can still place a `Last-Event-ID` on. */
  readonly streams: number;
  /** Events held for replay. */
  readonly events: number;
  /** Estimated bytes held: event data as UTF-8 plus a per-event overhead. */
  readonly bytes: number;
}

/** The bounds every implementation honours; the contract suite builds stores with them. */
export interface EventStoreLimits {
  /** Events kept per session; appending one more evicts the session's oldest. */
  readonly maxEventsPerSession?: number;
  /** Events older than this (`now - appendedAt > maxEventAgeMs`) are evicted. */
  readonly maxEventAgeMs?: number;
}

/** Storage of SSE events for resumption, per session and stream. */
export interface EventStore {
  /**
   * Registers `streamId` for `session` (when new) and returns the id for the stream's priming
   * event (2025-11-25): a position on the stream that holds no event. A client that resumes from
   * it receives everything appended to the stream afterwards, and is told of a gap if any of that
   * was evicted. It takes a sequence number, so the id is unique like any other.
   *
   * @throws RangeError when `streamId` is not a stream id or belongs to another session.
   */
  prime(session: string, streamId: string, now: number): string;

  /**
   * Stores `data` as the next event of `streamId` (registering the stream when new) and returns
   * its id, which the caller writes as the frame's `id:`. Evicts by count, age (for this session)
   * and any implementation-specific budget; the new event itself may be evicted at once when it
   * is larger than the store's budget, in which case a replay reports the gap.
   *
   * @throws RangeError when `streamId` is not a stream id or belongs to another session.
   */
  append(session: string, streamId: string, data: string, now: number): string;

  /**
   * The events of the stream named by `lastEventId` (a client's `Last-Event-ID`, untrusted) that
   * come after it, for `session` only. Expired events are evicted first, so they count as missed.
   */
  replayAfter(session: string, lastEventId: string, now: number): ReplayResult;

  /**
   * Evicts every session's expired events. Eviction also happens lazily for a session when it is
   * appended to or replayed, so this only bounds memory held by sessions that went quiet; the
   * server calls it periodically (one timer for the store, none per session).
   */
  prune(now: number): void;

  /** Forgets the session's events and streams (session deleted or expired). Idempotent. */
  dropSession(session: string): void;

  /** Current counters; cheap enough to poll for metrics. */
  stats(): EventStoreStats;
}
