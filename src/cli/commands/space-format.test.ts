import { describe, expect, it } from 'vitest';
import { formatEnvelopeLine, summarizePayload } from './space-format.js';

describe('space envelope lines', () => {
  it('shows time, kind, route, context, id, correlation and a summary', () => {
    const line = formatEnvelopeLine({
      protocol: 'meup/v0.2',
      id: '01JABCDEFGHJKMNPQRSTVWXYZ0',
      ts: '2026-01-02T03:04:05.678Z',
      from: 'client-abc',
      to: ['server-everything'],
      kind: 'mcp/proposal',
      correlation_id: ['01JTRACE000000000000000001'],
      context: 'SessionKeyAAAAAAAAAAAAA/01JTRACE000000000000000001',
      payload: { method: 'tools/call', params: { name: 'echo', arguments: {} } },
    });
    expect(line).toBe(
      '03:04:05.678  mcp/proposal  client-abc → server-everything  ctx SessionKeyA…/01JTRACE000…  #01JABCDEFGHJKMNPQRSTVWXYZ0  ↩ 01JTRACE000…  tools/call echo',
    );
  });

  it('shows broadcasts as *, and something for malformed input', () => {
    expect(
      formatEnvelopeLine({ kind: 'chat', from: 'a', id: 'x', ts: 'bad', payload: { text: 'hi\nthere' } }),
    ).toBe('bad  chat  a → *  #x  hi there');
    expect(formatEnvelopeLine([1, 2])).toBe('[1,2]');
  });

  it('summarises the kinds the space sends', () => {
    expect(summarizePayload('system/error', { error: 'from_mismatch', message: 'no' })).toBe(
      'from_mismatch: no',
    );
    expect(summarizePayload('mcp/response', { error: { code: -32004, message: 'rejected' } })).toBe(
      'error -32004: rejected',
    );
    expect(
      summarizePayload('system/approval', { outcome: 'approved', decided_by: 'alice', via: 'space' }),
    ).toBe('approved by alice (space)');
    expect(summarizePayload('system/presence', { event: 'join', participant: { id: 'bob' } })).toBe(
      'join bob',
    );
    expect(summarizePayload('system/welcome', { you: { id: 'a' }, participants: [{}] })).toBe(
      'you are a; 1 other participant',
    );
    expect(summarizePayload('system/history', { envelopes: [1, 2], truncated: true })).toBe(
      '2 envelopes (truncated)',
    );
    expect(summarizePayload('reasoning/thought', { message: 'hmm' })).toBe('hmm');
    expect(summarizePayload('x/y', { a: 1 })).toBe('{"a":1}');
  });
});
