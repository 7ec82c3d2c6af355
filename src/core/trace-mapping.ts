/**
 * How MCP traffic maps onto MEUP envelopes (docs/architecture.md, "The trace"): participant ids,
 * kinds and contexts. Pure functions; the router decides correlation and context, these name things.
 */

import type { MeupEnvelope } from '../meup/types.js';
import { MEUP_PROTOCOL } from '../meup/types.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { SessionKey } from './correlation-table.js';

export const GATEWAY_PARTICIPANT = 'gateway';

const CLIENT_PREFIX = 'client-';

export function clientParticipant(session: SessionKey): string {
  return `${CLIENT_PREFIX}${session}`;
}

/** Whether a participant id names a client session (`client-<session>`). */
export function isClientParticipant(id: string): boolean {
  return id.startsWith(CLIENT_PREFIX);
}

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
