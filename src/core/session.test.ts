import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { DEFAULT_REVISION } from '../protocol/mcp/revisions.js';
import type { DownstreamPort, SessionView } from './ports.js';
import { Session } from './session.js';

const port = (): DownstreamPort & { sent: JsonRpcMessage[] } => {
  const sent: JsonRpcMessage[] = [];
  return { sent, send: (_json, message) => sent.push(message) };
};

const open = (extra: Partial<ConstructorParameters<typeof Session>[0]> = {}) =>
  new Session({
    key: 'k1',
    port: port(),
    transport: 'memory',
    transportContext: { kind: 'memory' },
    ...extra,
  });

describe('Session', () => {
  it('opens uninitialized at the default revision, unless the transport already agreed one', () => {
    const session = open();
    expect(session).toMatchObject({ key: 'k1', transport: 'memory', state: 'uninitialized' });
    expect(session.protocolVersion).toBe(DEFAULT_REVISION);
    expect(session.mcpSessionId).toBeUndefined();
    expect(session.principal).toBeUndefined();
    expect(open({ protocolVersion: '2026-07-28' }).protocolVersion).toBe('2026-07-28');
    expect(open({ mcpSessionId: 'm', principal: 'alice', roles: ['admin'] })).toMatchObject({
      mcpSessionId: 'm',
      principal: 'alice',
      roles: ['admin'],
    });
  });

  it('goes through the handshake by the protocol steps, and a holder of the view sees each one', () => {
    const session = open();
    const view: SessionView = session;
    session.initializing({ protocolVersion: '2025-06-18', clientInfo: { name: 'c' } });
    expect(view.state).toBe('initializing');
    expect(view.initializeParams).toEqual({ protocolVersion: '2025-06-18', clientInfo: { name: 'c' } });
    session.negotiated('2025-06-18');
    expect(view.protocolVersion).toBe('2025-06-18');
    session.initialized();
    expect(view.state).toBe('active');
    expect(session.closed).toBe(false);
    session.close();
    expect(view.state).toBe('closed');
    expect(session.closed).toBe(true);
  });

  it('keeps initialize params only when they are an object', () => {
    const session = open();
    session.initializing(['not', 'params']);
    expect(session.state).toBe('initializing');
    expect(session.initializeParams).toBeUndefined();
  });

  it('tracks calls by id key, and releases a call only if it still holds the key', () => {
    const session = open();
    const first = { key: 'sa' };
    session.track(first);
    expect(session.hasCall('sa')).toBe(true);
    expect(session.call('a')).toBe(first);
    expect(session.call(1)).toBeUndefined();
    const reused = { key: 'sa' };
    session.release(first);
    session.track(reused);
    session.release(first);
    expect(session.call('a')).toBe(reused);
    const inFlight = session.callsInFlight();
    session.release(reused);
    expect(inFlight).toEqual([reused]);
    expect(session.hasCall('sa')).toBe(false);
  });
});
