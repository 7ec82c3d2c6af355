/**
 * The transport metadata of a message that arrived as an SSE event, as the trace records it: which
 * stream, the event id (the resumption cursor), the server's `retry`, and the `Last-Event-ID` the
 * stream was resumed from, each only when known.
 */
import type { SseTransportContext } from '../../../envelope/message-context.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Builds the context without `undefined` members, so traces stay compact. */
export function sseContext(
  streamId: string,
  eventId: string,
  retryMs?: number,
  resumedFrom?: string,
): SseTransportContext {
  const context: Mutable<SseTransportContext> = { kind: 'sse', streamId };
  if (eventId !== '') context.eventId = eventId;
  if (retryMs !== undefined) context.retryMs = retryMs;
  if (resumedFrom !== undefined && resumedFrom !== '') context.lastEventId = resumedFrom;
  return context;
}
