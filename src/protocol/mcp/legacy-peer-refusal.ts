/**
 * What a peer on a session-based MCP revision cannot take from a 2026-07-28 client: the check a
 * legacy upstream transport answers `UpstreamTransport.refuse` with.
 */
import { JsonRpcCode } from '../jsonrpc/codes.js';
import type { JsonRpcErrorObject, JsonRpcRequest } from '../jsonrpc/types.js';
import { envelopeClaim } from './modern-meta.js';

/**
 * Why a legacy peer cannot take `request`, or `undefined` when it can: in a 2026-07-28 client's
 * request (one with the envelope) a `requestState` claims to resume a call, and a peer on a
 * session-based revision hands out none (its input requests reach the client as server requests,
 * which the gateway answers with states of its own, resumed before routing). So the state is
 * forged, stale or meant for another server, and a 2025 server would ignore it and run the call
 * afresh, where 2026-07-28 requires a state that fails verification to be refused. `inputResponses`
 * go on (`toLegacyWire`, reserved-meta.ts); a 2025 client's params are never judged.
 */
export function legacyPeerRefusal(request: JsonRpcRequest, upstream: string): JsonRpcErrorObject | undefined {
  // Params by-position (an array) have no `requestState`.
  const state = (request.params as { readonly requestState?: unknown } | undefined)?.requestState;
  if (state === undefined || envelopeClaim(request) === undefined) return undefined;
  return {
    code: JsonRpcCode.InvalidParams,
    message: `Invalid or expired requestState: upstream ${upstream} speaks a session-based MCP revision and issued none; only a requestState this gateway returned can resume a call`,
    data: { upstream },
  };
}
