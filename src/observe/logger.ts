/**
 * The logging port. Everything the gateway logs goes to stderr (stdout belongs to MCP in the stdio
 * gateway). Structured fields first, message second, as pino does.
 *
 * stderr is written asynchronously and bounded like every other outgoing stream: when nothing
 * reads it (a client that runs `switchboard stdio` with a pipe it never drains, while the server
 * floods its own stderr into the log), at most `MAX_LOG_BUFFER_BYTES` wait and further lines are
 * dropped until it drains. Log lines are diagnostics, not protocol: losing some beats holding them
 * without end, or stalling the gateway on them.
 */
import pino from 'pino';

/** Where the gateway logs (pino's shape): structured `fields`, then a `message`; never throws. */
export interface Logger {
  /** Logs detail worth seeing only when debugging. */
  debug(fields: Record<string, unknown>, message: string): void;
  /** Logs what an operator wants to know happened. */
  info(fields: Record<string, unknown>, message: string): void;
  /** Logs what went wrong but was handled. */
  warn(fields: Record<string, unknown>, message: string): void;
  /** Logs what failed. */
  error(fields: Record<string, unknown>, message: string): void;
  /** A logger that adds `fields` to every entry it logs. */
  child(fields: Record<string, unknown>): Logger;
}

/** The least severe level logged; `silent` logs nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Log output held for stderr while nothing reads it; lines beyond are dropped. */
export const MAX_LOG_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * A pino logger at `level` writing JSON lines to file descriptor `destination` (stderr by default),
 * asynchronously, dropping lines beyond `MAX_LOG_BUFFER_BYTES` while nothing reads.
 */
export function createLogger(level: LogLevel = 'info', destination: number = 2): Logger {
  return pino(
    { level, base: { name: 'switchboard' } },
    pino.destination({ dest: destination, sync: false, maxLength: MAX_LOG_BUFFER_BYTES }),
  );
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

/** A logger that keeps entries in memory, for tests that assert what was logged. */
export class MemoryLogger implements Logger {
  /** Every entry logged, in order, by this logger and its children, with their bound fields merged in. */
  readonly entries: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  readonly #bound: Record<string, unknown>;

  /** A logger adding `bound` to each entry; with `entries`, it appends to that list (a child does). */
  constructor(bound: Record<string, unknown> = {}, entries?: MemoryLogger['entries']) {
    this.#bound = bound;
    if (entries) this.entries = entries;
  }

  #push(level: string, fields: Record<string, unknown>, message: string): void {
    this.entries.push({ level, fields: { ...this.#bound, ...fields }, message });
  }

  /** Keeps a `debug` entry. */
  debug(fields: Record<string, unknown>, message: string): void {
    this.#push('debug', fields, message);
  }
  /** Keeps an `info` entry. */
  info(fields: Record<string, unknown>, message: string): void {
    this.#push('info', fields, message);
  }
  /** Keeps a `warn` entry. */
  warn(fields: Record<string, unknown>, message: string): void {
    this.#push('warn', fields, message);
  }
  /** Keeps an `error` entry. */
  error(fields: Record<string, unknown>, message: string): void {
    this.#push('error', fields, message);
  }
  /** A logger that adds `fields` (over the bound ones) and keeps its entries in the same list. */
  child(fields: Record<string, unknown>): Logger {
    return new MemoryLogger({ ...this.#bound, ...fields }, this.entries);
  }
}
