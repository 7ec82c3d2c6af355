// Suite "ledger" (issue "audit ledger"): how fast the tamper-evident audit ledger appends records and
// how fast `verifyLedger` checks them. Targets: at least 100,000 appends/s batched (no fsync) and at
// least 300,000 records/s verified.
//
// Each measurement runs in a fresh Node process (this file, started as a script) against the built
// library (`dist/audit/ledger`), so JIT state and heap never carry over between variants:
//
// - appends: a producer keeps 1,024 appends in flight (a busy gateway: many calls completing at once),
//   each a realistic event (ids, a small `args`, a 1 KiB output that is hashed, never stored), on a
//   fresh ledger with the default checkpoint cadence (every 1,000 records). Variants: `fsync: never`,
//   `fsync: always` (every batch synced), and `critical` with every tenth append durable (the policy a
//   gateway runs: T2+ and denied calls are durable). And one at a time (`fsync: never`, one append in
//   flight, so every append is a batch of its own with its own write): a gateway answering one call
//   after another, where the per-batch cost (the write call, the flush loop) is paid per call.
// - verify: `verifyLedger` over the 200,000-record ledger the no-fsync variant wrote (200 signed
//   checkpoints), read from the page cache.
//
// Figures are wall-clock throughput (median over repeats); the CPU time of the measuring process is
// shown beside it (records per CPU-second), which is much less sensitive to a shared, loaded machine.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DIST, NODE } from '../lib/paths.mjs';
import { fmtNum, fmtSpread, median } from '../lib/stats.mjs';

const APPEND_TARGET = 100_000;
/** Verify runs per variant and repeat. */
const VERIFY_SAMPLES = 3;
const VERIFY_TARGET = 300_000;
const IN_FLIGHT = 1024;
const SELF = fileURLToPath(import.meta.url);

// ------------------------------------------------------------------ worker (a child process)

function event(i, output) {
  return {
    session_id: `session-${i % 64}`,
    client_id: `principal-${i % 8}`,
    request_id: i,
    upstream: 'files',
    method: 'tools/call',
    target: 'read_file',
    tier: i % 10 === 0 ? 'T2' : 'T1',
    decision: 'allowed',
    args: { path: `/srv/data/${i}.txt`, encoding: 'utf8', lines: i % 100 },
    output,
    duration_ms: 1.25 + (i % 50),
    trace_id: `0194f8a2-${i}`,
  };
}

function cpuSeconds(since) {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}

async function appendRun({ dir, fsync, count, durableEvery, inFlight: window = IN_FLIGHT }) {
  const { AuditLedger } = await import(pathToFileURL(join(DIST, 'audit/ledger/index.js')).href);
  const ledger = await AuditLedger.open({ dir, fsync, checkpoint: { everyRecords: 1000, everyMs: 0 } });
  const output = JSON.stringify({ content: [{ type: 'text', text: 'x'.repeat(1000) }] });
  const cpu = process.cpuUsage();
  const started = performance.now();
  // A counting window (not Promise.race over the pending set, which is O(window) per call).
  let inFlight = 0;
  let failure;
  let wake;
  const settle = () => {
    inFlight--;
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  for (let i = 1; i <= count; i++) {
    while (inFlight >= window) await new Promise((resolve) => (wake = resolve));
    inFlight++;
    const durable = durableEvery > 0 && i % durableEvery === 0;
    ledger.append(event(i, output), { durable }).then(settle, (error) => {
      failure = error;
      settle();
    });
  }
  while (inFlight > 0) await new Promise((resolve) => (wake = resolve));
  if (failure) throw failure;
  const seconds = (performance.now() - started) / 1000;
  const cpuUsed = cpuSeconds(cpu);
  await ledger.close();
  return { perSecond: count / seconds, perCpuSecond: count / cpuUsed, seconds };
}

async function verifyRun({ dir, threads }) {
  const { verifyLedger } = await import(pathToFileURL(join(DIST, 'audit/ledger/index.js')).href);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const report = await verifyLedger({ dir, ...(threads === undefined ? {} : { threads }) });
  const seconds = (performance.now() - started) / 1000;
  const cpuUsed = cpuSeconds(cpu);
  if (report.status === 'tampered')
    throw new Error(`the bench ledger does not verify: ${JSON.stringify(report)}`);
  return {
    perSecond: report.records / seconds,
    perCpuSecond: report.records / cpuUsed,
    seconds,
    records: report.records,
  };
}

/**
 * The machine's speed right now, as a yardstick: the naive hash chain of audit.md §5 (JSON.stringify
 * plus SHA-256 per record), measured there at about 540,000 records/s on this kind of machine.
 */
async function calibrateRun() {
  const { createHash } = await import('node:crypto');
  const records = Array.from({ length: 1000 }, (_, i) => ({
    seq: i,
    ts: new Date(0).toISOString(),
    tool: 'read_file',
    tier: 'T1',
    decision: 'allowed',
    args: { path: `/srv/${i}` },
    output_sha256: 'a'.repeat(64),
    output_len: 100,
    prev_hash: 'b'.repeat(64),
  }));
  const count = 200_000;
  const cpu = process.cpuUsage();
  const started = performance.now();
  let prev = '';
  for (let i = 0; i < count; i++) {
    prev = createHash('sha256')
      .update(JSON.stringify(records[i % 1000]) + prev)
      .digest('hex');
  }
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: count / seconds, perCpuSecond: count / cpuSeconds(cpu), seconds };
}

if (process.argv[1] === SELF) {
  const spec = JSON.parse(process.argv[2]);
  const run = { verify: verifyRun, append: appendRun, calibrate: calibrateRun }[spec.kind];
  const result = await run(spec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// ------------------------------------------------------------------ the suite (in the runner)

function runChild(spec) {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [SELF, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').at(-1)));
      else reject(new Error(`ledger bench worker exited with ${code}: ${JSON.stringify(spec)}`));
    });
  });
}

/** The threads `verifyLedger` uses by default on this machine. */
const threadsHere = () => Math.min(availableParallelism(), 4);

const per = (values) => fmtSpread(values, (v) => `${fmtNum(v)}/s`);

export default {
  name: 'ledger',
  order: 40,
  title: 'Audit ledger: appends/s and records/s verified (issue "audit ledger")',
  duration: { full: '~30 s', quick: '~10 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 3);
    const records = ctx.quick ? 50_000 : 200_000;
    const syncedRecords = ctx.quick ? 5_000 : 20_000;
    const variants = [
      {
        key: 'never',
        label: '`fsync: never` (batched, no fsync)',
        fsync: 'never',
        count: records,
        durableEvery: 0,
      },
      {
        key: 'always',
        label: '`fsync: always` (every batch synced)',
        fsync: 'always',
        count: syncedRecords,
        durableEvery: 0,
      },
      {
        key: 'critical',
        label: '`fsync: critical`, 10% durable',
        fsync: 'critical',
        count: syncedRecords,
        durableEvery: 10,
      },
      {
        key: 'one',
        label: 'one at a time, `fsync: never` (each append its own batch)',
        fsync: 'never',
        count: ctx.quick ? 5_000 : 20_000,
        durableEvery: 0,
        inFlight: 1,
      },
    ];
    const results = Object.fromEntries(variants.map((v) => [v.key, []]));
    const verified = [];
    const verifiedOne = [];
    const yardstick = [];
    for (let r = 0; r < repeats; r++) {
      const calibration = await runChild({ kind: 'calibrate' });
      yardstick.push(calibration);
      ctx.log(`yardstick #${r + 1}: ${fmtNum(calibration.perSecond)} chained stringify+sha256/s`);
      for (const v of variants) {
        const dir = join(ctx.workDir, `${v.key}-${r}`);
        mkdirSync(dir, { recursive: true });
        const result = await runChild({
          kind: 'append',
          dir,
          fsync: v.fsync,
          count: v.count,
          durableEvery: v.durableEvery,
          ...(v.inFlight === undefined ? {} : { inFlight: v.inFlight }),
        });
        results[v.key].push(result);
        ctx.log(
          `${v.key} #${r + 1}: ${fmtNum(result.perSecond)} appends/s (${fmtNum(result.perCpuSecond)} per CPU-second)`,
        );
        if (v.key === 'never') {
          // The default (worker threads, one per CPU up to 4) and one thread, in turn, a few times:
          // each is a second or so, and on a shared machine one sample of each says little.
          for (let k = 0; k < VERIFY_SAMPLES; k++) {
            const check = await runChild({ kind: 'verify', dir });
            verified.push(check);
            const single = await runChild({ kind: 'verify', dir, threads: 1 });
            verifiedOne.push(single);
            ctx.log(
              `verify #${r + 1}.${k + 1}: ${fmtNum(check.perSecond)} records/s (${fmtNum(check.perCpuSecond)} per CPU-second); one thread ${fmtNum(single.perSecond)}/s`,
            );
          }
        }
      }
    }
    const wall = (list) => list.map((x) => x.perSecond);
    const cpu = (list) => list.map((x) => x.perCpuSecond);
    const lines = [
      `Appends: ${fmtNum(IN_FLIGHT)} in flight, realistic events (ids, small \`args\`, a 1 KiB output hashed and never stored),`,
      `checkpoints every 1,000 records; ${fmtNum(records)} appends without fsync, ${fmtNum(syncedRecords)} with. Verify:`,
      `\`verifyLedger\` over the ${fmtNum(records)}-record ledger the no-fsync run wrote (page cache warm), as \`audit verify\``,
      `runs it (records checked in ${threadsHere()} threads here: one per CPU, at most 4) and with one thread, alternately,`,
      `${VERIFY_SAMPLES} times each per repeat. Each figure is the median over its fresh processes (${repeats} per append variant,`,
      `${repeats * VERIFY_SAMPLES} per verify variant); "per CPU-second" divides by the CPU time the process used (all its threads), the figure to`,
      'compare on a loaded machine. "One at a time" keeps a single append in flight, so each is written in a batch of',
      `its own: its CPU per append (here ${fmtNum(1e6 / median(cpu(results.one)))} µs) is what a gateway answering one call`,
      'after another pays per call.',
      '',
      '| measurement | throughput | per CPU-second | target |',
      '|---|---|---|---|',
      ...variants.map(
        (v) =>
          `| appends, ${v.label} | ${per(wall(results[v.key]))} | ${per(cpu(results[v.key]))} | ${v.key === 'never' ? `≥ ${fmtNum(APPEND_TARGET)}/s` : ''} |`,
      ),
      `| records verified (${fmtNum(records)}-record ledger, default threads) | ${per(wall(verified))} | ${per(cpu(verified))} | ≥ ${fmtNum(VERIFY_TARGET)}/s |`,
      `| records verified, one thread (\`--threads 1\`) | ${per(wall(verifiedOne))} | ${per(cpu(verifiedOne))} |  |`,
      `| yardstick: audit.md §5's naive chain (JSON.stringify + SHA-256 per record) | ${per(wall(yardstick))} | ${per(cpu(yardstick))} | (≈ 540,000/s when audit.md was written) |`,
      '',
      'The yardstick says how fast the machine was during the run: the ledger targets were set against it at',
      'about 540,000/s; scale the ledger figures by the ratio to compare runs made under different load.',
    ];
    const appendRate = median(wall(results.never));
    const verifyRate = median(wall(verified));
    const targets = [
      {
        target: `≥ ${fmtNum(APPEND_TARGET)} appends/s batched (no fsync)`,
        measured: `${fmtNum(appendRate)}/s (${fmtNum(median(cpu(results.never)))} per CPU-second)`,
        baseline: `fsync always ${fmtNum(median(wall(results.always)))}/s; critical 10% durable ${fmtNum(median(wall(results.critical)))}/s; yardstick ${fmtNum(median(wall(yardstick)))}/s`,
        met: appendRate >= APPEND_TARGET,
      },
      {
        target: `≥ ${fmtNum(VERIFY_TARGET)} records/s verified`,
        measured: `${fmtNum(verifyRate)}/s (${fmtNum(median(cpu(verified)))} per CPU-second)`,
        baseline: `${fmtNum(records)} records, ${fmtNum(records / 1000)} checkpoints; one thread ${fmtNum(median(wall(verifiedOne)))}/s; yardstick ${fmtNum(median(wall(yardstick)))}/s`,
        met: verifyRate >= VERIFY_TARGET,
      },
    ];
    return { markdown: lines.join('\n'), targets, data: { results, verified, yardstick } };
  },
};
