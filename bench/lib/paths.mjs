// Where the things the benchmarks run live. Mirrors test/support/peers.ts (which is TypeScript and
// cannot be imported from plain Node): the Node 22 peers in test/peers, our fixtures, the built CLI.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH_DIR = join(ROOT, 'bench');
/** Scratch space (git-ignored): data directories, configs, CPU profiles. */
export const WORK_DIR = join(BENCH_DIR, '.work');
const PEER_MODULES = join(ROOT, 'test/peers/node_modules');
const ROOT_MODULES = join(ROOT, 'node_modules');

function real(path) {
  return existsSync(path) ? realpathSync(path) : path;
}

/** The absolute path of the file a package's `bin` entry names. */
function binEntry(packageDir, binName) {
  const manifestPath = join(packageDir, 'package.json');
  if (!existsSync(manifestPath)) return join(packageDir, '<missing: run node scripts/ensure-peers.mjs>');
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const relative = typeof bin === 'string' ? bin : bin?.[binName];
  if (typeof relative !== 'string') throw new Error(`${manifestPath} has no bin entry named ${binName}`);
  return real(join(packageDir, relative));
}

/** The Node that runs the bench, our gateway and the fixtures (Node 20). */
export const NODE = process.execPath;
/**
 * The built gateway the suites run. The runner points this at a snapshot of dist/ taken when the
 * bench starts (see `useDist`), so that a rebuild by someone else in the same checkout cannot change
 * the code under measurement halfway through. Children inherit it via SWITCHBOARD_BENCH_DIST.
 */
export let DIST = process.env.SWITCHBOARD_BENCH_DIST ?? join(ROOT, 'dist');
/** The built CLI (`npm run build`). */
export let CLI = join(DIST, 'cli/main.js');

export function useDist(dir) {
  DIST = dir;
  CLI = join(dir, 'cli/main.js');
  process.env.SWITCHBOARD_BENCH_DIST = dir;
}

export const PEERS = {
  node22: real(join(PEER_MODULES, 'node/bin/node')),
  supergateway: binEntry(join(PEER_MODULES, 'supergateway'), 'supergateway'),
  mcpProxy: binEntry(join(PEER_MODULES, 'mcp-proxy'), 'mcp-proxy'),
};

export const FIXTURES = {
  echoServer: join(ROOT, 'test/fixtures/echo-server.mjs'),
  serverEverything: binEntry(
    join(ROOT_MODULES, '@modelcontextprotocol/server-everything'),
    'mcp-server-everything',
  ),
};

/** Version of an installed package, for the results ("supergateway 4.0.0"). */
export function packageVersion(name, peers = true) {
  const dir = join(peers ? PEER_MODULES : ROOT_MODULES, name, 'package.json');
  try {
    return JSON.parse(readFileSync(dir, 'utf8')).version;
  } catch {
    return 'missing';
  }
}

/**
 * Throws a helpful error when something the bench needs is absent: the built CLI, and with `peers`
 * the Node 22 peers of test/peers (a fresh checkout has none until `node scripts/ensure-peers.mjs`;
 * without this check the first peer gateway to start fails with a bare timeout).
 */
export function assertInstalled({ peers = false } = {}) {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build (npm run bench does)`);
  const missing = peers ? Object.values(PEERS).filter((path) => !existsSync(path)) : [];
  if (missing.length > 0) {
    throw new Error(
      `the peer gateways are not installed (${missing.join(', ')}): run node scripts/ensure-peers.mjs (npm run bench does)`,
    );
  }
}
