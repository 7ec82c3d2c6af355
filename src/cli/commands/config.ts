/**
 * `switchboard config check|show`: validate a configuration file without starting the gateway,
 * and print the configuration a `serve` would run with. Both load files exactly as `serve` does
 * (same validation, `${env:NAME}` from this process's environment).
 *
 * Exit codes: 0 valid, 1 invalid (every issue on stderr, one per line, with line and column),
 * 2 the file is missing or unreadable, or bad usage. Secrets never reach the output: values of
 * `env` and `headers` are printed as `***`.
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { defaultConfig } from '../../config/defaults.js';
import { escapeInterpolation } from '../../config/env-interpolation.js';
import { formatConfigIssues, type LoadedConfig, loadConfigFile } from '../../config/load.js';
import type { GatewayConfig, UpstreamConfig } from '../../config/types.js';
import { formatDuration, formatSize } from '../../config/units.js';
import type { ConfigIssue } from '../../config/validate.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { type Io, ioOf } from '../command-io.js';
import { dataDirOf } from '../global-options.js';

/** What replaces secret values (upstream `env` and `headers` values) in printed configurations. */
export const REDACTED = '***';

/**
 * Adds `switchboard config check <file> [--json]` and `switchboard config show [--config FILE]`.
 * `check --json` prints one JSON document on stdout: `{ ok: true, file, warnings, config }` (the
 * normalized, redacted configuration; `maxRestarts` forever as the string ".inf") or
 * `{ ok: false, file, issues }` / `{ ok: false, file, error: { code, message } }`.
 */
export function registerConfigCommands(program: Command): void {
  const config = program
    .command('config')
    .description('validate a configuration file, or print the configuration the gateway would use');

  config
    .command('check')
    .description('validate a configuration file without starting the gateway')
    .argument('<file>', 'the YAML configuration file')
    .option('--json', 'print the result as JSON: the issues, or the normalized configuration')
    .addHelpText(
      'after',
      '\nExit status: 0 valid, 1 invalid (each problem on stderr as file:line:column key: found ..., expected ...),\n' +
        '2 the file is missing or unreadable.\n',
    )
    .action(async (file: string, options: { json?: boolean }, command: Command) => {
      const io = ioOf(command);
      const loaded = await load(file, io, options.json === true);
      if (loaded === undefined) return;
      if (options.json) {
        io.out(
          `${toJson({ ok: true, file: loaded.file, warnings: loaded.warnings, config: redact(loaded.config) })}\n`,
        );
        return;
      }
      io.out(`${summary(loaded.config)}\n`);
      for (const warning of loaded.warnings) io.err(`${file}: warning: ${warning}\n`);
    });

  config
    .command('show')
    .description('print the effective configuration as YAML: every default applied, secrets redacted')
    .option(
      '--config <file>',
      'the configuration file (default: the built-in configuration serve uses without --config)',
    )
    .option(
      '--data-dir <dir>',
      'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default ./.switchboard)',
    )
    .action(async (options: { config?: string }, command: Command) => {
      const io = ioOf(command);
      let gateway: GatewayConfig;
      let source: string;
      if (options.config === undefined) {
        try {
          gateway = defaultConfig({ dataDir: dataDirOf(command) });
        } catch (error) {
          io.err(`switchboard: ${error instanceof Error ? error.message : String(error)}\n`);
          process.exitCode = 2;
          return;
        }
        source = 'the built-in configuration (serve without --config)';
      } else {
        const loaded = await load(options.config, io, false);
        if (loaded === undefined) return;
        for (const warning of loaded.warnings) io.err(`${options.config}: warning: ${warning}\n`);
        gateway = loaded.config;
        source = loaded.file;
      }
      io.out(`# Effective configuration of ${source}\n`);
      io.out(`# Every default applied; values of env and headers shown as ${REDACTED}.\n`);
      io.out(stringify(toFileShape(redact(gateway)), { lineWidth: 0 }));
    });
}

/** Loads `file`, reporting failures (exit 1 invalid, 2 unreadable); undefined when it failed. */
async function load(file: string, io: Io, json: boolean): Promise<LoadedConfig | undefined> {
  try {
    return await loadConfigFile(file, { env: process.env });
  } catch (error) {
    if (!(error instanceof SwitchboardError)) throw error;
    if (error.code === SbErrorCode.ConfigInvalid) {
      const issues = (error.details?.issues ?? []) as ConfigIssue[];
      if (json) io.out(`${toJson({ ok: false, file: error.details?.file, issues })}\n`);
      else io.err(`${formatConfigIssues(issues, file)}\n`);
      process.exitCode = 1;
    } else {
      if (json) {
        io.out(
          `${toJson({ ok: false, file: error.details?.file, error: { code: error.code, message: error.message } })}\n`,
        );
      }
      io.err(`switchboard: ${error.message}\n`);
      process.exitCode = 2;
    }
    return undefined;
  }
}

/**
 * One line for a valid configuration: `ok: 2 upstreams (everything: stdio shared, remote: http
 * per-session), listening on 127.0.0.1:8787`.
 */
export function summary(config: GatewayConfig): string {
  const n = config.upstreams.length;
  const list = config.upstreams.map((u) => `${u.name}: ${u.transport} ${u.sharing}`).join(', ');
  const { host, port } = config.server;
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return `ok: ${n} upstream${n === 1 ? '' : 's'} (${list}), listening on ${address}`;
}

/** The configuration with every upstream `env` and `headers` value replaced by {@link REDACTED}. */
export function redact(config: GatewayConfig): GatewayConfig {
  const hide = (record: Readonly<Record<string, string>>) =>
    Object.fromEntries(Object.keys(record).map((key) => [key, REDACTED]));
  return {
    ...config,
    upstreams: config.upstreams.map(
      (u): UpstreamConfig =>
        u.transport === 'stdio' ? { ...u, env: hide(u.env) } : { ...u, headers: hide(u.headers) },
    ),
  };
}

/**
 * The configuration in the file's shape: human units, upstreams as a map by name, literal `${`
 * escaped. Validating the result (with the same base directory) gives the configuration back.
 */
export function toFileShape(config: GatewayConfig): Record<string, unknown> {
  const d = (ms: number) => (ms === 0 ? 0 : formatDuration(ms));
  const b = (bytes: number) => (bytes === 0 ? 0 : formatSize(bytes));
  const e = escapeInterpolation;
  const { server, sessions, resumability, timeouts, trace, logging } = config;
  // A Map keeps the declaration order even for upstreams named like numbers.
  const upstreams = new Map(
    config.upstreams.map((u) => {
      const specific =
        u.transport === 'stdio'
          ? {
              command: e(u.command),
              args: u.args.map(e),
              ...(u.cwd === undefined ? {} : { cwd: e(u.cwd) }),
              env: Object.fromEntries(Object.entries(u.env).map(([k, v]) => [k, e(v)])),
              passEnv: [...u.passEnv],
            }
          : {
              url: e(u.url),
              headers: Object.fromEntries(Object.entries(u.headers).map(([k, v]) => [k, e(v)])),
            };
      const restart = {
        enabled: u.restart.enabled,
        initialDelay: d(u.restart.initialDelayMs),
        maxDelay: d(u.restart.maxDelayMs),
        maxRestarts: u.restart.maxRestarts,
      };
      return [
        u.name as string,
        {
          transport: u.transport,
          ...specific,
          sharing: u.sharing,
          maxMessageBytes: b(u.maxMessageBytes),
          restart,
        },
      ];
    }),
  );
  return {
    server: {
      host: e(server.host),
      port: server.port,
      maxBodyBytes: b(server.maxBodyBytes),
      allowedHosts: server.allowedHosts.map(e),
      allowedOrigins: server.allowedOrigins.map(e),
      responseMode: server.responseMode,
      keepAlive: d(server.keepAliveMs),
    },
    sessions: {
      mode: sessions.mode,
      idleTimeout: d(sessions.idleTimeoutMs),
      maxAge: d(sessions.maxAgeMs),
      maxSessions: sessions.maxSessions,
      maxSessionsPerPrincipal: sessions.maxSessionsPerPrincipal,
      maxStreamsPerSession: sessions.maxStreamsPerSession,
    },
    resumability: {
      maxEventsPerSession: resumability.maxEventsPerSession,
      maxEventAge: d(resumability.maxEventAgeMs),
      retry: d(resumability.retryMs),
    },
    timeouts: {
      request: d(timeouts.requestMs),
      resetOnProgress: timeouts.resetOnProgress,
      maxTotal: d(timeouts.maxTotalMs),
    },
    upstreams,
    trace: { enabled: trace.enabled, maxPayloadBytes: b(trace.maxPayloadBytes) },
    logging: { level: logging.level },
  };
}

/** JSON with `Infinity` (restart forever) written as ".inf", as in the YAML file. */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v === Number.POSITIVE_INFINITY ? '.inf' : v), 2);
}
