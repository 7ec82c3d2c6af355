/**
 * The logging port. Everything the gateway logs goes to stderr (stdout belongs to MCP in the stdio
 * gateway). Structured fields first, message second, as pino does.
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

export function createLogger(level: LogLevel = 'info', destination: number = 2): Logger {
  return pino({ level, base: { name: 'switchboard' } }, pino.destination({ dest: destination, sync: false }));
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
