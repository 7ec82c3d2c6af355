// Suite "http" (issue "serve"): tools/call throughput and latency through `switchboard serve` (HTTP in,
// stdio upstream) against the same upstream command fronted by supergateway (--stateful) and by
// mcp-proxy, in the same run, for the echo fixture and for server-everything (which is also measured
// serving HTTP itself, as the no-gateway reference). Target: at least 1.5× the throughput of the
// faster peer at an equal or lower p99.
//
// Every gateway gets the same client (bench/lib/http-client.mjs), one session opened once, then per
// window a fresh keep-alive pool of C connections, C workers, the same warm-up and window length. The
// windows are interleaved: for each repeat, for each concurrency, every gateway in turn, with the order
// rotated between repeats.
import { join } from 'node:path';
import { startEverythingHttp, startMcpProxy, startSupergateway, startSwitchboard } from '../lib/gateways.mjs';
import { measureWindow, prepareEcho as prepare } from '../lib/http-client.mjs';
import { FIXTURES, NODE, packageVersion } from '../lib/paths.mjs';
import { sleep } from '../lib/procs.mjs';
import { fmtMsFromUs, fmtNum, fmtRatio, fmtSpread, fmtUs, median, rotate } from '../lib/stats.mjs';

const TARGET_RATIO = 1.5;
const PEER_KEYS = ['supergateway', 'mcp-proxy'];

const UPSTREAMS = [
  { key: 'echo', label: 'echo fixture (`test/fixtures/echo-server.mjs`)', args: [FIXTURES.echoServer] },
  {
    key: 'everything',
    label: '`@modelcontextprotocol/server-everything` (stdio upstream)',
    args: [FIXTURES.serverEverything, 'stdio'],
    direct: true,
  },
];

function gatewaysFor(upstream, ctx) {
  const common = { upstreamName: upstream.key, command: NODE, args: upstream.args, workDir: ctx.workDir };
  const list = [
    {
      key: 'switchboard',
      label: '`switchboard serve`',
      start: () =>
        startSwitchboard({
          ...common,
          profileDir: ctx.profileDir && join(ctx.profileDir, `${upstream.key}-switchboard`),
        }),
    },
    {
      key: 'switchboard-notrace',
      label: '`switchboard serve --no-trace`',
      start: () => startSwitchboard({ ...common, trace: false, label: `${upstream.key}-notrace` }),
    },
    {
      // Every call answered as an SSE stream from its first byte (priming event at once), as before
      // held answers: what holding a fast call's answer for one JSON body is worth.
      key: 'switchboard-sse',
      label: '`switchboard serve`, `streamAfter: 0`',
      start: () =>
        startSwitchboard({
          ...common,
          label: `${upstream.key}-sse`,
          extra: 'server:\n  streamAfter: 0\n',
        }),
    },
    {
      key: 'supergateway',
      label: `supergateway ${packageVersion('supergateway')} \`--stateful\``,
      start: () => startSupergateway(common),
    },
    {
      key: 'mcp-proxy',
      label: `mcp-proxy ${packageVersion('mcp-proxy')}`,
      start: () => startMcpProxy(common),
    },
  ];
  if (ctx.baselineCli) {
    list.splice(1, 0, {
      key: 'baseline',
      label: '`switchboard serve`, baseline build (`--baseline`)',
      start: () => startSwitchboard({ ...common, cli: ctx.baselineCli, label: `${upstream.key}-baseline` }),
    });
  }
  if (upstream.direct) {
    list.push({
      key: 'direct',
      label: 'server-everything `streamableHttp` itself (no gateway)',
      start: () => startEverythingHttp({ serverEverything: FIXTURES.serverEverything }),
    });
  }
  return list;
}

export default {
  name: 'http',
  /** Runs the peer gateways of test/peers (Node 22). */
  needsPeers: true,
  order: 20,
  title: 'HTTP: `tools/call` through `switchboard serve` vs supergateway and mcp-proxy (issue "serve")',
  duration: { full: '~6 min', quick: '~1 min' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 4);
    const concurrencies = [1, 8, 32];
    const warmupMs = ctx.quick ? 300 : 500;
    const durationMs = ctx.quick ? 1000 : 2000;
    const args = { message: 'hello from the switchboard bench' };
    const results = {};

    for (const upstream of UPSTREAMS) {
      const gateways = gatewaysFor(upstream, ctx);
      const running = {};
      try {
        for (const g of gateways) {
          const started = await g.start();
          running[g.key] = { ...started, ...(await prepare(started)) };
          ctx.log(`${upstream.key}: ${g.key} ready at ${started.url} (tool ${running[g.key].tool})`);
        }
        const data = {};
        for (const g of gateways) data[g.key] = Object.fromEntries(concurrencies.map((c) => [c, []]));
        for (let r = 0; r < repeats; r++) {
          for (const c of concurrencies) {
            const line = [];
            for (const g of rotate(gateways, r + c)) {
              const t = running[g.key];
              const m = await measureWindow(t, { concurrency: c, warmupMs, durationMs, tool: t.tool, args });
              data[g.key][c].push(m);
              line.push(
                `${g.key} ${fmtNum(m.rps)}/s p99 ${fmtMsFromUs(m.p99)}${m.errors ? ` ERR ${m.errors}` : ''}`,
              );
              await sleep(150);
            }
            ctx.log(`${upstream.key} r${r + 1}/${repeats} C=${c}: ${line.join(' · ')}`);
          }
        }
        results[upstream.key] = { gateways: gateways.map(({ key, label }) => ({ key, label })), data };
      } finally {
        for (const t of Object.values(running)) {
          await t.session.close();
          await t.setupPool.close();
        }
        await Promise.all(gateways.map((g) => running[g.key]?.proc.stop()));
      }
    }

    // Render.
    const lines = [
      `One session per gateway (initialize, notifications/initialized, tools/list), then \`tools/call echo\` from C`,
      `workers over a fresh keep-alive undici pool of C connections per window: ${warmupMs} ms warm-up (not recorded),`,
      `${durationMs} ms measured, ${repeats} repeat(s); windows interleaved across gateways (order rotated).`,
      "All gateways run the same upstream command (`node <server> [stdio]` on the bench's Node 20); the peers run on",
      'Node 22 (test/peers), supergateway with `--logLevel none`, switchboard with `--log-level warn`. Gateway, upstream',
      "and load client share the machine's cores, so throughput is relative to the peers measured alongside.",
      'Cells: median over repeats (min–max). "CPU/req" is the gateway process\'s own CPU time per request (not its upstream).',
      'Switchboard runs its defaults, under which a call answered within `server.streamAfter` (100 ms) gets one JSON',
      'body (the peers stream every call); the `streamAfter: 0` row streams every call from its first byte, for comparison.',
      'Ratios are paired: in each repeat, against whichever peer was faster in that repeat; then the median over repeats.',
      '',
    ];
    const targets = [];
    for (const upstream of UPSTREAMS) {
      const { gateways, data } = results[upstream.key];
      lines.push(`### ${upstream.label}`, '');
      lines.push(
        "| C | gateway | req/s | p50 | p99 | errors | CPU/req | req/s ÷ faster peer | p99 ÷ that peer's |",
        '|---|---|---|---|---|---|---|---|---|',
      );
      for (const c of concurrencies) {
        const med = (key, f) => median(data[key][c].map((x) => x[f]));
        // Paired per repeat: each gateway against the peer that was faster in the same repeat (their
        // windows ran back to back), then the median over repeats, so that drift between repeats cancels.
        const fasterIn = data[PEER_KEYS[0]][c].map((_, i) =>
          PEER_KEYS.reduce((best, k) => (data[k][c][i].rps > data[best][c][i].rps ? k : best), PEER_KEYS[0]),
        );
        const paired = (key, f) => data[key][c].map((x, i) => x[f] / data[fasterIn[i]][c][i][f]);
        for (const g of gateways) {
          const rows = data[g.key][c];
          const isPeer = PEER_KEYS.includes(g.key);
          lines.push(
            `| ${c} | ${g.label} | ${fmtSpread(
              rows.map((x) => x.rps),
              (v) => fmtNum(v),
            )} | ` +
              `${fmtMsFromUs(med(g.key, 'p50'))} | ${fmtSpread(
                rows.map((x) => x.p99),
                fmtMsFromUs,
              )} | ` +
              `${rows.reduce((a, x) => a + x.errors, 0)} | ${fmtUs(med(g.key, 'cpuUsPerReq'))} | ` +
              `${isPeer ? `faster in ${fasterIn.filter((k) => k === g.key).length}/${fasterIn.length}` : fmtSpread(paired(g.key, 'rps'), fmtRatio)} | ` +
              `${isPeer ? '' : fmtSpread(paired(g.key, 'p99'), fmtRatio)} |`,
          );
        }
        if (c === concurrencies.at(-1)) {
          lines.push(
            `|  | _the load client itself, per request, at C=${c}_ | | | | | ` +
              gateways.map((g) => `${g.key} ${fmtUs(med(g.key, 'clientUsPerReq'))}`).join(', ') +
              ' | | |',
          );
        }
        const ratio = median(paired('switchboard', 'rps'));
        const p99Ratio = median(paired('switchboard', 'p99'));
        const peerRps = median(data.switchboard[c].map((_, i) => data[fasterIn[i]][c][i].rps));
        const peerP99 = median(data.switchboard[c].map((_, i) => data[fasterIn[i]][c][i].p99));
        const names = [...new Set(fasterIn)].join('/');
        targets.push({
          target: `${upstream.key}, C=${c}: ≥ ${TARGET_RATIO}× the faster peer's req/s at ≤ its p99`,
          measured: `${fmtRatio(ratio)} req/s (${fmtNum(med('switchboard', 'rps'))}/s), p99 ${fmtRatio(p99Ratio)} (${fmtMsFromUs(med('switchboard', 'p99'))})`,
          baseline: `faster peer (${names}) ${fmtNum(peerRps)}/s, p99 ${fmtMsFromUs(peerP99)}`,
          met: ratio >= TARGET_RATIO && p99Ratio <= 1,
        });
      }
      lines.push('');
    }
    return { markdown: lines.join('\n'), targets, data: results };
  },
};
