/** Starts the built `switchboard serve` on a free port for a test, and stops it afterwards. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfigText } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/types.js';
import { CLI, tempDir } from './cli.js';
import { type StartedProcess, startProcess } from './peers.js';

export interface RunningServe {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly base: string;
  /** The aggregated endpoint `<base>/mcp`. */
  readonly url: string;
  readonly dataDir: string;
  readonly process: StartedProcess;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Runs `switchboard serve --port 0` (with `configYaml` written to a temp file when given) and
 * resolves once it prints the URL it serves.
 */
export async function startServe(
  options: { configYaml?: string; args?: readonly string[]; env?: NodeJS.ProcessEnv; dataDir?: string } = {},
): Promise<RunningServe> {
  const dataDir = options.dataDir ?? tempDir('switchboard-serve-');
  const args = [
    CLI,
    'serve',
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--log-level',
    'warn',
    ...(options.args ?? []),
  ];
  if (options.configYaml !== undefined) {
    const file = join(dataDir, 'switchboard.yaml');
    writeFileSync(file, options.configYaml);
    args.push('--config', file);
  }
  const started = await startProcess(process.execPath, args, {
    readyPattern: /serving MCP on (http:\/\/[^/\s]+)\/mcp/,
    readyStream: 'stderr',
    timeoutMs: 60_000,
    ...(options.env ? { env: options.env } : {}),
  });
  const base = started.ready[1]!;
  return {
    base,
    url: `${base}/mcp`,
    dataDir,
    process: started,
    stderr: () => started.stderr(),
    stop: () => started.stop(),
  };
}

/** A configuration with one stdio upstream named `name` running `node <script> <args...>`. */
export function stdioUpstreamConfig(
  upstreams: Record<
    string,
    { script: string; args?: readonly string[]; sharing?: 'shared' | 'per-session' | 'pooled' }
  >,
  extra = '',
): string {
  const lines = ['upstreams:'];
  for (const [name, u] of Object.entries(upstreams)) {
    lines.push(`  ${name}:`, '    transport: stdio', `    command: ${JSON.stringify(process.execPath)}`);
    lines.push(`    args: ${JSON.stringify([u.script, ...(u.args ?? [])])}`);
    if (u.sharing) lines.push(`    sharing: ${u.sharing}`);
  }
  return `${lines.join('\n')}\n${extra}`;
}

/**
 * `yaml` parsed as the serve command parses its file (relative paths against the working
 * directory, `${VAR}` from the environment), for tests that compose a `ServeGateway` in-process;
 * throws with the issues when it is invalid.
 */
export function parsedServeConfig(yaml: string): GatewayConfig {
  const parsed = parseConfigText(yaml, { baseDir: process.cwd(), env: process.env });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.config;
}
