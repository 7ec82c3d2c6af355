/**
 * What the HTTP server refuses while the gateway drains (shuts down gracefully): whatever would
 * start something new at the HTTP level, answered 503 with a JSON-RPC error, `Retry-After` and
 * `Connection: close`, so a client (or a load balancer) goes elsewhere or comes back later:
 *
 * - a session-based POST without `Mcp-Session-Id` (a new session, or a one-off lenient one);
 * - a GET without `Last-Event-ID` (a new stream; a resumption may still fetch the answer of a call
 *   in flight);
 * - `GET /health`, which says `draining`.
 *
 * Everything else still reaches its endpoint: a request of an existing session, a 2026-07-28
 * request (the retry of a parked call carries its input), a DELETE. The router answers any new
 * request among them with `SB_SHUTTING_DOWN` under its own id, and lets the answers to the
 * servers' requests, cancellations and progress through, so the calls in flight can finish.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SbErrorCode } from '../../../errors/switchboard-error.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { MODERN_REVISION } from '../../../protocol/mcp/revisions.js';
import { sendJsonRpcError } from './responses.js';

/** `Retry-After` of a refusal, in seconds: about how long a restarting gateway is away. */
export const DRAIN_RETRY_AFTER_S = 5;

const REFUSAL_HEADERS = { 'retry-after': String(DRAIN_RETRY_AFTER_S), connection: 'close' };

/** Whether a request to an MCP endpoint would open something new (see the file comment). */
function opensSomethingNew(req: IncomingMessage): boolean {
  if (req.method === 'GET') return req.headers['last-event-id'] === undefined;
  if (req.method !== 'POST') return false;
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && version.trim() === MODERN_REVISION) return false;
  return req.headers['mcp-session-id'] === undefined;
}

/**
 * During a drain, answers 503 to a request to an MCP endpoint that would open something new and
 * returns true; returns false for a request to serve as usual.
 */
export function refuseWhileDraining(req: IncomingMessage, res: ServerResponse): boolean {
  if (!opensSomethingNew(req)) return false;
  sendJsonRpcError(
    res,
    503,
    JsonRpcCode.ShuttingDown,
    'Service Unavailable: the gateway is shutting down and opens no new sessions or streams',
    null,
    REFUSAL_HEADERS,
    { code: SbErrorCode.ShuttingDown },
  );
  return true;
}

/** `GET /health` during a drain: 503, so that a load balancer stops sending traffic here. */
export function drainingHealth(res: ServerResponse, sessions: number): void {
  res.writeHead(503, { 'content-type': 'application/json', ...REFUSAL_HEADERS });
  res.end(JSON.stringify({ status: 'draining', sessions }));
}
