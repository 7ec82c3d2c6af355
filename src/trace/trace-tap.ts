/**
 * The tap that turns the router's hop events into trace hops. It only copies fields: the router
 * already decided correlation and context, and the store derives the envelope's timestamp and the
 * payload's stored text, off the forwarding path.
 */
import type { HopEvent, Tap } from '../core/taps.js';
import { mcpKind } from '../core/trace-mapping.js';
import type { TraceHop } from './trace-hop.js';
import type { OtelIds, TraceSessionInfo } from './types.js';

/** Where trace hops go (the batching `TraceRecorder`, or anything with the same shape). */
export interface TraceSink {
  recordHop(hop: TraceHop): void;
  session(info: TraceSessionInfo): void;
}

/**
 * The tap; `otelIds`, when OpenTelemetry is on, gives the trace and span id of a hop's call, which
 * the trace then keeps with the envelope (`TraceRecord.otel`).
 */
export function traceTap(sink: TraceSink, otelIds?: (event: HopEvent) => OtelIds | undefined): Tap {
  return {
    name: 'trace',
    observe(event: HopEvent): void {
      const hop: { -readonly [K in keyof TraceHop]: TraceHop[K] } = {
        id: event.id,
        session: event.session,
        kind: mcpKind(event.message),
        from: event.from,
        to: [event.to],
        context: event.context,
        payload: event.message as unknown as Readonly<Record<string, unknown>>,
        direction: event.direction,
        transport: event.transport.kind,
        receivedAt: event.receivedAt,
      };
      if (event.correlationId !== undefined) hop.correlationId = event.correlationId;
      if (event.upstream !== undefined) hop.upstream = event.upstream;
      if (event.sentAt !== undefined) hop.sentAt = event.sentAt;
      if (event.payloadJson !== undefined) {
        hop.payloadJson = event.payloadJson;
        if (event.resultAt !== undefined) {
          hop.resultAt = event.resultAt;
          hop.resultIsError = event.resultIsError === true;
        }
      }
      if (otelIds !== undefined) {
        const ids = otelIds(event);
        if (ids !== undefined) hop.otel = ids;
      }
      sink.recordHop(hop);
    },
  };
}
