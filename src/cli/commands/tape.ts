/**
 * `switchboard tape …`: tapes (docs/tapes.md) — one MCP session between one client and one server,
 * kept as JSON Lines, to replay as a mock server or to check a new server version against.
 *
 * Each subcommand lives in its own file (`tape-<name>.ts`) and registers itself on the group, so
 * that they can be built and changed apart; this file only makes the group and sets their order.
 */
import type { Command } from 'commander';
import { addExamples } from '../help-text.js';
import { registerTapeCheck } from './tape-check.js';
import { registerTapeExport } from './tape-export.js';
import { registerTapeRecord } from './tape-record.js';
import { registerTapeReplay } from './tape-replay.js';

export function registerTapeCommands(program: Command): void {
  const tape = program
    .command('tape')
    .summary('record, export, replay and check tapes of MCP sessions')
    .description(
      'A tape is one MCP session between one client and one server as the server saw it, in JSON Lines (docs/tapes.md). ' +
        'Record one through the stdio gateway or export one from the trace; replay it as a mock server; check a server against it.',
    );
  addExamples(tape, [
    'switchboard tape record -o everything.tape.jsonl -- npx -y @modelcontextprotocol/server-everything',
    'switchboard tape replay everything.tape.jsonl',
  ]);
  registerTapeRecord(tape);
  registerTapeExport(tape);
  registerTapeReplay(tape);
  registerTapeCheck(tape);
}
