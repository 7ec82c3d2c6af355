import { describe, expect, it } from 'vitest';
import { unwrapServers, wrapServers } from './mcp-json-wrap.js';

const original = (): Record<string, unknown> => ({
  memory: {
    command: 'npx',
    args: ['-y', '@modelcontextprotocol/server-memory'],
    env: { MEMORY_FILE_PATH: '/m' },
  },
  bare: { type: 'stdio', command: 'my-server' },
  remote: { type: 'http', url: 'https://example.com/mcp' },
});

describe('wrapServers and unwrapServers', () => {
  it('runs each stdio server through switchboard stdio, passing on its env, and leaves URLs alone', () => {
    const servers = original();
    const report = wrapServers(servers, 'switchboard');
    expect(report.changed).toEqual(['memory', 'bare']);
    expect(report.skipped).toEqual([{ name: 'remote', reason: 'a URL, which the client reaches itself' }]);
    expect(servers.memory).toEqual({
      command: 'switchboard',
      args: [
        'stdio',
        '--name',
        'memory',
        '--pass-env',
        'MEMORY_FILE_PATH',
        '--',
        'npx',
        '-y',
        '@modelcontextprotocol/server-memory',
      ],
      env: { MEMORY_FILE_PATH: '/m' },
    });
    expect(servers.bare).toEqual({
      type: 'stdio',
      command: 'switchboard',
      args: ['stdio', '--name', 'bare', '--', 'my-server'],
    });
  });

  it('is idempotent: a second wrap changes nothing', () => {
    const servers = original();
    wrapServers(servers, '/usr/local/bin/switchboard');
    const once = structuredClone(servers);
    expect(wrapServers(servers, '/usr/local/bin/switchboard').changed).toEqual([]);
    expect(servers).toEqual(once);
  });

  it('unwrap is its inverse, and leaves entries it did not write alone', () => {
    const servers = original();
    wrapServers(servers, 'switchboard');
    servers.added = { command: 'other' };
    const report = unwrapServers(servers);
    expect(report.changed).toEqual(['memory', 'bare']);
    expect(servers).toEqual({ ...original(), added: { command: 'other' } });
  });
});
