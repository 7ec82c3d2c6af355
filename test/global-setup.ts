/**
 * Integration tests run the built CLI (`dist/`), exactly what users run. Rebuild it when any source
 * file is newer than the build, so a test run never exercises stale code.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

function newest(dir: string, suffix: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path, suffix));
    else if (entry.name.endsWith(suffix)) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

export default function setup(): void {
  const main = join(root, 'dist/cli/main.js');
  const stale = !existsSync(main) || newest(join(root, 'src'), '.ts') > newest(join(root, 'dist'), '.js');
  if (stale) {
    execFileSync(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')],
      {
        stdio: 'inherit',
        cwd: root,
      },
    );
  }
}
