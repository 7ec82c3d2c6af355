// Suite "tape-replay" (issue 23): sequential `tools/call` round trips against server-everything
// live and against `switchboard tape replay` of a tape recorded from it, in one run, so a reader
// sees what the replay costs next to the server it stands in for (and that a CI job using a tape
// is not slower than the real server).
//
// Per repeat: a tape is recorded with `switchboard tape record` (initialize, then a few `echo`
// calls); then server-everything (stdio, no gateway) and `switchboard tape replay --mode loose
// --speed 0` of that tape (stdio) are started, initialized, warmed up and measured in interleaved
// batches (the order rotating between batches), as the stdio suite does. `--mode loose` answers a
// repeat of the recorded call with its recorded answer, so a short tape serves any number of calls;
// `--speed 0` plays the answer without the recorded wait (the recorded server's own latency).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, FIXTURES, NODE } from '../lib/paths.mjs';
import { cpuMsOf } from '../lib/procs.mjs';
import { fmtSpread, fmtUs, fmtUsSigned, median, rotate, summarize } from '../lib/stats.mjs';
import { StdioMcpClient } from '../lib/stdio-client.mjs';

const VARIANTS = [
  { key: 'live', label: 'server-everything, live (stdio, no gateway)' },
  { key: 'replay', label: '`switchboard tape replay --mode loose --speed 0` (stdio)' },
];

const MESSAGE = { message: 'hello from the switchboard bench' };

async function recordTape(path) {
  const recorder = await StdioMcpClient.start(
    NODE,
    [CLI, 'tape', 'record', '-o', path, '--', NODE, FIXTURES.serverEverything, 'stdio'],
    { name: 'tape-record' },
  );
  await recorder.initialize();
  await recorder.callLoop(3, 'echo', MESSAGE);
  await recorder.close();
  if (!existsSync(path)) throw new Error(`tape record wrote no tape at ${path}`);
}

export default {
  name: 'tape-replay',
  order: 60,
  title: 'tape replay: `tools/call` round trips, replay next to the live server (issue 23)',
  duration: { full: '~1 min', quick: '~15 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 3);
    const warmup = ctx.quick ? 300 : 1000;
    const calls = ctx.quick ? 600 : 3000;
    const batch = 200;
    const perRepeat = { live: [], replay: [] };
    for (let r = 0; r < repeats; r++) {
      const tape = join(ctx.workDir, `everything-${r}.tape.jsonl`);
      await recordTape(tape);
      const clients = {
        live: await StdioMcpClient.start(NODE, [FIXTURES.serverEverything, 'stdio'], { name: 'live' }),
        replay: await StdioMcpClient.start(
          NODE,
          [CLI, 'tape', 'replay', tape, '--mode', 'loose', '--speed', '0', '--log-level', 'error'],
          { name: 'replay' },
        ),
      };
      for (const v of VARIANTS) await clients[v.key].initialize();
      for (const v of VARIANTS) await clients[v.key].callLoop(warmup, 'echo', MESSAGE);
      const samples = { live: [], replay: [] };
      const cpuBefore = {};
      for (const v of VARIANTS) cpuBefore[v.key] = cpuMsOf(clients[v.key].pid);
      for (let done = 0, b = 0; done < calls; done += batch, b++) {
        const n = Math.min(batch, calls - done);
        for (const v of rotate(VARIANTS, b))
          await clients[v.key].callLoop(n, 'echo', MESSAGE, samples[v.key]);
      }
      for (const v of VARIANTS) {
        const s = summarize(samples[v.key]);
        s.cpuUsPerCall = ((cpuMsOf(clients[v.key].pid) - cpuBefore[v.key]) * 1000) / calls;
        perRepeat[v.key].push(s);
      }
      await Promise.all(VARIANTS.map((v) => clients[v.key].close()));
      const l = perRepeat.live.at(-1);
      const p = perRepeat.replay.at(-1);
      ctx.log(
        `repeat ${r + 1}/${repeats}: p50 live ${fmtUs(l.p50)}, replay ${fmtUs(p.p50)} (${fmtUsSigned(p.p50 - l.p50)}); ` +
          `p99 ${fmtUs(l.p99)} / ${fmtUs(p.p99)}`,
      );
    }
    const lines = [
      'Sequential `echo` round trips (one request in flight) over stdio, timed from writing the request to parsing its',
      `response: server-everything itself, and \`switchboard tape replay\` of a tape recorded from it just before. ${repeats} repeat(s);`,
      `per repeat a fresh tape and fresh processes, ${warmup} warm-up calls, then ${calls} measured calls interleaved in batches of ${batch}.`,
      'Cells: median over repeats (min–max). "CPU/call": CPU time of the process the client talks to, per call.',
      '',
      '| variant | p50 | p99 | mean | vs live at p50 | CPU/call |',
      '|---|---|---|---|---|---|',
    ];
    for (const v of VARIANTS) {
      const rows = perRepeat[v.key];
      lines.push(
        `| ${v.label} | ${fmtSpread(
          rows.map((s) => s.p50),
          fmtUs,
        )} | ${fmtSpread(
          rows.map((s) => s.p99),
          fmtUs,
        )} | ${fmtUs(median(rows.map((s) => s.mean)))} | ` +
          `${
            v.key === 'live'
              ? '(baseline)'
              : fmtSpread(
                  rows.map((s, i) => s.p50 - perRepeat.live[i].p50),
                  fmtUsSigned,
                )
          } | ` +
          `${fmtUs(median(rows.map((s) => s.cpuUsPerCall)))} |`,
      );
    }
    lines.push('');
    return { markdown: lines.join('\n'), targets: [], data: perRepeat };
  },
};
