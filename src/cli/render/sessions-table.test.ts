import { describe, expect, it } from 'vitest';
import type { TraceSessionSummary } from '../../trace/types.js';
import { renderSessionsTable } from './sessions-table.js';

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);

describe('renderSessionsTable', () => {
  it('lists sessions with their ids, client, upstreams, start, duration, state and envelope count', () => {
    const sessions: TraceSessionSummary[] = [
      {
        key: 'k2',
        mcpSessionId: 'c0ffee',
        principal: 'alice',
        transport: 'http',
        upstreams: ['a', 'b'],
        startedAt: T0 + 60_000,
        lastAt: T0 + 61_250,
        envelopes: 12,
        clientInfo: { name: 'inspector', version: '0.9' },
      },
      { key: 'k1', transport: 'stdio', upstreams: [], startedAt: T0, endedAt: T0 + 125_000, envelopes: 3 },
      { key: 'k0', transport: 'stdio', upstreams: ['a'], startedAt: T0 - 1000, envelopes: 0 },
    ];
    expect(renderSessionsTable(sessions, { color: false })).toBe(
      [
        'SESSION  MCP-SESSION-ID  TRANSPORT  PRINCIPAL  CLIENT         UPSTREAMS  STARTED (UTC)        DURATION  STATE  ENVELOPES',
        'k2       c0ffee          http       alice      inspector@0.9  a,b        2026-01-02 03:05:05     1.25s  open          12',
        'k1       -               stdio      -          -              -          2026-01-02 03:04:05     2m05s  ended          3',
        'k0       -               stdio      -          -              a          2026-01-02 03:04:04         -  open           0',
        '',
      ].join('\n'),
    );
  });

  it('prints only the header for an empty trace, and colours only when asked', () => {
    expect(renderSessionsTable([], { color: false }).split('\n')).toHaveLength(2);
    const one: TraceSessionSummary = {
      key: 'k',
      transport: 'stdio',
      upstreams: [],
      startedAt: T0,
      envelopes: 1,
    };
    expect(renderSessionsTable([one], { color: true })).toContain(String.fromCharCode(27));
  });

  it('fits a width: MCP-SESSION-ID left to --wide, PRINCIPAL only when someone has one, names cut', () => {
    const wide: TraceSessionSummary = {
      key: 'foquxGdp7s7NW88dMhWiwQ',
      mcpSessionId: '5f0c8e1e-3a0b-4f3e-9d51-7b1f0e6a2c44',
      transport: 'http',
      upstreams: ['everything', 'filesystem', 'github', 'postgres'],
      startedAt: T0,
      endedAt: T0 + 1000,
      envelopes: 1234,
      clientInfo: { name: 'a-client-with-a-rather-long-name', version: '10.20.30' },
    };
    const out = renderSessionsTable([wide], { color: false, width: 120 }).trimEnd().split('\n');
    expect(out.every((l) => l.length <= 120)).toBe(true);
    expect(out[0]).not.toContain('MCP-SESSION-ID');
    expect(out[0]).not.toContain('PRINCIPAL');
    expect(out[1]).toMatch(/^foquxGdp7s7NW88dMhWiwQ\s+http\s+a-client\S*…/);
    const withPrincipal = renderSessionsTable([{ ...wide, principal: 'alice' }], {
      color: false,
      width: 120,
    });
    expect(withPrincipal.split('\n')[0]).toContain('PRINCIPAL');
    expect(renderSessionsTable([wide], { color: false })).toContain(wide.mcpSessionId);
  });

  it('explains the "gateway" session under a table that lists it', () => {
    const own: TraceSessionSummary = {
      key: 'gateway',
      transport: 'stdio',
      upstreams: ['a'],
      startedAt: T0,
      envelopes: 4,
    };
    const out = renderSessionsTable([own], { color: false, width: 120 });
    expect(out).toContain('(gateway)');
    expect(out).toContain('"gateway" is not a client');
    expect(renderSessionsTable([{ ...own, key: 'k' }], { color: false })).not.toContain('not a client');
  });
});
