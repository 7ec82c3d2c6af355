import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveServeConfig } from './serve.js';

describe('resolveServeConfig: `serve -- <command>`', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'switchboard-serve-config-'));

  it('replaces the demo upstreams with the one command, named after it, every other key at its default', async () => {
    const config = await resolveServeConfig(
      { trace: true, port: 9000, env: { A: '1' }, passEnv: ['HOME'] },
      dataDir,
      { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'] },
    );
    expect(config.upstreams).toHaveLength(1);
    expect(config.upstreams[0]).toMatchObject({
      name: 'server-everything',
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'],
      env: { A: '1' },
      passEnv: ['HOME'],
      sharing: 'shared',
    });
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 9000 });
    expect(config.auth).toBeUndefined();
  });

  it('takes --name', async () => {
    const config = await resolveServeConfig({ trace: true, name: 'ev' }, dataDir, {
      command: 'node',
      args: ['server.js'],
    });
    expect(config.upstreams.map((u) => u.name)).toEqual(['ev']);
  });

  it('refuses a command with --config, and the command options without a command', async () => {
    await expect(
      resolveServeConfig({ trace: true, config: 'switchboard.yaml' }, dataDir, { command: 'node', args: [] }),
    ).rejects.toMatchObject({ code: 'SB_CONFIG_INVALID', message: expect.stringMatching(/both given/) });
    await expect(resolveServeConfig({ trace: true, name: 'x' }, dataDir)).rejects.toMatchObject({
      code: 'SB_CONFIG_INVALID',
      message: expect.stringMatching(/--name, --env/),
    });
  });
});
