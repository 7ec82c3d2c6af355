/**
 * Wire error codes (JSON-RPC and MCP) and the HTTP status each one maps to when the gateway
 * answers over HTTP. This table is the one place that pairs the two.
 */
export const JsonRpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Legacy server-defined range (-32000..-32019), used by the gateway for its own failures. */
  UpstreamClosed: -32000,
  RequestTimeout: -32001,
  ResourceNotFound: -32002,
  PolicyDenied: -32003,
  ApprovalRejected: -32004,
  AuditUnavailable: -32005,
  MessageTooLarge: -32006,
  LimitExceeded: -32007,
  Unroutable: -32008,
  Unauthorized: -32009,
  /** `SB_SHUTTING_DOWN`: the gateway is draining; the request was refused or cut short. */
  ShuttingDown: -32010,
  /** `SB_TAPE_NO_MATCH`: `tape replay` holds no recorded answer for the request. */
  TapeNoMatch: -32011,
  /** LSP's RequestCancelled: recorded for a request its client cancelled; never sent to anyone. */
  RequestCancelled: -32800,
  /** MCP 2026-07-28. */
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
  /** MCP 2025-11-25. */
  UrlElicitationRequired: -32042,
} as const;

export type JsonRpcCodeName = keyof typeof JsonRpcCode;
