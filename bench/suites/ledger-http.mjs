// Suite "ledger-http" (issue "audit ledger"): what the audit ledger costs `switchboard serve` on the
// http suite's workloads. Target: at most 5% of the throughput lost with the ledger on, for each.
//
// The http suite runs `switchboard serve` with the ledger on, since it is on by default
// (`<data-dir>/audit`, one non-durable T1 record per `tools/call`, batched, `fsync: critical`), and
// has no ledger-off variant; adding two more gateways to its interleaving would lengthen a 5-minute
// suite by a third, so the comparison lives here. Same method as the http suite: its two upstreams
// over stdio (the echo fixture, and server-everything, whose own work per call is ~5x the echo
// fixture's), the same load client (bench/lib/http-client.mjs), one session per gateway,
// per window a fresh keep-alive pool of C connections and C workers, 500 ms warm-up and 2,000 ms
// measured; each on/off pair's two windows run back to back, in an order that alternates between
// repeats, so that the paired ratio compares adjacent windows (the pairs' order is rotated).
//
// Six gateways: ledger on and off (`audit: { enabled: false }`) in front of the echo fixture, each
// with the trace on (as a user runs it and as the http suite's headline figure is measured: the
// target is judged there) and with `--no-trace` (where the ledger is the only recorder, so its share
// of the cost is largest); and on and off, trace on, in front of server-everything. The echo fixture
// does almost nothing per call, so there the ledger's share is the largest a real server leaves it:
// its rows are the worst case, and both workloads are judged. Ratios
// are paired: in each repeat the ledger-on window is divided by the ledger-off window that ran next
// to it, then the median over repeats. On a shared 2-core machine a 5% difference is near the
// spread between repeats, hence more repeats than the http suite, and the gateway's CPU per request
// (much less sensitive to the load) beside the req/s.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startSwitchboard } from '../lib/gateways.mjs';
import { measureWindow, prepareEcho } from '../lib/http-client.mjs';
import { FIXTURES, NODE } from '../lib/paths.mjs';
import { sleep } from '../lib/procs.mjs';
import { fmtBytes, fmtMsFromUs, fmtNum, fmtRatio, fmtSpread, fmtUs, median, rotate } from '../lib/stats.mjs';

/** Ledger on ÷ ledger off, req/s: at most 5% lost. */
const TARGET_RATIO = 0.95;
const LEDGER_OFF = 'audit:\n  enabled: false\n';

/** The http suite's upstreams, each a stdio server with an echo tool. */
const WORKLOADS = {
  echo: { name: 'echo', args: [FIXTURES.echoServer], label: 'echo fixture' },
  everything: { name: 'everything', args: [FIXTURES.serverEverything, 'stdio'], label: 'server-everything' },
};
const GATEWAYS = [
  { key: 'on', label: 'echo: ledger on (default)', workload: 'echo', trace: true, ledger: true },
  { key: 'off', label: 'echo: ledger off', workload: 'echo', trace: true, ledger: false },
  { key: 'on-notrace', label: 'echo: ledger on, `--no-trace`', workload: 'echo', trace: false, ledger: true },
  {
    key: 'off-notrace',
    label: 'echo: ledger off, `--no-trace`',
    workload: 'echo',
    trace: false,
    ledger: false,
  },
  {
    key: 'ev-on',
    label: 'everything: ledger on (default)',
    workload: 'everything',
    trace: true,
    ledger: true,
  },
  { key: 'ev-off', label: 'everything: ledger off', workload: 'everything', trace: true, ledger: false },
];
/** [ledger on, ledger off, label, judged]: the judged pairs are the targets. */
const PAIRS = [
  ['on', 'off', 'echo, trace on', true],
  ['on-notrace', 'off-notrace', 'echo, `--no-trace`', false],
  ['ev-on', 'ev-off', 'everything, trace on', true],
];

/** Bytes under a directory (the ledger's files), 0 when it does not exist. */
function bytesUnder(dir) {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? bytesUnder(path) : statSync(path).size;
  }
  return total;
}

export default {
  name: 'ledger-http',
  order: 45,
  title: 'Audit ledger on vs off: `tools/call` through `switchboard serve` (issue "audit ledger")',
  duration: { full: '~5 min', quick: '~45 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 6);
    const concurrencies = [1, 8, 32];
    const warmupMs = ctx.quick ? 300 : 500;
    const durationMs = ctx.quick ? 1000 : 2000;
    const args = { message: 'hello from the switchboard bench' };
    const running = {};
    const data = Object.fromEntries(
      GATEWAYS.map((g) => [g.key, Object.fromEntries(concurrencies.map((c) => [c, []]))]),
    );
    const ledgerBytes = {};
    try {
      for (const g of GATEWAYS) {
        const workload = WORKLOADS[g.workload];
        const started = await startSwitchboard({
          upstreamName: workload.name,
          command: NODE,
          args: workload.args,
          workDir: ctx.workDir,
          trace: g.trace,
          label: `ledger-${g.key}`,
          extra: g.ledger ? '' : LEDGER_OFF,
        });
        running[g.key] = { ...started, ...(await prepareEcho(started)) };
        ctx.log(`${g.key} ready at ${started.url}`);
      }
      for (let r = 0; r < repeats; r++) {
        for (const c of concurrencies) {
          const line = [];
          // Each pair's two windows back to back, the pair's order alternating from one repeat to
          // the next: the machine's speed drifts over seconds, and a ratio of adjacent windows
          // cancels most of it (ABBA over two repeats).
          const order = rotate(PAIRS, r + c).flatMap(([on, off]) =>
            (r + c) % 2 === 0 ? [on, off] : [off, on],
          );
          for (const key of order) {
            const t = running[key];
            const m = await measureWindow(t, { concurrency: c, warmupMs, durationMs, tool: t.tool, args });
            data[key][c].push(m);
            line.push(`${key} ${fmtNum(m.rps)}/s${m.errors ? ` ERR ${m.errors}` : ''}`);
            await sleep(150);
          }
          ctx.log(`r${r + 1}/${repeats} C=${c}: ${line.join(' · ')}`);
        }
      }
    } finally {
      for (const t of Object.values(running)) {
        await t.session.close();
        await t.setupPool.close();
      }
      await Promise.all(Object.values(running).map((t) => t.proc.stop()));
    }
    // The ledger must have been written with it on, and not at all with it off.
    for (const g of GATEWAYS)
      ledgerBytes[g.key] = bytesUnder(join(ctx.workDir, `data-ledger-${g.key}`, 'audit'));
    for (const g of GATEWAYS) {
      if (g.ledger && ledgerBytes[g.key] === 0) throw new Error(`${g.key}: the ledger wrote nothing`);
      if (!g.ledger && ledgerBytes[g.key] > 0)
        throw new Error(`${g.key}: a ledger was written with audit off`);
    }

    const lines = [
      '`switchboard serve --config <generated> --port 0 --log-level warn` fronting the echo fixture over stdio, with the',
      'audit ledger on (the default: `<data-dir>/audit`, `fsync: critical`, a T1 record per call) and off (`audit: {',
      'enabled: false }`), each with the trace on and with `--no-trace`; and fronting server-everything over stdio, ledger',
      "on and off, trace on (its `echo` tool). The http suite's client and windows: one session",
      `per gateway, per window a fresh keep-alive pool of C connections and C workers, ${warmupMs} ms warm-up,`,
      `${durationMs} ms measured, ${repeats} repeat(s); each on/off pair's windows back to back, their order alternating`,
      'between repeats (the pairs in rotated order). Cells: median over repeats',
      '(min–max). "CPU/req": the gateway process\'s CPU time per request (its threads, not its upstream). Ratios are',
      'paired: ledger on ÷ ledger off in the same repeat and C, then the median over repeats.',
      '',
      '| C | gateway | req/s | p50 | p99 | errors | CPU/req |',
      '|---|---|---|---|---|---|---|',
    ];
    const med = (key, c, f) => median(data[key][c].map((x) => x[f]));
    for (const c of concurrencies) {
      for (const g of GATEWAYS) {
        const rows = data[g.key][c];
        lines.push(
          `| ${c} | ${g.label} | ${fmtSpread(
            rows.map((x) => x.rps),
            (v) => fmtNum(v),
          )} | ${fmtMsFromUs(med(g.key, c, 'p50'))} | ${fmtSpread(
            rows.map((x) => x.p99),
            fmtMsFromUs,
          )} | ${rows.reduce((a, x) => a + x.errors, 0)} | ${fmtUs(med(g.key, c, 'cpuUsPerReq'))} |`,
        );
      }
    }
    const paired = (on, off, c, f) => data[on][c].map((x, i) => x[f] / data[off][c][i][f]);
    lines.push(
      '',
      '| C | pair | req/s on ÷ off | p99 on ÷ off | CPU/req on ÷ off |',
      '|---|---|---|---|---|',
    );
    const targets = [];
    for (const c of concurrencies) {
      for (const [on, off, label, judged] of PAIRS) {
        lines.push(
          `| ${c} | ${label} | ${fmtSpread(paired(on, off, c, 'rps'), fmtRatio)} | ${fmtSpread(
            paired(on, off, c, 'p99'),
            fmtRatio,
          )} | ${fmtSpread(paired(on, off, c, 'cpuUsPerReq'), fmtRatio)} |`,
        );
        if (!judged) continue;
        const ratio = median(paired(on, off, c, 'rps'));
        const workload = GATEWAYS.find((g) => g.key === on).workload;
        const noTrace =
          workload === 'echo'
            ? `; \`--no-trace\`: ${fmtRatio(median(paired('on-notrace', 'off-notrace', c, 'rps')))}`
            : '';
        targets.push({
          target: `${workload}, ledger on, C=${c}: ≤ 5% req/s lost vs ledger off (trace on)`,
          measured: `${fmtRatio(ratio)} req/s (${fmtNum(med(on, c, 'rps'))}/s), CPU/req ${fmtRatio(median(paired(on, off, c, 'cpuUsPerReq')))}`,
          baseline: `ledger off ${fmtNum(med(off, c, 'rps'))}/s${noTrace}`,
          met: ratio >= TARGET_RATIO,
        });
      }
    }
    lines.push(
      '',
      `Ledger written during the run (all windows and warm-ups): ${GATEWAYS.filter((g) => g.ledger)
        .map((g) => `${g.label} ${fmtBytes(ledgerBytes[g.key])}`)
        .join(', ')}; with the ledger off, none.`,
    );
    return { markdown: lines.join('\n'), targets, data: { data, ledgerBytes } };
  },
};
