// Suite "sessions" (issue "serve"): memory per idle session. N sessions (10,000; 2,000 with --quick),
// each initialized and holding a GET stream open, on `switchboard serve` fronting the echo fixture.
// Target: at most 20 KiB of heap per idle session.
//
// The gateway runs in a child started with --expose-gc (bench/lib/serve-host.mjs: the same wiring as
// the serve command, nothing added to the gateway), which reports process.memoryUsage() after forced
// GCs. The sessions are opened by another child (bench/lib/session-opener.mjs), one socket per GET
// stream. Heap per session = (heap with N sessions − heap with none, after a warm-up) / N.
// mcp-proxy is measured the same way as a reference, by RSS only (it cannot be asked to GC).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startMcpProxy, switchboardConfig } from '../lib/gateways.mjs';
import { BENCH_DIR, FIXTURES, NODE, packageVersion } from '../lib/paths.mjs';
import { rssOf, sleep, startProcess } from '../lib/procs.mjs';
import { fmtBytes, fmtNum } from '../lib/stats.mjs';

const TARGET_HEAP_PER_SESSION = 20 * 1024;
const WARMUP_SESSIONS = 100;

/** Sends `message` (if any) to a child over IPC and resolves with its next message of type `expect`. */
function ask(child, message, expect, timeoutMs = 600_000) {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${expect} answer to ${message?.type ?? 'start-up'} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (m) => {
      if (m?.type !== expect && m?.type !== 'error') return;
      done();
      if (m.type === 'error') reject(new Error(m.message));
      else resolve(m);
    };
    const onExit = (code, signal) => {
      done();
      reject(new Error(`the child exited (${signal ?? code}) while waiting for ${expect}`));
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
    if (message) child.send(message);
  });
}

async function startChild(args, name) {
  const proc = await startProcess(NODE, args, { ipc: true, name });
  let ready;
  try {
    ready = await ask(proc.child, undefined, 'ready', 60_000);
  } catch (error) {
    throw new Error(`${name}: ${error.message}\n${proc.output()}`);
  }
  return Object.assign(proc, { url: ready.url });
}

export default {
  name: 'sessions',
  /** Runs the peer gateways of test/peers (Node 22). */
  needsPeers: true,
  order: 30,
  title: 'Idle sessions: memory per session holding a GET stream on `switchboard serve` (issue "serve")',
  duration: { full: '~2–3 min', quick: '~40 s' },
  async run(ctx) {
    const total = ctx.quick ? 2000 : 10_000;
    const mid = Math.min(1000, total / 2);
    const configFile = join(ctx.workDir, 'sessions.yaml');
    writeFileSync(
      configFile,
      switchboardConfig(
        'echo',
        NODE,
        [FIXTURES.echoServer],
        `sessions:\n  maxSessions: ${total * 2}\n  maxSessionsPerPrincipal: ${total * 2}\n`,
      ),
    );
    const opener = await startChild([join(BENCH_DIR, 'lib/session-opener.mjs')], 'session opener');
    const out = { total };
    try {
      // --- switchboard, in-process host with --expose-gc ---
      const host = await startChild(
        [
          '--expose-gc',
          join(BENCH_DIR, 'lib/serve-host.mjs'),
          '--config',
          configFile,
          '--data-dir',
          join(ctx.workDir, 'data'),
        ],
        'switchboard serve host',
      );
      const measure = async () => {
        const m = await ask(host.child, { type: 'measure' }, 'memory');
        return {
          heapUsed: m.heapUsed,
          heapTotal: m.heapTotal,
          external: m.external,
          arrayBuffers: m.arrayBuffers,
          rss: m.rss,
        };
      };
      const sb = {};
      try {
        const gatewayUrl = host.url;
        sb.cold = await measure();
        await ask(opener.child, { type: 'open', url: gatewayUrl, total: WARMUP_SESSIONS }, 'opened');
        await ask(opener.child, { type: 'closeAll' }, 'closed');
        await sleep(500);
        sb.before = await measure();
        ctx.log(
          `switchboard: heap ${fmtBytes(sb.before.heapUsed)} after a warm-up of ${WARMUP_SESSIONS} sessions (cold ${fmtBytes(sb.cold.heapUsed)})`,
        );
        let r = await ask(opener.child, { type: 'open', url: gatewayUrl, total: mid }, 'opened');
        await sleep(500);
        sb.mid = { ...(await measure()), open: r.open };
        r = await ask(opener.child, { type: 'open', url: gatewayUrl, total }, 'opened');
        sb.openMs = r.ms;
        sb.failed = r.failed;
        sb.lastError = r.lastError;
        await sleep(2000);
        sb.after = { ...(await measure()), open: r.open };
        ctx.log(
          `switchboard: ${r.open} sessions open (${r.failed} failed${r.lastError ? `: ${r.lastError}` : ''}) in ${(r.ms / 1000).toFixed(1)} s; ` +
            `heap ${fmtBytes(sb.after.heapUsed)}, rss ${fmtBytes(sb.after.rss)}`,
        );
        await ask(opener.child, { type: 'closeAll' }, 'closed');
        await sleep(1000);
        sb.closed = await measure();
        ctx.log(`switchboard: heap ${fmtBytes(sb.closed.heapUsed)} after closing them all`);
      } finally {
        host.child.send({ type: 'stop' });
        await Promise.race([host.exited, sleep(5000)]);
        await host.stop(1000);
      }
      out.switchboard = sb;

      // --- mcp-proxy, RSS only ---
      const mp = {};
      const proxy = await startMcpProxy({ command: NODE, args: [FIXTURES.echoServer] });
      try {
        mp.cold = rssOf(proxy.pid);
        await ask(opener.child, { type: 'open', url: proxy.url, total: WARMUP_SESSIONS }, 'opened');
        await ask(opener.child, { type: 'closeAll' }, 'closed');
        await sleep(1000);
        mp.before = rssOf(proxy.pid);
        const r = await ask(opener.child, { type: 'open', url: proxy.url, total }, 'opened');
        await sleep(2000);
        mp.after = rssOf(proxy.pid);
        mp.open = r.open;
        mp.failed = r.failed;
        mp.openMs = r.ms;
        ctx.log(
          `mcp-proxy: ${r.open} sessions open (${r.failed} failed) in ${(r.ms / 1000).toFixed(1)} s; rss ${fmtBytes(mp.after)}`,
        );
        await ask(opener.child, { type: 'closeAll' }, 'closed');
      } finally {
        await proxy.proc.stop();
      }
      out.mcpProxy = mp;
    } finally {
      opener.child.disconnect();
      await opener.stop(2000);
    }

    // Render.
    const sb = out.switchboard;
    const mp = out.mcpProxy;
    const n = sb.after.open;
    const per = (f) => (sb.after[f] - sb.before[f]) / n;
    const slope = (f) => (sb.after[f] - sb.mid[f]) / (sb.after.open - sb.mid.open);
    const lines = [
      `${fmtNum(total)} sessions, each: POST initialize, POST notifications/initialized, then a GET stream on its own`,
      `connection, held open (keep-alive comments drained). Opened ${32} at a time from a separate process. The gateway`,
      "runs in a child started with `--expose-gc` (bench/lib/serve-host.mjs: the serve command's wiring, trace on,",
      `config \`sessions.maxSessions\`/\`maxSessionsPerPrincipal\` = ${fmtNum(total * 2)}) and reports \`process.memoryUsage()\``,
      `after forced GCs. "Before" is measured after ${WARMUP_SESSIONS} warm-up sessions were opened and closed again.`,
      '',
      '| `switchboard serve` | sessions open | heap used | external (incl. array buffers) | RSS |',
      '|---|---|---|---|---|',
      `| cold (just started) | 0 | ${fmtBytes(sb.cold.heapUsed)} | ${fmtBytes(sb.cold.external)} | ${fmtBytes(sb.cold.rss)} |`,
      `| before (after warm-up) | 0 | ${fmtBytes(sb.before.heapUsed)} | ${fmtBytes(sb.before.external)} | ${fmtBytes(sb.before.rss)} |`,
      `| with ${fmtNum(sb.mid.open)} | ${fmtNum(sb.mid.open)} | ${fmtBytes(sb.mid.heapUsed)} | ${fmtBytes(sb.mid.external)} | ${fmtBytes(sb.mid.rss)} |`,
      `| with ${fmtNum(n)} | ${fmtNum(n)} | ${fmtBytes(sb.after.heapUsed)} | ${fmtBytes(sb.after.external)} | ${fmtBytes(sb.after.rss)} |`,
      `| after closing them all (DELETE) | 0 | ${fmtBytes(sb.closed.heapUsed)} | ${fmtBytes(sb.closed.external)} | ${fmtBytes(sb.closed.rss)} |`,
      '',
      '| per idle session | heap used | external | RSS |',
      '|---|---|---|---|',
      `| \`switchboard serve\` (before → ${fmtNum(n)}) | **${fmtBytes(per('heapUsed'))}** | ${fmtBytes(per('external'))} | ${fmtBytes(per('rss'))} |`,
      `| \`switchboard serve\` (slope ${fmtNum(sb.mid.open)} → ${fmtNum(n)}) | ${fmtBytes(slope('heapUsed'))} | ${fmtBytes(slope('external'))} | ${fmtBytes(slope('rss'))} |`,
      `| mcp-proxy ${packageVersion('mcp-proxy')} (RSS only; before → ${fmtNum(mp.open)}) | | | ${fmtBytes((mp.after - mp.before) / mp.open)} |`,
      '',
      `Opening took ${(sb.openMs / 1000).toFixed(1)} s on switchboard (${sb.failed} failed${sb.lastError ? `; last error: ${sb.lastError}` : ''}) ` +
        `and ${(mp.openMs / 1000).toFixed(1)} s on mcp-proxy (${mp.failed} failed). Heap left after closing every session: ` +
        `${fmtBytes(sb.closed.heapUsed - sb.before.heapUsed)} over "before" (${fmtBytes((sb.closed.heapUsed - sb.before.heapUsed) / n)} per closed session).`,
      'supergateway `--stateful` is not measured: it runs one upstream child process per session (≈20 MB each, see',
      '/work/shared/reference/peers.md), so 10,000 sessions would be 10,000 processes.',
    ];
    const targets = [
      {
        target: `≤ 20 KiB heap per idle session (${fmtNum(n)} sessions with a GET stream)`,
        measured: `${fmtBytes(per('heapUsed'))} heap, ${fmtBytes(per('rss'))} RSS per session`,
        baseline: `heap before ${fmtBytes(sb.before.heapUsed)}; mcp-proxy ${fmtBytes((mp.after - mp.before) / mp.open)} RSS/session`,
        met: per('heapUsed') <= TARGET_HEAP_PER_SESSION && sb.failed === 0,
      },
    ];
    return { markdown: lines.join('\n'), targets, data: out };
  },
};
