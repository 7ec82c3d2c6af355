#!/usr/bin/env node
// Summarises V8 CPU profiles (.cpuprofile, as written by `node --cpu-prof`, e.g. by `node bench/run.mjs
// --profile`): where the sampled time went, by self time per function, by area (our code, Node
// internals, each npm package, GC) and by our source file, plus inclusive ("total") time of our own
// functions. Positions in dist/ are mapped back to src/*.ts through the build's source maps.
//
//   node bench/profile-summary.mjs FILE.cpuprofile|DIR [...] [--top N]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT } from './lib/paths.mjs';

const args = process.argv.slice(2);
let top = 30;
const inputs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--top') top = Number.parseInt(args[++i], 10);
  else inputs.push(args[i]);
}
if (inputs.length === 0) {
  console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile|DIR [...] [--top N]');
  process.exit(2);
}
const files = inputs.flatMap((p) =>
  statSync(p).isDirectory()
    ? readdirSync(p)
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(p, f))
    : [p],
);

const maps = new Map();
function sourceMapFor(path) {
  if (!maps.has(path)) {
    let map;
    try {
      if (existsSync(`${path}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')));
    } catch {}
    maps.set(path, map);
  }
  return maps.get(path);
}

/** "src/core/router.ts:123" for our code, "node_modules/pkg/file.js:1" or "node:internal/..." otherwise. */
function locate(frame) {
  const { url, lineNumber, columnNumber } = frame;
  if (!url) return { where: '', area: frame.functionName.startsWith('(') ? frame.functionName : '(native)' };
  if (url.startsWith('node:')) return { where: `${url}:${lineNumber + 1}`, area: 'node internals' };
  let path = url;
  if (url.startsWith('file://')) path = fileURLToPath(url);
  // The bench measures a snapshot of dist/ in bench/.work/build-<stamp>/: report it as dist/.
  const rel = relative(ROOT, path).replace(/^bench\/\.work\/build-[^/]+\//, '');
  const nm = rel.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const after = rel.slice(nm + 'node_modules/'.length).split('/');
    const pkg = after[0].startsWith('@') ? `${after[0]}/${after[1]}` : after[0];
    return { where: `${rel.slice(nm)}:${lineNumber + 1}`, area: `npm: ${pkg}` };
  }
  if (rel.startsWith('dist/')) {
    // The snapshot the profile was taken from, else the repository's dist/ (same build, if not rebuilt since).
    const map = sourceMapFor(existsSync(`${path}.map`) ? path : join(ROOT, rel));
    const entry = map?.findEntry(lineNumber, columnNumber);
    if (entry?.originalSource) {
      const original = entry.originalSource.startsWith('file://')
        ? fileURLToPath(entry.originalSource)
        : join(ROOT, rel, '..', entry.originalSource);
      const src = relative(ROOT, original).replace(/^bench\/\.work\/build-[^/]+\//, '');
      return { where: `${src}:${entry.originalLine + 1}`, area: 'switchboard', file: src };
    }
    return { where: `${rel}:${lineNumber + 1}`, area: 'switchboard', file: rel };
  }
  return {
    where: `${rel}:${lineNumber + 1}`,
    area: rel.startsWith('..') ? 'other' : 'switchboard (other)',
    file: rel,
  };
}

const pct = (v, total) => `${((100 * v) / total).toFixed(1).padStart(5)}%`;
const ms = (us) => `${(us / 1000).toFixed(1).padStart(8)} ms`;

function table(title, entries, total, limit = top) {
  console.log(`\n${title}`);
  for (const [key, v] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
    console.log(`  ${pct(v, total)} ${ms(v)}  ${key}`);
  }
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const info = new Map(profile.nodes.map((n) => [n.id, locate(n.callFrame)]));
  const keyOf = (id) => {
    const n = byId.get(id);
    const { where } = info.get(id);
    return `${n.callFrame.functionName || '(anonymous)'}${where ? `  ${where}` : ''}`;
  };

  const selfByNode = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    selfByNode.set(profile.samples[i], (selfByNode.get(profile.samples[i]) ?? 0) + dt);
    total += dt;
  }
  const self = new Map();
  const area = new Map();
  const ourFiles = new Map();
  const inclusive = new Map();
  let idle = 0;
  for (const [id, t] of selfByNode) {
    const k = keyOf(id);
    const loc = info.get(id);
    if (loc.area === '(idle)') {
      idle += t;
      continue;
    }
    self.set(k, (self.get(k) ?? 0) + t);
    area.set(loc.area, (area.get(loc.area) ?? 0) + t);
    if (loc.area === 'switchboard') ourFiles.set(loc.file, (ourFiles.get(loc.file) ?? 0) + t);
    // Inclusive time of our functions: each sample counts once per distinct function on its stack.
    const seen = new Set();
    for (let p = id; p !== undefined; p = parent.get(p)) {
      if (info.get(p).area !== 'switchboard') continue;
      const pk = keyOf(p);
      if (seen.has(pk)) continue;
      seen.add(pk);
      inclusive.set(pk, (inclusive.get(pk) ?? 0) + t);
    }
  }
  const busy = total - idle;
  console.log(`\n=== ${relative(process.cwd(), file)}`);
  console.log(
    `sampled ${ms(total).trim()}, idle ${ms(idle).trim()}, busy ${ms(busy).trim()} (percentages below are of busy time)`,
  );
  table('By area (self time):', area, busy);
  table(`Top ${top} functions by self time:`, self, busy);
  table('Our source files by self time:', ourFiles, busy, 20);
  table(`Our functions by inclusive time (top ${top}):`, inclusive, busy);
}
