/**
 * The sessions of a trace as a table, newest first (the order the store returns): who, over
 * which transport, to which upstreams, when, for how long, and how many envelopes.
 */
import { GATEWAY_TRACE_SESSION } from '../../core/trace-mapping.js';
import type { TraceSessionSummary } from '../../trace/types.js';
import { dateTime, duration } from './record-fields.js';
import { createStyle, type Paint } from './style.js';
import { type Cell, type Column, renderTable } from './text-table.js';

const COLUMNS: readonly Column[] = [
  { title: 'SESSION' },
  { title: 'MCP-SESSION-ID' },
  { title: 'TRANSPORT' },
  { title: 'PRINCIPAL', shrink: 9 },
  { title: 'CLIENT', shrink: 9 },
  { title: 'UPSTREAMS', shrink: 9 },
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
  options: {
    readonly color: boolean;
    /** Fit this many columns, cutting ids, names and lists with `…`; undefined prints them whole. */
    readonly width?: number;
  },
): string {
  const style = createStyle(options.color);
  const rows = sessions.map((s): (Cell | string)[] => {
    const end = s.endedAt ?? s.lastAt;
    return [
      { text: s.key, paint: style.bold },
      s.mcpSessionId ?? '-',
      s.transport,
      s.principal ?? '-',
      s.key === GATEWAY_TRACE_SESSION ? '(gateway)' : clientText(s.clientInfo),
      s.upstreams.length === 0 ? '-' : s.upstreams.join(','),
      { text: dateTime(s.startedAt), paint: style.dim },
      end === undefined ? '-' : duration(end - s.startedAt),
      s.endedAt === undefined ? { text: 'open', paint: style.response } : { text: 'ended', paint: style.dim },
      String(s.envelopes),
    ];
  });
  const table =
    options.width === undefined
      ? renderTable(COLUMNS, rows, style.bold)
      : narrowTable(rows, options.width, style.bold);
  return sessions.some((s) => s.key === GATEWAY_TRACE_SESSION) ? `${table}${GATEWAY_SESSION_NOTE}` : table;
}

/** Column indexes of MCP-SESSION-ID and PRINCIPAL, which a narrow table may leave out. */
const MCP_SESSION_ID = 1;
const PRINCIPAL = 3;

/**
 * The table fitted to `width`: without MCP-SESSION-ID (up to 36 characters; `--wide` shows it,
 * and `trace show` takes the SESSION key), without PRINCIPAL when nobody has one, and with
 * PRINCIPAL, CLIENT and UPSTREAMS cut to fit.
 */
function narrowTable(rows: readonly (Cell | string)[][], width: number, header: Paint): string {
  const text = (cell: Cell | string | undefined): string =>
    typeof cell === 'string' ? cell : (cell?.text ?? '');
  const drop = new Set([MCP_SESSION_ID]);
  if (rows.every((row) => text(row[PRINCIPAL]) === '-')) drop.add(PRINCIPAL);
  const keep = <T>(_: T, i: number): boolean => !drop.has(i);
  return renderTable(
    COLUMNS.filter(keep),
    rows.map((row) => row.filter(keep)),
    header,
    width,
  );
}

/** Printed under a sessions table that lists the gateway's session, so that nobody wonders. */
export const GATEWAY_SESSION_NOTE =
  '\n"gateway" is not a client: it holds the gateway\'s own traffic with its upstreams (their initialize\n' +
  'handshakes) and messages that belong to no client call (e.g. progress that came after its call ended).\n';

function clientText(info: Readonly<Record<string, unknown>> | undefined): string {
  const name = info?.name;
  if (typeof name !== 'string') return '-';
  const version = info?.version;
  return typeof version === 'string' ? `${name}@${version}` : name;
}
