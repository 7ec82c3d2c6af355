/**
 * `switchboard audit …`: verify the tamper-evident ledger, read it, and prove that a record is in
 * it (docs/audit-ledger.md). Everything reads the ledger directory (`--ledger DIR`, default
 * `<data-dir>/audit`, or the one stdio wrapper's ledger under it: `ledger-location.ts`) and never
 * writes to it, so it runs beside a live gateway.
 *
 * Exit codes of `verify`: 0 intact, 1 tampered (the first break is printed with its seq and reason
 * code), 2 usage or I/O error, 3 intact but unanchored. The other commands: 0 success, 1 the record
 * is not there or the proof does not check, 2 usage or I/O error.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  CANCELLED_BY_CLIENT,
  checkInclusionProof,
  findRecord,
  type InclusionProofDocument,
  lastRecords,
  MAX_DEFAULT_THREADS,
  PARALLEL_MIN_BYTES,
  proveInclusion,
  type StoredRecord,
  VERIFIER_KEY_FILE,
  type VerifyReport,
  verifyLedger,
} from '../../audit/ledger/index.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { type Io, integerOption, ioOf } from '../command-io.js';
import { dataDirOf } from '../global-options.js';
import { addExamples } from '../help-text.js';
import { findLedger } from '../ledger-location.js';
import { DEFAULT_TABLE_WIDTH, renderTable } from '../render/text-table.js';

const DATA_DIR_HELP =
  'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)';
const LEDGER_HELP = 'the ledger directory (default <data-dir>/audit)';

/** Exit codes of `switchboard audit verify`, by status. */
export const VERIFY_EXIT_CODES = { intact: 0, tampered: 1, usage: 2, unanchored: 3 } as const;

/** Control characters (C0, DEL, C1) shown as `\uXXXX`: ledger content must not drive the terminal. */
function printable(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: neutralizing control characters is the point.
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** JSON text with DEL and C1 escaped too (JSON.stringify escapes only C0), its layout kept. */
function printableJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    /[\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * The ledger a command reads: `--ledger`, else the data directory's (`findLedger`: its own, or
 * the one stdio wrapper's), telling stderr when it picked a stdio wrapper's.
 */
async function ledgerDir(command: Command, options: { ledger?: string }, io: Io): Promise<string> {
  if (options.ledger !== undefined) return options.ledger;
  const found = await findLedger(dataDirOf(command));
  if (found.note !== undefined) io.err(found.note);
  return found.dir;
}

/** Runs a command body; any error is printed and exits 2 (usage or I/O). */
async function run(command: Command, body: (io: Io) => Promise<number>): Promise<void> {
  const io = ioOf(command);
  try {
    process.exitCode = await body(io);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    io.err(`switchboard: ${printable(message)}\n`);
    const reason = error instanceof SwitchboardError ? error.details?.reason : undefined;
    // A log that does not match its checkpoint is a finding, not a usage error; a record that is
    // not there is exit 1, as for `audit show`.
    process.exitCode =
      (error instanceof SwitchboardError && error.code === SbErrorCode.AuditUnavailable && reason) ||
      reason === 'no_record'
        ? 1
        : 2;
  }
}

/** `1 record`, `2 records`. */
function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * What exit 3 means and how to get out of it, printed under an unanchored verdict; for a ledger
 * without records yet (a gateway that ran without calls) it says that nothing can be lost so far.
 */
function unanchoredHelp(dir: string, report: VerifyReport): string {
  const meaning =
    report.records === 0
      ? 'Exit status 3: the ledger holds no records yet, so nothing can have been cut off; it only\n' +
        'says that no anchor was checked. Once it holds records and checkpoints, anchor it:\n'
      : 'Exit status 3: every record, the hash chain and the signed checkpoints check, but nothing kept\n' +
        'outside this directory shows that its end was not cut off. To rule that out, keep copies of the\n' +
        'checkpoints in another trust domain and verify against them:\n';
  return (
    `\n${meaning}` +
    '  serve:   set audit.anchor in the configuration (path: a file on another disk or host, or url:),\n' +
    '           then: switchboard audit verify --anchor <that file>\n' +
    `  by hand: copy ${dir}/checkpoints.jsonl somewhere this host cannot write,\n` +
    '           then later: switchboard audit verify --anchor <the copy>\n' +
    'With --strict an unanchored ledger is a failure (exit 1).\n'
  );
}

function describeReport(report: VerifyReport, dir: string): string {
  const counts =
    `${plural(report.records, 'record')}, ${plural(report.checkpoints, 'checkpoint')}` +
    (report.checkpoints > 0 ? ` (the last covers ${report.lastCheckpointSize})` : '') +
    (report.anchored > 0 ? `, anchored up to ${report.anchored}` : '');
  if (report.status === 'intact') return `intact: ${counts}\n`;
  if (report.status === 'unanchored') {
    return `intact but unanchored: ${counts}\n  ${report.unanchoredBecause ?? ''}\n${unanchoredHelp(dir, report)}`;
  }
  const b = report.firstBreak;
  if (b === undefined) return `tampered: ${counts}\n`;
  const also = b.also === undefined ? '' : ` (also: ${b.also.join(', ')})`;
  return (
    `TAMPERED at seq ${b.seq}: ${b.reason}${also}\n  ${printable(b.detail)}\n` +
    `  at ${printable(b.file)}${b.line > 0 ? `:${b.line}` : ''}\n  (${report.records} records verified before it)\n`
  );
}

/**
 * How a record ended, for a person: its decision, except that a call the client cancelled (an
 * `error` record whose error is {@link CANCELLED_BY_CLIENT}) shows as `cancelled`.
 */
function outcomeText(record: { readonly decision?: unknown; readonly error?: unknown }): string {
  if (record.decision === 'error' && record.error === CANCELLED_BY_CLIENT) return 'cancelled';
  return typeof record.decision === 'string' ? printable(record.decision) : '-';
}

function tailTable(records: readonly StoredRecord[], width: number | undefined): string {
  const columns = [
    { title: 'SEQ', align: 'right' as const },
    { title: 'TIME (UTC)' },
    { title: 'CLIENT', shrink: 8 },
    { title: 'UPSTREAM', shrink: 10 },
    { title: 'METHOD', shrink: 10 },
    { title: 'TARGET', shrink: 12 },
    { title: 'TIER' },
    { title: 'DECISION' },
    { title: 'DURATION', align: 'right' as const },
  ];
  const rows = records.map(({ record, text }) => {
    if (record === undefined) return ['?', `(not a record: ${printable(text.slice(0, 60))})`];
    const cell = (value: unknown): string => (typeof value === 'string' ? printable(value) : '-');
    const ts = typeof record.ts === 'string' ? record.ts.replace('T', ' ').replace(/Z$/, '') : '-';
    const duration = typeof record.duration_ms === 'number' ? `${record.duration_ms.toFixed(1)}ms` : '-';
    return [
      String(record.seq),
      printable(ts),
      cell(record.client_id),
      cell(record.upstream),
      cell(record.method),
      cell(record.target),
      cell(record.tier),
      outcomeText(record),
      duration,
    ];
  });
  return renderTable(columns, rows, undefined, width);
}

async function readVerifierKey(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new SwitchboardError(
      SbErrorCode.UsageError,
      `Cannot read the verifier key ${file}: ${(error as Error).message}`,
    );
  }
}

/**
 * Adds `switchboard audit verify|tail|show|prove|check-proof`. Each accepts `--ledger DIR` and
 * `--data-dir DIR` after the subcommand.
 */
export function registerAuditCommands(program: Command): void {
  const audit = program
    .command('audit')
    .description('verify and read the tamper-evident audit ledger, and prove that a record is in it');

  const verify = audit
    .command('verify')
    .description(
      'check every record, the hash chain, the signed checkpoints and the anchor; print the first break',
    )
    .option('--ledger <dir>', LEDGER_HELP)
    .option('--pubkey <file>', `the checkpoint verifier key (default <ledger>/${VERIFIER_KEY_FILE})`)
    .option('--anchor <path>', 'an anchor file: copies of the checkpoints kept in another trust domain')
    .option('--strict', 'records not anchored or not covered by a checkpoint are a failure (exit 1)')
    .option('--json', 'print the report as JSON')
    .option(
      '--threads <n>',
      `threads checking records at once (default: the CPUs, at most ${MAX_DEFAULT_THREADS}; ledgers under ${PARALLEL_MIN_BYTES / 1024 / 1024} MiB use one)`,
      integerOption(1),
    )
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action(
      (
        options: {
          ledger?: string;
          pubkey?: string;
          anchor?: string;
          strict?: boolean;
          json?: boolean;
          threads?: number;
        },
        command: Command,
      ) =>
        run(command, async (io) => {
          const dir = await ledgerDir(command, options, io);
          const report = await verifyLedger({
            dir,
            ...(options.pubkey === undefined ? {} : { verifierKey: await readVerifierKey(options.pubkey) }),
            ...(options.anchor === undefined ? {} : { anchor: options.anchor }),
            strict: options.strict === true,
            ...(options.threads === undefined ? {} : { threads: options.threads }),
          });
          io.out(options.json ? `${JSON.stringify(report)}\n` : describeReport(report, dir));
          return VERIFY_EXIT_CODES[report.status];
        }),
    );

  const tail = audit
    .command('tail')
    .description(
      'the latest records, for people: seq, time, client, upstream, method, target, tier, decision, duration',
    )
    .option('-n, --lines <n>', 'how many records', integerOption(1), 20)
    .option('--json', 'print the stored lines as they are (JSON Lines)')
    .option('--wide', 'print every cell whole (by default the table fits the terminal, or 120 columns)')
    .option('--ledger <dir>', LEDGER_HELP)
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((options: { lines: number; json?: boolean; wide?: boolean; ledger?: string }, command: Command) =>
      run(command, async (io) => {
        const dir = await ledgerDir(command, options, io);
        const records = await lastRecords(dir, options.lines);
        if (options.json) io.out(records.map((r) => `${r.text}\n`).join(''));
        else if (records.length === 0) io.out(`no records in ${dir}\n`);
        else io.out(tailTable(records, options.wide ? undefined : (io.columns ?? DEFAULT_TABLE_WIDTH)));
        return 0;
      }),
    );

  const show = audit
    .command('show')
    .description('one record as pretty JSON, with the file and line it is on')
    .argument('<seq>', 'the record number', integerOption(1))
    .option('--json', 'print the stored line as it is')
    .option('--ledger <dir>', LEDGER_HELP)
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((seq: number, options: { json?: boolean; ledger?: string }, command: Command) =>
      run(command, async (io) => {
        const dir = await ledgerDir(command, options, io);
        const found = await findRecord(dir, seq);
        if (found === undefined) {
          io.err(`switchboard: no record ${seq} in ${dir}\n`);
          return 1;
        }
        if (options.json) io.out(`${found.text}\n`);
        else io.out(`${found.file}:${found.line ?? '?'}\n${printableJson(found.record ?? found.text)}\n`);
        return 0;
      }),
    );

  const prove = audit
    .command('prove')
    .description('an inclusion proof of one record in a signed checkpoint, for a third party to check')
    .argument('<seq>', 'the record number', integerOption(1))
    .option(
      '--size <n>',
      'prove against the checkpoint of this size (default the latest that covers the record)',
      integerOption(1),
    )
    .option('--json', 'print the proof document (save it and hand it over with the verifier key)')
    .option('--ledger <dir>', LEDGER_HELP)
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((seq: number, options: { size?: number; json?: boolean; ledger?: string }, command: Command) =>
      run(command, async (io) => {
        const doc = await proveInclusion({
          dir: await ledgerDir(command, options, io),
          seq,
          ...(options.size === undefined ? {} : { treeSize: options.size }),
        });
        if (options.json) {
          io.out(`${JSON.stringify(doc, null, 2)}\n`);
          return 0;
        }
        const origin = doc.checkpoint.slice(0, doc.checkpoint.indexOf('\n'));
        io.out(
          `record ${doc.seq} is leaf ${doc.index} of the tree of ${doc.tree_size} records signed by ${printable(origin)}\n` +
            `  leaf hash  ${doc.leaf_hash}\n` +
            `  proof      ${doc.proof.length} hashes\n` +
            'Save the document with --json and give it, with the verifier key, to whoever checks it:\n' +
            '  switchboard audit check-proof proof.json --pubkey checkpoint.pub\n',
        );
        return 0;
      }),
    );

  const checkProof = audit
    .command('check-proof')
    .description(
      'check an inclusion proof document against a checkpoint verifier key (what a third party runs)',
    )
    .argument('<file>', 'the proof document (`switchboard audit prove <seq> --json`)')
    .requiredOption(
      '--pubkey <file>',
      'the checkpoint verifier key, obtained from the ledger operator out of band',
    )
    .option('--json', 'print the outcome as JSON')
    .action((file: string, options: { pubkey: string; json?: boolean }, command: Command) =>
      run(command, async (io) => {
        let doc: InclusionProofDocument;
        try {
          doc = JSON.parse(await readFile(file, 'utf8')) as InclusionProofDocument;
        } catch (error) {
          throw new SwitchboardError(
            SbErrorCode.UsageError,
            `Cannot read the proof ${file}: ${(error as Error).message}`,
          );
        }
        const result = checkInclusionProof(doc, await readVerifierKey(options.pubkey));
        if (options.json) io.out(`${JSON.stringify(result)}\n`);
        else if (result.ok) {
          io.out(
            `valid: record ${result.seq} is in the tree of ${result.treeSize} records signed by ${printable(result.origin)}\n`,
          );
        } else io.out(`INVALID (${result.reason}): ${printable(result.detail)}\n`);
        return result.ok ? 0 : 1;
      }),
    );
  addExamples(
    verify,
    [
      'switchboard audit verify',
      'switchboard audit verify --anchor /mnt/elsewhere/anchor.jsonl --strict',
      'switchboard audit verify --ledger ~/.local/state/switchboard/audit/stdio/everything --json',
    ],
    'Exit status: 0 intact, 1 tampered (the first break: seq, reason code, file and line),\n' +
      '2 usage or I/O error, 3 intact but unanchored (nothing proves the log was not truncated).\n',
  );
  addExamples(tail, [
    'switchboard audit tail',
    'switchboard audit tail -n 100 --wide',
    'switchboard audit tail --json | jq .target',
  ]);
  addExamples(show, ['switchboard audit show 42', 'switchboard audit show 42 --json']);
  addExamples(prove, [
    'switchboard audit prove 42',
    'switchboard audit prove 42 --json > proof.json',
    'switchboard audit prove 42 --size 1000 --json > proof.json',
  ]);
  addExamples(checkProof, ['switchboard audit check-proof proof.json --pubkey checkpoint.pub']);
}
