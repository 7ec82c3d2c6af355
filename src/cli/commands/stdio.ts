/**
 * `switchboard stdio [options] -- <command> [args...]`: the stdio gateway as a drop-in wrapper.
 * Configure a client to run `switchboard stdio -- npx some-server` instead of `npx some-server`.
 * `switchboard stdio --url <url> [--header 'Name: value']...` is the bridge to a remote server for
 * a client that only speaks stdio (the job of mcp-remote), recorded the same way.
 */
import { basename } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { AuditLedger } from '../../audit/ledger/audit-ledger.js';
import { interpolateEnv } from '../../config/env-interpolation.js';
import { AUDIT_DEFAULTS } from '../../config/sections/audit.js';
import { OTLP_PROTOCOLS } from '../../config/sections/otel.js';
import type { OtelConfig, OtlpProtocol } from '../../config/types.js';
import type { HopEvent } from '../../core/taps.js';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../../gateways/drain.js';
import { StdioGateway } from '../../gateways/stdio-gateway.js';
import { createLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { tracedAuditSink } from '../../observe/otel/governance-spans.js';
import { TRACE_PAYLOAD_MODES, type TracePayloadMode } from '../../trace/payload-mode.js';
import { dataDirOf } from '../global-options.js';
import { openStdioLedger } from '../ledger-setup.js';
import { collect, collectKeyValue, parseLogLevel, parseNonNegativeInt } from '../options.js';
import { type OtelRuntime, openOtel } from '../otel-setup.js';
import { handleShutdownSignals } from '../shutdown-signals.js';
import { openTrace } from '../trace-setup.js';
import { readPackageVersion } from '../version.js';
import { addServerProcessOptions, serverProcessOptionsOf } from './server-process-options.js';

export { parseJsonDepth } from './server-process-options.js';

interface StdioOptions {
  name?: string;
  url?: string;
  header?: string[];
  era?: 'auto' | 'modern' | 'legacy';
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
  otel?: boolean;
  otelEndpoint?: string;
  otelProtocol?: OtlpProtocol;
  otelHeader?: string[];
  otelSampleRatio?: number;
  otelServiceName?: string;
  otelResourceAttribute?: Record<string, string>;
  otelForwardBaggage?: boolean;
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

/** The default upstream name of a remote server: its host, made participant-safe. */
export function urlUpstreamName(url: URL): string {
  const safe = url.hostname.replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '');
  return safe.length > 0 ? safe.slice(0, 64) : 'upstream';
}

/** `--url`: an http or https URL. */
export function parseUpstreamUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`expected an http:// or https:// URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError(`expected an http:// or https:// URL, got "${value}"`);
  return url.href;
}

/**
 * The `--header 'Name: value'` options as headers, each `\${env:NAME}` in a value replaced from
 * `env` (the configuration's syntax, `env-interpolation.ts`), so that a secret stays in the
 * environment and off the command line, where other users of the machine can read it. Throws
 * with every problem (a malformed header, a variable that is not set) in one message.
 */
export function resolveHeaders(
  given: readonly string[],
  env: NodeJS.ProcessEnv,
  option = '--header',
): Record<string, string> {
  const headers: Record<string, string> = {};
  const problems: string[] = [];
  for (const [i, text] of given.entries()) {
    const colon = text.indexOf(':');
    const name = colon > 0 ? text.slice(0, colon).trim() : '';
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      problems.push(`${option} ${JSON.stringify(text.slice(0, 60))}: expected "Name: value"`);
      continue;
    }
    const value = interpolateEnv(text.slice(colon + 1).trim(), env, `${option} ${name}`);
    if (!value.ok) problems.push(...value.errors.map((e) => e.message));
    else if (/[\r\n\0]/.test(value.value))
      problems.push(`${option} ${name}: the value (header ${i + 1}) holds a line break or NUL`);
    else headers[name.toLowerCase()] = value.value;
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return headers;
}

/** `--otel-sample-ratio`: a number from 0 to 1. */
function parseRatio(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1)
    throw new InvalidArgumentError(`expected a number from 0 to 1, got "${value}"`);
  return n;
}

/**
 * `--otel-endpoint`: the OTLP/HTTP base URL of a collector, checked as `--url` is and kept as
 * given (the exporter appends `/v1/traces` and `/v1/metrics` to it).
 */
function parseOtlpEndpoint(value: string): string {
  parseUpstreamUrl(value);
  return value;
}

/**
 * The `--otel*` options as the `observe.otel` section of a configuration file would say them; the
 * `OTEL_*` environment fills the rest (`otel-settings.ts`). Any `--otel*` option turns export on.
 */
export function otelConfigOf(options: StdioOptions, env: NodeJS.ProcessEnv): OtelConfig {
  const asked =
    options.otel === true ||
    options.otelEndpoint !== undefined ||
    options.otelProtocol !== undefined ||
    options.otelHeader !== undefined ||
    options.otelSampleRatio !== undefined ||
    options.otelServiceName !== undefined ||
    options.otelResourceAttribute !== undefined ||
    options.otelForwardBaggage === true;
  return {
    ...(asked ? { enabled: true } : {}),
    ...(options.otelEndpoint === undefined ? {} : { endpoint: options.otelEndpoint }),
    ...(options.otelProtocol === undefined ? {} : { protocol: options.otelProtocol }),
    headers: resolveHeaders(options.otelHeader ?? [], env, '--otel-header'),
    ...(options.otelSampleRatio === undefined ? {} : { sampleRatio: options.otelSampleRatio }),
    ...(options.otelServiceName === undefined ? {} : { serviceName: options.otelServiceName }),
    resourceAttributes: options.otelResourceAttribute ?? {},
    forwardBaggage: options.otelForwardBaggage === true,
  };
}

/** What is wrong with the choice of upstream: a command, or `--url`, never both nor neither. */
function bridgeUsageError(command: string | undefined, options: StdioOptions): string | undefined {
  if (options.url !== undefined && command !== undefined)
    return `give either --url or a command after --, not both (got --url ${options.url} and ${command})`;
  if (options.url === undefined && command === undefined)
    return 'give the server to run after -- (switchboard stdio -- <command> [args...]) or a remote one with --url <url>';
  if (options.url === undefined && options.header !== undefined)
    return '--header applies to --url only (a command gets --env or --pass-env)';
  if (options.url !== undefined && (options.env || options.passEnv || options.cwd))
    return '--env, --pass-env and --cwd apply to a command only (a remote server gets --header)';
  return undefined;
}

export function registerStdioCommand(program: Command): void {
  const command = program
    .command('stdio')
    .summary('run a stdio MCP server behind the gateway (drop-in wrapper)')
    .description(
      "Runs <command> as a stdio MCP server and relays MCP between it and this process's stdin/stdout, " +
        'recording every message in the trace and each tool call in the audit ledger. Logs go to stderr. ' +
        "Exits with the server's exit status. With --url instead of a command, relays to a remote MCP server " +
        '(exit 1 when it is gone for good).',
    )
    .argument('[command]', 'the MCP server to run (after --), unless --url is given')
    .argument('[args...]', 'its arguments')
    .option(
      '--url <url>',
      'a remote MCP server (Streamable HTTP, or what its era calls for) instead of a command',
      parseUpstreamUrl,
    )
    .option(
      '--header <"Name: value">',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
      'with --url: a header sent with every request; ${env:NAME} in the value is read from the environment (repeatable)',
      collect,
    )
    .addOption(
      new Option('--era <era>', "with --url: the server's protocol era (auto probes once)")
        .choices(['auto', 'modern', 'legacy'])
        .default('auto'),
    )
    .option('--name <name>', 'upstream name in the trace (default: from the command, or the host of --url)')
    .option(
      '--restart',
      "restart the server when it exits (with --url: reconnect when its session ends), with backoff, and replay the client's initialize",
    )
    .option('--max-restarts <n>', 'give up after this many restarts (default: never)', parseNonNegativeInt);
  addServerProcessOptions(command);
  command
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
      '--otel',
      'export OpenTelemetry traces and metrics over OTLP/HTTP (to the OTEL_EXPORTER_OTLP_ENDPOINT of the environment, else http://localhost:4318); implied by every --otel-* option',
    )
    .option(
      '--otel-endpoint <url>',
      'the OTLP/HTTP base URL of a collector (/v1/traces and /v1/metrics are appended)',
      parseOtlpEndpoint,
    )
    .addOption(
      new Option('--otel-protocol <protocol>', 'the OTLP encoding (default http/protobuf)').choices(
        OTLP_PROTOCOLS,
      ),
    )
    .option(
      '--otel-header <"Name: value">',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
      "a header sent with every export (the collector's credentials); ${env:NAME} in the value is read from the environment (repeatable)",
      collect,
    )
    .option(
      '--otel-sample-ratio <ratio>',
      'the share of new traces recorded, 0 to 1 (a client that sends a sampled trace context is followed)',
      parseRatio,
    )
    .option('--otel-service-name <name>', 'service.name of the spans and metrics (default switchboard)')
    .option(
      '--otel-resource-attribute <KEY=VALUE>',
      'a resource attribute of the spans and metrics, e.g. deployment.environment.name=dev (repeatable)',
      collectKeyValue,
    )
    .option(
      '--otel-forward-baggage',
      "pass the client's _meta.baggage on to the server (default: it stays at the gateway)",
    )
    .option(
      '--data-dir <dir>',
      'where the trace and the ledger are kept (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  switchboard stdio -- npx -y @modelcontextprotocol/server-everything stdio\n' +
        '  switchboard stdio --restart --env API_KEY=xyz -- node my-server.js\n' +
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
        "  switchboard stdio --url https://mcp.example.com/mcp --header 'Authorization: Bearer ${env:TOKEN}'\n" +
        '  switchboard stdio --otel-endpoint http://localhost:4318 -- node my-server.js\n' +
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own syntax.
        "  switchboard stdio --otel-endpoint https://otlp.example.com --otel-protocol http/json --otel-header 'Authorization: Bearer ${env:OTLP_TOKEN}' --otel-sample-ratio 0.1 --otel-service-name my-agent-tools -- node my-server.js\n" +
        '  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 switchboard stdio -- node my-server.js\n' +
        '\nThe server gets a minimal environment (HOME, PATH, USER, LANG, ...) plus --env and --pass-env.\n',
    )
    .action(async (command: string | undefined, args: string[], options: StdioOptions, cmd: Command) => {
      const usage = bridgeUsageError(command, options);
      if (usage !== undefined) {
        console.error(`switchboard stdio: ${usage}`);
        process.exitCode = 2;
        return;
      }
      let headers: Record<string, string> = {};
      let otelConfig: OtelConfig;
      try {
        headers = resolveHeaders(options.header ?? [], process.env);
        otelConfig = otelConfigOf(options, process.env);
      } catch (error) {
        console.error(`switchboard stdio: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 2;
        return;
      }
      const logger = createLogger(options.logLevel);
      const metrics = new Metrics();
      const dataDir = dataDirOf(cmd);
      const name =
        options.name ??
        (options.url ? urlUpstreamName(new URL(options.url)) : defaultUpstreamName(command ?? '', args));
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
      let otel: OtelRuntime | undefined;
      try {
        otel = await openOtel(otelConfig, process.env, {
          logger,
          version: readPackageVersion(),
          ...(options.url ? { upstreamUrls: { [name]: options.url } } : {}),
        });
      } catch (error) {
        console.error(`switchboard stdio: ${error instanceof Error ? error.message : String(error)}`);
        await ledger?.close().catch(() => undefined);
        process.exitCode = 2;
        setTimeout(() => process.exit(2), 50).unref();
        return;
      }
      const trace = options.trace
        ? openTrace(dataDir, logger, metrics, {
            payloads: options.tracePayloads,
            ...(otel ? { otelIds: (event: HopEvent) => otel?.spans.callIds(event) } : {}),
          })
        : undefined;
      const gateway = new StdioGateway({
        command: command ?? '',
        args,
        ...(options.url ? { http: { url: options.url, headers, era: options.era ?? 'auto' } } : {}),
        name,
        restart: options.restart === true,
        ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
        ...serverProcessOptionsOf(options),
        drainTimeoutMs: options.drainTimeout,
        input: process.stdin,
        output: process.stdout,
        logger,
        metrics,
        // OpenTelemetry's tap first: a call's span is open before anything else sees its hops.
        taps: [...(otel ? [otel.spans] : []), ...(trace ? [trace.tap] : [])],
        ...(otel ? { traceContext: otel.spans, observers: [otel.metrics] } : {}),
        ...(trace ? { onSession: (info) => trace.recorder.session(info) } : {}),
        ...(ledger ? { ledger: otel ? tracedAuditSink(ledger, otel.spans) : ledger } : {}),
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
        await otel?.shutdown();
        await ledger?.close().catch(() => undefined);
        process.exitCode = 1;
        // Let the logger flush before exiting.
        setTimeout(() => process.exit(1), 50).unref();
        return;
      }
      const code = await gateway.done;
      trace?.recorder.close();
      await otel?.shutdown();
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
