/**
 * The default data directory, end to end: a `switchboard stdio` gateway that a client starts in a
 * directory of its choosing, with no `--data-dir` and no `SWITCHBOARD_DATA_DIR`, records into the
 * per-user state directory, and `switchboard audit` and `switchboard trace`, run with no flag from
 * elsewhere, read what it recorded. `HOME` and `XDG_STATE_HOME` point into a temporary directory,
 * so the test never touches the real user's state.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ECHO_SERVER, runCli, tempDir } from './support/cli.js';
import { startServe } from './support/serve.js';

describe('a stdio gateway on the default data directory', () => {
  const root = tempDir('switchboard-default-dir-');
  const clientCwd = join(root, 'where-the-client-starts-servers');
  const state = join(root, 'state');
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: join(root, 'home'), XDG_STATE_HOME: state };
  delete env.SWITCHBOARD_DATA_DIR;

  beforeAll(async () => {
    mkdirSync(clientCwd, { recursive: true });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'stdio', '--name', 'echo', '--', process.execPath, ECHO_SERVER],
      cwd: clientCwd,
      env: env as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'default-dir-it', version: '1.0.0' });
    await client.connect(transport);
    const result = await client.callTool({ name: 'echo', arguments: { message: 'kept per user' } });
    expect(result.content).toEqual([{ type: 'text', text: 'kept per user' }]);
    await client.close();
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('records under $XDG_STATE_HOME/switchboard, not in the directory it was started in', () => {
    expect(existsSync(join(state, 'switchboard', 'trace.db'))).toBe(true);
    expect(existsSync(join(state, 'switchboard', 'audit', 'stdio', 'echo'))).toBe(true);
    expect(existsSync(join(clientCwd, '.switchboard'))).toBe(false);
  });

  it('`audit tail` with no flag finds its ledger', async () => {
    const tail = await runCli(['audit', 'tail'], { env });
    expect(tail.code, tail.stderr).toBe(0);
    expect(tail.stderr).toContain(join(state, 'switchboard', 'audit', 'stdio', 'echo'));
    expect(tail.stdout).toMatch(/echo\s+tools\/call\s+echo/);
  });

  it('`trace sessions` with no flag finds its trace', async () => {
    const sessions = await runCli(['trace', 'sessions', '--json'], { env });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stdout).toContain('stdio');
  });
});

describe('two serves on one data directory', () => {
  it('the second stops at once (exit 1) and says to give it its own --data-dir', async () => {
    const dataDir = tempDir('switchboard-two-serves-');
    const file = join(dataDir, 'echo.mcp.json');
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { echo: { command: process.execPath, args: [ECHO_SERVER] } } }),
    );
    const first = await startServe({ dataDir, args: ['--mcp-json', file] });
    try {
      const second = await runCli(['serve', '--port', '0', '--data-dir', dataDir, '--mcp-json', file]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/is writing the audit ledger in .*give this one its own --data-dir/);
    } finally {
      await first.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
