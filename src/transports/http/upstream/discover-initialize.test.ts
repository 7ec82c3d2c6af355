import { describe, expect, it } from 'vitest';
import { initializeFromDiscover } from './discover-initialize.js';

const DISCOVER = {
  resultType: 'complete',
  supportedVersions: ['2026-07-28'],
  capabilities: { tools: { listChanged: true } },
  instructions: 'Use it well.',
  ttlMs: 0,
  _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'srv', version: '2.0.0' } },
};

describe('initializeFromDiscover', () => {
  it('keeps what a legacy InitializeResult has, and nothing else', () => {
    expect(initializeFromDiscover(DISCOVER, '2025-06-18', 'up')).toEqual({
      ok: true,
      capabilities: { tools: { listChanged: true } },
      result: {
        protocolVersion: '2025-06-18',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'srv', version: '2.0.0' },
        instructions: 'Use it well.',
      },
    });
  });

  it.each([
    ['2024-11-05', '2024-11-05'],
    ['2026-07-28', '2025-11-25'],
    ['draft', '2025-11-25'],
    [undefined, '2025-11-25'],
  ])('answers a client asking for %s with %s', (asked, answered) => {
    const made = initializeFromDiscover(DISCOVER, asked, 'up');
    expect(made.ok && made.result.protocolVersion).toBe(answered);
  });

  it('names the upstream when the server gives no usable serverInfo', () => {
    for (const info of [undefined, { name: 'x' }, 'srv']) {
      const made = initializeFromDiscover(
        { ...DISCOVER, _meta: { 'io.modelcontextprotocol/serverInfo': info } },
        '2025-11-25',
        'up',
      );
      expect(made.ok && made.result.serverInfo).toEqual({ name: 'up', version: 'unknown' });
    }
    const bare = initializeFromDiscover({}, '2025-11-25', 'up');
    expect(bare).toMatchObject({ ok: true, capabilities: {}, result: { capabilities: {} } });
  });

  it('refuses a server that does not speak 2026-07-28', () => {
    expect(
      initializeFromDiscover({ ...DISCOVER, supportedVersions: ['2027-01-01'] }, '2025-11-25', 'up'),
    ).toEqual({
      ok: false,
      error: {
        code: -32022,
        message:
          'upstream up supports 2027-01-01, not 2026-07-28, the version the gateway speaks to modern servers',
        data: { supported: ['2027-01-01'], requested: '2026-07-28' },
      },
    });
  });
});
