/**
 * MCP's logging levels (`logging/setLevel`, `notifications/message`), the RFC 5424 severities from
 * the least to the most severe. Not the gateway's own log levels (`config/checker.ts`).
 */
export const MCP_LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const;

export type McpLogLevel = (typeof MCP_LOG_LEVELS)[number];

/** Whether `value` names an MCP logging level. */
export function isMcpLogLevel(value: unknown): value is McpLogLevel {
  return typeof value === 'string' && (MCP_LOG_LEVELS as readonly string[]).includes(value);
}

/** Where a level stands in severity (0 for `debug`); -1 for anything else. */
export function mcpLogSeverity(value: unknown): number {
  return (MCP_LOG_LEVELS as readonly unknown[]).indexOf(value);
}
