// Suite "soak" (issue 18): `switchboard serve` for ten minutes (one with --quick) at a steady load of
// tool calls, with the faults of real life mixed in, recording its memory and event-loop delay over time.
//
// The gateway fronts three stdio upstreams: the echo fixture (the load), test/fixtures/misbehaving-server.mjs
// (`odd`, SIGKILLed every 30 s, so it restarts under load) and test/fixtures/flood-server.mjs (`flood`, which
// once a minute sends a burst of log notifications larger than a stream's bound). Trace and audit ledger run
// on their defaults. The load is open-loop: RATE calls per second, whatever the answers take (a closed loop
// would slow down with the gateway and hide it), 90% to echo, 10% to odd, over 8 sessions. Four more
// sessions set their log level and hold GET streams on raw sockets that never read: each burst must cut
// them (they reconnect at once), not grow the gateway's memory.
//
// Inside the gateway, bench/lib/loop-monitor.mjs (preloaded with --import, nothing added to the gateway's
// code) writes the event loop's delay (p50, p99, max) and the process's memory every 5 s. The baseline is
// the same run: the figures of the last fifth of the run are compared with those of its second fifth (after
// the warm-up), so "flat" means the end looks like the start.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Pool } from 'undici';
import { HttpMcpSession } from '../lib/http-client.mjs';
import { BENCH_DIR, CLI, FIXTURES, NODE, ROOT } from '../lib/paths.mjs';
import { childrenOf, sleep, startProcess } from '../lib/procs.mjs';
import { fmtBytes, fmtNum, median, summarize } from '../lib/stats.mjs';

const RATE = 400;
const TICK_MS = 10;
const SAMPLE_MS = 5000;
const RESTART_EVERY_MS = 30_000;
const FLOOD_EVERY_MS = 120_000;
/**
 * A burst: 4,000 × 8 KiB, about 32 MiB to each slow reader. It must exceed what the kernel buffers
 * for a loopback socket (several MiB each way) on top of the gateway's own 4 MiB bound, or a
 * reader that never reads is never behind.
 */
const FLOOD = { count: 4000, bytes: 8192 };
const SLOW_READERS = 4;
const LOAD_SESSIONS = 8;
/** Outstanding calls beyond which the client stops issuing (and counts what it skipped). */
const MAX_OUTSTANDING = 4000;
const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');
const FLOOD_SERVER = join(ROOT, 'test/fixtures/flood-server.mjs');

function config() {
  const q = (s) => JSON.stringify(s);
  const upstream = (name, script, extra = []) => [
    `  ${name}:`,
    '    transport: stdio',
    `    command: ${q(NODE)}`,
    `    args: [${q(script)}]`,
    ...extra,
  ];
  return [
    'upstreams:',
    ...upstream('echo', FIXTURES.echoServer),
    ...upstream('odd', MISBEHAVING, ['    restart: { initialDelay: 100ms, maxDelay: 1s }']),
    ...upstream('flood', FLOOD_SERVER),
    'sessions:',
    '  maxSessionsPerPrincipal: 10000',
    '',
  ].join('\n');
}

/** The pids of the gateway's upstream children whose command line names `script`. */
function upstreamPids(gatewayPid, script) {
  return childrenOf(gatewayPid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script);
    } catch {
      return false;
    }
  });
}

/** A GET stream on a raw socket that is paused at once: a reader that never reads. */
function slowReader(url, session) {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  socket.on('error', () => undefined);
  socket.write(
    [
      `GET ${u.pathname} HTTP/1.1`,
      `Host: ${u.host}`,
      'Accept: text/event-stream',
      `Mcp-Session-Id: ${session.sessionId}`,
      `Mcp-Protocol-Version: ${session.protocolVersion}`,
      '',
      '',
    ].join('\r\n'),
  );
  socket.pause();
  return socket;
}

class Buckets {
  constructor() {
    this.list = [];
  }

  at(t) {
    const i = Math.floor(t / SAMPLE_MS);
    while (this.list.length <= i)
      this.list.push({
        sent: 0,
        ok: 0,
        rpcErrorEcho: 0,
        rpcErrorOdd: 0,
        failed: 0,
        skipped: 0,
        latencies: [],
      });
    return this.list[i];
  }
}

export default {
  name: 'soak',
  order: 95,
  title:
    'Soak: steady load with slow readers and upstream restarts, memory and event-loop delay over time (issue 18)',
  duration: { full: '~11 min', quick: '~1.5 min' },
  async run(ctx) {
    const durationMs = ctx.quick ? 60_000 : 600_000;
    const configFile = join(ctx.workDir, 'soak.yaml');
    writeFileSync(configFile, config());
    const loopFile = join(ctx.workDir, 'loop.jsonl');
    writeFileSync(loopFile, '');
    const proc = await startProcess(
      NODE,
      [
        ...(ctx.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${ctx.profileDir}`] : []),
        '--import',
        join(BENCH_DIR, 'lib/loop-monitor.mjs'),
        CLI,
        'serve',
        '--config',
        configFile,
        '--port',
        '0',
        '--data-dir',
        join(ctx.workDir, 'data'),
        '--log-level',
        'warn',
      ],
      {
        readyPattern: /serving MCP on (http:\/\/\S+\/mcp)/,
        readyStream: 'stderr',
        name: 'switchboard serve (soak)',
        env: {
          ...process.env,
          SWITCHBOARD_BENCH_LOOP_FILE: loopFile,
          SWITCHBOARD_BENCH_LOOP_EVERY_MS: String(SAMPLE_MS),
        },
      },
    );
    const url = proc.match[1];
    const pool = new Pool(new URL(url).origin, {
      connections: 32,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
    });
    const events = { restarts: 0, floods: 0, readerCuts: 0 };
    try {
      const sessions = [];
      for (let i = 0; i < LOAD_SESSIONS; i++) {
        const s = new HttpMcpSession(url, pool);
        await s.initialize(`soak-load-${i}`);
        sessions.push(s);
      }
      // Readers that never read cannot see their stream cut (the end waits behind unread data):
      // cuts are counted from the gateway's log, and every reader is replaced before each burst.
      proc.child.stderr.on('data', (chunk) => {
        events.readerCuts += String(chunk).split('cutting an SSE stream').length - 1;
      });
      const readerSessions = [];
      for (let i = 0; i < SLOW_READERS; i++) {
        const s = new HttpMcpSession(url, pool);
        await s.initialize(`soak-reader-${i}`);
        await s.post({
          jsonrpc: '2.0',
          id: s.nextId++,
          method: 'logging/setLevel',
          params: { level: 'info' },
        });
        readerSessions.push(s);
      }
      let readers = [];
      const reopenReaders = () => {
        for (const r of readers) r.destroy();
        readers = readerSessions.map((s) => slowReader(url, s));
      };
      reopenReaders();
      const flooder = sessions[0];

      ctx.log(`${durationMs / 1000} s at ${RATE} calls/s; odd killed every ${RESTART_EVERY_MS / 1000} s`);
      const buckets = new Buckets();
      const t0 = performance.now();
      let outstanding = 0;
      let n = 0;
      const inFlight = new Set();
      const call = (session, tool) => {
        const bucket = buckets.at(performance.now() - t0);
        bucket.sent++;
        outstanding++;
        const started = performance.now();
        const p = session
          .post({
            jsonrpc: '2.0',
            id: session.nextId++,
            method: 'tools/call',
            params: { name: tool, arguments: { message: `soak ${n}` } },
          })
          .then(
            ({ status, messages }) => {
              const answer = messages.find((m) => m.result !== undefined || m.error !== undefined);
              const done = buckets.at(started - t0);
              if (status !== 200 || answer === undefined) done.failed++;
              else if (answer.error) {
                if (tool.startsWith('odd')) done.rpcErrorOdd++;
                else done.rpcErrorEcho++;
              } else {
                done.ok++;
                done.latencies.push(performance.now() - started);
              }
            },
            () => {
              buckets.at(started - t0).failed++;
            },
          )
          .finally(() => {
            outstanding--;
            inFlight.delete(p);
          });
        inFlight.add(p);
      };

      const killer = setInterval(() => {
        for (const pid of upstreamPids(proc.pid, 'misbehaving-server')) {
          try {
            process.kill(pid, 'SIGKILL');
            events.restarts++;
          } catch {}
        }
      }, RESTART_EVERY_MS);
      const flood = () => {
        // A burst needs time to be cut before the run ends: none starts in its last minute (quarter).
        if (performance.now() - t0 > durationMs - Math.min(60_000, durationMs / 4)) return;
        events.floods++;
        reopenReaders();
        flooder
          .post({
            jsonrpc: '2.0',
            id: flooder.nextId++,
            method: 'tools/call',
            params: {
              name: 'flood__flood',
              arguments: { ...FLOOD, tag: `soak-${events.floods}` },
            },
          })
          .catch(() => undefined);
      };
      const flooding = setInterval(flood, FLOOD_EVERY_MS);
      setTimeout(flood, 15_000);

      // Open loop: each tick issues what the rate owes since the start, so a slow tick catches up.
      while (performance.now() - t0 < durationMs) {
        const owed = Math.floor(((performance.now() - t0) / 1000) * RATE);
        while (n < owed) {
          if (outstanding >= MAX_OUTSTANDING) {
            buckets.at(performance.now() - t0).skipped++;
          } else {
            const session = sessions[n % sessions.length];
            call(session, n % 10 === 9 ? 'odd__echo' : 'echo__echo');
          }
          n++;
        }
        await sleep(TICK_MS);
      }
      clearInterval(killer);
      clearInterval(flooding);
      await Promise.race([Promise.allSettled([...inFlight]), sleep(60_000)]);
      for (const r of readers) r.destroy();
      const unanswered = outstanding;

      const samples = readFileSync(loopFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
      return report({ samples, buckets: buckets.list, events, unanswered, durationMs, quick: ctx.quick });
    } finally {
      await pool.close().catch(() => undefined);
      await proc.stop(15_000);
    }
  },
};

/** Figures of the samples whose time falls in [from, to) as fractions of the run. */
function window(samples, t0, durationMs, from, to) {
  return samples.filter((s) => {
    const f = (s.t - t0) / durationMs;
    return f >= from && f < to;
  });
}

function report({ samples, buckets, events, unanswered, durationMs, quick }) {
  const t0 = samples.length ? samples[0].t - SAMPLE_MS : 0;
  const early = window(samples, t0, durationMs, 0.2, 0.4);
  const late = window(samples, t0, durationMs, 0.8, 1.01);
  // A leak raises the floor, what is held between bursts; a burst only raises the peaks (V8 keeps
  // the heap it grew to for a while), so the floors are compared and the peaks shown beside them.
  const rssEarly = Math.min(...early.map((s) => s.rss));
  const rssLate = Math.min(...late.map((s) => s.rss));
  const peakEarly = Math.max(...early.map((s) => s.rss));
  const peakLate = Math.max(...late.map((s) => s.rss));
  const heapEarly = median(early.map((s) => s.heapUsed));
  const heapLate = median(late.map((s) => s.heapUsed));
  const p99Early = median(early.map((s) => s.p99));
  const p99Late = median(late.map((s) => s.p99));
  const maxDelay = Math.max(...samples.map((s) => s.max));
  const totals = buckets.reduce(
    (a, b) => ({
      sent: a.sent + b.sent,
      ok: a.ok + b.ok,
      rpcErrorEcho: a.rpcErrorEcho + b.rpcErrorEcho,
      rpcErrorOdd: a.rpcErrorOdd + b.rpcErrorOdd,
      failed: a.failed + b.failed,
      skipped: a.skipped + b.skipped,
    }),
    { sent: 0, ok: 0, rpcErrorEcho: 0, rpcErrorOdd: 0, failed: 0, skipped: 0 },
  );

  // One row a minute (every 10 s in a quick run).
  const rowMs = quick ? 10_000 : 60_000;
  const perRow = rowMs / SAMPLE_MS;
  const rows = [
    '| from | calls/s | ok p50 | ok p99 | echo errors | odd errors | no answer | RSS (max) | heap used (max) | loop delay p99 (max of 5 s) | loop delay max | loop utilisation |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (let i = 0; i * perRow < buckets.length; i++) {
    const bs = buckets.slice(i * perRow, (i + 1) * perRow);
    const ss = samples.filter((s) => s.t - t0 > i * rowMs && s.t - t0 <= (i + 1) * rowMs);
    const lat = summarize(bs.flatMap((b) => b.latencies));
    const sent = bs.reduce((a, b) => a + b.sent, 0);
    rows.push(
      `| ${(i * rowMs) / 1000} s | ${fmtNum(sent / (rowMs / 1000))} | ${fmtNum(lat.p50, 2)} ms | ${fmtNum(lat.p99, 1)} ms | ` +
        `${bs.reduce((a, b) => a + b.rpcErrorEcho, 0)} | ${bs.reduce((a, b) => a + b.rpcErrorOdd, 0)} | ` +
        `${bs.reduce((a, b) => a + b.failed, 0)} | ${fmtBytes(Math.max(...ss.map((s) => s.rss)))} | ` +
        `${fmtBytes(Math.max(...ss.map((s) => s.heapUsed)))} | ${fmtNum(Math.max(...ss.map((s) => s.p99)), 1)} ms | ` +
        `${fmtNum(Math.max(...ss.map((s) => s.max)), 0)} ms | ${fmtNum(median(ss.map((s) => s.elu)) * 100, 0)}% |`,
    );
  }

  const rssRatio = rssLate / rssEarly;
  const p99Ratio = p99Late / p99Early;
  const targets = [
    {
      target: 'RSS flat: its floor in the last fifth ÷ in the second fifth ≤ 1.15',
      measured: `${rssRatio.toFixed(2)}× (${fmtBytes(rssLate)}; peak ${fmtBytes(peakLate)})`,
      baseline: `second fifth ${fmtBytes(rssEarly)} (peak ${fmtBytes(peakEarly)})`,
      met: rssRatio <= 1.15,
    },
    {
      target: 'event-loop delay flat: p99 last fifth ÷ second fifth ≤ 1.5, max < 1 s',
      measured: `${p99Ratio.toFixed(2)}× (${fmtNum(p99Late, 1)} ms), max ${fmtNum(maxDelay, 0)} ms`,
      baseline: `second fifth ${fmtNum(p99Early, 1)} ms`,
      met: p99Ratio <= 1.5 && maxDelay < 1000,
    },
    {
      target: 'every slow reader is cut at every burst (not buffered)',
      measured: `${events.readerCuts} cuts`,
      baseline: `${SLOW_READERS} readers × ${events.floods} bursts`,
      met: events.readerCuts >= SLOW_READERS * events.floods,
    },
    {
      target: 'every call answered; echo never fails',
      measured: `${totals.failed + unanswered} without an answer, ${totals.rpcErrorEcho} echo errors of ${fmtNum(totals.sent)} calls`,
      baseline: `${totals.rpcErrorOdd} odd errors (its ${events.restarts} restarts)`,
      met: totals.failed + unanswered === 0 && totals.rpcErrorEcho === 0 && totals.skipped === 0,
    },
  ];
  const markdown = [
    `${durationMs / 1000} s of \`tools/call\` at ${RATE}/s open-loop (90% \`echo__echo\`, 10% \`odd__echo\`) over ${LOAD_SESSIONS} sessions`,
    `and 32 connections; \`odd\` (misbehaving fixture) SIGKILLed every ${RESTART_EVERY_MS / 1000} s (${events.restarts} restarts);`,
    `${SLOW_READERS} sessions at log level info hold GET streams on sockets that never read, and \`flood__flood\` sends`,
    `${fmtNum(FLOOD.count)} × ${FLOOD.bytes / 1024} KiB log notifications every ${FLOOD_EVERY_MS / 60_000} minutes (${events.floods} bursts; ${events.readerCuts} slow streams cut, counted in the gateway's log; the readers are replaced before each burst).`,
    'Trace and audit ledger on their defaults. Memory and event-loop delay are read inside the gateway',
    '(`bench/lib/loop-monitor.mjs`, preloaded with `--import`), every 5 s. "Flat" compares the last fifth of the run',
    "with its second fifth (after the warm-up), the same run's own baseline: for memory, the lowest RSS of each (a",
    'leak raises the floor; a burst raises the peaks, which V8 keeps for a while), with the peaks beside them.',
    '',
    `Totals: ${fmtNum(totals.sent)} calls sent, ${fmtNum(totals.ok)} answered with a result, ${totals.rpcErrorOdd} odd errors,`,
    `${totals.rpcErrorEcho} echo errors, ${totals.failed} without an answer (HTTP error or transport), ${unanswered} still unanswered at the end,`,
    `${totals.skipped} not sent (more than ${MAX_OUTSTANDING} outstanding). Heap used: second fifth ${fmtBytes(heapEarly)}, last fifth ${fmtBytes(heapLate)}.`,
    '',
    ...rows,
  ].join('\n');
  return { markdown, targets };
}
