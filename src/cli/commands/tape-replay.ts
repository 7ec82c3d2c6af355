/**
 * `switchboard tape replay FILE [--http [--host H] [--port P]] [--mode strict|match|loose] [--speed X] [--allow-truncated]`:
 * serves a tape as an MCP server (docs/tapes.md, "Replay"), over this process's stdin/stdout or
 * Streamable HTTP, for clients of either era. The replay is built from the gateway's own router and
 * transports (`gateways/replay/`), with the tape in the place of the server.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { HttpReplay, StdioReplay } from '../../gateways/replay/replay-gateway.js';
import { createLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { buildScript } from '../../tape/replay/replay-script.js';
import { MATCH_MODES, type MatchMode } from '../../tape/replay/tape-matcher.js';
import { readTapeFile } from '../../tape/tape-reader.js';
import { addExamples } from '../help-text.js';
import { parseLogLevel, parseNonNegativeInt } from '../options.js';
import { handleShutdownSignals } from '../shutdown-signals.js';
import { readPackageVersion } from '../version.js';

interface ReplayCliOptions {
  http?: boolean;
  host: string;
  port: number;
  mode: MatchMode;
  speed: number;
  allowTruncated?: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
}

function parseSpeed(value: string): number {
  const speed = Number(value);
  if (value.trim() === '' || !Number.isFinite(speed) || speed < 0)
    throw new InvalidArgumentError(`expected a number >= 0 (1: recorded speed, 0: no waits), got "${value}"`);
  return speed;
}

export function registerTapeReplay(tape: Command): void {
  const command = tape
    .command('replay')
    .summary('serve a tape as a mock MCP server (stdio or Streamable HTTP)')
    .description(
      'Answers as the recorded server did: initialize and the lists from the tape; each other request matched to a recorded one ' +
        'by method and params (ids, progress tokens, trace context and transport _meta ignored) and answered with what was recorded, ' +
        'its progress notifications and requests to the client (sampling, elicitation) played first, at the recorded pace divided by --speed. ' +
        'A request the tape cannot answer gets error -32011 (SB_TAPE_NO_MATCH) naming the closest recorded request and how it differs. ' +
        'Over stdio the replay ends when the client closes stdin, once the calls asked before are answered; over HTTP (--http), on SIGINT or SIGTERM, and every client session ' +
        'gets its own replay of the whole tape.',
    )
    .argument('<file>', 'the tape (switchboard tape record / export)')
    .option('--http', 'serve Streamable HTTP (both eras, and the 2024-11-05 HTTP+SSE pair) instead of stdio')
    .option('--host <host>', 'with --http: the address to listen on', '127.0.0.1')
    .option(
      '--port <port>',
      'with --http: the port (0: any free port, printed on stderr)',
      parseNonNegativeInt,
      8787,
    )
    .addOption(
      new Option('--mode <mode>', 'how requests are matched to the tape (docs/tapes.md, "Matching rules")')
        .choices([...MATCH_MODES])
        .default('match'),
    )
    .option('--speed <x>', 'recorded waits divided by x (2: twice as fast; 0: no waits)', parseSpeed, 1)
    .option(
      '--allow-truncated',
      'read a tape without its end line (a recording cut by a crash: FILE.partial) up to its last complete line',
    )
    .option(
      '--log-level <level>',
      'debug, info, warn, error or silent (the log goes to stderr)',
      parseLogLevel,
      'warn',
    )
    .action(async (file: string, options: ReplayCliOptions) => {
      let script: ReturnType<typeof buildScript>;
      try {
        const tape = readTapeFile(resolve(file), { allowTruncated: options.allowTruncated === true });
        if (tape.truncated)
          console.error(
            `switchboard tape replay: ${file} has no end line (cut short): replaying its ${tape.messages.length} complete messages; a call recorded without its answer is answered SB_TAPE_NO_MATCH`,
          );
        script = buildScript(tape);
      } catch (error) {
        console.error(`switchboard tape replay: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 2;
        return;
      }
      const logger = createLogger(options.logLevel);
      const metrics = new Metrics();
      const common = { script, mode: options.mode, speed: options.speed, logger, metrics };
      if (!options.http) {
        const replay = new StdioReplay({ ...common, input: process.stdin, output: process.stdout });
        handleShutdownSignals((signal) => void replay.close(`received ${signal}`), logger);
        await replay.start();
        await replay.done;
        process.exitCode = 0;
        setTimeout(() => process.exit(0), 20).unref();
        return;
      }
      const replay = new HttpReplay({
        ...common,
        host: options.host,
        port: options.port,
        version: readPackageVersion(),
      });
      let address: Awaited<ReturnType<HttpReplay['listen']>>;
      try {
        address = await replay.listen();
      } catch (error) {
        console.error(`switchboard tape replay: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 1;
        return;
      }
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      console.error(
        `switchboard tape replay: serving ${file} on http://${host}:${address.port}/mcp (mode ${options.mode}, speed ${options.speed})`,
      );
      handleShutdownSignals(
        () =>
          void replay.close().then(() => {
            process.exitCode = 0;
            setTimeout(() => process.exit(0), 20).unref();
          }),
        logger,
      );
    });
  addExamples(command, [
    'switchboard tape replay everything.tape.jsonl',
    'switchboard tape replay everything.tape.jsonl --speed 0 --mode strict',
    'switchboard tape replay everything.tape.jsonl --http --port 9000',
  ]);
}
