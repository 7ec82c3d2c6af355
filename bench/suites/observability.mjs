// Suite "observability" (issue 21): what watching the gateway costs. `tools/call` through
// `switchboard serve` fronting the echo fixture over stdio (it does almost nothing per call, so the
// gateway's own share, and with it what metrics and tracing add, is the largest a real server
// leaves them: the worst case), at C=8 and C=32, in one run:
//
// - `default`: the configuration's defaults: Prometheus metrics on (`/metrics` served), OpenTelemetry
//   off;
// - `default-2`: the same configuration in a second process, an A/A pair: the ratio of two identical
//   gateways is the run's own spread, against which every other ratio is read;
// - `metrics-off`: `observe.metrics.enabled: false`;
// - `otel-100`: OpenTelemetry tracing on, 100% sampled (`observe.otel: { enabled: true, endpoint,
//   sampleRatio: 1 }`),
//   exporting to a local OTLP/HTTP receiver in its own process (bench/lib/otlp-sink.mjs);
// - `baseline`: a build from before the observability work (`--baseline DIR`; else the revision
//   `--base REV` names, default 20a5ef4, built once by the ab suite's `buildRevision` and kept in
//   bench/.work/ab-builds/), with its defaults, so that "tracing off costs nothing" is measured
//   against code that has none of it: this build with metrics and tracing off ÷ that build (this
//   build's defaults ÷ that build while the metrics-off variant is refused).
//
// - `otel-100-base`: only when the environment names a revision in `OBS_OTEL_BASE` (e.g. `main`):
//   that revision built (as `baseline` is) with OpenTelemetry on as in `otel-100`, paired with
//   `otel-100`, so that a change to tracing's cost is measured before/after in one run.
//
// Targets (issue 21): metrics cost at most 3% of req/s (default ÷ metrics-off ≥ 0.97); tracing at
// 100% at most 15% (otel-100 ÷ default ≥ 0.85); tracing off costs nothing measurable (default ÷
// baseline within the A/A pair's spread, or better). A variant whose option the built configuration refuses
// (`switchboard config check`) is skipped and said so: the suite runs before the metrics and
// OpenTelemetry work is merged, and fully after.
//
// Method: the http suite's client (bench/lib/http-client.mjs): one session per gateway, per window a
// fresh keep-alive pool of C connections and C workers, a warm-up and a measured window. Interleaved
// rounds, as the ledger-http suite learnt to: in each round and C every pair (variant, reference)
// gets two windows back to back, variant first in one round and reference first in the next (ABBA),
// the pairs taking turns going first; the machine's speed drifts over seconds, and a ratio of
// adjacent windows cancels most of it (so `default`, the reference of three pairs, runs a window
// for each). Ratios are paired (the two windows of a pair in one round), then the median over
// rounds, with the range.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startSwitchboard, switchboardConfig } from '../lib/gateways.mjs';
import { measureWindow, prepareEcho } from '../lib/http-client.mjs';
import { CLI, FIXTURES, NODE } from '../lib/paths.mjs';
import { sleep, startProcess } from '../lib/procs.mjs';
import { fmtMsFromUs, fmtNum, fmtRatio, fmtSpread, fmtUs, median, range, rotate } from '../lib/stats.mjs';
import { THREAD_KINDS } from '../lib/threads.mjs';
import { buildRevision } from './ab.mjs';

/**
 * The revision before issue 21's metrics and tracing: main with their dependencies installed and
 * none of their code (20a5ef4, "ci: install the Debian packages...").
 */
const OBS_BASE = '20a5ef4';
const METRICS_TARGET = 0.97;
const TRACING_TARGET = 0.85;
const UPSTREAM = { name: 'echo', command: NODE, args: [FIXTURES.echoServer] };

/** The variants; `extra(ctx)` is the YAML added to the generated configuration. */
function variants(otlpEndpoint, baseline, otelBase) {
  const list = [
    { key: 'default', label: 'defaults (tracing off)', extra: '' },
    { key: 'default-2', label: 'defaults, second process (A/A)', extra: '' },
    {
      key: 'metrics-off',
      label: '`observe.metrics.enabled: false`',
      extra: 'observe:\n  metrics:\n    enabled: false\n',
    },
    {
      key: 'otel-100',
      label: 'OpenTelemetry on, `sampleRatio: 1`, local OTLP receiver',
      // `enabled: true`: the endpoint alone does not turn export on (obs-otel's otel-settings.ts: the
      // file's `enabled`, else an OTLP endpoint in the environment).
      extra: `observe:\n  otel:\n    enabled: true\n    endpoint: ${JSON.stringify(otlpEndpoint)}\n    sampleRatio: 1\n`,
    },
  ];
  if (baseline)
    list.push({ key: 'baseline', label: `${baseline.label}, defaults`, extra: '', cli: baseline.cli });
  if (otelBase)
    list.push({
      key: 'otel-100-base',
      label: `${otelBase.label}, OpenTelemetry on as otel-100`,
      extra: list.find((v) => v.key === 'otel-100').extra,
      cli: otelBase.cli,
    });
  return list;
}

/** [variant, reference, what the ratio measures]. */
const PAIRS = [
  ['default-2', 'default', "A/A: two identical gateways (the run's spread)"],
  ['default', 'metrics-off', 'metrics on ÷ off'],
  ['otel-100', 'default', 'tracing 100% ÷ off'],
  ['metrics-off', 'baseline', 'metrics and tracing off (this build) ÷ base build'],
  ['default', 'baseline', 'defaults (this build) ÷ base build'],
  ['otel-100', 'otel-100-base', 'tracing 100%: this build ÷ the OBS_OTEL_BASE build'],
];

/** Whether `cli` accepts the configuration (`switchboard config check`); the refusal otherwise. */
function configRefusal(cli, file) {
  const check = spawnSync(NODE, [cli, 'config', 'check', file], { encoding: 'utf8', timeout: 30_000 });
  if (check.status === 0) return undefined;
  const output = (check.stderr || check.stdout || '').trim();
  // A refusal names the place in the file: "<file>:<line>:<col> <what>". Anything else is a build
  // that does not run, which must fail the suite rather than skip every variant.
  const refusal = /^\S+\.yaml:\d+:\d+ (.*)$/m.exec(output);
  if (refusal === null)
    throw new Error(
      `switchboard config check ${file} failed (exit ${check.status}): ${output.slice(0, 2000)}`,
    );
  return refusal[1];
}

/** GET a URL on the gateway's origin: its status (or the error's name). */
async function statusOf(url) {
  try {
    const response = await request(url, { headersTimeout: 5_000, bodyTimeout: 5_000 });
    await response.body.text();
    return response.statusCode;
  } catch (error) {
    return error?.code ?? String(error);
  }
}

async function sinkStats(base) {
  const response = await request(`${base}/stats`);
  return response.body.json();
}

export default {
  name: 'observability',
  order: 47,
  title: 'Observability overhead: metrics on vs off, OpenTelemetry tracing at 100% vs off (issue 21)',
  duration: { full: '~4 min', quick: '~25 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 6);
    const concurrencies = [8, 32];
    const warmupMs = ctx.quick ? 300 : 500;
    const durationMs = ctx.quick ? 1000 : 2000;
    const args = { message: 'hello from the switchboard bench' };
    const sink = await startProcess(NODE, [join(import.meta.dirname, '../lib/otlp-sink.mjs')], {
      readyPattern: /listening on (http:\/\/\S+)/,
      readyStream: 'stdout',
      name: 'otlp sink',
    });
    const sinkBase = sink.match[1];
    const running = {};
    /** `a/b` -> C -> the pair's two windows in each round. */
    const pairData = {};
    let ranPairs = [];
    const skipped = [];
    let baseline;
    try {
      if (ctx.baselineCli) baseline = { cli: ctx.baselineCli, label: 'baseline build (`--baseline`)' };
      else {
        const built = buildRevision(ctx.abBase ?? OBS_BASE, ctx.log);
        baseline = { cli: built.cli, label: `base build ${built.short}` };
      }
    } catch (error) {
      ctx.log(
        `no base build to compare "tracing off" with: ${String(error?.message ?? error).split('\n')[0]}`,
      );
    }
    let otelBase;
    if (process.env.OBS_OTEL_BASE) {
      const built = buildRevision(process.env.OBS_OTEL_BASE, ctx.log);
      otelBase = { cli: built.cli, label: `build ${built.short} (OBS_OTEL_BASE)` };
    }
    const all = variants(sinkBase, baseline, otelBase);
    const data = {};
    const probes = {};
    let exported;
    try {
      for (const v of all) {
        const cli = v.cli ?? CLI;
        const file = join(ctx.workDir, `check-${v.key}.yaml`);
        writeFileSync(file, switchboardConfig(UPSTREAM.name, UPSTREAM.command, UPSTREAM.args, v.extra));
        const refusal = configRefusal(cli, file);
        if (refusal !== undefined) {
          skipped.push({ ...v, refusal });
          ctx.log(`${v.key}: skipped, the configuration is refused: ${refusal}`);
          continue;
        }
        const started = await startSwitchboard({
          upstreamName: UPSTREAM.name,
          command: UPSTREAM.command,
          args: UPSTREAM.args,
          workDir: ctx.workDir,
          label: `obs-${v.key}`,
          cli,
          extra: v.extra,
          ...(ctx.profileDir ? { profileDir: ctx.profileDir } : {}),
        });
        running[v.key] = { ...started, ...(await prepareEcho(started)) };
        data[v.key] = Object.fromEntries(concurrencies.map((c) => [c, []]));
        ctx.log(`${v.key} ready at ${started.url}`);
      }
      ranPairs = PAIRS.filter(([a, b]) => running[a] && running[b]);
      // One pair against the base build: metrics off when this build has that option, else defaults.
      if (running['metrics-off'])
        ranPairs = ranPairs.filter(([a, b]) => !(a === 'default' && b === 'baseline'));
      for (const [a, b] of ranPairs)
        pairData[`${a}/${b}`] = Object.fromEntries(concurrencies.map((c) => [c, []]));
      const window = async (key, c) => {
        const t = running[key];
        const m = await measureWindow(t, { concurrency: c, warmupMs, durationMs, tool: t.tool, args });
        data[key][c].push(m);
        await sleep(150);
        return m;
      };
      for (let r = 0; r < repeats; r++) {
        for (const c of concurrencies) {
          const line = [];
          for (const [a, b] of rotate(ranPairs, r + c)) {
            const first = (r + c) % 2 === 0 ? a : b;
            const m1 = await window(first, c);
            const m2 = await window(first === a ? b : a, c);
            const [ma, mb] = first === a ? [m1, m2] : [m2, m1];
            pairData[`${a}/${b}`][c].push({ a: ma, b: mb });
            line.push(
              `${a} ${fmtNum(ma.rps)}/s vs ${b} ${fmtNum(mb.rps)}/s${ma.errors + mb.errors ? ` ERR ${ma.errors + mb.errors}` : ''}`,
            );
          }
          ctx.log(`r${r + 1}/${repeats} C=${c}: ${line.join(' · ')}`);
        }
      }
      // What each gateway serves for watching it: /metrics where metrics are on, /ready always.
      for (const [key, t] of Object.entries(running)) {
        const origin = new URL(t.url).origin;
        probes[key] = {
          metrics: await statusOf(`${origin}/metrics`),
          ready: await statusOf(`${origin}/ready`),
        };
      }
      await sleep(1_500);
      exported = await sinkStats(sinkBase);
    } finally {
      for (const t of Object.values(running)) {
        await t.session.close();
        await t.setupPool.close();
      }
      await Promise.all(Object.values(running).map((t) => t.proc.stop()));
      await sink.stop();
    }

    const ran = all.filter((v) => running[v.key]);
    const med = (key, c, f) => median(data[key][c].map((x) => x[f]));
    const lines = [
      '`switchboard serve --config <generated> --port 0 --log-level warn` fronting the echo fixture over stdio (trace',
      'and ledger on, their defaults), one gateway per variant, all started before the first window. The http',
      `suite's client: one session per gateway, per window a fresh keep-alive pool of C connections and C workers, ${warmupMs} ms`,
      `warm-up, ${durationMs} ms measured, ${repeats} round(s); in each round and C each pair's two windows run back to back`,
      '(ABBA between rounds, the pairs in rotated order), so `defaults` has a window per pair. Cells: median over all',
      'of a variant\'s windows (min–max). "CPU/req": the gateway process\'s CPU time per request. Ratios are paired (the',
      "variant's window ÷ the adjacent reference window), then the median over rounds (min–max). The A/A pair (two",
      "identical gateways) is the run's own spread: a ratio inside it is no measurable difference.",
      '',
      '| C | variant | req/s | p50 | p99 | errors | CPU/req |',
      '|---|---|---|---|---|---|---|',
    ];
    for (const c of concurrencies) {
      for (const v of ran) {
        const rows = data[v.key][c];
        lines.push(
          `| ${c} | ${v.label} | ${fmtSpread(
            rows.map((x) => x.rps),
            (n) => fmtNum(n),
          )} | ${fmtMsFromUs(med(v.key, c, 'p50'))} | ${fmtSpread(
            rows.map((x) => x.p99),
            fmtMsFromUs,
          )} | ${rows.reduce((a, x) => a + x.errors, 0)} | ${fmtUs(med(v.key, c, 'cpuUsPerReq'))} |`,
        );
      }
    }
    const paired = (a, b, c, f) => pairData[`${a}/${b}`][c].map((w) => w.a[f] / w.b[f]);
    lines.push('', '| C | pair | req/s ratio | p99 ratio | CPU/req ratio |', '|---|---|---|---|---|');
    for (const c of concurrencies)
      for (const [a, b, label] of ranPairs)
        lines.push(
          `| ${c} | ${label} | ${fmtSpread(paired(a, b, c, 'rps'), fmtRatio)} | ${fmtSpread(
            paired(a, b, c, 'p99'),
            fmtRatio,
          )} | ${fmtSpread(paired(a, b, c, 'cpuUsPerReq'), fmtRatio)} |`,
        );

    // CPU/req by thread kind (bench/lib/threads.mjs): where a difference in the process's CPU is spent.
    const kinds = THREAD_KINDS.filter((k) =>
      ran.some((v) => concurrencies.some((c) => data[v.key][c].some((x) => x.threadUsPerReq[k] > 0))),
    );
    const threadOf = (k) => (w) => w.threadUsPerReq[k];
    lines.push(
      '',
      'CPU/req by thread (/proc/PID/task/*/stat, bench/lib/threads.mjs; Node 20 names every thread "node", so the kinds',
      'are inferred from the order Node makes them in): main (the event loop, with V8’s main-thread GC), v8-platform',
      '(parallel and concurrent GC, background compilation), libuv-pool, worker (the trace store’s writer), other.',
      'Per variant the median over its windows; per pair the paired ratio (median, min–max).',
      '',
      `| C | variant | ${kinds.join(' | ')} |`,
      `|---|---|${kinds.map(() => '---|').join('')}`,
    );
    for (const c of concurrencies)
      for (const v of ran)
        lines.push(
          `| ${c} | ${v.label} | ${kinds.map((k) => fmtUs(median(data[v.key][c].map(threadOf(k))))).join(' | ')} |`,
        );
    // Ratios only of the kinds busy in every window (a thread idle in one window has no ratio).
    const ratioKinds = kinds.filter((k) =>
      ran.every((v) => concurrencies.every((c) => data[v.key][c].every((x) => x.threadUsPerReq[k] > 0))),
    );
    lines.push(
      '',
      `| C | pair | ${ratioKinds.join(' | ')} |`,
      `|---|---|${ratioKinds.map(() => '---|').join('')}`,
    );
    for (const c of concurrencies)
      for (const [a, b, label] of ranPairs)
        lines.push(
          `| ${c} | ${label} | ${ratioKinds
            .map((k) =>
              fmtSpread(
                pairData[`${a}/${b}`][c].map((w) => threadOf(k)(w.a) / threadOf(k)(w.b)),
                fmtRatio,
              ),
            )
            .join(' | ')} |`,
        );

    /** The A/A pair's req/s spread at C: how far from 1 two identical gateways' ratio strayed. */
    const spreadAt = (c) => {
      if (!running['default-2']) return undefined;
      const [lo, hi] = range(paired('default-2', 'default', c, 'rps'));
      return Math.max(Math.abs(1 - lo), Math.abs(hi - 1));
    };
    const within = (ratio, c) => {
      const spread = spreadAt(c);
      return spread !== undefined && Math.abs(1 - ratio) <= spread;
    };
    const note = (ratio, c) =>
      spreadAt(c) === undefined
        ? ''
        : within(ratio, c)
          ? ` (inside the run's spread, ±${fmtNum(spreadAt(c) * 100, 1)}%: no measurable difference)`
          : ` (A/A spread ±${fmtNum(spreadAt(c) * 100, 1)}%)`;
    const targets = [];
    for (const c of concurrencies) {
      if (running.default && running['metrics-off']) {
        const ratio = median(paired('default', 'metrics-off', c, 'rps'));
        targets.push({
          target: `metrics on, C=${c}: ≤ 3% req/s lost vs metrics off`,
          measured: `${fmtRatio(ratio)} req/s (${fmtNum(med('default', c, 'rps'))}/s)${note(ratio, c)}`,
          baseline: `metrics off ${fmtNum(med('metrics-off', c, 'rps'))}/s`,
          met: ratio >= METRICS_TARGET,
        });
      }
      if (running.default && running['otel-100']) {
        const ratio = median(paired('otel-100', 'default', c, 'rps'));
        targets.push({
          target: `tracing at 100%, C=${c}: ≤ 15% req/s lost vs tracing off`,
          measured: `${fmtRatio(ratio)} req/s (${fmtNum(med('otel-100', c, 'rps'))}/s)${note(ratio, c)}`,
          baseline: `tracing off ${fmtNum(med('default', c, 'rps'))}/s`,
          met: ratio >= TRACING_TARGET,
        });
      }
      const basePair = ranPairs.find(([, b]) => b === 'baseline');
      if (basePair) {
        const [a] = basePair;
        const ratio = median(paired(a, 'baseline', c, 'rps'));
        targets.push({
          target: `tracing off, C=${c}: nothing measurable vs a build without it`,
          measured: `${fmtRatio(ratio)} req/s (${a === 'metrics-off' ? 'metrics and tracing off' : 'defaults'})${note(ratio, c)}`,
          baseline: `${all.find((v) => v.key === 'baseline')?.label ?? 'base build'} ${fmtNum(med('baseline', c, 'rps'))}/s`,
          met: ratio >= 1 || within(ratio, c),
        });
      }
    }
    lines.push('');
    if (skipped.length > 0) {
      lines.push('Skipped (the built configuration refuses their option; they run once it accepts it):', '');
      for (const v of skipped) lines.push(`- ${v.label}: ${v.refusal.replaceAll('|', '\\|')}`);
      lines.push('');
    }
    if (!running.baseline)
      lines.push(
        '"Tracing off costs nothing" needs a build without the OpenTelemetry code to compare with, and none could be',
        `built (\`--base REV\`, default ${OBS_BASE}, or \`--baseline DIR\`): the table above has no such row.`,
        '',
      );
    else if (running['metrics-off'] === undefined)
      lines.push(
        'With metrics off refused by this build, the base pair compares the defaults, so it holds what metrics cost too.',
        '',
      );
    lines.push(
      `Watching endpoints after the run: ${Object.entries(probes)
        .map(([key, p]) => `${key}: /metrics ${p.metrics}, /ready ${p.ready}`)
        .join('; ')}.`,
    );
    if (running['otel-100']) {
      const spans = exported?.byPath?.['/v1/traces'];
      lines.push(
        `The OTLP receiver got ${fmtNum(exported?.requests ?? 0)} export request(s), ${fmtNum((exported?.bytes ?? 0) / 1024)} KiB` +
          ` (traces: ${fmtNum(spans?.requests ?? 0)} request(s))${exported?.requests ? '' : ' — **nothing was exported: the tracing figures measure nothing**'}.`,
      );
    }
    return { markdown: lines.join('\n'), targets, data: { data, skipped, probes, exported } };
  },
};
