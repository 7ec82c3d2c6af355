// Preloaded into a gateway under test with `node --import bench/lib/loop-monitor.mjs ...` (adds nothing
// to the gateway itself): in the main thread, every SWITCHBOARD_BENCH_LOOP_EVERY_MS (default 5000) it appends one JSON line
// to SWITCHBOARD_BENCH_LOOP_FILE with the event loop's delay over the interval (perf_hooks
// monitorEventLoopDelay, 10 ms resolution: p50, p99 and max in ms), its utilisation, and the process's
// memory (rss, heapUsed, external, arrayBuffers, in bytes). The timer is unref'd, the write is a few
// hundred bytes: its own cost is far below what it measures.
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

const file = process.env.SWITCHBOARD_BENCH_LOOP_FILE;
// Worker threads inherit --import: the trace worker's loop is busy by design (it writes SQLite in
// long synchronous transactions), so only the main thread, the one that serves clients, reports.
if (file && isMainThread) {
  const every = Number(process.env.SWITCHBOARD_BENCH_LOOP_EVERY_MS ?? 5000);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const elu = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const memory = process.memoryUsage();
    const line = {
      t: Date.now(),
      p50: delay.percentile(50) / 1e6,
      p99: delay.percentile(99) / 1e6,
      max: delay.max / 1e6,
      elu,
      rss: memory.rss,
      heapUsed: memory.heapUsed,
      external: memory.external,
      arrayBuffers: memory.arrayBuffers,
    };
    delay.reset();
    try {
      appendFileSync(file, `${JSON.stringify(line)}\n`);
    } catch {
      // The bench's scratch directory is gone: nothing left to report to.
    }
  }, every);
  timer.unref();
}
