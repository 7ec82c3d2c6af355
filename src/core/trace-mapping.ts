/**
 * How MCP traffic maps onto MEUP envelopes (docs/architecture.md, "The trace"): participant ids,
 * kinds and contexts. Pure functions; the router decides correlation and context, these name things.
 */

import type { MeupEnvelope } from '../meup/types.js';
import { MEUP_PROTOCOL } from '../meup/types.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { SessionKey } from './correlation-table.js';

/** The gateway's participant id: the `from` or `to` of every hop on the gateway's side. */
export const GATEWAY_PARTICIPANT = 'gateway';

/**
 * The trace session (and the root context) of traffic that belongs to no client session: the
 * gateway's own handshakes and lists with its upstreams, and what an upstream sends outside any
 * call. The one "no session" marker of the trace; its counterpart in the correlation table is
 * `INTERNAL_SESSION` (`#internal`, which no generated key can equal), mapped to this one by
 * `traceSessionOf` (hops.ts). The same text as the participant id: that traffic is the gateway's.
 */
export const GATEWAY_TRACE_SESSION: SessionKey = GATEWAY_PARTICIPANT;

const CLIENT_PREFIX = 'client-';

/** The participant id of a client session: `client-<session>`. */
export function clientParticipant(session: SessionKey): string {
  return `${CLIENT_PREFIX}${session}`;
}

/** Whether a participant id names a client session (`client-<session>`). */
export function isClientParticipant(id: string): boolean {
  return id.startsWith(CLIENT_PREFIX);
}

/** The participant id of an upstream, by its configured name: `server-<name>`. */
export function serverParticipant(upstreamName: string): string {
  return `server-${upstreamName}`;
}

/** `mcp/request`, `mcp/response` (results and errors) or `mcp/notification`. */
export function mcpKind(message: JsonRpcMessage): string {
  if ('method' in message) return 'id' in message ? 'mcp/request' : 'mcp/notification';
  return 'mcp/response';
}

/** Epoch milliseconds with sub-millisecond precision, on the monotonic clock's base. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The MEUP envelope of one hop: `message` as payload, `to` as the only recipient, `wall` (epoch ms)
 * as its ISO `ts`, the kind from `mcpKind`; `correlationId` is left out when empty.
 */
export function meupEnvelope(params: {
  readonly id: string;
  readonly wall: number;
  readonly from: string;
  readonly to: string;
  readonly message: JsonRpcMessage;
  readonly correlationId?: readonly string[];
  readonly context: string;
}): MeupEnvelope {
  const envelope: {
    -readonly [K in keyof MeupEnvelope]: MeupEnvelope[K];
  } = {
    protocol: MEUP_PROTOCOL,
    id: params.id,
    ts: new Date(params.wall).toISOString(),
    from: params.from,
    to: [params.to],
    kind: mcpKind(params.message),
    context: params.context,
    payload: params.message as unknown as Readonly<Record<string, unknown>>,
  };
  if (params.correlationId && params.correlationId.length > 0) envelope.correlationId = params.correlationId;
  return envelope;
}
