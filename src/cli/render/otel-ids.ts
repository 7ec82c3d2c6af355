/**
 * The OpenTelemetry ids a trace kept (`TraceRecord.otel`, when the gateway exported traces): one
 * line per call, the call's request envelope id (what `switchboard trace follow` takes) with the
 * trace id and span id a tracing UI shows, so one can go from either view to the other.
 */
import type { TraceRecord } from '../../trace/types.js';

/** `''` when no record has ids; else a titled block, one line per call, in the order first seen. */
export function renderOtelIds(records: readonly TraceRecord[]): string {
  const calls = new Map<string, { traceId: string; spanId: string }>();
  for (const record of records) {
    if (record.otel === undefined) continue;
    const context = record.envelope.context ?? record.envelope.id;
    const segments = context.split('/');
    const call = segments.length > 1 ? (segments[1] as string) : record.envelope.id;
    if (!calls.has(call)) calls.set(call, record.otel);
  }
  if (calls.size === 0) return '';
  let out = '\nOpenTelemetry (call envelope  trace id  span id):\n';
  for (const [call, ids] of calls) out += `  ${call}  ${ids.traceId}  ${ids.spanId}\n`;
  return out;
}
