// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the ${env:NAME} syntax itself.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigFile } from '../../config/load.js';
import type { GatewayConfig, HttpUpstreamConfig, StdioUpstreamConfig } from '../../config/types.js';
import { validateConfig } from '../../config/validate.js';
import { type CliRun, runCli } from '../test-support/run-cli.js';
import { REDACTED, redact, summary, toFileShape } from './config.js';

const root = mkdtempSync(join(tmpdir(), 'sb-config-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const EXAMPLE = resolve(dirname(fileURLToPath(import.meta.url)), '../../../examples/switchboard.yaml');

const run = (args: readonly string[]): Promise<CliRun> => runCli(args);

function file(name: string, text: string): string {
  const path = join(root, name);
  writeFileSync(path, text);
  return path;
}

const VALID = `
upstreams:
  everything:
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything", stdio]
    env: { API_KEY: sk-live-123 }
  remote:
    url: https://mcp.example.com/mcp
    headers: { Authorization: Bearer sk-remote-456 }
    sharing: per-session
`;

const INVALID = `
server:
  port: 99999
upstreams:
  remote:
    url: ftp://x
`;

describe('switchboard config check', () => {
  it('prints a one-line summary of a valid file and exits 0', async () => {
    const r = await run(['config', 'check', file('valid.yaml', VALID)]);
    expect(r).toEqual({
      code: 0,
      err: '',
      out: 'ok: 2 upstreams (everything: stdio shared, remote: http per-session), listening on 127.0.0.1:8787\n',
    });
  });

  it('prints warnings on stderr, still exiting 0', async () => {
    const path = file(
      'warn.yaml',
      'server: { port: 9000 }\nsessions: { idleTimeout: 2h, maxAge: 1h }\nupstreams: { a: { command: x } }\n',
    );
    const r = await run(['config', 'check', path]);
    expect(r.code).toBe(0);
    expect(r.out).toBe('ok: 1 upstream (a: stdio shared), listening on 127.0.0.1:9000\n');
    expect(r.err).toMatch(
      new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: warning: sessions\\.idleTimeout: `),
    );
  });

  it('lists every issue on stderr with line and column and exits 1', async () => {
    const path = file('invalid.yaml', INVALID);
    const r = await run(['config', 'check', path]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      `${path}:3:9 server.port: found 99999, expected an integer from 0 to 65535 (0: any free port)\n` +
        `${path}:6:10 upstreams.remote.url: found "ftp://x", expected an absolute http:// or https:// URL\n`,
    );
  });

  it('reports YAML syntax errors the same way', async () => {
    const path = file('syntax.yaml', 'upstreams:\n  a: {command: x\n');
    const r = await run(['config', 'check', path]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^${path.replace(/[.\\]/g, '\\$&')}:3:1 YAML syntax error: `));
  });

  it('exits 2 when the file is missing or is a directory', async () => {
    const missing = join(root, 'nope.yaml');
    expect(await run(['config', 'check', missing])).toEqual({
      code: 2,
      out: '',
      err: `switchboard: no configuration file at ${missing}\n`,
    });
    const dir = await run(['config', 'check', root]);
    expect(dir.code).toBe(2);
    expect(dir.err).toBe(`switchboard: the configuration path ${root} is a directory, not a file\n`);
  });

  it('--json prints the normalized configuration, secrets redacted', async () => {
    const path = file('valid-json.yaml', VALID);
    const r = await run(['config', 'check', '--json', path]);
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('sk-live-123');
    expect(r.out).not.toContain('sk-remote-456');
    const json = JSON.parse(r.out) as {
      ok: boolean;
      file: string;
      warnings: string[];
      config: GatewayConfig;
    };
    expect(json.ok).toBe(true);
    expect(json.file).toBe(path);
    expect(json.warnings).toEqual([]);
    expect(json.config.server.maxBodyBytes).toBe(4 * 1024 * 1024);
    const [everything, remote] = json.config.upstreams as [StdioUpstreamConfig, HttpUpstreamConfig];
    expect(everything.env).toEqual({ API_KEY: REDACTED });
    expect(remote.headers).toEqual({ Authorization: REDACTED });
    expect(everything.restart.maxRestarts).toBe('.inf');
  });

  it('--json prints the issues, with positions, and exits 1', async () => {
    const path = file('invalid-json.yaml', INVALID);
    const r = await run(['config', 'check', '--json', path]);
    expect(r.code).toBe(1);
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toEqual({
      ok: false,
      file: path,
      issues: [
        {
          path: 'server.port',
          found: '99999',
          expected: 'an integer from 0 to 65535 (0: any free port)',
          line: 3,
          column: 9,
        },
        {
          path: 'upstreams.remote.url',
          found: '"ftp://x"',
          expected: 'an absolute http:// or https:// URL',
          line: 6,
          column: 10,
        },
      ],
    });
  });

  it('--json reports a missing file as JSON too, exiting 2', async () => {
    const missing = join(root, 'nope.yaml');
    const r = await run(['config', 'check', '--json', missing]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out)).toEqual({
      ok: false,
      file: missing,
      error: { code: 'SB_CONFIG_NOT_FOUND', message: `no configuration file at ${missing}` },
    });
  });

  it('finds nothing wrong in examples/switchboard.yaml but its unset variables', async () => {
    if (process.env.EVERYTHING_KEY !== undefined || process.env.REMOTE_TOKEN !== undefined) return;
    const r = await run(['config', 'check', EXAMPLE]);
    expect(r.code).toBe(1);
    const lines = r.err.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /upstreams\.everything\.env\.API_KEY: found \$\{env:EVERYTHING_KEY\}, but EVERYTHING_KEY is not set/,
    );
    expect(lines[1]).toMatch(
      /upstreams\.remote\.headers\.Authorization: found \$\{env:REMOTE_TOKEN\}, but REMOTE_TOKEN is not set/,
    );
  });

  it('needs a file argument', async () => {
    const r = await run(['config', 'check']);
    expect(r.code).toBe(1);
    expect(r.err).toContain("missing required argument 'file'");
  });
});

describe('switchboard config show', () => {
  it('prints the built-in configuration as a valid configuration file', async () => {
    const dataDir = join(root, 'data');
    const r = await run(['config', 'show', '--data-dir', dataDir]);
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    expect(r.out).toMatch(
      /^# Effective configuration of the built-in configuration \(serve without --config\)\n/,
    );
    const shown = parse(r.out) as { upstreams: Record<string, { command: string; args: string[] }> };
    expect(shown.upstreams.everything?.command).toBe(process.execPath);
    expect(shown.upstreams.everything?.args[1]).toBe('stdio');
    const revalidated = validateConfig(shown, { baseDir: dataDir, env: {} });
    expect(revalidated.ok).toBe(true);
  });

  it("prints a file's effective configuration in human units, defaults applied, secrets redacted", async () => {
    const path = file('show.yaml', VALID);
    const r = await run(['config', 'show', '--config', path]);
    expect(r.code).toBe(0);
    expect(r.out).not.toContain('sk-live-123');
    expect(r.out).not.toContain('sk-remote-456');
    expect(r.out).toContain(`# Effective configuration of ${path}\n`);
    expect(r.out).toContain('  maxBodyBytes: 4MiB\n');
    expect(r.out).toContain('  keepAlive: 15s\n');
    expect(r.out).toContain('      maxRestarts: .inf\n');
    expect(r.out).toContain('      Authorization: "***"\n');
    const loaded = await loadConfigFile(path, { env: {} });
    const revalidated = validateConfig(parse(r.out), { baseDir: root, env: {} });
    expect(revalidated).toEqual({ ok: true, config: redact(loaded.config), warnings: [] });
  });

  it('exits 1 for an invalid file and 2 for a missing one', async () => {
    const invalid = await run(['config', 'show', '--config', file('show-invalid.yaml', INVALID)]);
    expect(invalid.code).toBe(1);
    expect(invalid.out).toBe('');
    expect(invalid.err).toContain('server.port: found 99999');
    const missing = await run(['config', 'show', '--config', join(root, 'nope.yaml')]);
    expect(missing.code).toBe(2);
  });
});

describe('toFileShape', () => {
  it('gives back the configuration when validated again, for every option of the example', async () => {
    const env = { EVERYTHING_KEY: 'key with ${literal} braces', REMOTE_TOKEN: 'token' };
    const { config } = await loadConfigFile(EXAMPLE, { env });
    const result = validateConfig(toFileShape(config), { baseDir: '/elsewhere', env: {} });
    expect(result).toEqual({ ok: true, config, warnings: [] });
  });

  it('keeps upstreams named like numbers in order', () => {
    const result = validateConfig(
      {
        upstreams: new Map([
          ['b', { command: 'x' }],
          ['2', { command: 'y' }],
        ]),
      },
      {
        baseDir: '/',
        env: {},
      },
    );
    if (!result.ok) throw new Error('invalid');
    const again = validateConfig(toFileShape(result.config), { baseDir: '/', env: {} });
    expect(again.ok && again.config.upstreams.map((u) => u.name)).toEqual(['b', '2']);
  });
});

describe('summary', () => {
  it('brackets IPv6 addresses', async () => {
    const result = validateConfig(
      { server: { host: '::1', port: 0 }, upstreams: { a: { command: 'x' } } },
      {
        baseDir: '/',
        env: {},
      },
    );
    if (!result.ok) throw new Error('invalid');
    expect(summary(result.config)).toBe('ok: 1 upstream (a: stdio shared), listening on [::1]:0');
  });
});
