/**
 * A session-based POST's body as the router takes it, the same on `/mcp` and `/messages`: parsed
 * with the session's revision (batches where it allows them) and the depth bound, the gateway's
 * `_meta` namespace screened, and a body that is not JSON-RPC at all refused with 400 (counted).
 */
import type { ServerResponse } from 'node:http';
import { type InboundPayload, readInbound } from '../../../core/inbound.js';
import type { Metrics } from '../../../observe/metrics.js';
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { allowsBatch, type ProtocolVersion } from '../../../protocol/mcp/revisions.js';
import { screenClientPayload } from '../../client-meta.js';
import { sendJsonRpcError } from './responses.js';

/** The payload of `text`, or `undefined` once `res` has been answered 400. */
export function clientPayloadOrRefuse(
  res: ServerResponse,
  text: string,
  revision: ProtocolVersion,
  maxDepth: number,
  metrics: Metrics,
): InboundPayload | undefined {
  const payload = screenClientPayload(
    readInbound(text, { allowBatch: allowsBatch(revision), revision, maxDepth }),
    metrics,
    'http',
  );
  if (!payload.error) return payload;
  metrics.inc('http_rejected_total', {
    reason: payload.error.code === JsonRpcCode.ParseError ? 'parse-error' : 'invalid-request',
  });
  sendJsonRpcError(res, 400, payload.error.code, payload.error.message);
  return undefined;
}
