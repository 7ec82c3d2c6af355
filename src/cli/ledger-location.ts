/**
 * Which ledger an `audit` command reads when no `--ledger` is given. `serve` writes
 * `<data-dir>/audit`; each `stdio` wrapper writes `<data-dir>/audit/stdio/<name>` (see
 * `ledger-setup.ts`). So a data directory that only stdio wrappers used has no ledger of its own
 * at `<data-dir>/audit`: then the one stdio ledger there is the one meant, and several are listed
 * for the person to choose. The data directory itself comes from `dataDirOf` (the config module's
 * `resolveDataDir`), like every other command's.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CHECKPOINTS_FILE, ledgerFileIndex } from '../audit/ledger/ledger-paths.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';

/** Where the ledger was found, and a note for stderr when it was not the obvious place. */
export interface LedgerLocation {
  readonly dir: string;
  readonly note?: string;
}

/** The names in `dir`, or none when it cannot be read (absent, not a directory). */
async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/** Whether `dir` holds a ledger: a ledger file or a checkpoint log. */
async function holdsLedger(dir: string): Promise<boolean> {
  return (await namesIn(dir)).some(
    (name) => name === CHECKPOINTS_FILE || ledgerFileIndex(name) !== undefined,
  );
}

/**
 * The ledger of `dataDir`: `<dataDir>/audit` when it holds one, else the only stdio wrapper's
 * ledger under it. With no ledger anywhere it answers `<dataDir>/audit`, so that the command's own
 * "no ledger" message names the usual place.
 *
 * @throws SwitchboardError `SB_USAGE` when several stdio ledgers are there and none at the top:
 *   the message lists them, to pass one with `--ledger`.
 */
export async function findLedger(dataDir: string): Promise<LedgerLocation> {
  const main = join(dataDir, 'audit');
  if (await holdsLedger(main)) return { dir: main };
  const stdioRoot = join(main, 'stdio');
  const found: string[] = [];
  for (const name of (await namesIn(stdioRoot)).sort()) {
    const dir = join(stdioRoot, name);
    if (await holdsLedger(dir)) found.push(dir);
  }
  if (found.length === 1) {
    const dir = found[0] as string;
    return { dir, note: `switchboard: reading the ledger of the stdio wrapper at ${dir}\n` };
  }
  if (found.length > 1) {
    throw new SwitchboardError(
      SbErrorCode.UsageError,
      `${main} holds no ledger, and ${found.length} stdio wrappers wrote one under ${stdioRoot}; ` +
        `choose one with --ledger: ${found.join(', ')}`,
    );
  }
  return { dir: main };
}
