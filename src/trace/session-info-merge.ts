/**
 * How what the trace knows of a session combines with a later report of it. A session is reported
 * several times (opened, initialized, ended), each time with what the reporter knew then, and a
 * store also makes up a row for a session it sees envelopes of before any report. A later report
 * fills in what it knows and never blanks what an earlier one said: a session-end report that no
 * longer knows the client's `Mcp-Session-Id` must not make the session unfindable by it.
 *
 * The rule, field by field (the SQLite store applies the same in its upsert):
 * - `mcpSessionId`, `principal`, `protocolVersion`, `clientInfo`, `endedAt`: the later value when
 *   it has one, else the known one;
 * - `upstreams`: the later list unless it is empty (a made-up row knows none);
 * - `startedAt`: the earlier of the two (a session started when it was first seen);
 * - `transport`: the later value (every report knows it).
 */
import type { TraceSessionInfo } from './types.js';

/** `later` laid over `known` (see the module comment); `later` alone when nothing is known yet. */
export function mergeSessionInfo(
  known: TraceSessionInfo | undefined,
  later: TraceSessionInfo,
): TraceSessionInfo {
  if (known === undefined) return later;
  const merged: { -readonly [K in keyof TraceSessionInfo]: TraceSessionInfo[K] } = {
    key: later.key,
    transport: later.transport,
    upstreams: later.upstreams.length > 0 ? later.upstreams : known.upstreams,
    startedAt: Math.min(known.startedAt, later.startedAt),
  };
  const mcpSessionId = later.mcpSessionId ?? known.mcpSessionId;
  if (mcpSessionId !== undefined) merged.mcpSessionId = mcpSessionId;
  const principal = later.principal ?? known.principal;
  if (principal !== undefined) merged.principal = principal;
  const endedAt = later.endedAt ?? known.endedAt;
  if (endedAt !== undefined) merged.endedAt = endedAt;
  const protocolVersion = later.protocolVersion ?? known.protocolVersion;
  if (protocolVersion !== undefined) merged.protocolVersion = protocolVersion;
  const clientInfo = later.clientInfo ?? known.clientInfo;
  if (clientInfo !== undefined) merged.clientInfo = clientInfo;
  return merged;
}
