import { describe, expect, it } from 'vitest';
import { MemoryConnection } from './memory-connection.js';
import { Participants } from './participants.js';

function registry() {
  return new Participants(
    {
      defaults: { capabilities: [{ kind: 'chat' }], observe: false },
      participants: [
        { id: 'alice', capabilities: [{ kind: 'mcp/*' }], observe: true, roles: [], tokens: [] },
        { id: 'quiet', roles: [], tokens: [] },
      ],
    },
    ['everything'],
  );
}

describe('Participants', () => {
  it('is present from the first connection to the last', () => {
    const p = registry();
    const a1 = new MemoryConnection('alice');
    const a2 = new MemoryConnection('alice');
    expect(p.connect(a1)).toBe(true);
    expect(p.connect(a2)).toBe(false);
    expect(p.present()).toEqual(['alice']);
    expect(p.disconnect(a1)).toBe(false);
    expect(p.disconnect(a1)).toBe(false);
    expect(p.disconnect(a2)).toBe(true);
    expect(p.present()).toEqual([]);
  });

  it('gives configured capabilities, else the defaults, plus grants', () => {
    const p = registry();
    expect(p.capabilities('alice')).toEqual([{ kind: 'mcp/*' }]);
    expect(p.capabilities('quiet')).toEqual([{ kind: 'chat' }]);
    expect(p.capabilities('stranger')).toEqual([{ kind: 'chat' }]);
    p.grants.add({ id: 'g', recipient: 'stranger', granter: 'alice', capabilities: [{ kind: 'x' }] });
    expect(p.capabilities('stranger')).toEqual([{ kind: 'chat' }, { kind: 'x' }]);
    expect(p.compiledCapabilities('stranger').map((c) => c.matches({ kind: 'x', payload: {} }))).toEqual([
      false,
      true,
    ]);
    expect(p.observes('alice')).toBe(true);
    expect(p.observes('quiet')).toBe(false);
    expect(p.capabilities('server-everything')).toEqual([
      { kind: 'mcp/response' },
      { kind: 'mcp/notification' },
    ]);
  });

  it('knows present, configured, granted, gateway and server ids', () => {
    const p = registry();
    p.connect(new MemoryConnection('bob'));
    p.grants.add({ id: 'g', recipient: 'carol', granter: 'alice', capabilities: [{ kind: 'x' }] });
    for (const id of ['bob', 'alice', 'quiet', 'carol', 'gateway', 'server-everything'])
      expect(p.isKnown(id), id).toBe(true);
    for (const id of ['dave', 'server-other', 'client-x']) expect(p.isKnown(id), id).toBe(false);
    expect(p.serverOf('server-everything')).toBe('everything');
  });
});
