/**
 * The sessions of a trace as a table, newest first (the order the store returns): who, over
 * which transport, to which upstreams, when, for how long, and how many envelopes.
 */
import type { TraceSessionSummary } from '../../trace/types.js';
import { dateTime, duration } from './record-fields.js';
import { createStyle } from './style.js';
import { type Cell, type Column, renderTable } from './text-table.js';

const COLUMNS: readonly Column[] = [
  { title: 'SESSION' },
  { title: 'MCP-SESSION-ID' },
  { title: 'TRANSPORT' },
  { title: 'PRINCIPAL' },
  { title: 'CLIENT' },
  { title: 'UPSTREAMS' },
  { title: 'STARTED (UTC)' },
  { title: 'DURATION', align: 'right' },
  { title: 'STATE' },
  { title: 'ENVELOPES', align: 'right' },
];

/**
 * Renders session summaries. DURATION runs to `endedAt`, or to the last envelope for a session
 * still open; CLIENT is `clientInfo.name@version` when the client sent it. Missing values are `-`.
 */
export function renderSessionsTable(
  sessions: readonly TraceSessionSummary[],
  options: { readonly color: boolean },
): string {
  const style = createStyle(options.color);
  const rows = sessions.map((s): (Cell | string)[] => {
    const end = s.endedAt ?? s.lastAt;
    return [
      { text: s.key, paint: style.bold },
      s.mcpSessionId ?? '-',
      s.transport,
      s.principal ?? '-',
      clientText(s.clientInfo),
      s.upstreams.length === 0 ? '-' : s.upstreams.join(','),
      { text: dateTime(s.startedAt), paint: style.dim },
      end === undefined ? '-' : duration(end - s.startedAt),
      s.endedAt === undefined ? { text: 'open', paint: style.response } : { text: 'ended', paint: style.dim },
      String(s.envelopes),
    ];
  });
  return renderTable(COLUMNS, rows, style.bold);
}

function clientText(info: Readonly<Record<string, unknown>> | undefined): string {
  const name = info?.name;
  if (typeof name !== 'string') return '-';
  const version = info?.version;
  return typeof version === 'string' ? `${name}@${version}` : name;
}
