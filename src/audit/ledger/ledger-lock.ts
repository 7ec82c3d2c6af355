/**
 * One writer per ledger directory. Two gateways started on the same data directory would each
 * continue the chain from the same head and interleave their lines: the ledger would no longer
 * verify, and the damage would look like tampering. The writer therefore holds `writer.lock`
 * (created exclusively, holding its pid) while it is open; a lock whose process is gone (a crash)
 * is taken over, with a warning. Readers (`audit verify`, `tail`...) never take it.
 */
import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import type { Logger } from '../../observe/logger.js';

/** The lock file's name inside the ledger directory. */
export const LOCK_FILE = 'writer.lock';

/** A held lock. */
export interface LedgerLock {
  /** Removes the lock file; idempotent, never throws. */
  release(): Promise<void>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function create(path: string): Promise<boolean> {
  try {
    const handle = await open(path, 'wx', 0o600);
    try {
      await handle.writeFile(`${process.pid}\n`);
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * Takes the writer lock of the ledger in `dir`.
 *
 * @throws SwitchboardError `SB_AUDIT_UNAVAILABLE` when a live process (this one included) holds it.
 */
export async function acquireLedgerLock(dir: string, logger: Logger): Promise<LedgerLock> {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    if (await create(path)) break;
    const pid = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (attempt > 0 || (Number.isSafeInteger(pid) && pid > 0 && isAlive(pid))) {
      throw new SwitchboardError(
        SbErrorCode.AuditUnavailable,
        `Another process (pid ${Number.isNaN(pid) ? '?' : pid}) is writing the audit ledger in ${dir}: ` +
          `two gateways on one data directory? give this one its own --data-dir; if it is gone, remove ${path}`,
        { details: { pid } },
      );
    }
    logger.warn({ lockFile: path, pid }, 'audit ledger: taking over the lock of a writer that is gone');
    await unlink(path).catch(() => undefined);
  }
  let released = false;
  return {
    async release(): Promise<void> {
      if (released) return;
      released = true;
      await unlink(path).catch(() => undefined);
    },
  };
}
