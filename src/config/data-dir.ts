/**
 * Everything the gateway keeps lives under one data directory: `--data-dir DIR`, else the
 * environment variable `SWITCHBOARD_DATA_DIR`, else a per-user state directory:
 *
 * - Linux and other Unixes: `$XDG_STATE_HOME/switchboard`, else `~/.local/state/switchboard`;
 * - macOS: `~/Library/Application Support/switchboard`;
 * - Windows: `%LOCALAPPDATA%\switchboard`, else `~\AppData\Local\switchboard`.
 *
 * Why not the working directory: an MCP client starts `switchboard stdio` in a directory of its
 * choosing (Claude Desktop in `/`, an IDE in the workspace, Claude Code in the project), so a
 * relative default would scatter ledgers and traces, or fail on a read-only `/`. Every command
 * (`serve`, `stdio`, `trace`, `audit`, `config show`) resolves the same default, so what one
 * gateway recorded is found by the others without a flag.
 */
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve, win32 } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';

export const DATA_DIR_ENV = 'SWITCHBOARD_DATA_DIR';
/** The name of the gateway's folder inside the per-user state directory. */
export const DATA_DIR_NAME = 'switchboard';

/** What the default depends on; the process's own values unless a test passes others. */
export interface PlatformFacts {
  readonly platform: NodeJS.Platform;
  readonly home: string;
}

const HOST: PlatformFacts = { platform: process.platform, home: homedir() };

/**
 * The per-user state directory for this platform (absolute). An environment variable that is set
 * but empty or relative is ignored, as the XDG base directory specification asks.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, facts: PlatformFacts = HOST): string {
  if (facts.platform === 'win32') {
    const local = env.LOCALAPPDATA;
    const base = local && win32.isAbsolute(local) ? local : win32.join(facts.home, 'AppData', 'Local');
    return win32.join(base, DATA_DIR_NAME);
  }
  if (facts.platform === 'darwin') {
    return join(facts.home, 'Library', 'Application Support', DATA_DIR_NAME);
  }
  const xdg = env.XDG_STATE_HOME;
  const base = xdg?.startsWith('/') ? xdg : join(facts.home, '.local', 'state');
  return join(base, DATA_DIR_NAME);
}

/** The data directory: the flag, else `SWITCHBOARD_DATA_DIR`, else {@link defaultDataDir}. */
export function resolveDataDir(
  flag?: string,
  env: NodeJS.ProcessEnv = process.env,
  facts: PlatformFacts = HOST,
): string {
  const chosen = flag ?? (env[DATA_DIR_ENV] || undefined);
  return chosen === undefined ? defaultDataDir(env, facts) : resolve(chosen);
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
