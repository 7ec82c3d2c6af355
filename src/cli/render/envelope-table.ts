/**
 * The envelopes of a session as a table, in the order the gateway saw them. Rows are numbered so
 * that the CONTEXT and CORRELATES columns can point at other rows (`#3`) instead of repeating
 * 26-character ids; a response that answers a request shown in the table gets its latency.
 */
import type { TraceRecord } from '../../trace/types.js';
import {
  answeredRequest,
  clockTime,
  contextDepth,
  directionArrow,
  duration,
  hopText,
  indexById,
  kindCell,
  rpcIdText,
  shortId,
  shownMethod,
} from './record-fields.js';
import { createStyle } from './style.js';
import { type Cell, type Column, renderTable } from './text-table.js';

const COLUMNS: readonly Column[] = [
  { title: '#', align: 'right' },
  { title: 'TIME (UTC)' },
  { title: 'DIR' },
  { title: 'KIND' },
  { title: 'METHOD' },
  { title: 'RPC ID', align: 'right' },
  { title: 'CONTEXT' },
  { title: 'HOP' },
  { title: 'CORRELATES' },
  { title: 'LATENCY', align: 'right' },
  { title: 'ENVELOPE' },
];

/**
 * Renders `records` (already in order) as a table. CONTEXT is indented by depth and shows the last
 * segment, as `#n` when it is a row's envelope id; METHOD on a response is the answered
 * request's method in parentheses; LATENCY is the response's `receivedAt` minus the request's.
 */
export function renderEnvelopeTable(
  records: readonly TraceRecord[],
  options: { readonly color: boolean },
): string {
  const style = createStyle(options.color);
  const rowOf = new Map<string, number>();
  records.forEach((r, i) => {
    if (!rowOf.has(r.envelope.id)) rowOf.set(r.envelope.id, i + 1);
  });
  const label = (id: string): string => {
    const row = rowOf.get(id);
    return row === undefined ? shortId(id) : `#${row}`;
  };

  const known = indexById(records);
  const rows = records.map((record, i): (Cell | string)[] => {
    const { envelope } = record;
    const answered = answeredRequest(record, known);
    const method = shownMethod(record, known);
    const depth = contextDepth(envelope.context);
    const segments = envelope.context?.split('/') ?? [];
    const last = segments[segments.length - 1] ?? '';
    const context = depth === 0 ? '-' : `${'  '.repeat(depth - 1)}${depth === 1 ? last : label(last)}`;
    const latency = answered ? duration(record.receivedAt - answered.receivedAt) : '';
    return [
      { text: String(i + 1), paint: style.dim },
      { text: clockTime(record.receivedAt), paint: style.dim },
      directionArrow(record.direction),
      kindCell(record, style),
      { text: method, paint: style.bold },
      rpcIdText(record),
      context,
      { text: hopText(record), paint: style.dim },
      (envelope.correlationId ?? []).map(label).join(','),
      latency,
      { text: envelope.id, paint: style.dim },
    ];
  });
  return renderTable(COLUMNS, rows, style.bold);
}
