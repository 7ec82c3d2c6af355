/**
 * Where the third-party test peers live, and a runner for them.
 *
 * The peers that need Node 22 (the conformance suite, the Inspector, supergateway, mcp-proxy) are in
 * the separate npm project test/peers, installed by `node scripts/ensure-peers.mjs` (which `npm test`
 * and `npm run bench` run first). Run their JavaScript entries with the Node 22 binary that project
 * installs: `run(PEERS.node22, [PEERS.conformance, 'server', '--url', url])`, or `runPeer('conformance', [...])`.
 * server-everything and our own fixtures run on the root's Node (process.execPath).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const PEERS_DIR = join(ROOT, 'test/peers');
const PEER_MODULES = join(PEERS_DIR, 'node_modules');
const ROOT_MODULES = join(ROOT, 'node_modules');

/**
 * The real path (symlinks resolved) when the file exists. Some entries, e.g. the Inspector CLI, only run
 * when `process.argv[1]` is their real path: started through a symlinked path they exit 0 doing nothing.
 */
function real(path: string): string {
  return existsSync(path) ? realpathSync(path) : path;
}

/** The absolute path of the file a package's `bin` entry names (read from its package.json). */
function binEntry(packageDir: string, binName: string): string {
  const manifestPath = join(packageDir, 'package.json');
  if (!existsSync(manifestPath)) return join(packageDir, `<missing: run node scripts/ensure-peers.mjs>`);
  const manifest: unknown = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const bin =
    typeof manifest === 'object' && manifest !== null ? (manifest as { bin?: unknown }).bin : undefined;
  const relative =
    typeof bin === 'string'
      ? bin
      : typeof bin === 'object' && bin !== null
        ? (bin as Record<string, unknown>)[binName]
        : undefined;
  if (typeof relative !== 'string') throw new Error(`${manifestPath} has no bin entry named ${binName}`);
  return real(join(packageDir, relative));
}

/** Absolute paths of the peers. JavaScript entries are run as `<node> <entry> ...args`. */
export const PEERS = {
  /** Node 22.23.3 from the npm package `node` (the conformance suite and the Inspector need Node >= 22). */
  node22: real(join(PEER_MODULES, 'node/bin/node')),
  /** `conformance` CLI: `<node22> <conformance> server --url <url> [--scenario s] [--requirements 2026-07-28]`. */
  conformance: binEntry(join(PEER_MODULES, '@modelcontextprotocol/conformance'), 'conformance'),
  /** Inspector CLI (the `--cli` mode, without the launcher): `<node22> <inspectorCli> <url|command...> --method ...`. */
  inspectorCli: real(join(PEER_MODULES, '@modelcontextprotocol/inspector/clients/cli/build/index.js')),
  /** Inspector launcher (`mcp-inspector`); `--cli` selects the CLI above. */
  inspector: binEntry(join(PEER_MODULES, '@modelcontextprotocol/inspector'), 'mcp-inspector'),
  /** `mcpdo`, the Inspector's persistent-connection client. */
  mcpdo: binEntry(join(PEER_MODULES, '@modelcontextprotocol/inspector'), 'mcpdo'),
  /** supergateway: `<node22> <supergateway> --stdio "<cmd>" --outputTransport streamableHttp --port N`. */
  supergateway: binEntry(join(PEER_MODULES, 'supergateway'), 'supergateway'),
  /** mcp-proxy: `<node22> <mcpProxy> --port N --host 127.0.0.1 -- <cmd> [args...]` (serves /mcp and /sse). */
  mcpProxy: binEntry(join(PEER_MODULES, 'mcp-proxy'), 'mcp-proxy'),
  /** server-everything from the root node_modules (runs on Node 20): `<node> <serverEverything> stdio|sse|streamableHttp`. */
  serverEverything: binEntry(
    join(ROOT_MODULES, '@modelcontextprotocol/server-everything'),
    'mcp-server-everything',
  ),
} as const;

/** Our own MCP servers (test/fixtures); they run on the root's Node. */
export const FIXTURES = {
  /** `stdio` or `http --port N`; exposes the conformance suite's fixture names. */
  conformanceServer: join(ROOT, 'test/fixtures/conformance-server.mjs'),
  /** 2026-07-28 Streamable HTTP: `--port N [--legacy stateless]`; tools echo, add, slow-progress, cancellations. */
  modernServer: join(ROOT, 'test/fixtures/modern-server.mjs'),
  /**
   * Both eras as a v2-SDK server with 2025 code has them (`--port N`): server requests, subscriptions
   * and list changes on 2025 sessions only; `ask_name` answers input_required on 2026-07-28.
   */
  dualEraServer: join(ROOT, 'test/fixtures/dual-era-server.mjs'),
  /** The fastest stdio server (no SDK), for benchmarks: tool `echo`. */
  echoServer: join(ROOT, 'test/fixtures/echo-server.mjs'),
} as const;

export type PeerName = Exclude<keyof typeof PEERS, 'node22'>;

/** Throws a clear error when test/peers has not been installed. */
export function assertPeersInstalled(): void {
  if (!existsSync(PEERS.node22)) {
    throw new Error(
      `test peers are not installed (${PEERS.node22} is missing); run: node scripts/ensure-peers.mjs`,
    );
  }
}

export interface RunOptions {
  /** Kill the process (SIGTERM, then SIGKILL 2 s later) after this long. Default 60 s. */
  readonly timeoutMs?: number;
  readonly cwd?: string;
  /** The environment; defaults to process.env. */
  readonly env?: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed. stdin is closed immediately when absent. */
  readonly input?: string;
}

export interface RunResult {
  readonly stdout: string;
  readonly stderr: string;
  /** The exit code, or null when the process was ended by a signal. */
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  readonly durationMs: number;
}

const KILL_GRACE_MS = 2_000;

/** Sends a signal to the child's whole process group (peers spawn their own children), falling back to the child. */
function killTree(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (process.platform === 'win32') child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    child.kill(signal);
  }
}

/** Runs a command to completion and collects stdout, stderr and the exit status; never rejects on a non-zero exit. */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    let killTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      killTree(child, 'SIGTERM');
      killTimer = setTimeout(() => killTree(child, 'SIGKILL'), KILL_GRACE_MS);
    }, options.timeoutMs ?? 60_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      reject(new Error(`could not run ${command}: ${error.message}`));
    });
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      resolvePromise({ stdout, stderr, exitCode, signal, timedOut, durationMs: Date.now() - started });
    });
    child.stdin.on('error', () => {}); // the child may exit without reading its input
    child.stdin.end(options.input ?? '');
  });
}

/** Runs a Node 22 peer (`<node22> <entry> ...args`) to completion. */
export function runPeer(
  peer: PeerName,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  assertPeersInstalled();
  return run(PEERS.node22, [PEERS[peer], ...args], options);
}

export interface StartedProcess {
  readonly child: ChildProcess;
  /** The match of `readyPattern` against the first stdout line that matched it. */
  readonly ready: RegExpExecArray;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM to the process group, SIGKILL after 2 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

/**
 * Starts a long-running process (a server, supergateway, mcp-proxy...) and resolves once a stdout line
 * matches `readyPattern` (our fixtures print `listening <url>`). Rejects, and kills the process, if it
 * exits or `timeoutMs` passes first.
 */
export function startProcess(
  command: string,
  args: readonly string[],
  options: Omit<RunOptions, 'input'> & {
    readonly readyPattern: RegExp;
    readonly readyStream?: 'stdout' | 'stderr';
  },
): Promise<StartedProcess> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    let stdout = '';
    let stderr = '';
    let settled = false;
    const exited = new Promise<void>((resolveExit) => child.on('close', () => resolveExit()));
    const stop = async (): Promise<void> => {
      killTree(child, 'SIGTERM');
      const killTimer = setTimeout(() => killTree(child, 'SIGKILL'), KILL_GRACE_MS);
      await exited;
      clearTimeout(killTimer);
    };
    const fail = (message: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop();
      reject(new Error(`${message}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
    };
    const check = (text: string): void => {
      if (settled) return;
      const match = options.readyPattern.exec(text);
      if (!match) return;
      settled = true;
      clearTimeout(timer);
      resolvePromise({ child, ready: match, stderr: () => stderr, stop });
    };
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (options.readyStream !== 'stderr') check(stdout);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (options.readyStream === 'stderr') check(stderr);
    });
    child.on('error', (error) => fail(`could not start ${command}: ${error.message}`));
    child.on('close', (code, signal) => fail(`${command} exited (${signal ?? code}) before it was ready`));
    const timer = setTimeout(
      () => fail(`${command} was not ready after ${options.timeoutMs ?? 30_000} ms`),
      options.timeoutMs ?? 30_000,
    );
  });
}

/** Starts one of our HTTP fixtures on a free port and resolves with its MCP endpoint URL. */
export async function startHttpFixture(
  fixture: 'conformanceServer' | 'modernServer' | 'dualEraServer',
  extraArgs: readonly string[] = [],
): Promise<StartedProcess & { readonly url: string }> {
  const args =
    fixture === 'conformanceServer' ? ['http', '--port', '0', ...extraArgs] : ['--port', '0', ...extraArgs];
  const started = await startProcess(process.execPath, [FIXTURES[fixture], ...args], {
    readyPattern: /^listening (\S+)$/m,
  });
  const url = started.ready[1];
  if (url === undefined) throw new Error('fixture printed no URL');
  return Object.assign(started, { url });
}

export interface ConformanceOptions extends RunOptions {
  readonly scenario?: string;
  /** e.g. `2025-11-25`; omitted: each scenario runs at its own default wire version. */
  readonly specVersion?: string;
  /** Run exactly a spec revision's frozen requirement set (`2025-11-25` or `2026-07-28`). */
  readonly requirements?: string;
  readonly expectedFailures?: string;
  readonly outputDir?: string;
  readonly suite?: 'active' | 'all' | 'draft' | 'pending';
}

/** Runs `conformance server --url <url>` on Node 22. Exit code 0 means every scored check passed. */
export function runConformanceServer(url: string, options: ConformanceOptions = {}): Promise<RunResult> {
  const args = ['server', '--url', url];
  if (options.scenario !== undefined) args.push('--scenario', options.scenario);
  if (options.specVersion !== undefined) args.push('--spec-version', options.specVersion);
  if (options.requirements !== undefined) args.push('--requirements', options.requirements);
  if (options.expectedFailures !== undefined) args.push('--expected-failures', options.expectedFailures);
  if (options.outputDir !== undefined) args.push('-o', options.outputDir);
  if (options.suite !== undefined) args.push('--suite', options.suite);
  return runPeer('conformance', args, { timeoutMs: 300_000, ...options });
}
