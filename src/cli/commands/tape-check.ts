/**
 * `switchboard tape check FILE -- <command>` (or `--url URL`): plays the client side of a tape
 * against a live server and reports every answer that differs from the recorded one (issue 23).
 * Exit 0 when none differs, 1 otherwise, 2 for a usage error or a tape that cannot be read.
 * `--update` writes the live answers as a new tape. The runner is `gateways/tape-checker.ts`, the
 * judgement `tape/check/compare-run.ts`, the diff `tape/check/answer-diff.ts`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { UpstreamTransport } from '../../core/ports.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../gateways/stdio-gateway.js';
import { runTapeCheck } from '../../gateways/tape-checker.js';
import { createLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { renderReport, reportJson } from '../../tape/check/check-report.js';
import { compareRun } from '../../tape/check/compare-run.js';
import { type IgnoreRule, parseIgnoreRule } from '../../tape/check/json-pointer-pattern.js';
import { updatedTape } from '../../tape/check/updated-tape.js';
import { volatilePredicate } from '../../tape/check/volatile-values.js';
import type { Tape, TapeSource } from '../../tape/tape-format.js';
import { readTape } from '../../tape/tape-reader.js';
import { createMessageRedactor } from '../../tape/tape-redaction.js';
import { writeTapeFile } from '../../tape/tape-writer.js';
import { HttpUpstreamTransport } from '../../transports/http/upstream/http-upstream.js';
import { childEnvironment } from '../../transports/stdio/child-env.js';
import { ChildProcessTransport } from '../../transports/stdio/child-process-transport.js';
import { ioOf } from '../command-io.js';
import { addExamples } from '../help-text.js';
import { collect, collectKeyValue, parseLogLevel, parsePositiveInt } from '../options.js';
import { readPackageVersion } from '../version.js';
import { defaultUpstreamName, parseUpstreamUrl, resolveHeaders, urlUpstreamName } from './stdio.js';

interface CheckOptions {
  url?: string;
  header?: string[];
  era: 'auto' | 'modern' | 'legacy';
  env?: Record<string, string>;
  passEnv?: string[];
  cwd?: string;
  ignore?: string[];
  volatileKey?: string[];
  volatile: boolean;
  timeout: number;
  update?: boolean;
  output?: string;
  force?: boolean;
  keepSecrets?: boolean;
  json?: boolean;
  verbose?: boolean;
  allowTruncated?: boolean;
  maxMessageBytes: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

/** Where `--update` writes by default: `tape.jsonl` → `tape.updated.jsonl`. */
export function defaultUpdatePath(file: string): string {
  const dot = file.lastIndexOf('.');
  const slash = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
  return dot > slash + 1 ? `${file.slice(0, dot)}.updated${file.slice(dot)}` : `${file}.updated`;
}

/** Registers `tape check` on the `tape` group (`tape.ts`). */
export function registerTapeCheck(tape: Command): void {
  const command = tape
    .command('check')
    .summary('play a tape against a live server and report every answer that differs')
    .description(
      'Plays the client side of a tape against a live server (a command after --, or --url) and compares each answer with the recorded one, ignoring JSON-RPC ids, timestamps, generated ids and the paths given with --ignore. Progress notifications are compared by count and order only. Exits 0 when nothing differs, 1 when something does, 2 for a usage error or a tape that cannot be read.',
    )
    .argument('<file>', 'the tape to check')
    .argument('[command]', 'the MCP server to run (after --), unless --url is given')
    .argument('[args...]', 'its arguments')
    .option(
      '--url <url>',
      'a remote MCP server (Streamable HTTP of either era) instead of a command',
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
    .option('--env <KEY=VALUE>', "set a variable in the server's environment (repeatable)", collectKeyValue)
    .option('--pass-env <NAME>', "pass one of this process's variables to the server (repeatable)", collect)
    .option('--cwd <dir>', 'working directory of the server')
    .option(
      '--ignore <pointer>',
      'a JSON Pointer into each answer not to compare, with everything below it; * matches any one member or index, e.g. /result/content/*/text; METHOD:POINTER scopes it to one method, e.g. tools/call:/result/content/0/text (repeatable)',
      collect,
    )
    .option(
      '--volatile-key <name>',
      'a member name whose values are never compared, wherever it is (repeatable)',
      collect,
    )
    .option('--no-volatile', 'compare timestamps and generated ids too (the built-in volatile rules off)')
    .option('--timeout <ms>', 'longest wait for each answer', parsePositiveInt, 30_000)
    .option(
      '--update',
      'write the live answers as a new tape (-o, default FILE with .updated before its extension)',
    )
    .option('-o, --output <file>', 'with --update: where to write the new tape')
    .option('--force', 'with --update: overwrite the output file if it exists')
    .option(
      '--keep-secrets',
      'with --update: keep secret-shaped values in the new tape (cut and listed by default, as tape record does)',
    )
    .option(
      '--allow-truncated',
      'read a tape without its end line (a recording cut by a crash: FILE.partial) up to its last complete line',
    )
    .option('--json', 'print the report as one JSON object')
    .option('--verbose', 'list the answers that are the same too')
    .option(
      '--max-message-bytes <n>',
      'largest message accepted from the server',
      parsePositiveInt,
      DEFAULT_MAX_MESSAGE_BYTES,
    )
    .option(
      '--log-level <level>',
      "the server's stderr and transport logs: debug, info, warn, error or silent",
      parseLogLevel,
      'warn',
    );
  addExamples(
    command,
    [
      'switchboard tape check everything.tape.jsonl -- npx -y @modelcontextprotocol/server-everything stdio',
      'switchboard tape check api.tape.jsonl --url https://mcp.example.com/mcp --ignore /result/serverInfo/version',
      'switchboard tape check my.tape.jsonl --update -o my.new.tape.jsonl -- node my-server.js',
    ],
    'Volatile by default: JSON-RPC ids; ISO-8601 strings and epoch numbers under time-named members (timestamp, createdAt, ...); machine-made ids (UUIDs, long hex) under id-named members (requestId, ...).\n',
  );
  command.action(async (file: string, server: string | undefined, args: string[], options: CheckOptions) => {
    const io = ioOf(command);
    const fail = (message: string): void => {
      io.err(`switchboard tape check: ${message}\n`);
      process.exitCode = 2;
    };
    if ((options.url === undefined) === (server === undefined)) {
      fail(
        'give the server to run after -- (tape check FILE -- <command> [args...]) or a remote one with --url <url>, one of them',
      );
      return;
    }
    if (!options.update && (options.output !== undefined || options.force || options.keepSecrets)) {
      fail('-o, --force and --keep-secrets go with --update');
      return;
    }
    let tape: Tape;
    let ignore: IgnoreRule[];
    let headers: Record<string, string> = {};
    try {
      ignore = (options.ignore ?? []).map(parseIgnoreRule);
      headers = resolveHeaders(options.header ?? [], process.env);
      tape = readTape(readFileSync(file), file, { allowTruncated: options.allowTruncated === true });
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error));
      return;
    }
    if (tape.truncated)
      io.err(
        `switchboard tape check: ${file} has no end line (cut short): checking its ${tape.messages.length} complete messages\n`,
      );
    const output = options.update ? (options.output ?? defaultUpdatePath(file)) : undefined;
    if (output !== undefined && existsSync(output) && options.force !== true) {
      fail(`${output} exists (--force overwrites it)`);
      return;
    }
    const logger = createLogger(options.logLevel);
    const metrics = new Metrics();
    let transport: UpstreamTransport;
    let source: TapeSource;
    const gateway = `switchboard ${readPackageVersion()}`;
    if (options.url !== undefined) {
      const url = new URL(options.url);
      transport = new HttpUpstreamTransport({
        name: urlUpstreamName(url),
        url,
        headers,
        era: options.era,
        maxMessageBytes: options.maxMessageBytes,
        logger,
        metrics,
      });
      source = { via: 'record', url: url.href, upstream: urlUpstreamName(url), gateway };
    } else {
      const cmd = server as string;
      transport = new ChildProcessTransport({
        name: defaultUpstreamName(cmd, args),
        command: cmd,
        args,
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        env: childEnvironment({ passEnv: options.passEnv ?? [], env: options.env ?? {} }),
        maxMessageBytes: options.maxMessageBytes,
        logger,
        metrics,
        shutdownGraceMs: 500,
      });
      source = { via: 'record', command: [cmd, ...args], upstream: defaultUpstreamName(cmd, args), gateway };
    }
    const run = await runTapeCheck(tape, transport, { timeoutMs: options.timeout });
    const report = compareRun(tape, run, {
      ignore,
      volatile: volatilePredicate({ builtIn: options.volatile, keys: options.volatileKey ?? [] }),
    });
    io.out(options.json ? reportJson(report) : renderReport(report, { verbose: options.verbose === true }));
    if (output !== undefined) {
      try {
        const redactor = options.keepSecrets === true ? undefined : createMessageRedactor();
        writeTapeFile(output, updatedTape(run, source, redactor));
        io.err(`wrote ${output}\n`);
      } catch (error) {
        fail(`cannot write ${output}: ${error instanceof Error ? error.message : String(error)}`);
        return;
      }
    }
    process.exitCode = report.differing === 0 ? 0 : 1;
  });
}
