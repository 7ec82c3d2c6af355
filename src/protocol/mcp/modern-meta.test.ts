import { describe, expect, it } from 'vitest';
import { envelopeClaim, META_VERSION, SUPPORTED_NEWEST_FIRST } from './modern-meta.js';

describe('envelopeClaim', () => {
  it('reads the claimed version of a modern request', () => {
    expect(
      envelopeClaim({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { [META_VERSION]: '2026-07-28' } },
      }),
    ).toBe('2026-07-28');
  });
  it('is undefined for legacy messages, whatever else _meta holds', () => {
    expect(
      envelopeClaim({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25' },
      }),
    ).toBeUndefined();
    expect(
      envelopeClaim({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 1 } } }),
    ).toBeUndefined();
    expect(envelopeClaim({ jsonrpc: '2.0', id: 1, result: {} })).toBeUndefined();
    expect(envelopeClaim(null)).toBeUndefined();
    expect(envelopeClaim({ params: { _meta: [] } })).toBeUndefined();
  });
  it('is null for a claim that is not a string', () => {
    expect(envelopeClaim({ method: 'x', params: { _meta: { [META_VERSION]: 7 } } })).toBeNull();
  });
});

describe('SUPPORTED_NEWEST_FIRST', () => {
  it('lists the modern revision first', () => {
    expect(SUPPORTED_NEWEST_FIRST[0]).toBe('2026-07-28');
    expect(SUPPORTED_NEWEST_FIRST).toContain('2025-11-25');
  });
});
