/**
 * A `switchboard stdio` process driven line by line for the suites that throw raw input at it: lines
 * are written as given (nothing fixes them up), every stdout line is kept with its raw text, and a
 * test waits for answers by id key.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { CLI, tempDir } from './cli.js';
import { idKey } from './hostile-messages.js';

export interface StdioLine {
  readonly raw: string;
  /** The parsed line, or undefined when stdout carried something that is not JSON (a defect). */
  readonly value: unknown;
}

export class StdioAnswers {
  readonly dataDir: string;
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: StdioLine[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** How the process ended, once it has: a wait for output then fails at once instead of timing out. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #pending = '';
  #waiters = new Set<() => void>();

  constructor(upstream: readonly string[], options: { args?: readonly string[]; dataDir?: string } = {}) {
    this.dataDir = options.dataDir ?? tempDir('switchboard-stdio-answers-');
    this.child = spawn(
      process.execPath,
      [
        CLI,
        'stdio',
        '--data-dir',
        this.dataDir,
        '--log-level',
        'warn',
        ...(options.args ?? []),
        '--',
        ...upstream,
      ],
      { stdio: 'pipe' },
    );
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.#pending += chunk;
      let nl = this.#pending.indexOf('\n');
      while (nl >= 0) {
        const raw = this.#pending.slice(0, nl);
        this.#pending = this.#pending.slice(nl + 1);
        let value: unknown;
        try {
          value = JSON.parse(raw);
        } catch {
          value = undefined;
        }
        this.lines.push({ raw, value });
        nl = this.#pending.indexOf('\n');
      }
      for (const wake of [...this.#waiters]) wake();
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-64_000);
    });
    // A gateway that exits mid-write must fail the test, not crash the runner with EPIPE.
    this.child.stdin.on('error', () => undefined);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  write(text: string): void {
    this.child.stdin.write(`${text}\n`);
  }

  /**
   * The answers (responses) among the lines from index `from`, each with its id key; the elements
   * of a batch answer (a line holding an array) count one by one.
   */
  answersSince(from: number): { key: string; raw: string; message: Record<string, unknown> }[] {
    const out: { key: string; raw: string; message: Record<string, unknown> }[] = [];
    for (const line of this.lines.slice(from)) {
      const values = Array.isArray(line.value) ? (line.value as unknown[]) : [line.value];
      for (const v of values) {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) continue;
        const m = v as Record<string, unknown>;
        if (!('result' in m) && !('error' in m)) continue;
        out.push({ key: idKey(JSON.stringify(m.id ?? null)), raw: line.raw, message: m });
      }
    }
    return out;
  }

  /** Waits until `ready()` holds after some output, or fails after `timeoutMs`. */
  async waitFor(ready: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (ready()) return;
    if (this.exit !== undefined)
      throw new Error(`the gateway has exited (${JSON.stringify(this.exit)}); waiting for ${what}`);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}\nstderr: ${this.stderr.slice(-2000)}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        if (!ready()) {
          if (this.exit === undefined) return;
          clearTimeout(timer);
          this.#waiters.delete(check);
          reject(
            new Error(
              `the gateway exited (${JSON.stringify(this.exit)}) while waiting for ${what}\nstderr: ${this.stderr.slice(-2000)}`,
            ),
          );
          return;
        }
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }

  /** Sends a request and waits for its answer. */
  async request(id: number, method: string, params: Record<string, unknown> = {}, timeoutMs = 30_000) {
    const from = this.lines.length;
    this.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    const key = JSON.stringify(id);
    await this.waitFor(
      () => this.answersSince(from).some((a) => a.key === key),
      timeoutMs,
      `the answer to ${key}`,
    );
    return this.answersSince(from).find((a) => a.key === key)!.message;
  }

  async stop(): Promise<void> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
