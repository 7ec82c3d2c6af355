/**
 * Opens the audit ledger of a gateway command. `serve` writes one ledger (the `audit` section:
 * `<data-dir>/audit` by default). `stdio` wrappers are started by clients, often several at once
 * on the same data directory, and a ledger has one writer: each wrapper writes the ledger of its
 * server, `<data-dir>/audit/stdio/<name>`, or when another live wrapper of the same server holds
 * it, the first free `<name>-2`, `<name>-3`... Each directory is one chain, continued across
 * restarts, that `switchboard audit verify --ledger DIR` checks.
 */
import { join } from 'node:path';
import { AuditLedger, auditLedgerOptions } from '../audit/ledger/audit-ledger.js';
import type { AuditConfig } from '../config/types.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';

/** How many `<name>-N` directories a stdio wrapper tries before giving up. */
const MAX_STDIO_LEDGERS = 64;

/** The ledger `serve` writes, as its configuration says. */
export function openServeLedger(
  config: AuditConfig,
  dataDir: string,
  deps: { readonly logger: Logger; readonly metrics: Metrics },
): Promise<AuditLedger> {
  return AuditLedger.open({ ...auditLedgerOptions(config, dataDir), ...deps });
}

/** A directory-safe form of an upstream name. */
function dirName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return safe.length === 0 ? 'server' : safe.slice(0, 64);
}

/** The ledger of one `switchboard stdio` wrapper (see the file comment); the directory it took. */
export async function openStdioLedger(
  config: AuditConfig,
  dataDir: string,
  name: string,
  deps: { readonly logger: Logger; readonly metrics: Metrics },
): Promise<{ readonly ledger: AuditLedger; readonly dir: string }> {
  const base = join(dataDir, 'audit', 'stdio', dirName(name));
  for (let n = 1; n <= MAX_STDIO_LEDGERS; n++) {
    const dir = n === 1 ? base : `${base}-${n}`;
    try {
      const ledger = await AuditLedger.open({ ...auditLedgerOptions({ ...config, dir }, dataDir), ...deps });
      return { ledger, dir };
    } catch (error) {
      // Held by another live wrapper of the same server (the lock names its pid): try the next.
      const locked =
        error instanceof SwitchboardError &&
        error.code === SbErrorCode.AuditUnavailable &&
        error.details?.pid !== undefined;
      if (!locked) throw error;
    }
  }
  throw new SwitchboardError(
    SbErrorCode.AuditUnavailable,
    `${MAX_STDIO_LEDGERS} wrappers of ${name} are already writing ledgers under ${join(dataDir, 'audit', 'stdio')}`,
  );
}
