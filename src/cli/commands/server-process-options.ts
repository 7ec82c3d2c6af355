/**
 * The options `switchboard stdio` and `switchboard tape record` share about the server they run and
 * the limits of the relay between it and this process: one declaration, so the two commands cannot
 * drift apart in names, defaults or help text.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../gateways/stdio-gateway.js';
import {
  DEFAULT_MAX_JSON_DEPTH,
  MAX_JSON_DEPTH_LIMIT,
  MIN_JSON_DEPTH_LIMIT,
} from '../../protocol/jsonrpc/parse.js';
import { DEFAULT_MAX_BUFFERED_BYTES } from '../../transports/stream-bound.js';
import { collect, collectKeyValue, parseNonNegativeInt, parsePositiveInt } from '../options.js';

/** `--max-json-depth`: an integer within the range every walker of the gateway survives. */
export function parseJsonDepth(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < MIN_JSON_DEPTH_LIMIT || n > MAX_JSON_DEPTH_LIMIT)
    throw new InvalidArgumentError(
      `expected an integer from ${MIN_JSON_DEPTH_LIMIT} to ${MAX_JSON_DEPTH_LIMIT}, got "${value}"`,
    );
  return n;
}

/**
 * Adds, in this order: `--env`, `--pass-env`, `--cwd` (the server's process), `--max-message-bytes`,
 * `--max-buffer-bytes`, `--max-json-depth` and `--request-timeout` (the relay's limits). Returns
 * the command, for chaining.
 */
export function addServerProcessOptions(command: Command): Command {
  return command
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
    );
}

/** What {@link addServerProcessOptions} parses, as commander hands it over. */
export interface ServerProcessValues {
  readonly env?: Record<string, string>;
  readonly passEnv?: string[];
  readonly cwd?: string;
  readonly maxMessageBytes: number;
  readonly maxBufferBytes: number;
  readonly maxJsonDepth: number;
  readonly requestTimeout: number;
}

/** Those values as the stdio gateway's options take them (absent ones left out). */
export function serverProcessOptionsOf(options: ServerProcessValues) {
  return {
    ...(options.env ? { env: options.env } : {}),
    ...(options.passEnv ? { passEnv: options.passEnv } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    maxMessageBytes: options.maxMessageBytes,
    maxBufferedBytes: options.maxBufferBytes,
    maxJsonDepth: options.maxJsonDepth,
    timeouts: { requestTimeoutMs: options.requestTimeout },
  };
}
