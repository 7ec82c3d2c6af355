// Suite "stdio" (issue "core"): sequential tools/call round trips through `switchboard stdio` against
// the same server without the gateway, trace on (the default), --no-trace, and --no-audit (trace on,
// no audit ledger: shows the ledger's share), for the echo fixture and for server-everything. Target:
// at most 100 µs added at p50 per round trip (trace on).
//
// Per repeat, the variants (direct, trace, no-trace, no-audit, and a byte-piping Node relay as the floor) are
// fresh processes (a fresh trace database each), initialized and
// warmed up, then measured in interleaved batches (direct, trace, no-trace, direct, ...; the order
// rotates between batches) so that drift on the shared machine hits all three alike. Added latency is
// computed per repeat (gateway p50 − direct p50 from the same interleaved window), then the median over
// repeats is reported.
import { join } from 'node:path';
import { BENCH_DIR, CLI, FIXTURES, NODE } from '../lib/paths.mjs';
import { cpuMsOf } from '../lib/procs.mjs';
import { fmtNum, fmtSpread, fmtUs, fmtUsSigned, median, rotate, summarize } from '../lib/stats.mjs';
import { StdioMcpClient } from '../lib/stdio-client.mjs';

const TARGET_ADDED_P50_US = 100;

const SERVERS = [
  {
    key: 'echo',
    label: 'echo fixture (`test/fixtures/echo-server.mjs`)',
    args: [FIXTURES.echoServer],
    tool: 'echo',
  },
  {
    key: 'everything',
    label: '`@modelcontextprotocol/server-everything` (stdio)',
    args: [FIXTURES.serverEverything, 'stdio'],
    tool: 'echo',
  },
];

const BASE_VARIANTS = [
  { key: 'direct', label: 'direct (no gateway)' },
  { key: 'trace', label: '`switchboard stdio` (trace on)' },
  { key: 'notrace', label: '`switchboard stdio --no-trace`' },
  { key: 'noaudit', label: '`switchboard stdio --no-audit` (trace on, no audit ledger)' },
  { key: 'relay', label: 'floor: a Node process piping bytes through (`lib/null-relay.mjs`)' },
];

const BASELINE = { key: 'baseline', label: '`switchboard stdio` (trace on), baseline build (`--baseline`)' };

function commandFor(variant, server, dataDir, profileDir, baselineCli) {
  if (variant === 'direct') return [NODE, server.args];
  if (variant === 'relay') return [NODE, [join(BENCH_DIR, 'lib/null-relay.mjs'), NODE, ...server.args]];
  if (variant === 'baseline')
    return [NODE, [baselineCli, 'stdio', '--data-dir', dataDir, '--', NODE, ...server.args]];
  const nodeFlags = profileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, `${server.key}-${variant}`)}`]
    : [];
  const flags = variant === 'notrace' ? ['--no-trace'] : variant === 'noaudit' ? ['--no-audit'] : [];
  return [NODE, [...nodeFlags, CLI, 'stdio', ...flags, '--data-dir', dataDir, '--', NODE, ...server.args]];
}

export default {
  name: 'stdio',
  order: 10,
  title: 'stdio: `tools/call` round trips through `switchboard stdio` (issue "core")',
  duration: { full: '~2 min', quick: '~30 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 2 : 4);
    const plan = {
      echo: { warmup: ctx.quick ? 1000 : 2000, calls: ctx.quick ? 1500 : 5000 },
      everything: { warmup: ctx.quick ? 1000 : 1500, calls: ctx.quick ? 800 : 3000 },
    };
    const batch = 200;
    const message = { message: 'hello from the switchboard bench' };
    const results = {};
    const VARIANTS = ctx.baselineCli ? [...BASE_VARIANTS, BASELINE] : BASE_VARIANTS;

    for (const server of SERVERS) {
      const { warmup, calls } = plan[server.key];
      const perRepeat = Object.fromEntries(VARIANTS.map((v) => [v.key, []]));
      for (let r = 0; r < repeats; r++) {
        const clients = {};
        const cpuBefore = {};
        for (const v of VARIANTS) {
          const [cmd, args] = commandFor(
            v.key,
            server,
            join(ctx.workDir, `${server.key}-${v.key}-${r}`),
            ctx.profileDir,
            ctx.baselineCli,
          );
          clients[v.key] = await StdioMcpClient.start(cmd, args, { name: `${server.key}/${v.key}` });
          await clients[v.key].initialize();
        }
        for (const v of VARIANTS) await clients[v.key].callLoop(warmup, server.tool, message);
        const samples = Object.fromEntries(VARIANTS.map((v) => [v.key, []]));
        for (const v of VARIANTS) cpuBefore[v.key] = cpuMsOf(clients[v.key].pid);
        for (let done = 0, b = 0; done < calls; done += batch, b++) {
          const n = Math.min(batch, calls - done);
          for (const v of rotate(VARIANTS, b))
            await clients[v.key].callLoop(n, server.tool, message, samples[v.key]);
        }
        for (const v of VARIANTS) {
          const s = summarize(samples[v.key]);
          // CPU of the process the client talks to: the server itself (direct) or the gateway.
          s.cpuUsPerCall = ((cpuMsOf(clients[v.key].pid) - cpuBefore[v.key]) * 1000) / calls;
          perRepeat[v.key].push(s);
        }
        await Promise.all(VARIANTS.map((v) => clients[v.key].close()));
        const d = perRepeat.direct.at(-1);
        const t = perRepeat.trace.at(-1);
        const nt = perRepeat.notrace.at(-1);
        const fl = perRepeat.relay.at(-1);
        const na = perRepeat.noaudit.at(-1);
        const bl = perRepeat.baseline?.at(-1);
        ctx.log(
          `${server.key} repeat ${r + 1}/${repeats}: p50 direct ${fmtUs(d.p50)}, trace ${fmtUs(t.p50)} (${fmtUsSigned(t.p50 - d.p50)}), ` +
            `no-trace ${fmtUs(nt.p50)} (${fmtUsSigned(nt.p50 - d.p50)}), no-audit ${fmtUs(na.p50)} (${fmtUsSigned(na.p50 - d.p50)}), ` +
            `floor ${fmtUs(fl.p50)} (${fmtUsSigned(fl.p50 - d.p50)})` +
            `${bl ? `, baseline ${fmtUs(bl.p50)} (${fmtUsSigned(bl.p50 - d.p50)})` : ''}; ` +
            `p99 ${fmtUs(d.p99)} / ${fmtUs(t.p99)} / ${fmtUs(nt.p99)} / ${fmtUs(fl.p99)}${bl ? ` / ${fmtUs(bl.p99)}` : ''}`,
        );
      }
      results[server.key] = perRepeat;
    }

    // Render.
    const lines = [];
    const targets = [];
    lines.push(
      `Sequential round trips (one request in flight) from a client that speaks newline-delimited JSON-RPC over the`,
      `child's stdio, timed from writing the request to parsing its response. ${repeats} repeats; per repeat and variant`,
      `a fresh process (fresh trace database), ${plan.echo.warmup} (echo) / ${plan.everything.warmup} (everything) warm-up calls,`,
      `then ${plan.echo.calls} / ${plan.everything.calls} measured calls interleaved with the other variants in batches of ${batch}.`,
      'Cells: median over repeats (min–max over repeats). "Added" is gateway − direct within each repeat, then the median.',
      'The "floor" row is a Node process that only pipes bytes between the client and the server with its streams: the',
      'cost of the two extra pipe hops for a gateway built on them, before doing anything; the target leaves 100 µs for all of it.',
      '"CPU/call" is the CPU time of the process the client talks to (the server, or the gateway without its child) per call.',
      'Both `switchboard stdio` rows without `--no-audit` write the audit ledger (one record per tools/call, on by default);',
      'the `--no-audit` row is the same gateway with the trace on and the ledger off.',
      '',
    );
    for (const server of SERVERS) {
      const pr = results[server.key];
      lines.push(`### ${server.label}`, '');
      lines.push(
        '| variant | p50 | p99 | mean | added at p50 | added at p99 | CPU/call |',
        '|---|---|---|---|---|---|---|',
      );
      for (const v of VARIANTS) {
        const rows = pr[v.key];
        const added = (f) => rows.map((s, i) => s[f] - pr.direct[i][f]);
        lines.push(
          `| ${v.label} | ${fmtSpread(
            rows.map((s) => s.p50),
            fmtUs,
          )} | ${fmtSpread(
            rows.map((s) => s.p99),
            fmtUs,
          )} | ` +
            `${fmtUs(median(rows.map((s) => s.mean)))} | ` +
            `${v.key === 'direct' ? '(baseline)' : fmtSpread(added('p50'), fmtUsSigned)} | ` +
            `${v.key === 'direct' ? '(baseline)' : fmtSpread(added('p99'), fmtUsSigned)} | ` +
            `${fmtUs(median(rows.map((s) => s.cpuUsPerCall)))} |`,
        );
      }
      const addedP50 = median(pr.trace.map((s, i) => s.p50 - pr.direct[i].p50));
      const directP50 = median(pr.direct.map((s) => s.p50));
      const ratio = median(pr.trace.map((s, i) => s.p50 / pr.direct[i].p50));
      lines.push(
        '',
        `p50 ratio gateway (trace on) / direct: ${fmtNum(ratio, 2)}×; trace on vs off at p50: ` +
          `${fmtUsSigned(median(pr.trace.map((s, i) => s.p50 - pr.notrace[i].p50)))}; the audit ledger at p50 (trace on, ledger on vs off): ` +
          `${fmtUsSigned(median(pr.trace.map((s, i) => s.p50 - pr.noaudit[i].p50)))}; gateway (trace on) over the floor at p50: ` +
          `${fmtUsSigned(median(pr.trace.map((s, i) => s.p50 - pr.relay[i].p50)))}.`,
        '',
      );
      targets.push({
        target: `${server.key}: ≤ ${TARGET_ADDED_P50_US} µs added at p50 (trace on)`,
        measured: `${fmtUsSigned(addedP50)} (p50 ${fmtUs(directP50 + addedP50)})`,
        baseline: `direct p50 ${fmtUs(directP50)}`,
        met: addedP50 <= TARGET_ADDED_P50_US,
      });
    }
    return { markdown: lines.join('\n'), targets, data: results };
  },
};
