import { describe, expect, it } from 'vitest';
import { configuredHeaders, isValidSessionId } from './request-headers.js';

describe('configuredHeaders', () => {
  it('lower-cases names and drops the headers the protocol owns', () => {
    expect(
      configuredHeaders({
        Authorization: 'Bearer t',
        'X-Api-Key': 'k',
        Accept: 'text/html',
        'Mcp-Session-Id': 'forged',
        'MCP-Protocol-Version': '1999-01-01',
        'Last-Event-ID': 'x',
        'Content-Type': 'text/plain',
      }),
    ).toEqual({ authorization: 'Bearer t', 'x-api-key': 'k' });
    expect(configuredHeaders(undefined)).toEqual({});
  });
});

describe('isValidSessionId', () => {
  it('accepts visible ASCII only', () => {
    expect(isValidSessionId('a-Z_0.9~!')).toBe(true);
    expect(isValidSessionId('')).toBe(false);
    expect(isValidSessionId('with space')).toBe(false);
    expect(isValidSessionId('tab\t')).toBe(false);
    expect(isValidSessionId('caf\u00e9')).toBe(false);
  });
});
