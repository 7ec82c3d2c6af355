/**
 * Where a tape being recorded goes, line by line (`TapeRecorderTap` writes to one).
 *
 * Contract: lines are kept in the order written. `write(line, urgent)` may hold a line for a
 * while; an `urgent` one (the answer that completes a call) is handed to the operating system
 * before `write` returns, together with every line held before it. `end(line)` writes the end
 * line and makes the tape final. A sink never throws from `write`: a tap must not break
 * forwarding, so a failure (a full disk) is kept and thrown by `end`.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

/** Where `TapeRecorderTap` writes a tape's lines (the contract above). */
export interface TapeLineSink {
  /** Adds one line (without its `\n`). */
  write(line: string, urgent: boolean): void;
  /** Adds the end line and makes the tape final; throws the first failure of the recording. */
  end(line: string): void;
}

/** A sink in memory, for tests and for a tape printed whole. */
export class MemoryLineSink implements TapeLineSink {
  readonly #lines: string[] = [];
  #ended = false;

  /** Keeps `line` (memory holds nothing back, so `urgent` changes nothing). */
  write(line: string): void {
    this.#lines.push(line);
  }

  /** Keeps the end line and marks the tape ended. */
  end(line: string): void {
    this.#lines.push(line);
    this.#ended = true;
  }

  /** The text so far: a whole tape once ended, else a cut one. */
  text(): string {
    return this.#lines.map((line) => `${line}\n`).join('');
  }

  /** Whether `end` was called. */
  get ended(): boolean {
    return this.#ended;
  }
}

/** When a file sink hands held lines to the operating system, besides each urgent line. */
export interface FlushPolicy {
  /** At most this many lines held (default 64). */
  readonly maxLines?: number;
  /** At most this long, in milliseconds, after the first line held (default 100). */
  readonly maxDelayMs?: number;
}

/** The suffix of the file a recording is written to, renamed away at a clean end. */
export const PARTIAL_SUFFIX = '.partial';

/**
 * A tape file written as it is recorded: `<path>.partial` while the session runs, each flush one
 * `write(2)` (so a killed process loses only the lines still held: at most `maxDelayMs` of them,
 * never an answered call's), then at `end` fsync and a rename to `<path>`, so a file under the
 * tape's own name is always whole. The partial file is created exclusively: a second recording
 * to the same path, or the partial file a crash left behind, is refused rather than overwritten.
 */
export class FileLineSink implements TapeLineSink {
  readonly #path: string;
  readonly #partial: string;
  readonly #maxLines: number;
  readonly #maxDelayMs: number;
  #fd: number | undefined;
  #held: string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #failure: unknown;

  /** Creates `<path>.partial`; throws (with the reason) when it exists or cannot be made. */
  constructor(path: string, policy: FlushPolicy = {}) {
    this.#path = path;
    this.#partial = `${path}${PARTIAL_SUFFIX}`;
    this.#maxLines = policy.maxLines ?? 64;
    this.#maxDelayMs = policy.maxDelayMs ?? 100;
    try {
      this.#fd = openSync(this.#partial, 'wx');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new Error(
        code === 'EEXIST'
          ? `${this.#partial} exists: a recording to ${path} is running, or one was cut short (switchboard tape replay ${this.#partial} --allow-truncated reads it); remove it to record again`
          : `cannot create ${this.#partial}: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }

  /** The file being written until the end. */
  get partialPath(): string {
    return this.#partial;
  }

  /** Holds `line`; flushes at once when `urgent` or when `maxLines` are held, else within `maxDelayMs`. */
  write(line: string, urgent: boolean): void {
    if (this.#fd === undefined) return;
    this.#held.push(line);
    if (urgent || this.#held.length >= this.#maxLines) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), this.#maxDelayMs).unref();
  }

  /** Hands every held line to the operating system. */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#fd === undefined || this.#held.length === 0) return;
    const text = `${this.#held.join('\n')}\n`;
    this.#held = [];
    try {
      writeSync(this.#fd, text);
    } catch (err) {
      this.#fail(err);
    }
  }

  /** Writes the end line, fsyncs and renames `<path>.partial` to `<path>`; throws the first failure kept. */
  end(line: string): void {
    this.write(line, true);
    if (this.#failure !== undefined) throw this.#failure;
    const fd = this.#fd;
    if (fd === undefined) throw new Error(`${this.#partial} was already ended or abandoned`);
    this.#fd = undefined;
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(this.#partial, this.#path);
  }

  /** Stops and removes the partial file (the session never began: no tape). */
  abandon(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
    rmSync(this.#partial, { force: true });
  }

  #fail(err: unknown): void {
    this.#failure ??= err;
    if (this.#fd !== undefined) {
      try {
        closeSync(this.#fd);
      } catch {
        // Already failing; the first failure is the one reported.
      }
    }
    this.#fd = undefined;
  }
}
