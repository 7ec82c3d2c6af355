/**
 * switchboard-mcp: the library side of the gateway. The subpath exports (`/envelope`, `/meup`,
 * `/jsonrpc`, `/core`) hold the details; this root re-exports the essentials.
 */

export { CorrelationTable } from './core/correlation-table.js';
export { Router } from './core/router.js';
export type { Direction } from './envelope/direction.js';
export type {
  MessageContext,
  SessionContext,
  TimingContext,
  TransportContext,
} from './envelope/message-context.js';
export { MessageEnvelope } from './envelope/message-envelope.js';
export { SbErrorCode, SwitchboardError } from './errors/switchboard-error.js';
export {
  decodeMeupEnvelope,
  encodeMeupEnvelope,
  parseMeupEnvelope,
  serializeMeupEnvelope,
} from './meup/codec.js';
export { getSingleCorrelation } from './meup/correlation.js';
export type { MeupEnvelope, MeupWireEnvelope } from './meup/types.js';
export { parseMessage, parsePayload } from './protocol/jsonrpc/parse.js';
export type { JsonRpcMessage, RequestId } from './protocol/jsonrpc/types.js';
export type { McpRevision } from './protocol/mcp/revisions.js';
export { MCP_REVISIONS } from './protocol/mcp/revisions.js';
