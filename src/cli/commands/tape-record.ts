/**
 * `switchboard tape record -o FILE [options] -- <command> [args...]` (or `--url URL`): the stdio
 * gateway (`switchboard stdio`), recording the session as a tape with full payloads.
 *
 * The tape is written as the session goes, to `FILE.partial` (`FileLineSink`, `TapeRecorderTap`):
 * the header once the handshake is known, each message as it crosses (an answered call at once,
 * the rest within 100 ms). When the session ends — the client closes stdin, SIGINT or SIGTERM, the
 * server exits — and the gateway has drained and closed the server, the end line is written, the
 * file fsynced and renamed to FILE, so a file under the tape's name is always complete; a
 * recording killed before that leaves `FILE.partial`, which reads with `--allow-truncated`.
 * Secret-shaped values are cut by the redaction rules unless `--keep-secrets`; the header lists
 * each cut. No trace and no ledger are written: the tape is the record.
 */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { DEFAULT_DRAIN_TIMEOUT_MS } from '../../gateways/drain.js';
import { StdioGateway } from '../../gateways/stdio-gateway.js';
import { createLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { FileLineSink } from '../../tape/tape-line-sink.js';
import { TapeRecorderTap } from '../../tape/tape-recorder.js';
import { createMessageRedactor } from '../../tape/tape-redaction.js';
import { ioOf } from '../command-io.js';
import { addExamples } from '../help-text.js';
import { collect, parseLogLevel, parseNonNegativeInt } from '../options.js';
import { handleShutdownSignals } from '../shutdown-signals.js';
import { readPackageVersion } from '../version.js';
import { addServerProcessOptions, serverProcessOptionsOf } from './server-process-options.js';
import { defaultUpstreamName, parseUpstreamUrl, resolveHeaders, urlUpstreamName } from './stdio.js';

interface RecordOptions {
  output: string;
  keepSecrets?: boolean;
  url?: string;
  header?: string[];
  era: 'auto' | 'modern' | 'legacy';
  name?: string;
  env?: Record<string, string>;
  passEnv?: string[];
  cwd?: string;
  maxMessageBytes: number;
  maxBufferBytes: number;
  maxJsonDepth: number;
  requestTimeout: number;
  drainTimeout: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

export function registerTapeRecord(tape: Command): void {
  const command = tape
    .command('record')
    .summary('run a stdio MCP server behind the gateway and record the session as a tape')
    .description(
      "Runs <command> (or connects to --url) as `switchboard stdio` does, relaying MCP between it and this process's stdin/stdout, " +
        'and writes every message between the gateway and the server, whole, to a tape when the session ends ' +
        '(stdin closed, SIGINT, SIGTERM, or the server exits). Secret-shaped values are cut unless --keep-secrets; the header lists the cuts. ' +
        "Exits with the server's exit status.",
    )
    .argument('[command]', 'the MCP server to run (after --), unless --url is given')
    .argument('[args...]', 'its arguments')
    .requiredOption(
      '-o, --output <file>',
      'where to write the tape (FILE.partial while recording; FILE is replaced whole when the session ends)',
    )
    .option(
      '--keep-secrets',
      'keep secret-shaped values (tokens, keys, passwords) in the tape as they passed',
    )
    .option('--url <url>', 'a remote MCP server instead of a command', parseUpstreamUrl)
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
    .option(
      '--name <name>',
      "the server's name in the tape's source (default: from the command, or the host of --url)",
    );
  addServerProcessOptions(command);
  command
    .option(
      '--drain-timeout <ms>',
      'at shutdown, how long calls in flight may take to finish (they are recorded) before they are answered with an error',
      parseNonNegativeInt,
      DEFAULT_DRAIN_TIMEOUT_MS,
    )
    .option('--log-level <level>', 'debug, info, warn, error or silent', parseLogLevel, 'warn')
    .action(async (server: string | undefined, args: string[], options: RecordOptions, cmd: Command) => {
      const io = ioOf(cmd);
      const fail = (message: string, code = 2): void => {
        io.err(`switchboard tape record: ${message}\n`);
        process.exitCode = code;
      };
      if ((options.url === undefined) === (server === undefined)) {
        fail(
          'give the server to run after -- (switchboard tape record -o FILE -- <command>) or --url <url>, not both',
        );
        return;
      }
      let headers: Record<string, string> = {};
      try {
        headers = resolveHeaders(options.header ?? [], process.env);
      } catch (error) {
        fail(error instanceof Error ? error.message : String(error));
        return;
      }
      const output = resolve(options.output);
      const logger = createLogger(options.logLevel);
      const metrics = new Metrics();
      const name =
        options.name ??
        (options.url ? urlUpstreamName(new URL(options.url)) : defaultUpstreamName(server ?? '', args));
      let sink: FileLineSink;
      try {
        sink = new FileLineSink(output);
      } catch (error) {
        fail(error instanceof Error ? error.message : String(error));
        return;
      }
      const redactor = options.keepSecrets === true ? undefined : createMessageRedactor();
      const recorder = new TapeRecorderTap(name, {
        sink,
        redactor,
        facts: {
          source: {
            via: 'record',
            ...(options.url ? { url: options.url } : { command: [server ?? '', ...args] }),
            upstream: name,
            gateway: `switchboard ${readPackageVersion()}`,
          },
        },
      });
      const gateway = new StdioGateway({
        command: server ?? '',
        args,
        ...(options.url ? { http: { url: options.url, headers, era: options.era } } : {}),
        name,
        restart: false,
        ...serverProcessOptionsOf(options),
        drainTimeoutMs: options.drainTimeout,
        input: process.stdin,
        output: process.stdout,
        logger,
        metrics,
        taps: [recorder],
      });
      handleShutdownSignals((signal) => void gateway.shutdown(`received ${signal}`), logger);
      try {
        await gateway.start();
      } catch (error) {
        sink.abandon();
        fail(`cannot start the server: ${error instanceof Error ? error.message : String(error)}`, 1);
        setTimeout(() => process.exit(1), 50).unref();
        return;
      }
      let code = await gateway.done;
      try {
        const { messages, redactions: cut } = recorder.finish();
        io.err(
          `switchboard tape record: wrote ${messages} messages to ${output}` +
            (cut > 0
              ? ` (${cut} secret-shaped value${cut === 1 ? '' : 's'} cut; --keep-secrets keeps them)`
              : '') +
            '\n',
        );
      } catch (error) {
        io.err(
          `switchboard tape record: cannot write ${output}: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        code = code === 0 ? 1 : code;
      }
      process.exitCode = code;
      // stdin may still hold the event loop open; the work is done.
      setTimeout(() => process.exit(code), 20).unref();
    });
  addExamples(command, [
    'switchboard tape record -o everything.tape.jsonl -- npx -y @modelcontextprotocol/server-everything',
    'switchboard tape record -o api.tape.jsonl --url https://mcp.example.com/mcp',
    'switchboard tape record -o raw.tape.jsonl --keep-secrets -- node my-server.js',
  ]);
}
