/**
 * The small facts every trace view shows about one envelope (clock time, direction arrow, kind,
 * JSON-RPC method and id, the hop), formatted once so that tables, trees and graphs agree. Times
 * are UTC so that the output does not depend on the reader's time zone.
 */
import type { Direction } from '../../envelope/direction.js';
import { isTruncatedPayload, rpcSummary } from '../../trace/stored-payload.js';
import type { TraceRecord } from '../../trace/types.js';
import type { Style } from './style.js';
import type { Cell } from './text-table.js';

/** `→` towards the server, `←` towards the client, `·` gateway-internal, `?` unknown. */
export function directionArrow(direction: Direction): string {
  switch (direction) {
    case 'client->server':
      return '→';
    case 'server->client':
      return '←';
    case 'internal':
      return '·';
    default:
      return '?';
  }
}

/**
 * When a hop happened: when the gateway wrote it (`sentAt`), else when it read it. This is the
 * instant of the envelope's `ts`. `receivedAt` alone is wrong for a hop the gateway wrote: a
 * gateway→client response carries its request's `receivedAt` (the router's context for the
 * call), so views that showed it put every response at its request's time.
 */
export function hopTime(record: TraceRecord): number {
  return record.sentAt ?? record.receivedAt;
}

/** `HH:MM:SS.mmm` in UTC. */
export function clockTime(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(11, 23);
}

/** `YYYY-MM-DD HH:MM:SS` in UTC. */
export function dateTime(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ');
}

/** A duration for humans: `0.42ms`, `12.3ms`, `1.25s`, `2m05s`, `1h02m`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  if (ms < 10) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(1)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

/** A byte count for humans: `512 B`, `1.5 KiB`, `2.0 MiB`. */
export function byteSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `request`, `response`, `error` (a response carrying a JSON-RPC error), `notification`, or the raw kind. */
export function kindCell(record: TraceRecord, style: Style): Cell {
  const { kind, payload } = record.envelope;
  if (kind === 'mcp/request') return { text: 'request', paint: style.request };
  if (kind === 'mcp/notification') return { text: 'notification', paint: style.notification };
  if (kind === 'mcp/response') {
    return 'error' in payload
      ? { text: 'error', paint: style.error }
      : { text: 'response', paint: style.response };
  }
  return { text: kind };
}

/** The JSON-RPC method, or a note saying the payload was not kept. */
export function methodText(record: TraceRecord): string {
  const payload = record.envelope.payload;
  if (isTruncatedPayload(payload)) return `(truncated, ${byteSize(payload.bytes)})`;
  return rpcSummary(payload).method ?? '';
}

/** The JSON-RPC id as JSON (`7`, `"abc"`), or empty for a notification. */
export function rpcIdText(record: TraceRecord): string {
  return rpcSummary(record.envelope.payload).rpcId ?? '';
}

/** `from → to` (several recipients comma-separated; `*` when addressed to everyone). */
export function hopText(record: TraceRecord): string {
  const to = record.envelope.to;
  return `${record.envelope.from} → ${to === undefined || to.length === 0 ? '*' : to.join(',')}`;
}

/** The number of segments of a context path; 0 when there is none. */
export function contextDepth(context: string | undefined): number {
  return context === undefined || context === '' ? 0 : context.split('/').length;
}

/** An id shortened for a narrow column: its last 8 characters (the per-process counter of ours). */
export function shortId(id: string): string {
  return id.length <= 10 ? id : `…${id.slice(-8)}`;
}

/**
 * The request a response answers, among `known` records: the first id in its `correlation_id`
 * that names an `mcp/request` (a downstream response also names the upstream response it was
 * built from; that one is not what it answers).
 */
export function answeredRequest(
  record: TraceRecord,
  known: ReadonlyMap<string, TraceRecord>,
): TraceRecord | undefined {
  if (record.envelope.kind !== 'mcp/response') return undefined;
  for (const id of record.envelope.correlationId ?? []) {
    const target = known.get(id);
    if (target?.envelope.kind === 'mcp/request') return target;
  }
  return undefined;
}

/** The method to show for `record`: its own, or `(method)` of the request it answers. */
export function shownMethod(record: TraceRecord, known: ReadonlyMap<string, TraceRecord>): string {
  const own = methodText(record);
  if (own !== '') return own;
  const request = answeredRequest(record, known);
  const asked = request === undefined ? '' : methodText(request);
  return asked === '' ? '' : `(${asked})`;
}

/** Records by envelope id (the first of duplicates wins), for {@link shownMethod} and friends. */
export function indexById(records: Iterable<TraceRecord>): Map<string, TraceRecord> {
  const map = new Map<string, TraceRecord>();
  for (const r of records) if (!map.has(r.envelope.id)) map.set(r.envelope.id, r);
  return map;
}

/**
 * One line describing an envelope, for trees and graphs:
 * `10:00:00.000 → request tools/call id=7  client-s1 → gateway  <envelope id>`. `known` lets a
 * response show the method of the request it answers.
 */
export function summaryLine(
  record: TraceRecord,
  style: Style,
  known: ReadonlyMap<string, TraceRecord> = new Map(),
): string {
  const kind = kindCell(record, style);
  const method = shownMethod(record, known);
  const id = rpcIdText(record);
  const parts = [
    style.dim(clockTime(hopTime(record))),
    directionArrow(record.direction),
    kind.paint ? kind.paint(kind.text) : kind.text,
  ];
  if (method !== '') parts.push(style.bold(method));
  if (id !== '') parts.push(`id=${id}`);
  parts.push(` ${style.dim(hopText(record))}`, ` ${style.dim(record.envelope.id)}`);
  return parts.join(' ');
}
