/**
 * `switchboard trace …`: read the trace a gateway recorded in `<data-dir>/trace.db`, while it
 * runs or afterwards. The database is opened read-only (WAL lets this run beside a live gateway).
 *
 * Output goes through the program's output configuration (`program.configureOutput`), so tests
 * and embedders capture it; colour is used only when that configuration says stdout has colours
 * (a TTY, `NO_COLOR` unset). Exit codes: 0 success, 1 the session, context or envelope asked for
 * is not in the trace, 2 the trace cannot be read (missing database, wrong schema) or bad usage.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { SwitchboardError } from '../../errors/switchboard-error.js';
import { DEFAULT_FOLLOW_DEPTH } from '../../trace/correlation-walk.js';
import { SqliteTraceStore } from '../../trace/sqlite-trace-store.js';
import { type Io, integerOption, ioOf } from '../command-io.js';
import { dataDirOf } from '../global-options.js';
import { addExamples } from '../help-text.js';
import { renderCorrelationGraph } from '../render/correlation-graph.js';
import { renderEnvelopeTable } from '../render/envelope-table.js';
import { renderEnvelopeJsonLines, renderJsonLines } from '../render/json-lines.js';
import { renderOtelIds } from '../render/otel-ids.js';
import { renderSessionsTable } from '../render/sessions-table.js';
import { renderSubtree } from '../render/subtree-tree.js';
import { DEFAULT_TABLE_WIDTH } from '../render/text-table.js';

/** The trace database's file name inside the data directory. */
export const TRACE_DB_FILE = 'trace.db';

const DATA_DIR_HELP =
  'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)';

/**
 * A client may choose its own `Mcp-Session-Id` (lenient sessions), and one that starts with `-`
 * reads as an option; `--` ends the options. (The gateway's own keys never start with `-`.)
 */
const DASH_HINT = (command: string, argument: string): string =>
  `A ${argument} that starts with "-" goes after "--": switchboard trace ${command} --json -- -Xyz...\n`;

/**
 * Opens the trace of `command`'s data directory read-only and runs `query` on it, closing it
 * afterwards. Reports a missing or unreadable database on stderr with exit code 2.
 */
function withTrace(command: Command, query: (store: SqliteTraceStore, io: Io) => void): void {
  const io = ioOf(command);
  const dir = dataDirOf(command);
  const path = join(dir, TRACE_DB_FILE);
  let store: SqliteTraceStore;
  try {
    store = new SqliteTraceStore(path, { readonly: true });
  } catch (err) {
    if (err instanceof SwitchboardError && err.details?.missing === true) {
      io.err(
        `switchboard: no trace database at ${path}\n` +
          `  (looked in the data directory ${dir}; pass --data-dir or set SWITCHBOARD_DATA_DIR)\n`,
      );
    } else {
      io.err(`switchboard: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exitCode = 2;
    return;
  }
  try {
    query(store, io);
  } catch (err) {
    io.err(`switchboard: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  } finally {
    store.close();
  }
}

const WIDE_HELP =
  'print every column and every cell whole (by default tables fit the terminal, or 120 columns)';

/** The width a table fits: none with `--wide`, else the terminal's, else {@link DEFAULT_TABLE_WIDTH}. */
function tableWidth(io: Io, wide: boolean | undefined): number | undefined {
  return wide ? undefined : (io.columns ?? DEFAULT_TABLE_WIDTH);
}

function notFound(io: Io, message: string): void {
  io.err(`switchboard: ${message}\n`);
  process.exitCode = 1;
}

/**
 * Adds `switchboard trace sessions|show|tree|follow`. Each subcommand also accepts `--data-dir`
 * (after the subcommand) and `--json`, which prints one JSON value per line: session summaries
 * for `sessions`, wire-form MEUP envelopes for the others.
 */
export function registerTraceCommands(program: Command): void {
  const trace = program
    .command('trace')
    .description('query the recorded trace: every message the gateway passed, as MEUP envelopes');

  const sessionsCmd = trace
    .command('sessions')
    .description('list recorded sessions, newest first, with their envelope counts')
    .option('--limit <n>', 'show at most N sessions', integerOption(1), 50)
    .option('--json', 'one session summary per line (JSON Lines)')
    .option('--wide', WIDE_HELP)
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((options: { limit: number; json?: boolean; wide?: boolean }, command: Command) =>
      withTrace(command, (store, io) => {
        const sessions = store.sessions({ limit: options.limit });
        if (options.json) io.out(renderJsonLines(sessions));
        else if (sessions.length === 0) io.out(`no sessions recorded in ${store.path}\n`);
        else io.out(renderSessionsTable(sessions, { color: io.color, width: tableWidth(io, options.wide) }));
      }),
    );

  addExamples(sessionsCmd, [
    'switchboard trace sessions',
    'switchboard trace sessions --limit 5 --wide',
    'switchboard trace sessions --json --data-dir /srv/switchboard',
  ]);

  const showCmd = trace
    .command('show')
    .description('every envelope of one session, in the order the gateway saw them')
    .argument('<session>', 'the internal session key or the client-facing Mcp-Session-Id')
    .option('--json', 'one wire MEUP envelope per line (JSON Lines), with otel.trace_id/span_id when kept')
    .option('--wide', WIDE_HELP)
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((session: string, options: { json?: boolean; wide?: boolean }, command: Command) =>
      withTrace(command, (store, io) => {
        const info = store.sessionInfo(session);
        if (info === undefined) {
          notFound(io, `no session ${JSON.stringify(session)} in ${store.path}`);
        } else if (options.json) {
          io.out(renderEnvelopeJsonLines(store.session(info.key)));
        } else {
          const records = store.session(info.key);
          const width = tableWidth(io, options.wide);
          io.out(renderSessionsTable([info], { color: io.color, width }));
          io.out('\n');
          io.out(
            records.length === 0
              ? '(no envelopes)\n'
              : renderEnvelopeTable(records, { color: io.color, ...(width === undefined ? {} : { width }) }),
          );
          io.out(renderOtelIds(records));
        }
      }),
    );

  addExamples(
    showCmd,
    ['switchboard trace show 3xYq9kT2mW8pL4vN6rB1cA', 'switchboard trace show --json -- -Xyz'],
    'HOP in the table: client→gw, gw→<upstream>, <upstream>→gw, gw→client. The session "gateway" is the\n' +
      "gateway's own traffic with its upstreams (their initialize handshakes) and messages of no client call.\n" +
      'With OpenTelemetry on, the trace id and span id of each call follow the table.\n' +
      DASH_HINT('show', '<session>'),
  );

  const treeCmd = trace
    .command('tree')
    .description('everything recorded in a context and below it, e.g. all that one request caused')
    .argument('<context>', 'a context path: <session> or <session>/<request-envelope-id>[/...]')
    .option('--json', 'one wire MEUP envelope per line (JSON Lines)')
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((context: string, options: { json?: boolean }, command: Command) =>
      withTrace(command, (store, io) => {
        const records = store.subtree(context);
        if (records.length === 0) {
          notFound(io, `no envelopes in context ${JSON.stringify(context)} in ${store.path}`);
        } else {
          io.out(
            options.json
              ? renderEnvelopeJsonLines(records)
              : renderSubtree(context, records, { color: io.color }),
          );
        }
      }),
    );

  addExamples(
    treeCmd,
    [
      'switchboard trace tree 3xYq9kT2mW8pL4vN6rB1cA/01JD8G3XK4PQSQN0000000007',
      'switchboard trace tree --json 3xYq9kT2mW8pL4vN6rB1cA',
    ],
    DASH_HINT('tree', '<context>'),
  );

  const followCmd = trace
    .command('follow')
    .description('the correlation graph around one envelope: what it answers and what answers it')
    .argument('<envelope-id>', 'the id of a recorded envelope')
    .option(
      '--depth <n>',
      'how many correlation hops to walk each way',
      integerOption(0),
      DEFAULT_FOLLOW_DEPTH,
    )
    .option('--json', 'the root, then what it answers, then what answers it: one wire MEUP envelope per line')
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action((id: string, options: { depth: number; json?: boolean }, command: Command) =>
      withTrace(command, (store, io) => {
        const graph = store.follow(id, { maxDepth: options.depth });
        if (graph === undefined) {
          notFound(io, `no envelope ${JSON.stringify(id)} in ${store.path}`);
        } else {
          io.out(
            options.json
              ? renderEnvelopeJsonLines([graph.root, ...graph.answers, ...graph.answeredBy])
              : renderCorrelationGraph(graph, { color: io.color }),
          );
        }
      }),
    );
  addExamples(followCmd, [
    'switchboard trace follow 01JD8G3XK4PQSQN0000000007',
    'switchboard trace follow 01JD8G3XK4PQSQN0000000007 --depth 1 --json',
  ]);
}
