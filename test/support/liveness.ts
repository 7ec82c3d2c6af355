/**
 * What the hostile-input and fault suites assert about a gateway process besides each answer: that
 * it lives, that `/health` keeps answering within a second throughout (its event loop is never
 * blocked for long), and how much memory it holds. Measured from outside the process, on a
 * connection of its own, so that nothing the test sends on other connections can queue in front of
 * the probe.
 *
 * A loaded machine delays every process alike (a CI run under load saw `/health` take 1.8 s while
 * nothing in the gateway was blocked), so each probe runs beside the same probe of a control: a bare
 * Node HTTP server in a process of its own. A probe fails when the gateway is slower than the
 * control by more than the limit, which a blocked event loop is and a busy machine is not.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Client } from 'undici';

export { rssBytes } from './proc-status.js';

export interface HealthReport {
  readonly samples: number;
  /** The slowest answer, in ms (a probe that never answered counts as its timeout). */
  readonly maxMs: number;
  /** The control's slowest answer over the same probes, in ms: how busy the machine was. */
  readonly controlMaxMs: number;
  /** Probes that failed or were slower than the control by more than the limit, with what happened. */
  readonly failures: readonly string[];
}

/** A bare HTTP server in a process of its own, answering every request at once: the control. */
const CONTROL_SERVER = [
  "const server = require('node:http').createServer((_req, res) => res.end('ok'));",
  "server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));",
  "process.stdin.on('end', () => process.exit(0)).resume();",
].join('\n');

async function startControl(): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['-e', CONTROL_SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.once('exit', (code) => reject(new Error(`the control server exited (${code})`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

/** One GET on `client`: how long it took, and what went wrong if anything did. */
async function timedGet(
  client: Client,
  path: string,
  timeoutMs: number,
): Promise<{ ms: number; problem?: string }> {
  const started = performance.now();
  try {
    const response = await client.request({
      path,
      method: 'GET',
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await response.body.text();
    const ms = performance.now() - started;
    return response.statusCode === 200
      ? { ms }
      : { ms, problem: `status ${response.statusCode}: ${text.slice(0, 200)}` };
  } catch (error) {
    const ms = performance.now() - started;
    return { ms, problem: `failed after ${Math.round(ms)} ms: ${String(error)}` };
  }
}

/**
 * Asks `GET /health` every `everyMs` until stopped, beside the same request to the control. A probe
 * that fails, or is slower than the control's by more than `limitMs`, is a failure; the next probe
 * starts only after the previous one ended, so a hung gateway shows as one long probe, not a pile
 * of them.
 */
export class HealthWatch {
  readonly #client: Client;
  readonly #everyMs: number;
  readonly #limitMs: number;
  #running = true;
  #samples = 0;
  #maxMs = 0;
  #controlMaxMs = 0;
  readonly #failures: string[] = [];
  readonly #loop: Promise<void>;

  constructor(base: string, options: { everyMs?: number; limitMs?: number } = {}) {
    this.#client = new Client(base, { pipelining: 1, keepAliveTimeout: 60_000 });
    this.#everyMs = options.everyMs ?? 100;
    this.#limitMs = options.limitMs ?? 1000;
    this.#loop = this.#run();
  }

  async #probe(control: Client): Promise<void> {
    const timeout = this.#limitMs * 5;
    const [gateway, reference] = await Promise.all([
      timedGet(this.#client, '/health', timeout),
      timedGet(control, '/', timeout),
    ]);
    this.#maxMs = Math.max(this.#maxMs, gateway.ms);
    this.#controlMaxMs = Math.max(this.#controlMaxMs, reference.ms);
    if (gateway.problem !== undefined) this.#failures.push(gateway.problem);
    else if (gateway.ms - reference.ms > this.#limitMs)
      this.#failures.push(
        `answered in ${Math.round(gateway.ms)} ms (the control in ${Math.round(reference.ms)} ms)`,
      );
    this.#samples++;
  }

  async #run(): Promise<void> {
    const { child, base } = await startControl();
    const control = new Client(base, { pipelining: 1, keepAliveTimeout: 60_000 });
    try {
      while (this.#running) {
        await this.#probe(control);
        await new Promise((resolve) => setTimeout(resolve, this.#everyMs));
      }
    } finally {
      await control.close().catch(() => undefined);
      child.stdin!.end();
    }
  }

  /** Stops probing and reports. */
  async stop(): Promise<HealthReport> {
    this.#running = false;
    await this.#loop;
    await this.#client.close().catch(() => undefined);
    return {
      samples: this.#samples,
      maxMs: Math.round(this.#maxMs),
      controlMaxMs: Math.round(this.#controlMaxMs),
      failures: [...this.#failures],
    };
  }
}

/** Whether a process is alive (signal 0 checks without signalling). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids of the live children of `ppid` whose command line contains `match` (Linux `/proc`). */
export function childPids(ppid: number, match: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces and parentheses): state, then ppid.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== ppid || fields[0] === 'Z') continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(match)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}
