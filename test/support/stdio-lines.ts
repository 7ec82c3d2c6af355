/**
 * Drives the built `switchboard stdio` line by line, as a raw client: writes any text to its stdin
 * (what the SDK cannot send: deep bodies, batches, ids it would never make) and waits for what it
 * writes back.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { vi } from 'vitest';
import { CLI } from './cli.js';

export class StdioLines {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every line the gateway wrote to stdout, parsed. */
  readonly out: unknown[] = [];
  #buffer = '';
  #stderr = '';
  readonly exited: Promise<number | null>;

  constructor(args: readonly string[], env?: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [CLI, 'stdio', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(env === undefined ? {} : { env }),
    });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.#buffer += chunk;
      let newline = this.#buffer.indexOf('\n');
      while (newline >= 0) {
        const line = this.#buffer.slice(0, newline);
        this.#buffer = this.#buffer.slice(newline + 1);
        if (line.trim().length > 0) this.out.push(JSON.parse(line) as unknown);
        newline = this.#buffer.indexOf('\n');
      }
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.#stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.child.once('close', (code) => resolve(code)));
  }

  get stderr(): string {
    return this.#stderr;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  writeLine(text: string): void {
    this.child.stdin.write(`${text}\n`);
  }

  /** Waits for the first line after the first `from` lines that `match` accepts. */
  async next<T = Record<string, unknown>>(
    what: string,
    match: (line: unknown) => boolean,
    from = 0,
    timeout = 20_000,
  ): Promise<T> {
    return vi.waitFor(
      () => {
        if (!this.alive)
          throw new Error(`switchboard stdio exited while waiting for ${what}\n${this.#stderr}`);
        const found = this.out.slice(from).find(match);
        if (found === undefined) throw new Error(`no ${what} yet`);
        return found as T;
      },
      { timeout, interval: 20 },
    );
  }

  /** The response to `id` (exactly that id: 1 and "1" differ) written after line `from`. */
  response<T = Record<string, unknown>>(id: unknown, from = 0): Promise<T> {
    return this.next<T>(
      `the response to ${JSON.stringify(id)}`,
      (line) =>
        typeof line === 'object' &&
        line !== null &&
        !Array.isArray(line) &&
        !('method' in line) &&
        Object.is((line as { id?: unknown }).id, id),
      from,
    );
  }

  /** Initializes with `version`, as a client would, and sends `initialized`. */
  async initialize(version: string): Promise<void> {
    const from = this.out.length;
    this.writeLine(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    );
    await this.response('init', from);
    this.writeLine(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  }

  /** Ends stdin (the client goes away) and waits for the gateway to exit. */
  async close(): Promise<number | null> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
