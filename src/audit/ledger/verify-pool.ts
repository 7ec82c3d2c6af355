/**
 * The worker threads of a parallel `verifyLedger`, started on first use and reused for every
 * segment: a task goes to an idle worker (one started for it while fewer than the pool's size
 * run), else to the least busy one, and each worker checks its tasks in the order sent. A task's
 * promise never rejects: `undefined` means no result (the worker could not start, failed, or
 * reported an I/O error), and the verifier then walks that segment itself.
 */
import { Worker } from 'node:worker_threads';
import type { SegmentResult, SegmentTask } from './verify-segment.js';

/** The verify worker's module (tests start it from the TypeScript sources). */
export interface VerifyWorkerModule {
  readonly url: URL;
}

interface PoolWorker {
  /** `undefined` once it could not start, failed or ended. */
  worker: Worker | undefined;
  /** How to settle its tasks without an answer yet, by id. */
  readonly waiting: Map<number, (result: SegmentResult | undefined) => void>;
}

function startWorker(module: VerifyWorkerModule): PoolWorker {
  const waiting: PoolWorker['waiting'] = new Map();
  let worker: Worker;
  try {
    worker = new Worker(module.url, { stdout: true, stderr: true });
  } catch {
    return { worker: undefined, waiting };
  }
  const self: PoolWorker = { worker, waiting };
  // It prints nothing of its own; whatever it might must not mix into the CLI's output.
  worker.stdout.resume();
  worker.stderr.resume();
  worker.on('message', (message: { id: number; result?: SegmentResult }) => {
    const settle = waiting.get(message.id);
    waiting.delete(message.id);
    settle?.(message.result);
  });
  const gone = (): void => {
    self.worker = undefined;
    for (const settle of waiting.values()) settle(undefined);
    waiting.clear();
  };
  worker.on('error', gone);
  worker.on('exit', gone);
  return self;
}

export class VerifyPool {
  readonly #module: VerifyWorkerModule;
  readonly #size: number;
  readonly #workers: PoolWorker[] = [];
  #ids = 0;

  constructor(module: VerifyWorkerModule, size: number) {
    this.#module = module;
    this.#size = size;
  }

  /** Workers with nothing to do: running and waiting for a task, or not started yet. */
  get idle(): number {
    let idle = this.#size - this.#workers.length;
    for (const w of this.#workers) if (w.worker !== undefined && w.waiting.size === 0) idle++;
    return idle;
  }

  /** Checks `task` in a worker; see the module comment. */
  run(task: SegmentTask): Promise<SegmentResult | undefined> {
    let chosen: PoolWorker | undefined;
    for (const w of this.#workers) {
      if (w.worker !== undefined && (chosen === undefined || w.waiting.size < chosen.waiting.size))
        chosen = w;
    }
    if ((chosen === undefined || chosen.waiting.size > 0) && this.#workers.length < this.#size) {
      chosen = startWorker(this.#module);
      this.#workers.push(chosen);
    }
    const worker = chosen?.worker;
    if (chosen === undefined || worker === undefined) return Promise.resolve(undefined);
    const { waiting } = chosen;
    const id = this.#ids++;
    return new Promise((resolve) => {
      waiting.set(id, resolve);
      worker.postMessage({ id, task });
    });
  }

  /** Stops every worker (work in progress is dropped; its promises resolve `undefined`). */
  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w?.worker?.terminate()));
  }
}
