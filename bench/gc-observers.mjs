#!/usr/bin/env node
// What the router's observers cost, taken apart (issue 21: metrics ≤ 3% of the gateway's CPU per
// request): `tools/call` through `switchboard serve` fronting the echo fixture, with V8's
// `--trace-gc` on, for
//
// - `off`: `observe.metrics.enabled: false`: no observer registered (the router builds nothing);
// - `off-2`: the same in a second process: the A/A pair, the run's own spread;
// - `null`: metrics on, but every observer the gateway registers swapped for one whose hooks do
//   nothing (bench/lib/null-observers.mjs, loaded with `--import`): the router's observation path
//   alone;
// - `on`: metrics on (the default): the observation path and what the metrics do with it.
//
// Per window: req/s, the gateway's CPU per request in total and by thread (bench/lib/threads.mjs),
// and the garbage collections its main isolate ran (scavenges and mark-compacts per 1,000 requests,
// main-thread GC pause per request, from the `--trace-gc` lines). Interleaved rounds: per round and
// C one window per variant, the order rotated every round; ratios are paired with the `off` window
// of the same round, then the median (min–max) over rounds.
//
//   npm run build && node bench/gc-observers.mjs [--rounds N] [--window MS] [--concurrency 1,8]
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSwitchboard } from './lib/gateways.mjs';
import { measureWindow, prepareEcho } from './lib/http-client.mjs';
import { loadString, machineInfo } from './lib/machine.mjs';
import { FIXTURES, NODE, WORK_DIR } from './lib/paths.mjs';
import { sleep } from './lib/procs.mjs';
import { fmtNum, fmtRatio, fmtSpread, fmtUs, rotate } from './lib/stats.mjs';
import { THREAD_KINDS } from './lib/threads.mjs';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    window: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '1,8' },
  },
});
const rounds = Number(values.rounds);
const durationMs = Number(values.window);
const warmupMs = Number(values.warmup);
const concurrencies = values.concurrency.split(',').map(Number);
const OFF = 'observe:\n  metrics:\n    enabled: false\n';
const VARIANTS = [
  { key: 'off', label: 'metrics off (no observer)', extra: OFF },
  { key: 'off-2', label: 'metrics off, second process (A/A)', extra: OFF },
  {
    key: 'null',
    label: 'observers that do nothing',
    extra: '',
    flags: ['--import', join(import.meta.dirname, 'lib/null-observers.mjs')],
  },
  { key: 'on', label: 'metrics on (default)', extra: '' },
];

/**
 * Counts a gateway's `--trace-gc` lines as they come, per isolate ("[pid:0xADDR]"); the first isolate
 * to collect is the main one (it loads the gateway before any worker starts).
 */
function gcCounter(stream) {
  const isolates = new Map();
  let main;
  let rest = '';
  stream.on('data', (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      const m =
        /^\[\d+:(0x[0-9a-f]+)\]\s+\d+ ms: (Scavenge|Mark-Compact|Minor Mark-Compact)\b.*?MB, ([\d.]+) \//.exec(
          line,
        );
      if (m === null) continue;
      main ??= m[1];
      let c = isolates.get(m[1]);
      if (c === undefined) {
        c = { scavenge: 0, markCompact: 0, pauseMs: 0 };
        isolates.set(m[1], c);
      }
      if (m[2] === 'Mark-Compact') c.markCompact++;
      else c.scavenge++;
      c.pauseMs += Number(m[3]);
    }
  });
  const zero = { scavenge: 0, markCompact: 0, pauseMs: 0 };
  return () => ({ ...(isolates.get(main) ?? zero) });
}

const workDir = join(WORK_DIR, `gc-observers-${Date.now()}`);
mkdirSync(workDir, { recursive: true });
const args = { message: 'hello from the switchboard bench' };
const running = {};
const data = Object.fromEntries(
  VARIANTS.map((v) => [v.key, Object.fromEntries(concurrencies.map((c) => [c, []]))]),
);
const machine = machineInfo();
console.log(
  `${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, commit ${machine.commit}${machine.srcDirty ? ' + uncommitted src/' : ''}; load ${loadString()}`,
);
try {
  for (const v of VARIANTS) {
    const started = await startSwitchboard({
      upstreamName: 'echo',
      command: NODE,
      args: [FIXTURES.echoServer],
      workDir,
      label: `gc-${v.key}`,
      extra: v.extra,
      nodeFlags: ['--trace-gc', ...(v.flags ?? [])],
    });
    const gc = gcCounter(started.proc.child.stdout);
    running[v.key] = { ...started, ...(await prepareEcho(started)), gc };
  }
  for (let r = 0; r < rounds; r++) {
    for (const c of concurrencies) {
      const line = [];
      for (const v of rotate(VARIANTS, r + c)) {
        const t = running[v.key];
        const gc0 = t.gc();
        const m = await measureWindow(t, { concurrency: c, warmupMs, durationMs, tool: t.tool, args });
        const gc1 = t.gc();
        // Over warm-up + window, scaled to the window as measureWindow scales CPU.
        const per = durationMs / (durationMs + warmupMs) / Math.max(1, m.completed);
        m.gc = {
          scavengesPer1k: (gc1.scavenge - gc0.scavenge) * per * 1000,
          markCompactsPer1k: (gc1.markCompact - gc0.markCompact) * per * 1000,
          pauseUsPerReq: (gc1.pauseMs - gc0.pauseMs) * per * 1000,
        };
        data[v.key][c].push(m);
        line.push(`${v.key} ${fmtNum(m.rps)}/s ${fmtUs(m.cpuUsPerReq)}`);
        await sleep(150);
      }
      console.log(`round ${r + 1}/${rounds} C=${c}: ${line.join(' · ')}`);
    }
  }
} finally {
  for (const t of Object.values(running)) {
    await t.session.close();
    await t.setupPool.close();
  }
  await Promise.all(Object.values(running).map((t) => t.proc.stop()));
  rmSync(workDir, { recursive: true, force: true });
}

const figures = [
  ['req/s', (m) => m.rps, (n) => fmtNum(n)],
  ['CPU/req', (m) => m.cpuUsPerReq, fmtUs],
  ...THREAD_KINDS.filter((k) => k !== 'other' && k !== 'libuv-pool').map((k) => [
    `CPU/req ${k}`,
    (m) => m.threadUsPerReq[k],
    fmtUs,
  ]),
  ['scavenges /1k req', (m) => m.gc.scavengesPer1k, (n) => fmtNum(n, 1)],
  ['mark-compacts /1k req', (m) => m.gc.markCompactsPer1k, (n) => fmtNum(n, 2)],
  ['GC pause/req (main)', (m) => m.gc.pauseUsPerReq, fmtUs],
];
const out = [
  '',
  `${rounds} rounds, ${warmupMs} ms warm-up + ${durationMs} ms per window; cells: median (min–max) over rounds;`,
  'ratio: ÷ the `off` window of the same round, median (min–max).',
];
for (const c of concurrencies) {
  out.push('', `C=${c}`, '', `| figure | ${VARIANTS.map((v) => v.label).join(' | ')} |`);
  out.push(`|---|${VARIANTS.map(() => '---|').join('')}`);
  for (const [name, f, fmt] of figures) {
    const cells = VARIANTS.map((v) => fmtSpread(data[v.key][c].map(f), fmt));
    out.push(`| ${name} | ${cells.join(' | ')} |`);
    const base = data.off[c].map(f);
    const ratios = VARIANTS.slice(1).map((v) =>
      fmtSpread(
        data[v.key][c].map((m, i) => f(m) / base[i]),
        fmtRatio,
      ),
    );
    out.push(`| ${name} ÷ off | – | ${ratios.join(' | ')} |`);
  }
}
out.push('', `load at the end: ${loadString()}`);
console.log(out.join('\n'));
