/**
 * The layout of a ledger directory (docs/audit-ledger.md, "Files"):
 *
 * ```
 * <dir>/ledger-000001.jsonl, ledger-000002.jsonl, ...   records, one per line (0600, O_APPEND)
 * <dir>/checkpoints.jsonl                               signed checkpoints, chained (0600)
 * <dir>/state.json                                      the writer's resume point (0600)
 * <dir>/keys/checkpoint.key, keys/checkpoint.pub        the Ed25519 signer (0600) and verifier key
 * ```
 *
 * Ledger files are numbered from 1 with at least six digits; the chain continues from one file into
 * the next, so readers walk them in numeric order.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';

const LEDGER_FILE = /^ledger-(\d{6,})\.jsonl$/;

/** The checkpoint log's file name. */
export const CHECKPOINTS_FILE = 'checkpoints.jsonl';
/** The writer state's file name. */
export const STATE_FILE = 'state.json';
/** The signer key's path relative to the ledger directory (the default of `audit.key`). */
export const SIGNER_KEY_FILE = join('keys', 'checkpoint.key');
/** The verifier key's path relative to the ledger directory (what `audit verify` reads by default). */
export const VERIFIER_KEY_FILE = join('keys', 'checkpoint.pub');

/** The name of ledger file number `index` (1-based): `ledger-000001.jsonl`. */
export function ledgerFileName(index: number): string {
  return `ledger-${String(index).padStart(6, '0')}.jsonl`;
}

/** The number of a ledger file name, or `undefined` for any other name. */
export function ledgerFileIndex(name: string): number | undefined {
  const match = LEDGER_FILE.exec(name);
  return match === null ? undefined : Number(match[1]);
}

/**
 * The ledger file names in `dir`, in chain order (by number).
 *
 * @throws SwitchboardError `SB_USAGE` when `dir` does not exist or is not a directory; other read
 *   errors as they come.
 */
export async function listLedgerFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new SwitchboardError(SbErrorCode.UsageError, `No audit ledger directory at ${dir}`, {
        cause: error,
        details: { missing: true },
      });
    }
    throw error;
  }
  return names
    .map((name) => ({ name, index: ledgerFileIndex(name) }))
    .filter((entry): entry is { name: string; index: number } => entry.index !== undefined)
    .sort((a, b) => a.index - b.index)
    .map((entry) => entry.name);
}
