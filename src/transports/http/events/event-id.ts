/**
 * SSE event ids that name their stream: `<streamId>.<seq>`, for example `Qm3v0cT_x9LbA-2e.17`.
 *
 * MCP (2025-03-26 on) lets a client resume a broken stream by sending the last id it saw as
 * `Last-Event-ID`; the server must replay that stream only, and 2025-11-25 asks that ids encode
 * their stream. Here a stream id is a random (CSPRNG) prefix drawn once per session followed by
 * the session's stream counter, and the sequence number is the session's event counter, so ids
 * are unique within a session, visible ASCII, and not guessable from another session.
 *
 * `Last-Event-ID` is client-controlled, so `parseEventId` accepts exactly what `formatEventId`
 * emits and nothing else: a bounded length, the stream-id alphabet, a dot, and a canonical
 * decimal (no sign, no leading zeros, at most `Number.MAX_SAFE_INTEGER`), so one event has one
 * spelling.
 * @module
 */
import { randomBytes } from 'node:crypto';

/** A parsed event id. */
export interface EventId {
  /** The stream it belongs to (the part before the dot). */
  readonly streamId: string;
  /** The session-wide sequence number, from 1. */
  readonly seq: number;
}

/** Longest stream id accepted, so that a hostile `Last-Event-ID` is rejected before any work. */
export const MAX_STREAM_ID_LENGTH = 64;

/** Longest event id accepted: a maximal stream id, the dot, and 16 digits. */
export const MAX_EVENT_ID_LENGTH = MAX_STREAM_ID_LENGTH + 1 + 16;

const STREAM_ID = /^[A-Za-z0-9_-]+$/;
const EVENT_ID = /^([A-Za-z0-9_-]+)\.([1-9][0-9]*)$/;

/**
 * A new stream id: 96 bits from the CSPRNG in base64url, 16 characters of `[A-Za-z0-9_-]`.
 * Unguessable, so that an event id seen in one session says nothing about another's.
 */
export function newStreamId(): string {
  return randomBytes(12).toString('base64url');
}

/** Where one session's stream ids come from. */
export type StreamIdSource = () => string;

/**
 * The stream ids of one session: a 96-bit CSPRNG prefix (16 characters of base64url), drawn
 * once, followed by a counter in base 36. Ids of one source never repeat (the prefix has a fixed
 * length, so prefix and counter read back unambiguously), and another session's ids share nothing
 * guessable with them: what a client learns from its own stream ids is its own prefix only. One
 * CSPRNG draw per session instead of one per POST.
 */
export function streamIdSource(): StreamIdSource {
  const prefix = newStreamId();
  let counter = 0;
  return () => prefix + (counter++).toString(36);
}

/** Whether `value` can serve as a stream id: 1 to 64 characters of `[A-Za-z0-9_-]`. */
export function isStreamId(value: string): boolean {
  return value.length > 0 && value.length <= MAX_STREAM_ID_LENGTH && STREAM_ID.test(value);
}

/**
 * The id of event `seq` of stream `streamId`.
 *
 * @throws RangeError when `streamId` is not a stream id or `seq` is not a positive safe integer;
 *   both are programming errors, and an id `parseEventId` cannot read back must never be sent.
 */
export function formatEventId(streamId: string, seq: number): string {
  if (!isStreamId(streamId)) throw new RangeError(`not a stream id: ${JSON.stringify(streamId)}`);
  if (!Number.isSafeInteger(seq) || seq < 1) throw new RangeError(`not an event sequence number: ${seq}`);
  return `${streamId}.${seq}`;
}

/**
 * Reads an id written by `formatEventId`, typically a client's `Last-Event-ID`. Anything else
 * (empty, too long, other characters, non-canonical or out-of-range numbers) gives `undefined`.
 */
export function parseEventId(id: string): EventId | undefined {
  if (id.length > MAX_EVENT_ID_LENGTH) return undefined;
  const match = EVENT_ID.exec(id);
  if (match === null) return undefined;
  const streamId = match[1]!;
  const seq = Number(match[2]);
  if (streamId.length > MAX_STREAM_ID_LENGTH || !Number.isSafeInteger(seq)) return undefined;
  return { streamId, seq };
}
