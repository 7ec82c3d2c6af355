/**
 * Everything the gateway keeps lives under one data directory: `--data-dir DIR`, else the
 * environment variable `SWITCHBOARD_DATA_DIR`, else `./.switchboard` (relative to the working
 * directory).
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';

export const DEFAULT_DATA_DIR = '.switchboard';
export const DATA_DIR_ENV = 'SWITCHBOARD_DATA_DIR';

export function resolveDataDir(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  const chosen = flag ?? env[DATA_DIR_ENV] ?? DEFAULT_DATA_DIR;
  return resolve(chosen);
}

/** Creates the directory (and its parents) with owner-only permissions if it does not exist. */
export function ensureDataDir(dir: string, sub?: string): string {
  const path = sub ? resolve(dir, sub) : dir;
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new SwitchboardError(SbErrorCode.DataDirUnusable, `cannot create the data directory ${path}`, {
      cause,
    });
  }
  return path;
}
