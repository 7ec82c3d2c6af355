// biome-ignore-all lint/suspicious/noTemplateCurlyInString: client and gateway variable syntax, quoted.
/**
 * `switchboard import`, `serve --mcp-json` and `switchboard wrap`, run as a person runs them: each
 * client's documented file shape (test/fixtures/mcp-json) imported into a configuration that
 * `config check` accepts; a VS Code input refused naming the server and field; a file served
 * directly; a file wrapped (backup kept, idempotent, `--undo`) whose wrapped entry really starts
 * the server through `switchboard stdio`.
 */
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, ECHO_SERVER, ROOT, runCli, tempDir } from './support/cli.js';
import { startServe } from './support/serve.js';

const FIXTURES = join(ROOT, 'test/fixtures/mcp-json');
const work = tempDir('switchboard-import-');
/** The variables the fixtures refer to, so that `config check` can resolve them. */
const env = {
  ...process.env,
  API_KEY: 'k',
  SHARED_TOKEN: 's',
  REMOTE_TOKEN: 'r',
  SWITCHBOARD_DATA_DIR: join(work, 'data'),
};

afterAll(async () => {
  const { rmSync } = await import('node:fs');
  rmSync(work, { recursive: true, force: true });
});

describe('switchboard import, round trip through config check', () => {
  it.each([
    ['claude-desktop.json', 2],
    ['claude-code.mcp.json', 3],
    ['cursor.mcp.json', 2],
    ['vscode.mcp.json', 2],
  ])('%s gives a configuration config check accepts, with its %i upstreams', async (name, count) => {
    const out = join(work, `${name}.yaml`);
    const imported = await runCli(['import', join(FIXTURES, name), '-o', out], { env });
    expect(imported.code, imported.stderr).toBe(0);
    const check = await runCli(['config', 'check', out], { env });
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(new RegExp(`^ok: ${count} upstreams`));
  });

  it('refuses to overwrite with -o', async () => {
    const out = join(work, 'existing.yaml');
    writeFileSync(out, 'keep me');
    const result = await runCli(['import', join(FIXTURES, 'cursor.mcp.json'), '-o', out], { env });
    expect(result.code).toBe(2);
    expect(readFileSync(out, 'utf8')).toBe('keep me');
  });

  it('refuses a VS Code ${input:…}, naming the server and field (exit 1)', async () => {
    const result = await runCli(['import', join(FIXTURES, 'vscode-inputs.mcp.json')], { env });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('servers.perplexity.env.PERPLEXITY_API_KEY');
    expect(result.stderr).toContain('${env:NAME}');
  });
});

describe('switchboard serve --mcp-json', () => {
  it("serves the file's servers: the SDK client calls the echo fixture through it", async () => {
    const file = join(work, 'echo.mcp.json');
    writeFileSync(
      file,
      JSON.stringify({ mcpServers: { echo: { command: process.execPath, args: [ECHO_SERVER] } } }),
    );
    const serve = await startServe({ args: ['--mcp-json', file] });
    const client = new Client({ name: 'mcp-json-it', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${serve.base}/servers/echo/mcp`)));
      const result = await client.callTool({ name: 'echo', arguments: { message: 'imported' } });
      expect(result.content).toEqual([{ type: 'text', text: 'imported' }]);
    } finally {
      await client.close().catch(() => {});
      await serve.stop();
    }
  });

  it('is refused together with --config (exit 1), before anything starts', async () => {
    const result = await runCli(['serve', '--port', '0', '--mcp-json', 'a.json', '--config', 'b.yaml'], {
      env,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--config and --mcp-json were both given/);
  });
});

describe('switchboard wrap', () => {
  it('wraps every stdio server, keeps a backup, is idempotent, and --undo puts the servers back', async () => {
    const file = join(work, '.mcp.json');
    copyFileSync(join(FIXTURES, 'claude-code.mcp.json'), file);
    const original = readFileSync(file, 'utf8');

    const wrapped = await runCli(['wrap', file], { env });
    expect(wrapped.code, wrapped.stderr).toBe(0);
    expect(wrapped.stdout).toContain('wrapped local');
    expect(wrapped.stderr).toContain('shared-server: left as it is');
    expect(readFileSync(`${file}.switchboard-backup`, 'utf8')).toBe(original);
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after.mcpServers.local).toEqual({
      type: 'stdio',
      command: 'switchboard',
      args: ['stdio', '--name', 'local', '--pass-env', 'API_KEY', '--', 'node', 'server.js'],
      env: { API_KEY: '${API_KEY}' },
    });
    expect(after.mcpServers['shared-server']).toEqual(JSON.parse(original).mcpServers['shared-server']);

    const again = await runCli(['wrap', file], { env });
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('unchanged');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(after);
    expect(readFileSync(`${file}.switchboard-backup`, 'utf8')).toBe(original);

    const undone = await runCli(['wrap', file, '--undo'], { env });
    expect(undone.code, undone.stderr).toBe(0);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(JSON.parse(original));
  });

  it('a wrapped entry starts its server through switchboard stdio, which records the call', async () => {
    // The command the entry names, as a client would run it: a `switchboard` on disk.
    const launcher = join(work, 'switchboard');
    writeFileSync(launcher, `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(launcher, 0o755);
    const file = join(work, 'desktop.json');
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: { echo: { command: process.execPath, args: [ECHO_SERVER], env: { ECHO_NOTE: 'x' } } },
      }),
    );
    const result = await runCli(['wrap', file, '--command', launcher], { env });
    expect(result.code, result.stderr).toBe(0);
    const entry = JSON.parse(readFileSync(file, 'utf8')).mcpServers.echo as {
      command: string;
      args: string[];
      env: Record<string, string>;
    };
    const client = new Client({ name: 'wrap-it', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      env: { ...env, ...entry.env } as Record<string, string>,
      stderr: 'pipe',
    });
    try {
      await client.connect(transport);
      const called = await client.callTool({ name: 'echo', arguments: { message: 'wrapped' } });
      expect(called.content).toEqual([{ type: 'text', text: 'wrapped' }]);
    } finally {
      await client.close().catch(() => {});
    }
    const tail = await runCli(['audit', 'tail'], { env });
    expect(tail.stdout).toMatch(/echo\s+tools\/call\s+echo/);
  });
});
