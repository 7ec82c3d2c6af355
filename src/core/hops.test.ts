import { describe, expect, it } from 'vitest';
import {
  clientInHop,
  fromUpstreamHop,
  type HopBase,
  type HopSessionSource,
  toClientHop,
  toUpstreamHop,
  traceSessionOf,
} from './hops.js';
import { INTERNAL_SESSION } from './session-key.js';

const session: HopSessionSource = {
  key: 's1',
  mcpSessionId: 'mcp-1',
  protocolVersion: '2025-06-18',
  state: 'active',
  transportContext: { kind: 'http', method: 'POST', path: '/mcp', headers: {} },
};
const link = { name: 'files', transportContext: { kind: 'stdio', pid: 7 } } as const;
const base: HopBase = {
  id: 'e1',
  message: { jsonrpc: '2.0', id: 1, method: 'ping' },
  context: 's1/e0',
  receivedAt: 5,
  raw: '{}',
  correlation: ['e0'],
};

describe('hop builders', () => {
  it('trace a hop under the live session, else the remembered key, else the gateway', () => {
    expect(traceSessionOf(session, 'other')).toBe('s1');
    expect(traceSessionOf(undefined, 'gone')).toBe('gone');
    expect(traceSessionOf(undefined, INTERNAL_SESSION)).toBe('gateway');
    expect(traceSessionOf(undefined, undefined)).toBe('gateway');
  });

  it('give each kind its direction, ends and transport', () => {
    const inbound = { kind: 'memory' } as const;
    const hops = [
      clientInHop(session, inbound, base),
      toUpstreamHop(link, session, undefined, base, 9),
      fromUpstreamHop('files', inbound, undefined, INTERNAL_SESSION, base),
      toClientHop(session, base, 9, { upstream: 'files', resultAt: 8 }),
    ];
    expect(hops.map((h) => [h.direction, h.from, h.to, h.transport.kind, h.session])).toEqual([
      ['client->server', 'client-s1', 'gateway', 'memory', 's1'],
      ['client->server', 'gateway', 'server-files', 'stdio', 's1'],
      ['server->client', 'server-files', 'gateway', 'memory', 'gateway'],
      ['server->client', 'gateway', 'client-s1', 'http', 's1'],
    ]);
    expect(hops[0]?.sessionContext).toEqual({ id: 'mcp-1', protocolVersion: '2025-06-18', state: 'active' });
    expect(hops[2]?.sessionContext).toBeUndefined();
    expect([hops[1]?.sentAt, hops[1]?.upstream, hops[3]?.sentAt]).toEqual([9, 'files', 9]);
    expect([hops[3]?.resultAt, hops[3]?.resultIsError]).toEqual([8, false]);
    expect(toClientHop(session, base, 9, {}).resultIsError).toBeUndefined();
  });
});
