#!/usr/bin/env node
// Builds dist/ (tsc) only when it is missing, so `npm start` starts at once.
//
// Run by `npm start` before the gateway. `npm install` and `npm ci` already build once (the
// `prepare` script), so this builds only after dist/ was deleted or the install skipped scripts.
// After changing src/, rebuild with `npm run build` (or `npm test`, which builds): a dist/ that is
// there is trusted, because comparing it with src/ would cost the start-up time this script saves.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) {
  process.stderr.write('dist/ is missing: building it once (npm run build)\n');
  const run = spawnSync('npm', ['run', 'build'], {
    cwd: root,
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
  process.exit(run.status ?? 1);
}
