/**
 * `switchboard tape export <session|context> [-o FILE]`: a tape from the trace a gateway recorded
 * (`src/tape/tape-export.ts` says what is taken and when it refuses). The database is opened
 * read-only, so this runs beside a live gateway. Exit codes: 0 written, 1 not found or incomplete
 * (the message lists the calls), 2 bad usage or an unreadable trace.
 */
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { exportTape } from '../../tape/tape-export.js';
import { createMessageRedactor } from '../../tape/tape-redaction.js';
import { writeTape, writeTapeFile } from '../../tape/tape-writer.js';
import { SqliteTraceStore } from '../../trace/sqlite-trace-store.js';
import { ioOf } from '../command-io.js';
import { dataDirOf } from '../global-options.js';
import { addExamples } from '../help-text.js';
import { readPackageVersion } from '../version.js';
import { TRACE_DB_FILE } from './trace.js';

interface ExportOptions {
  output?: string;
  trace?: string;
  upstream?: string;
  allowIncomplete?: boolean;
  keepSecrets?: boolean;
}

export function registerTapeExport(tape: Command): void {
  const command = tape
    .command('export')
    .summary('write a tape of one session (or context) from the trace')
    .description(
      'Writes the messages between the gateway and one upstream in a recorded session (or a context below it) as a tape. ' +
        'A trace that kept outputs only as their digests (trace.payloads: redacted, the default) cannot answer for them: ' +
        'the export lists those calls and refuses, unless --allow-incomplete.',
    )
    .argument(
      '<session|context>',
      'a session key or Mcp-Session-Id (see switchboard trace sessions), or a context path',
    )
    .option('-o, --output <file>', 'where to write the tape (default: standard output)')
    .option('--trace <path>', 'the trace database (default: <data-dir>/trace.db)')
    .option('--upstream <name>', 'the upstream whose side to export, when the session talked to several')
    .option('--allow-incomplete', 'write the tape even when some outputs are missing (listed in its header)')
    .option(
      '--keep-secrets',
      'keep secret-shaped values a trace kept in full (by default they are cut, as by tape record)',
    )
    .option(
      '--data-dir <dir>',
      'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default the per-user state directory)',
    )
    .action((target: string, options: ExportOptions, cmd: Command) => {
      const io = ioOf(cmd);
      const path = options.trace ? resolve(options.trace) : join(dataDirOf(cmd), TRACE_DB_FILE);
      let store: SqliteTraceStore;
      try {
        store = new SqliteTraceStore(path, { readonly: true });
      } catch (err) {
        const missing = err instanceof SwitchboardError && err.details?.missing === true;
        io.err(
          missing
            ? `switchboard tape export: no trace database at ${path} (pass --trace or --data-dir)\n`
            : `switchboard tape export: ${err instanceof Error ? err.message : String(err)}\n`,
        );
        process.exitCode = 2;
        return;
      }
      try {
        const tapeValue = exportTape(store, {
          target,
          ...(options.upstream === undefined ? {} : { upstream: options.upstream }),
          allowIncomplete: options.allowIncomplete === true,
          ...(options.keepSecrets === true ? {} : { redactor: createMessageRedactor() }),
          source: { trace: path, gateway: `switchboard ${readPackageVersion()}` },
        });
        if (options.output === undefined) io.out(writeTape(tapeValue));
        else {
          writeTapeFile(resolve(options.output), tapeValue);
          const n = tapeValue.header.incomplete.length;
          io.err(
            `switchboard tape export: wrote ${tapeValue.messages.length} messages to ${resolve(options.output)}` +
              (n > 0 ? ` (${n} incomplete, listed in its header)` : '') +
              '\n',
          );
        }
      } catch (err) {
        io.err(`switchboard tape export: ${err instanceof Error ? err.message : String(err)}\n`);
        const usage = err instanceof SwitchboardError && err.code === SbErrorCode.UsageError;
        const notFound = usage && err.details?.notFound === true;
        const code = err instanceof SwitchboardError && err.code === SbErrorCode.TapeIncomplete;
        process.exitCode = notFound || code || (usage && err.details?.upstreams !== undefined) ? 1 : 2;
      } finally {
        store.close();
      }
    });
  addExamples(command, [
    'switchboard tape export 3xYq9kT2mW8pL4vN6rB1cA -o session.tape.jsonl',
    'switchboard tape export 3xYq9kT2mW8pL4vN6rB1cA --upstream github --trace /srv/switchboard/trace.db',
    'switchboard tape export 3xYq9kT2mW8pL4vN6rB1cA/01JD8G3XK4PQSQN0000000007 --allow-incomplete > call.tape.jsonl',
  ]);
}
