// Starting and stopping the processes a suite measures. Every process is started in its own process
// group (detached) so that stopping it also stops the children it spawned (upstream servers), and is
// remembered so that an interrupted bench cleans up after itself. Only processes started here are
// ever signalled.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const started = new Set();

function signalGroup(child, signal, evenIfExited = false) {
  if (child.pid === undefined) return;
  if (!evenIfExited && (child.exitCode !== null || child.signalCode !== null)) return;
  if (evenIfExited) {
    // The leader has exited; its group may still hold children (an upstream it failed to stop).
    try {
      process.kill(-child.pid, signal);
    } catch {}
    return;
  }
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {}
  }
}

function killAllSync() {
  for (const child of started) signalGroup(child, 'SIGKILL');
}
process.on('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killAllSync();
    process.exit(130);
  });
}

/**
 * Spawns `command args` and resolves once `readyPattern` matches its stdout or stderr (`readyStream`:
 * 'stdout', 'stderr' or 'any'), or immediately when there is no pattern. Output is kept (bounded) for
 * error messages. `stdin: 'pipe'` leaves stdin open for the caller.
 */
export function startProcess(command, args, options = {}) {
  const { readyPattern, readyStream = 'any', env, cwd, timeoutMs = 30_000, stdin = 'ignore', name } = options;
  const label = name ?? `${command} ${args.join(' ')}`;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: env ?? process.env,
      stdio: [stdin, 'pipe', 'pipe', ...(options.ipc ? ['ipc'] : [])],
      detached: true,
    });
    started.add(child);
    let out = '';
    let err = '';
    let settled = false;
    // 'exit', not 'close': a child with an IPC channel that was disconnected may never emit 'close'.
    const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
    exited.then(() => started.delete(child));
    const keep = (buffer, chunk) => (buffer.length > 64_000 ? buffer.slice(-32_000) : buffer) + chunk;
    const handle = {
      child,
      pid: child.pid,
      match: undefined,
      exited,
      output: () => `--- stdout ---\n${out.slice(-4000)}\n--- stderr ---\n${err.slice(-4000)}`,
      /** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the process has exited. */
      async stop(graceMs = 3000) {
        signalGroup(child, 'SIGTERM');
        const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
        // Children that outlived their parent (none should) are not left behind.
        signalGroup(child, 'SIGKILL', true);
      },
    };
    const fail = (message) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void handle.stop(500);
      reject(new Error(`${label}: ${message}\n${handle.output()}`));
    };
    const check = (stream) => {
      if (settled || !readyPattern) return;
      if (readyStream !== 'any' && readyStream !== stream) return;
      const m = readyPattern.exec(stream === 'stdout' ? out : err);
      if (!m) return;
      settled = true;
      clearTimeout(timer);
      handle.match = m;
      resolvePromise(handle);
    };
    if (!options.rawStdout) {
      child.stdout.setEncoding('utf8').on('data', (c) => {
        out = keep(out, c);
        check('stdout');
      });
    }
    child.stderr.setEncoding('utf8').on('data', (c) => {
      err = keep(err, c);
      check('stderr');
    });
    child.on('error', (e) => fail(`could not start: ${e.message}`));
    exited.then(({ code, signal }) => fail(`exited (${signal ?? code}) before it was ready`));
    const timer = setTimeout(() => fail(`not ready after ${timeoutMs} ms`), timeoutMs);
    if (!readyPattern) {
      settled = true;
      clearTimeout(timer);
      resolvePromise(handle);
    }
  });
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort() {
  return new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePromise(port));
    });
  });
}

/** Polls until `url` answers anything over HTTP (some peers print "listening" before they listen). */
export async function waitForHttp(url, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`${url} did not answer within ${timeoutMs} ms: ${error.message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Resident set size of a process in bytes, from /proc (NaN when unavailable). */
export function rssOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Total CPU time (user + system) a process has used so far, in milliseconds, from /proc. */
export function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11] = utime, fields[12] = stime (clock ticks; 100 Hz on Linux)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The pids of a process's direct children, from /proc (empty when unavailable). */
export function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** CPU milliseconds of a process and all its descendants. */
export function treeCpuMs(pid) {
  let total = cpuMsOf(pid);
  for (const c of childrenOf(pid)) total += treeCpuMs(c);
  return total;
}
