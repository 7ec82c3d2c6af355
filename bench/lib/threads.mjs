// CPU time per thread of a process, from /proc/PID/task/*/stat, so that a figure of "the gateway's
// CPU" can be taken apart: the main thread (the event loop: the gateway's own work and V8's
// main-thread GC pauses), V8's platform threads (parallel and concurrent GC helpers, background
// compilation), the libuv thread pool (fs, dns, crypto), and each worker thread (the trace store's
// writer). Whole-process CPU mixes them; a change that allocates more shows up off the main thread.
//
// Node 20 names every thread "node" (/proc/PID/task/TID/comm), so the kinds are told apart by when
// each was made, which Node does in a fixed order:
// - the main thread is the one whose TID is the PID;
// - the platform threads are made first, before any JavaScript runs: the `--v8-pool-size` workers
//   (default 4) and the delayed-task scheduler, the first 5 threads after the main one; then the
//   thread that waits for SIGUSR1 to start the inspector (no CPU), counted as `other`;
// - the libuv pool is made on its first use, all `UV_THREADPOOL_SIZE` (default 4) threads at once;
// - a worker thread is one thread per `new Worker`.
// So past the platform threads, a run of 4 threads made in the same clock tick is the libuv pool and
// any other thread is a worker. Newer Node (22+) names its threads, and a name other than "node" is
// used as is. The classification is a heuristic, stated in the bench output as such.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_S = 100;
const PLATFORM_THREADS = 5;
const POOL_SIZE = Number(process.env.UV_THREADPOOL_SIZE ?? 4);

/** { tid, comm, cpuMs, startTicks } of every thread of `pid`, in TID order (empty when unreadable). */
export function threadsOf(pid) {
  let tids;
  try {
    tids = readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [];
  }
  const out = [];
  for (const tid of tids.sort((a, b) => a - b)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[11] utime, fields[12] stime, fields[19] starttime (clock ticks since boot).
      out.push({
        tid,
        comm,
        cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S,
        startTicks: Number(fields[19]),
      });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** The kind of each thread of a `threadsOf` listing: tid -> 'main' | 'v8-platform' | 'libuv-pool' | 'worker' | 'other'. */
export function classifyThreads(pid, threads) {
  const kinds = new Map();
  const rest = [];
  for (const t of threads) {
    if (t.tid === pid) kinds.set(t.tid, 'main');
    else if (t.comm !== 'node' && t.comm !== '') kinds.set(t.tid, t.comm);
    else rest.push(t);
  }
  rest.sort((a, b) => a.tid - b.tid);
  let i = 0;
  for (; i < Math.min(PLATFORM_THREADS, rest.length); i++) kinds.set(rest[i].tid, 'v8-platform');
  // The inspector's signal thread, made right after the platform (within 0.1 s).
  if (i < rest.length && rest[i].startTicks - rest[0].startTicks <= 10) kinds.set(rest[i++].tid, 'other');
  while (i < rest.length) {
    const run = rest.slice(i, i + POOL_SIZE);
    const burst = run.length === POOL_SIZE && run.every((t) => t.startTicks === run[0].startTicks);
    if (burst) {
      for (const t of run) kinds.set(t.tid, 'libuv-pool');
      i += POOL_SIZE;
    } else {
      kinds.set(rest[i].tid, 'worker');
      i++;
    }
  }
  return kinds;
}

/**
 * A snapshot of a process's CPU by thread kind: { main, 'v8-platform', 'libuv-pool', worker, total }
 * in milliseconds (a kind absent from the process is 0), plus `threads` (the raw listing).
 */
export function threadCpuOf(pid) {
  const threads = threadsOf(pid);
  const kinds = classifyThreads(pid, threads);
  const byKind = { main: 0, 'v8-platform': 0, 'libuv-pool': 0, worker: 0, other: 0, total: 0 };
  for (const t of threads) {
    const kind = kinds.get(t.tid) ?? 'worker';
    byKind[kind] = (byKind[kind] ?? 0) + t.cpuMs;
    byKind.total += t.cpuMs;
  }
  return { ...byKind, threads: threads.map((t) => ({ ...t, kind: kinds.get(t.tid) })) };
}

/** The kinds every reading has, in the order the benches print them. */
export const THREAD_KINDS = ['main', 'v8-platform', 'libuv-pool', 'worker', 'other'];

/**
 * CPU by thread kind between two `threadCpuOf` snapshots, in ms. A thread that ended in between
 * loses what it used since the first snapshot (its last reading is gone); one that started counts
 * from zero.
 */
export function threadCpuDelta(before, after) {
  const prev = new Map(before.threads.map((t) => [t.tid, t.cpuMs]));
  const out = Object.fromEntries([...THREAD_KINDS, 'total'].map((k) => [k, 0]));
  for (const t of after.threads) {
    const d = t.cpuMs - (prev.get(t.tid) ?? 0);
    const kind = THREAD_KINDS.includes(t.kind) ? t.kind : 'other';
    out[kind] += d;
    out.total += d;
  }
  return out;
}
