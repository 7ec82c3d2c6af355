import { describe, expect, it } from 'vitest';
import { isMcpLogLevel, MCP_LOG_LEVELS, mcpLogSeverity } from './log-levels.js';

describe('MCP logging levels', () => {
  it('are the RFC 5424 severities in order, and nothing else is one', () => {
    expect(MCP_LOG_LEVELS.map(mcpLogSeverity)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (const level of MCP_LOG_LEVELS) expect(isMcpLogLevel(level)).toBe(true);
    for (const other of ['warn', 'silent', 'DEBUG', 3, null, undefined]) {
      expect(isMcpLogLevel(other)).toBe(false);
      expect(mcpLogSeverity(other)).toBe(-1);
    }
  });
});
