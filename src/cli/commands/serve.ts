/**
 * `switchboard serve`: the Streamable HTTP gateway. With no `--config`, a built-in configuration
 * fronts the demo upstreams the project depends on, so it serves a working gateway anywhere.
 * `switchboard serve -- <command> [args...]` is the one-line bridge: that one stdio server, every
 * other setting at its default, no YAML (the job of mcp-proxy and supergateway).
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import type { AuditLedger } from '../../audit/ledger/audit-ledger.js';
import { createAuthenticator } from '../../auth/authenticator.js';
import { ensureDataDir } from '../../config/data-dir.js';
import { DEFAULTS, defaultConfig } from '../../config/defaults.js';
import { formatConfigIssues, loadConfigFile, parseConfigText } from '../../config/load.js';
import { importMcpJson, renderUpstreamsYaml } from '../../config/mcp-json-import.js';
import type { GatewayConfig, StdioUpstreamConfig } from '../../config/types.js';
import type { ConfigIssue } from '../../config/validate.js';
import type { HopEvent } from '../../core/taps.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { ServeGateway } from '../../gateways/serve/serve-gateway.js';
import { createLogger, type LogLevel } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { traceApprovals, tracedAuditSink } from '../../observe/otel/governance-spans.js';
import { dataDirOf } from '../global-options.js';
import { openServeLedger } from '../ledger-setup.js';
import { collect, collectKeyValue, parseLogLevel, parseNonNegativeInt } from '../options.js';
import { type OtelRuntime, openOtel } from '../otel-setup.js';
import { checkPortFree } from '../port-check.js';
import { handleShutdownSignals } from '../shutdown-signals.js';
import { openTrace } from '../trace-setup.js';
import { readPackageVersion } from '../version.js';
import { defaultUpstreamName } from './stdio.js';

interface ServeOptions {
  config?: string;
  /** A client's MCP JSON whose servers are the upstreams (see `config/mcp-json-import.ts`). */
  mcpJson?: string;
  /** The bridge's upstream name (default: from the command). */
  name?: string;
  env?: Record<string, string>;
  passEnv?: string[];
  cwd?: string;
  host?: string;
  port?: number;
  trace: boolean;
  logLevel?: LogLevel;
}

/** The one stdio server `serve -- <command> [args...]` fronts. */
export interface BridgedCommand {
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * The configuration of the bridge: the built-in one with its demo upstreams replaced by the one
 * stdio server, named `--name` or after the command, its environment built like any stdio
 * upstream's (the minimal set, then `--pass-env`, then `--env`).
 */
export function bridgeConfig(bridged: BridgedCommand, options: ServeOptions, dataDir: string): GatewayConfig {
  const base = defaultConfig({ dataDir });
  const upstream: StdioUpstreamConfig = {
    name: options.name ?? defaultUpstreamName(bridged.command, bridged.args),
    transport: 'stdio',
    command: bridged.command,
    args: bridged.args,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: options.env ?? {},
    passEnv: options.passEnv ?? [],
    maxStdinBufferBytes: DEFAULTS.upstream.maxStdinBufferBytes,
    restart: DEFAULTS.upstream.restart,
    sharing: DEFAULTS.upstream.sharing,
    maxMessageBytes: DEFAULTS.upstream.maxMessageBytes,
    required: DEFAULTS.upstream.required,
  };
  return { ...base, upstreams: [upstream] };
}

/**
 * Loads the configuration a `serve` invocation asks for, with its command-line overrides. A
 * command and `--config` together are refused (`SB_CONFIG_INVALID`): which of the two would
 * define the upstreams is not something to guess; add the server to the file instead.
 */
export async function resolveServeConfig(
  options: ServeOptions,
  dataDir: string,
  bridged?: BridgedCommand,
): Promise<GatewayConfig> {
  if (bridged && options.config)
    throw new SwitchboardError(
      SbErrorCode.ConfigInvalid,
      `a command to serve (${bridged.command}) and --config ${options.config} were both given: ` +
        'either serve one command with the defaults, or add it to the file as a stdio upstream',
    );
  const sources = [
    bridged ? 'a command' : '',
    options.config ? '--config' : '',
    options.mcpJson ? '--mcp-json' : '',
  ].filter((source) => source !== '');
  if (sources.length > 1 && options.mcpJson)
    throw new SwitchboardError(
      SbErrorCode.ConfigInvalid,
      `${sources.join(' and ')} were both given: each defines the upstreams; ` +
        'to combine them, switchboard import the JSON file and add its upstreams to the configuration file',
    );
  if (!bridged && (options.name || options.env || options.passEnv || options.cwd))
    throw new SwitchboardError(
      SbErrorCode.ConfigInvalid,
      '--name, --env, --pass-env and --cwd describe the server of `serve -- <command>`; none was given',
    );
  const base = bridged
    ? bridgeConfig(bridged, options, dataDir)
    : options.config
      ? (await loadConfigFile(options.config, { env: process.env })).config
      : options.mcpJson
        ? await mcpJsonConfig(options.mcpJson)
        : defaultConfig({ dataDir });
  return {
    ...base,
    server: {
      ...base.server,
      ...(options.host ? { host: options.host } : {}),
      ...(options.port === undefined ? {} : { port: options.port }),
    },
    trace: { ...base.trace, enabled: base.trace.enabled && options.trace },
    logging: options.logLevel ? { level: options.logLevel } : base.logging,
  };
}

/**
 * The configuration of `serve --mcp-json FILE`: the file's servers as the upstreams (imported as
 * `switchboard import` prints them), every other setting at its default, validated like a
 * configuration file (relative `cwd`s against the JSON file's directory).
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` naming the server and field that cannot be mapped,
 *   or with the issues of the resulting configuration.
 */
export async function mcpJsonConfig(file: string): Promise<GatewayConfig> {
  const yaml = renderUpstreamsYaml(importMcpJson(await readFile(file, 'utf8'), file), file);
  const result = parseConfigText(yaml, { baseDir: dirname(resolve(file)), env: process.env });
  if (!result.ok) {
    throw new SwitchboardError(
      SbErrorCode.ConfigInvalid,
      `the servers of ${file} do not make a valid configuration:\n${formatConfigIssues(result.errors, `${file} (imported)`)}`,
    );
  }
  return result.config;
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .summary('run the Streamable HTTP gateway')
    .description(
      'Serves MCP over Streamable HTTP: /mcp fronts every configured upstream (tools and prompts named ' +
        '<server>__<name>), /servers/<name>/mcp fronts one. Binds 127.0.0.1:8787 by default. ' +
        'Without --config, a built-in configuration fronts the demo servers server-everything and server-memory. ' +
        'With -- <command> [args...], it serves that one stdio server instead, with every other setting at its default. ' +
        'Clients of the 2024-11-05 HTTP+SSE transport connect to /sse (or /servers/<name>/sse).',
    )
    .argument('[command]', 'a stdio MCP server to serve alone (after --), instead of --config')
    .argument('[args...]', 'its arguments')
    .option('--config <file>', 'the YAML configuration file (see examples/switchboard.yaml)')
    .option(
      '--mcp-json <file>',
      "serve the MCP servers of a client's JSON file (mcpServers or VS Code servers) instead of --config",
    )
    .option('--name <name>', 'with a command: its upstream name (default: from the command)')
    .option(
      '--env <KEY=VALUE>',
      "with a command: set a variable in the server's environment (repeatable)",
      collectKeyValue,
    )
    .option(
      '--pass-env <NAME>',
      "with a command: pass one of the gateway's variables to the server (repeatable)",
      collect,
    )
    .option('--cwd <dir>', 'with a command: working directory of the server')
    .option('--host <host>', 'address to bind (overrides server.host)')
    .option(
      '--port <port>',
      'port to listen on, 0 for any free one (overrides server.port)',
      parseNonNegativeInt,
    )
    .option('--no-trace', 'do not record the trace')
    .option(
      '--log-level <level>',
      'debug, info, warn, error or silent (overrides logging.level)',
      parseLogLevel,
    )
    .option(
      '--data-dir <dir>',
      'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  switchboard serve\n' +
        '  switchboard serve --config switchboard.yaml --port 9000\n' +
        '  switchboard serve --mcp-json .mcp.json\n' +
        '  switchboard serve --port 9000 -- npx -y @modelcontextprotocol/server-everything stdio\n' +
        '  switchboard config check switchboard.yaml\n',
    )
    .action(async (command: string | undefined, args: string[], options: ServeOptions, cmd: Command) => {
      // Nothing is created until the configuration is valid and the port can be had: a start
      // that fails leaves no data directory behind and starts no upstream.
      const dataDir = dataDirOf(cmd);
      let config: GatewayConfig;
      try {
        config = await resolveServeConfig(
          options,
          dataDir,
          command === undefined ? undefined : { command, args },
        );
      } catch (error) {
        if (error instanceof SwitchboardError && error.code === SbErrorCode.ConfigInvalid) {
          const issues = (error.details?.issues ?? []) as ConfigIssue[];
          console.error(
            issues.length > 0
              ? formatConfigIssues(issues, String(error.details?.file ?? options.config))
              : error.message,
          );
        } else console.error(`switchboard serve: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode =
          error instanceof SwitchboardError && error.code === SbErrorCode.ConfigInvalid ? 1 : 2;
        return;
      }
      try {
        await checkPortFree(config.server.host, config.server.port);
        ensureDataDir(dataDir);
      } catch (error) {
        console.error(`switchboard serve: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 1;
        return;
      }
      const logger = createLogger(config.logging.level);
      const metrics = new Metrics();
      let otel: OtelRuntime | undefined;
      try {
        otel = await openOtel(config.observe.otel, process.env, {
          logger,
          version: readPackageVersion(),
          upstreamUrls: Object.fromEntries(
            config.upstreams.flatMap((u) => (u.transport === 'http' ? [[u.name, u.url]] : [])),
          ),
        });
      } catch (error) {
        console.error(`switchboard serve: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 2;
        setTimeout(() => process.exit(2), 50).unref();
        return;
      }
      const trace = config.trace.enabled
        ? openTrace(dataDir, logger, metrics, {
            maxPayloadBytes: config.trace.maxPayloadBytes,
            payloads: config.trace.payloads,
            redact: config.audit.redact,
            ...(otel ? { otelIds: (event: HopEvent) => otel?.spans.callIds(event) } : {}),
          })
        : undefined;
      let ledger: AuditLedger | undefined;
      if (config.audit.enabled) {
        try {
          ledger = await openServeLedger(config.audit, dataDir, { logger, metrics });
        } catch (error) {
          const why = error instanceof Error ? error.message : String(error);
          logger.error({ err: why }, 'cannot open the audit ledger');
          console.error(`switchboard serve: cannot open the audit ledger: ${why}`);
          trace?.recorder.close();
          await otel?.shutdown();
          process.exitCode = 1;
          setTimeout(() => process.exit(1), 50).unref();
          return;
        }
      }
      // Without an auth section every caller is `local` (the configuration then allows loopback only).
      const authenticator = config.auth ? createAuthenticator(config.auth, { logger, metrics }) : undefined;
      const gateway = new ServeGateway({
        config,
        version: readPackageVersion(),
        logger,
        metrics,
        ...(authenticator ? { authenticate: authenticator } : {}),
        ...(ledger ? { ledger: otel ? tracedAuditSink(ledger, otel.spans) : ledger } : {}),
        // OpenTelemetry's tap first: a call's span is open before anything else sees its hops.
        taps: [...(otel ? [otel.spans] : []), ...(trace ? [trace.tap] : [])],
        ...(otel ? { traceContext: otel.spans } : {}),
        ...(trace ? { metricsSources: { traceQueue: () => trace.recorder.pending } } : {}),
        ...(trace ? { onSession: (info) => trace.recorder.session(info) } : {}),
        ...(trace ? { traceHealth: () => trace.recorder.health } : {}),
        space: {
          ...(authenticator ? { authenticate: authenticator } : {}),
          ...(trace ? { trace: trace.recorder } : {}),
        },
      });
      const stop = async (signal: string) => {
        logger.info({ signal, drainTimeoutMs: config.server.drainTimeoutMs }, 'shutting down');
        // Calls in flight finish (or are answered with SB_SHUTTING_DOWN) before anything closes.
        await gateway.drain();
        await gateway.close();
        authenticator?.close();
        trace?.recorder.close();
        await otel?.shutdown();
        // The records of the last calls are written, and a final checkpoint signed, before exiting.
        await ledger
          ?.close()
          .catch((error: unknown) =>
            logger.error({ err: String(error) }, 'the audit ledger did not close cleanly'),
          );
        setTimeout(() => process.exit(0), 50).unref();
      };
      if (otel) {
        traceApprovals(gateway.approvals, otel.spans);
        gateway.router.observations.add(otel.metrics);
      }
      handleShutdownSignals((signal) => void stop(signal), logger);
      try {
        const address = await gateway.start();
        const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        logger.info(
          {
            url: `http://${host}:${address.port}/mcp`,
            upstreams: config.upstreams.map((u) => u.name),
            dataDir,
          },
          'switchboard is serving',
        );
        console.error(
          `switchboard: serving MCP on http://${host}:${address.port}/mcp (upstreams: ${config.upstreams.map((u) => u.name).join(', ')}); ` +
            `clients of the 2024-11-05 HTTP+SSE transport: http://${host}:${address.port}/sse`,
        );
        const metricsAt = gateway.metricsAddress ?? (gateway.prometheus ? address : undefined);
        if (metricsAt) {
          const metricsHost = metricsAt.family === 'IPv6' ? `[${metricsAt.address}]` : metricsAt.address;
          console.error(`switchboard: Prometheus metrics on http://${metricsHost}:${metricsAt.port}/metrics`);
        }
      } catch (error) {
        logger.error(
          { err: error instanceof Error ? error.message : String(error) },
          'cannot start the gateway',
        );
        console.error(`switchboard serve: ${error instanceof Error ? error.message : String(error)}`);
        await gateway.close().catch(() => undefined);
        authenticator?.close();
        trace?.recorder.close();
        await otel?.shutdown();
        await ledger?.close().catch(() => undefined);
        process.exitCode = 1;
        setTimeout(() => process.exit(1), 50).unref();
      }
    });
}
