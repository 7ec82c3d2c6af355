#!/usr/bin/env node
// The benchmark runner: `npm run bench` (= build, ensure the peers, then this), or directly
//   node bench/run.mjs [--suite NAME[,NAME]] [--quick] [--repeats N] [--profile] [--out FILE] [--no-write] [--list]
//
// Suites are the files in bench/suites/ (one per suite; each default-exports { name, title, order,
// run(ctx) }). Each suite's section of bench/RESULTS.md is replaced in place, so running one suite
// alone keeps the other sections (each section says when and how it was measured).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadString, machineInfo } from './lib/machine.mjs';
import { assertInstalled, BENCH_DIR, NODE, ROOT, useDist, WORK_DIR } from './lib/paths.mjs';

function usage() {
  return `usage: node bench/run.mjs [options]
  --suite NAME[,NAME]  run only these suites (repeatable); default: all
  --quick              fewer repeats and shorter windows (a smoke run, not for the record)
  --repeats N          override every suite's number of repeats
  --profile            also write CPU profiles of the switchboard processes (bench/.work/profiles/)
                       and print their top self-time functions
  --keep-work          keep the suites' scratch directories (trace databases, configs) in bench/.work/
  --no-snapshot        run dist/ in place instead of a copy taken at start
  --baseline DIR       also measure the switchboard built in DIR (a dist/ directory, e.g. of an older
                       commit) as one more variant of the stdio and http suites, interleaved with the
                       others: an A/B comparison on the same machine at the same load
  --base REV           the git revision the ab suite builds and compares this build with
                       (default 8184dbc, the last commit before issue 20)
  --out FILE           where to write the results (default bench/RESULTS.md)
  --no-write           print the results, do not write them
  --list               list the suites and exit`;
}

function parseArgs(argv) {
  const opts = {
    suites: [],
    quick: false,
    repeats: undefined,
    profile: false,
    out: join(BENCH_DIR, 'RESULTS.md'),
    write: true,
    list: false,
    keepWork: false,
    snapshot: true,
    baseline: undefined,
    base: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--suite' || a.startsWith('--suite=')) opts.suites.push(...value().split(',').filter(Boolean));
    else if (a === '--quick') opts.quick = true;
    else if (a === '--repeats' || a.startsWith('--repeats=')) opts.repeats = Number.parseInt(value(), 10);
    else if (a === '--profile') opts.profile = true;
    else if (a === '--out' || a.startsWith('--out=')) opts.out = value();
    else if (a === '--no-write') opts.write = false;
    else if (a === '--list') opts.list = true;
    else if (a === '--keep-work') opts.keepWork = true;
    else if (a === '--no-snapshot') opts.snapshot = false;
    else if (a === '--baseline' || a.startsWith('--baseline=')) opts.baseline = resolve(value());
    else if (a === '--base' || a.startsWith('--base=')) opts.base = value();
    else if (a === '--help' || a === '-h') {
      console.log(usage());
      process.exit(0);
    } else throw new Error(`unknown option ${a}\n${usage()}`);
  }
  if (opts.repeats !== undefined && !(opts.repeats >= 1))
    throw new Error('--repeats must be a positive integer');
  if (opts.baseline !== undefined && !existsSync(join(opts.baseline, 'cli/main.js')))
    throw new Error(`--baseline ${opts.baseline}: no cli/main.js there (give a built dist/ directory)`);
  return opts;
}

async function loadSuites() {
  const dir = join(BENCH_DIR, 'suites');
  const suites = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.mjs'))
    .sort()) {
    const mod = await import(pathToFileURL(join(dir, file)).href);
    const suite = mod.default;
    if (!suite?.name || typeof suite.run !== 'function')
      throw new Error(`bench/suites/${file} exports no suite`);
    suites.push({ ...suite, file });
  }
  return suites.sort((a, b) => (a.order ?? 100) - (b.order ?? 100) || a.name.localeCompare(b.name));
}

const START = (name) => `<!-- suite:${name}:start -->`;
const END = (name) => `<!-- suite:${name}:end -->`;

/** The sections already in the results file: name -> { text, targets }. */
function readSections(file) {
  const sections = new Map();
  if (!existsSync(file)) return sections;
  const text = readFileSync(file, 'utf8');
  const re = /<!-- suite:([\w-]+):start -->\n([\s\S]*?)<!-- suite:\1:end -->/g;
  for (const m of text.matchAll(re)) {
    const targets = /<!-- targets: (.*) -->/.exec(m[2]);
    sections.set(m[1], { text: m[2], targets: targets ? JSON.parse(targets[1]) : [] });
  }
  return sections;
}

function targetsTable(rows) {
  if (rows.length === 0) return '_No targets._\n';
  const lines = ['| suite | target | measured | baseline | met? |', '|---|---|---|---|---|'];
  for (const t of rows) {
    lines.push(
      `| ${t.suite} | ${t.target} | ${t.measured} | ${t.baseline ?? ''} | ${t.met ? '**met**' : '**not met**'} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function renderSection(suite, result, meta) {
  const targets = (result.targets ?? []).map((t) => ({ suite: suite.name, ...t }));
  return [
    `## ${suite.title}`,
    '',
    `<!-- targets: ${JSON.stringify(targets)} -->`,
    `Measured ${meta.date} · \`${meta.command}\` · commit ${meta.machine.commit}${meta.machine.srcDirty ? ' (+ uncommitted changes in src/)' : ''} · ` +
      `${meta.machine.cpu}, ${meta.machine.cores} cores, Node ${meta.machine.node} · ` +
      `load average (1/5/15 min) before ${meta.loadBefore}, after ${meta.loadAfter} · took ${meta.seconds} s${meta.quick ? ' · **--quick run**' : ''}`,
    '',
    '### Targets',
    '',
    targetsTable(targets),
    result.markdown.trim(),
    '',
  ].join('\n');
}

function renderResults(suites, sections, runMeta) {
  const order = [
    ...suites.map((s) => s.name),
    ...[...sections.keys()].filter((k) => !suites.some((s) => s.name === k)),
  ];
  const allTargets = order.flatMap((name) => sections.get(name)?.targets ?? []);
  const parts = [
    '# Benchmark results',
    '',
    'Generated by `npm run bench` (`node bench/run.mjs`); do not edit by hand. See [README.md](README.md) for what',
    'each suite measures and how. Every figure is shown next to its baseline (the same server without the gateway,',
    'or the peer gateways in the same run); each figure is the median over repeats, with the range over repeats in',
    'small print where useful. The machine is shared with other work, so look at the load averages.',
    '',
    `Last run: ${runMeta.date} · \`${runMeta.command}\` · ${runMeta.machine.cpu}, ${runMeta.machine.cores} cores, ` +
      `${runMeta.machine.memory}, Node ${runMeta.machine.node}, ${runMeta.machine.platform} · commit ${runMeta.machine.commit}` +
      ` · load average before ${runMeta.loadBefore}, after ${runMeta.loadAfter}`,
    '',
    '## All targets',
    '',
    targetsTable(allTargets),
  ];
  for (const name of order) {
    const s = sections.get(name);
    if (s) parts.push(START(name), s.text.trimEnd(), END(name), '');
  }
  return `${parts.join('\n').trimEnd()}\n`;
}

/**
 * Copies dist/ (and package.json, which the CLI reads its version from) to bench/.work/build-<stamp>/
 * and points the suites at the copy: other people rebuild dist/ in this checkout while the bench
 * runs. Bare imports still resolve to the repository's node_modules (it is an ancestor directory).
 */
function snapshotDist(stamp) {
  const dir = join(WORK_DIR, `build-${stamp}`);
  const dist = join(ROOT, 'dist');
  if (!existsSync(join(dist, 'cli/main.js')))
    throw new Error('dist/cli/main.js is missing: run npm run build');
  mkdirSync(dir, { recursive: true });
  cpSync(dist, join(dir, 'dist'), { recursive: true, filter: (src) => !src.endsWith('.d.ts') });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  useDist(join(dir, 'dist'));
  const check = spawnSync(NODE, [join(dir, 'dist/cli/main.js'), '--version'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (check.status !== 0) {
    throw new Error(`the built CLI does not run (a build in progress?): ${check.stderr || check.stdout}`);
  }
  console.log(
    `bench: measuring a snapshot of dist/ (switchboard ${check.stdout.trim()}) in ${relative(ROOT, dir)}`,
  );
  return dir;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const suites = await loadSuites();
  if (opts.list) {
    for (const s of suites)
      console.log(
        `${s.name.padEnd(10)} ${s.title}  (full ${s.duration?.full ?? '?'}, --quick ${s.duration?.quick ?? '?'})`,
      );
    return;
  }
  const unknown = opts.suites.filter((n) => !suites.some((s) => s.name === n));
  if (unknown.length)
    throw new Error(
      `unknown suite(s): ${unknown.join(', ')}; known: ${suites.map((s) => s.name).join(', ')}`,
    );
  const selected = opts.suites.length ? suites.filter((s) => opts.suites.includes(s.name)) : suites;
  // Before anything runs: a missing peer would otherwise fail a suite minutes into the run.
  assertInstalled({ peers: selected.some((s) => s.needsPeers) });

  const command = `node ${['bench/run.mjs', ...process.argv.slice(2)].join(' ')}`;
  const runMeta = {
    date: new Date().toISOString(),
    command,
    machine: machineInfo(),
    loadBefore: loadString(),
  };
  console.log(
    `bench: ${runMeta.machine.cpu}, ${runMeta.machine.cores} cores, Node ${runMeta.machine.node}; load ${runMeta.loadBefore}`,
  );
  const sections = opts.write ? readSections(opts.out) : new Map();
  const runStamp = runMeta.date.replace(/[:.]/g, '-');
  const snapshot = opts.snapshot ? snapshotDist(runStamp) : undefined;
  let failed = false;

  for (const suite of selected) {
    const workDir = join(WORK_DIR, `${suite.name}-${runStamp}`);
    mkdirSync(workDir, { recursive: true });
    const profileDir = opts.profile ? join(WORK_DIR, 'profiles', `${suite.name}-${runStamp}`) : undefined;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const meta = {
      date: new Date().toISOString(),
      command,
      machine: runMeta.machine,
      loadBefore: loadString(),
      quick: opts.quick,
    };
    console.log(`\n=== suite ${suite.name}: ${suite.title} (load ${meta.loadBefore})`);
    const t0 = Date.now();
    let result;
    try {
      result = await suite.run({
        quick: opts.quick,
        repeats: opts.repeats,
        workDir,
        profileDir,
        baselineCli: opts.baseline === undefined ? undefined : join(opts.baseline, 'cli/main.js'),
        abBase: opts.base,
        srcDirty: runMeta.machine.srcDirty,
        log: (msg) =>
          console.log(
            `[${suite.name} ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)}s load ${loadString().split(' / ')[0]}] ${msg}`,
          ),
      });
    } catch (error) {
      failed = true;
      console.error(`bench: suite ${suite.name} failed: ${error?.stack ?? error}`);
      continue;
    } finally {
      if (!opts.keepWork) rmSync(workDir, { recursive: true, force: true });
    }
    meta.loadAfter = loadString();
    meta.seconds = ((Date.now() - t0) / 1000).toFixed(0);
    const text = renderSection(suite, result, meta);
    sections.set(suite.name, {
      text,
      targets: (result.targets ?? []).map((t) => ({ suite: suite.name, ...t })),
    });
    console.log(`\n${text}`);
    if (profileDir)
      console.log(
        `CPU profiles: ${relative(ROOT, profileDir)} (summarise: node bench/profile-summary.mjs <file>)`,
      );
  }

  // With --profile the snapshot stays: the profiles' source positions refer to its files and maps.
  if (snapshot && !opts.profile) rmSync(snapshot, { recursive: true, force: true });
  runMeta.loadAfter = loadString();
  if (opts.write && sections.size > 0) {
    writeFileSync(opts.out, renderResults(suites, sections, runMeta));
    console.log(`bench: wrote ${relative(ROOT, opts.out)} (load after ${runMeta.loadAfter})`);
  }
  if (failed) process.exitCode = 1;
}

let finished = false;
process.on('exit', () => {
  // The event loop emptied while a suite still awaited something (a promise that can never settle).
  if (!finished) {
    console.error('bench: stopped with work unfinished (a suite awaited something that can never happen)');
    process.exitCode = 1;
  }
});
main()
  .catch((error) => {
    console.error(`bench: ${error?.stack ?? error}`);
    process.exitCode = 1;
  })
  .finally(() => {
    finished = true;
    // Nothing of a suite's (pools, children) must keep the bench alive once it is done.
    setTimeout(() => process.exit(), 200).unref();
  });
