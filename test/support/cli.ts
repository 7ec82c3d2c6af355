/** Paths and runners for the built `switchboard` CLI and the real MCP servers the tests drive. */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { expect } from 'vitest';

export const ROOT = resolve(import.meta.dirname, '../..');
export const CLI = join(ROOT, 'dist/cli/main.js');
export const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const ECHO_SERVER = join(ROOT, 'test/fixtures/echo-server.mjs');

export function tempDir(prefix = 'switchboard-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * An SDK client transport that runs `switchboard stdio` (upstream name `everything`, data in
 * `dataDir`, then `options`) in front of server-everything, the way a client configures the
 * wrapper; `env` is added to the wrapper's environment (the server sees only what it passes on).
 */
export function everythingThroughStdio(
  dataDir: string,
  options: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [
      CLI,
      'stdio',
      '--data-dir',
      dataDir,
      '--name',
      'everything',
      ...options,
      '--',
      process.execPath,
      EVERYTHING,
      'stdio',
    ],
    env: { ...process.env, ...env } as Record<string, string>,
    stderr: 'pipe',
  });
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to completion (with a timeout) and collects its output. */
export function runCli(
  args: readonly string[],
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`switchboard ${args.join(' ')} timed out\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 20_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Parses JSON lines, ignoring blank lines. */
export function jsonLines<T = Record<string, unknown>>(text: string): T[] {
  return text
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as T);
}

/**
 * A bearer token made by `switchboard auth token`, and its configuration entry: the list item
 * (4-space indented) to put under `auth:` / `  tokens:`.
 */
export async function makeToken(
  principal: string,
  roles: readonly string[] = [],
): Promise<{ token: string; yaml: string }> {
  const result = await runCli([
    'auth',
    'token',
    '--principal',
    principal,
    ...roles.flatMap((r) => ['--role', r]),
  ]);
  expect(result.code, result.stderr).toBe(0);
  const [token, , ...rest] = result.stdout.split('\n');
  expect(token).toMatch(/^sbt_[A-Za-z0-9_-]{43}$/);
  const item = rest.filter((line) => line.startsWith('    '));
  expect(item[0]).toBe(`    - principal: ${principal}`);
  return { token: token!, yaml: item.join('\n') };
}
