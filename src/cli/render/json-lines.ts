/**
 * Machine-readable output: one JSON value per line (JSON Lines), so that `jq`, `grep` and
 * streaming readers can take the trace apart. Envelopes are written in MEUP wire form
 * (`correlation_id`, via `toWire`), exactly as any MEUP participant would read them, plus one
 * member of the trace's own when it has it: `otel`, `{ "trace_id", "span_id" }`, the OpenTelemetry
 * ids of the call the envelope belongs to (the ids the text form lists after its table). A MEUP
 * decoder drops that member as an unknown field; `jq -c 'del(.otel)'` gives the bare envelopes.
 */
import { toWire } from '../../meup/wire.js';
import type { TraceRecord } from '../../trace/types.js';

/** One wire MEUP envelope per line, each id once (the first occurrence wins), newline-terminated. */
export function renderEnvelopeJsonLines(records: readonly TraceRecord[]): string {
  const seen = new Set<string>();
  let out = '';
  for (const record of records) {
    if (seen.has(record.envelope.id)) continue;
    seen.add(record.envelope.id);
    const wire = toWire(record.envelope);
    const line =
      record.otel === undefined
        ? wire
        : { ...wire, otel: { trace_id: record.otel.traceId, span_id: record.otel.spanId } };
    out += `${JSON.stringify(line)}\n`;
  }
  return out;
}

/** Any values, one JSON document per line, newline-terminated. */
export function renderJsonLines(values: readonly unknown[]): string {
  return values.map((v) => `${JSON.stringify(v)}\n`).join('');
}
