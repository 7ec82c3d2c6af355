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
  hopTime,
  indexById,
  kindCell,
  rpcIdText,
  shortId,
  shownMethod,
} from './record-fields.js';
import { createStyle } from './style.js';
import { type Cell, type Column, renderTable } from './text-table.js';

/** `--wide`: every column, every cell whole. */
const WIDE_COLUMNS: readonly Column[] = [
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
 * The default, for a terminal of `width` columns: DIR and HOP become one short HOP (`client→gw`,
 * `gw→a`), CORRELATES goes (`trace follow` shows it), and METHOD, CONTEXT and RPC ID are cut to
 * fit. The envelope id stays whole: it is what a person copies into `trace follow`.
 */
const NARROW_COLUMNS: readonly Column[] = [
  { title: '#', align: 'right' },
  { title: 'TIME (UTC)' },
  { title: 'HOP', shrink: 9 },
  { title: 'KIND' },
  { title: 'METHOD', shrink: 14 },
  { title: 'RPC ID', align: 'right', shrink: 6 },
  { title: 'CONTEXT', shrink: 7 },
  { title: 'LATENCY', align: 'right' },
  { title: 'ENVELOPE' },
];

/** A participant as the narrow HOP shows it: `gw`, `client` (this session's), an upstream's name. */
function shortParticipant(id: string, session: string | undefined): string {
  if (id === 'gateway') return 'gw';
  if (session !== undefined && id === `client-${session}`) return 'client';
  return id.startsWith('server-') ? id.slice('server-'.length) : id;
}

/** `notification` is the one long kind; the narrow table says `notif`. */
function shortKind(cell: Cell): Cell {
  return cell.text === 'notification' ? { ...cell, text: 'notif' } : cell;
}

function shortHop(record: TraceRecord, session: string | undefined): string {
  const to = record.envelope.to;
  const target =
    to === undefined || to.length === 0 ? '*' : to.map((t) => shortParticipant(t, session)).join(',');
  return `${shortParticipant(record.envelope.from, session)}→${target}`;
}

/**
 * Renders `records` (already in order) as a table. CONTEXT is indented by depth and shows the last
 * segment, as `#n` when it is a row's envelope id; METHOD on a response is the answered
 * request's method in parentheses; TIME is the hop's time (`hopTime`, the envelope's `ts`);
 * LATENCY is the response's time minus the request's.
 */
export function renderEnvelopeTable(
  records: readonly TraceRecord[],
  options: {
    readonly color: boolean;
    /** Fit this many columns (the narrow layout); undefined for the wide one. */
    readonly width?: number;
  },
): string {
  const narrow = options.width !== undefined;
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
    const root = narrow ? 'session' : last;
    const context = depth === 0 ? '-' : `${'  '.repeat(depth - 1)}${depth === 1 ? root : label(last)}`;
    const latency = answered ? duration(hopTime(record) - hopTime(answered)) : '';
    if (narrow) {
      return [
        { text: String(i + 1), paint: style.dim },
        { text: clockTime(hopTime(record)), paint: style.dim },
        shortHop(record, record.session),
        shortKind(kindCell(record, style)),
        { text: method, paint: style.bold },
        rpcIdText(record),
        context,
        latency,
        { text: envelope.id, paint: style.dim },
      ];
    }
    return [
      { text: String(i + 1), paint: style.dim },
      { text: clockTime(hopTime(record)), paint: style.dim },
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
  return narrow
    ? renderTable(NARROW_COLUMNS, rows, style.bold, options.width)
    : renderTable(WIDE_COLUMNS, rows, style.bold);
}
