/**
 * Machine-readable output: one JSON value per line (JSON Lines), so that `jq`, `grep` and
 * streaming readers can take the trace apart. Envelopes are written in MEUP wire form
 * (`correlation_id`, via `toWire`), exactly as any MEUP participant would read them.
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
    out += `${JSON.stringify(toWire(record.envelope))}\n`;
  }
  return out;
}

/** Any values, one JSON document per line, newline-terminated. */
export function renderJsonLines(values: readonly unknown[]): string {
  return values.map((v) => `${JSON.stringify(v)}\n`).join('');
}
