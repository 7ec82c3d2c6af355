/**
 * What the hostile-input and fault suites assert about a gateway process besides each answer: that
 * it lives, that `/health` keeps answering within a second throughout (its event loop is never
 * blocked for long), and how much memory it holds. Measured from outside the process, on a
 * connection of its own, so that nothing the test sends on other connections can queue in front of
 * the probe.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Client } from 'undici';

export { rssBytes } from './proc-status.js';

export interface HealthReport {
  readonly samples: number;
  /** The slowest answer, in ms (a probe that never answered counts as its timeout). */
  readonly maxMs: number;
  /** Probes that failed or took longer than the limit, with what happened. */
  readonly failures: readonly string[];
}

/**
 * Asks `GET /health` every `everyMs` until stopped. A probe slower than `limitMs` (or failing) is a
 * failure; the next probe starts only after the previous one ended, so a hung gateway shows as one
 * long probe, not a pile of them.
 */
export class HealthWatch {
  readonly #client: Client;
  readonly #everyMs: number;
  readonly #limitMs: number;
  #running = true;
  #samples = 0;
  #maxMs = 0;
  readonly #failures: string[] = [];
  readonly #loop: Promise<void>;

  constructor(base: string, options: { everyMs?: number; limitMs?: number } = {}) {
    this.#client = new Client(base, { pipelining: 1, keepAliveTimeout: 60_000 });
    this.#everyMs = options.everyMs ?? 100;
    this.#limitMs = options.limitMs ?? 1000;
    this.#loop = this.#run();
  }

  async #probe(): Promise<void> {
    const started = performance.now();
    try {
      const response = await this.#client.request({
        path: '/health',
        method: 'GET',
        headersTimeout: this.#limitMs * 5,
        bodyTimeout: this.#limitMs * 5,
      });
      const text = await response.body.text();
      const ms = performance.now() - started;
      this.#maxMs = Math.max(this.#maxMs, ms);
      if (response.statusCode !== 200)
        this.#failures.push(`status ${response.statusCode}: ${text.slice(0, 200)}`);
      else if (ms > this.#limitMs) this.#failures.push(`answered in ${Math.round(ms)} ms`);
    } catch (error) {
      const ms = performance.now() - started;
      this.#maxMs = Math.max(this.#maxMs, ms);
      this.#failures.push(`failed after ${Math.round(ms)} ms: ${String(error)}`);
    }
    this.#samples++;
  }

  async #run(): Promise<void> {
    while (this.#running) {
      await this.#probe();
      await new Promise((resolve) => setTimeout(resolve, this.#everyMs));
    }
  }

  /** Stops probing and reports. */
  async stop(): Promise<HealthReport> {
    this.#running = false;
    await this.#loop;
    await this.#client.close().catch(() => undefined);
    return { samples: this.#samples, maxMs: Math.round(this.#maxMs), failures: [...this.#failures] };
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
