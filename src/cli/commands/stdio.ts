/**
 * `switchboard stdio [options] -- <command> [args...]`: the stdio gateway as a drop-in wrapper.
 * Configure a client to run `switchboard stdio -- npx some-server` instead of `npx some-server`.
 */
import { basename } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { AuditLedger } from '../../audit/ledger/audit-ledger.js';
import { AUDIT_DEFAULTS } from '../../config/sections/audit.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../../gateways/drain.js';
import { DEFAULT_MAX_MESSAGE_BYTES, StdioGateway } from '../../gateways/stdio-gateway.js';
import { createLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import {
  DEFAULT_MAX_JSON_DEPTH,
  MAX_JSON_DEPTH_LIMIT,
  MIN_JSON_DEPTH_LIMIT,
} from '../../protocol/jsonrpc/parse.js';
import { TRACE_PAYLOAD_MODES, type TracePayloadMode } from '../../trace/payload-mode.js';
import { DEFAULT_MAX_BUFFERED_BYTES } from '../../transports/stream-bound.js';
import { dataDirOf } from '../global-options.js';
import { openStdioLedger } from '../ledger-setup.js';
import {
  collect,
  collectKeyValue,
  parseLogLevel,
  parseNonNegativeInt,
  parsePositiveInt,
} from '../options.js';
import { handleShutdownSignals } from '../shutdown-signals.js';
import { openTrace } from '../trace-setup.js';

interface StdioOptions {
  name?: string;
  restart?: boolean;
  maxRestarts?: number;
  env?: Record<string, string>;
  passEnv?: string[];
  cwd?: string;
  maxMessageBytes: number;
  maxBufferBytes: number;
  maxJsonDepth: number;
  requestTimeout: number;
  drainTimeout: number;
  trace: boolean;
  tracePayloads: TracePayloadMode;
  audit: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

const RUNNERS = new Set([
  'npx',
  'node',
  'uvx',
  'uv',
  'python',
  'python3',
  'bunx',
  'bun',
  'deno',
  'pnpm',
  'yarn',
  'dlx',
  'run',
  'exec',
]);
const GENERIC_FILES = /^(index|main|cli|server|start)(\.(m?js|cjs|ts|py))?$/;
const GENERIC_DIRS = new Set(['dist', 'build', 'lib', 'bin', 'src', 'out', '.bin']);

/**
 * A participant-safe upstream name from the command line: the first word that is not a runner or
 * a flag, as a file name without extension; for a generic entry file (`.../server-x/dist/index.js`)
 * the package directory (`server-x`); for a scoped package (`@scope/server-x`) the name after the
 * scope.
 */
export function defaultUpstreamName(command: string, args: readonly string[]): string {
  const words = [command, ...args].filter((w) => !w.startsWith('-'));
  const word = words.find((w) => !RUNNERS.has(basename(w))) ?? command;
  const parts = word
    .replace(/\\/g, '/')
    .split('/')
    .filter((p) => p.length > 0);
  let name = parts.pop() ?? word;
  while (GENERIC_FILES.test(name) || GENERIC_DIRS.has(name)) {
    const parent = parts.pop();
    if (parent === undefined) break;
    name = parent;
  }
  name = name.replace(/\.(m?js|cjs|ts|py)$/, '').replace(/@[^@/]*$/, '');
  const safe = name.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');
  return safe.length > 0 ? safe.slice(0, 64) : 'upstream';
}

/** `--max-json-depth`: an integer within the range every walker of the gateway survives. */
function parseJsonDepth(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < MIN_JSON_DEPTH_LIMIT || n > MAX_JSON_DEPTH_LIMIT)
    throw new InvalidArgumentError(
      `expected an integer from ${MIN_JSON_DEPTH_LIMIT} to ${MAX_JSON_DEPTH_LIMIT}, got "${value}"`,
    );
  return n;
}

export function registerStdioCommand(program: Command): void {
  program
    .command('stdio')
    .summary('run a stdio MCP server behind the gateway (drop-in wrapper)')
    .description(
      "Runs <command> as a stdio MCP server and relays MCP between it and this process's stdin/stdout, " +
        'recording every message in the trace and each tool call in the audit ledger. Logs go to stderr. ' +
        "Exits with the server's exit status.",
    )
    .argument('<command>', 'the MCP server to run (after --)')
    .argument('[args...]', 'its arguments')
    .option('--name <name>', 'upstream name in the trace (default: from the command)')
    .option('--restart', "restart the server when it exits (with backoff) and replay the client's initialize")
    .option('--max-restarts <n>', 'give up after this many restarts (default: never)', parseNonNegativeInt)
    .option('--env <KEY=VALUE>', "set a variable in the server's environment (repeatable)", collectKeyValue)
    .option('--pass-env <NAME>', "pass one of the gateway's variables to the server (repeatable)", collect)
    .option('--cwd <dir>', 'working directory of the server')
    .option(
      '--max-message-bytes <n>',
      'largest message accepted from either side',
      parsePositiveInt,
      DEFAULT_MAX_MESSAGE_BYTES,
    )
    .option(
      '--max-buffer-bytes <n>',
      "unsent bytes the client's stdout (or the server's stdin) may hold before the gateway stops reading what feeds it",
      parsePositiveInt,
      DEFAULT_MAX_BUFFERED_BYTES,
    )
    .option(
      '--max-json-depth <n>',
      `deepest nesting of objects and arrays accepted in a message (${MIN_JSON_DEPTH_LIMIT} to ${MAX_JSON_DEPTH_LIMIT})`,
      parseJsonDepth,
      DEFAULT_MAX_JSON_DEPTH,
    )
    .option(
      '--request-timeout <ms>',
      'answer a request with an error after this long without a response (0: never)',
      parseNonNegativeInt,
      600_000,
    )
    .option(
      '--drain-timeout <ms>',
      'at shutdown (stdin closed, SIGINT, SIGTERM), how long calls in flight may take to finish before they are answered with an error (0: at once)',
      parseNonNegativeInt,
      DEFAULT_DRAIN_TIMEOUT_MS,
    )
    .option('--no-trace', 'do not record the trace')
    .addOption(
      new Option(
        '--trace-payloads <mode>',
        'redacted: output bodies as size and SHA-256, secrets cut out; full: as they passed',
      )
        .choices(TRACE_PAYLOAD_MODES)
        .default('redacted'),
    )
    .option(
      '--no-audit',
      'do not write the audit ledger (default: <data-dir>/audit/stdio/<name>, one record per tool call)',
    )
    .option('--log-level <level>', 'debug, info, warn, error or silent', parseLogLevel, 'info')
    .option(
      '--data-dir <dir>',
      'where the trace and the ledger are kept (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  switchboard stdio -- npx -y @modelcontextprotocol/server-everything stdio\n' +
        '  switchboard stdio --restart --env API_KEY=xyz -- node my-server.js\n' +
        '\nThe server gets a minimal environment (HOME, PATH, USER, LANG, ...) plus --env and --pass-env.\n',
    )
    .action(async (command: string, args: string[], options: StdioOptions, cmd: Command) => {
      const logger = createLogger(options.logLevel);
      const metrics = new Metrics();
      const dataDir = dataDirOf(cmd);
      const name = options.name ?? defaultUpstreamName(command, args);
      let ledger: AuditLedger | undefined;
      if (options.audit) {
        try {
          const opened = await openStdioLedger(AUDIT_DEFAULTS, dataDir, name, { logger, metrics });
          ledger = opened.ledger;
          logger.debug({ dir: opened.dir }, 'writing the audit ledger');
        } catch (error) {
          // Without its ledger the wrapper would have to refuse every call that changes anything.
          const why = error instanceof Error ? error.message : String(error);
          logger.error({ err: why }, 'cannot open the audit ledger');
          console.error(
            `switchboard stdio: cannot open the audit ledger: ${why} (--no-audit runs without it)`,
          );
          process.exitCode = 1;
          setTimeout(() => process.exit(1), 50).unref();
          return;
        }
      }
      const trace = options.trace
        ? openTrace(dataDir, logger, metrics, { payloads: options.tracePayloads })
        : undefined;
      const gateway = new StdioGateway({
        command,
        args,
        name,
        restart: options.restart === true,
        ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
        ...(options.env ? { env: options.env } : {}),
        ...(options.passEnv ? { passEnv: options.passEnv } : {}),
        ...(options.cwd ? { cwd: options.cwd } : {}),
        maxMessageBytes: options.maxMessageBytes,
        maxBufferedBytes: options.maxBufferBytes,
        maxJsonDepth: options.maxJsonDepth,
        timeouts: { requestTimeoutMs: options.requestTimeout },
        drainTimeoutMs: options.drainTimeout,
        input: process.stdin,
        output: process.stdout,
        logger,
        metrics,
        taps: trace ? [trace.tap] : [],
        ...(trace ? { onSession: (info) => trace.recorder.session(info) } : {}),
        ...(ledger ? { ledger } : {}),
      });
      handleShutdownSignals((signal) => void gateway.shutdown(`received ${signal}`), logger);
      try {
        await gateway.start();
      } catch (error) {
        logger.error(
          { err: error instanceof Error ? error.message : String(error) },
          'cannot start the upstream',
        );
        trace?.recorder.close();
        await ledger?.close().catch(() => undefined);
        process.exitCode = 1;
        // Let the logger flush before exiting.
        setTimeout(() => process.exit(1), 50).unref();
        return;
      }
      const code = await gateway.done;
      trace?.recorder.close();
      // The records of the last calls are written, and a final checkpoint signed, before exiting.
      await ledger
        ?.close()
        .catch((error: unknown) =>
          logger.error({ err: String(error) }, 'the audit ledger did not close cleanly'),
        );
      process.exitCode = code;
      // stdin may still hold the event loop open; the work is done.
      setTimeout(() => process.exit(code), 20).unref();
    });
}
