import type { Command } from 'commander';
import { resolveDataDir } from '../config/data-dir.js';

/** The data directory for a command: its own `--data-dir`, the program's, the env, or the default. */
export function dataDirOf(command: Command): string {
  const own = command.opts<{ dataDir?: string }>().dataDir;
  const global = command.optsWithGlobals<{ dataDir?: string }>().dataDir;
  return resolveDataDir(own ?? global);
}
