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

export interface Logger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
  child(fields: Record<string, unknown>): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/** Log output held for stderr while nothing reads it; lines beyond are dropped. */
export const MAX_LOG_BUFFER_BYTES = 4 * 1024 * 1024;

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
  readonly entries: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  readonly #bound: Record<string, unknown>;

  constructor(bound: Record<string, unknown> = {}, entries?: MemoryLogger['entries']) {
    this.#bound = bound;
    if (entries) this.entries = entries;
  }

  #push(level: string, fields: Record<string, unknown>, message: string): void {
    this.entries.push({ level, fields: { ...this.#bound, ...fields }, message });
  }

  debug(fields: Record<string, unknown>, message: string): void {
    this.#push('debug', fields, message);
  }
  info(fields: Record<string, unknown>, message: string): void {
    this.#push('info', fields, message);
  }
  warn(fields: Record<string, unknown>, message: string): void {
    this.#push('warn', fields, message);
  }
  error(fields: Record<string, unknown>, message: string): void {
    this.#push('error', fields, message);
  }
  child(fields: Record<string, unknown>): Logger {
    return new MemoryLogger({ ...this.#bound, ...fields }, this.entries);
  }
}
