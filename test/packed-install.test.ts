/**
 * Switchboard on the PATH, outside the clone: the package as `npm pack` makes it, installed with
 * `npm install -g` into a temporary prefix from an empty directory, runs as `switchboard` — its
 * version, and a real `switchboard stdio` round trip in front of the echo fixture, driven by the
 * SDK client. This is what a person does with a checkout before the package is published.
 *
 * Only the npm registry is reachable here and the npm cache holds the dependencies, so the install
 * runs with `--prefer-offline`. It compiles better-sqlite3 like any first install does, which takes
 * a minute on a small machine: hence the long timeout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_SERVER, ROOT, tempDir } from './support/cli.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
};

/**
 * The environment without the `npm_*` variables of the `npm test` that may be running us: a
 * person's `npm install -g` does not inherit another npm's configuration (its prefix, its
 * engine-strict, its script context).
 */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

describe('the packed package, installed outside the clone', () => {
  const work = tempDir('switchboard-packed-');
  const prefix = join(work, 'prefix');
  const empty = join(work, 'empty');
  const bin = join(prefix, process.platform === 'win32' ? 'switchboard.cmd' : 'bin/switchboard');
  let tarball = '';

  beforeAll(() => {
    execFileSync('mkdir', ['-p', empty]);
    // `npm pack` runs `prepare` (the build) itself; here dist/ is already built by the test run's
    // global setup, and rebuilding it would rewrite files other tests are running from.
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
        cwd: ROOT,
        env: cleanEnv(),
        encoding: 'utf8',
      }),
    ) as { filename: string; files: { path: string }[] }[];
    const entry = packed[0];
    if (!entry) throw new Error('npm pack reported no tarball');
    tarball = join(work, entry.filename);
    expect(entry.files.map((f) => f.path)).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'dist/cli/main.js', 'dist/index.js']),
    );
    expect(entry.files.some((f) => /\.test\.|test-support/.test(f.path))).toBe(false);
    execFileSync(
      'npm',
      ['install', '-g', '--prefer-offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball],
      { cwd: empty, env: cleanEnv(), stdio: ['ignore', 'ignore', 'pipe'], timeout: 280_000 },
    );
  }, 300_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  it('builds dist/ whenever the package is packed or installed from a checkout', () => {
    // `prepare` runs on `npm install`/`npm ci` in the clone and before `npm pack`/`npm publish`,
    // so a tarball always carries a fresh dist/ (the beforeAll skips it only to keep dist/ still).
    expect(pkg.scripts.prepare).toBe('npm run build');
    expect(pkg.bin).toEqual({ switchboard: 'dist/cli/main.js' });
    expect(readFileSync(join(ROOT, pkg.bin.switchboard as string), 'utf8')).toMatch(
      /^#!\/usr\/bin\/env node\n/,
    );
  });

  it('puts `switchboard` on the prefix PATH, which reports the packed version', () => {
    expect(existsSync(bin)).toBe(true);
    const version = execFileSync(bin, ['--version'], { cwd: empty, encoding: 'utf8' }).trim();
    expect(version).toBe(pkg.version);
  });

  it('runs `switchboard stdio` from an empty directory: the SDK client lists and calls the echo tool', async () => {
    const dataDir = join(work, 'data');
    const transport = new StdioClientTransport({
      command: bin,
      args: ['stdio', '--data-dir', dataDir, '--name', 'echo', '--', process.execPath, ECHO_SERVER],
      cwd: empty,
      env: cleanEnv() as Record<string, string>,
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const client = new Client({ name: 'packed-it', version: '1.0.0' });
    try {
      await client.connect(transport);
      expect(client.getServerVersion()?.name).toBe('switchboard-echo-fixture');
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toEqual(['echo']);
      const result = await client.callTool({ name: 'echo', arguments: { message: 'from the PATH' } });
      expect(result.content).toEqual([{ type: 'text', text: 'from the PATH' }]);
    } catch (error) {
      throw new Error(`${String(error)}\nstderr: ${stderr}`);
    } finally {
      await client.close().catch(() => {});
    }
    // The installed gateway recorded the call where it was told to, like the one in the clone.
    expect(existsSync(join(dataDir, 'audit'))).toBe(true);
  });
});
