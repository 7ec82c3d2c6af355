/**
 * `switchboard tape check FILE -- <command>`: plays a tape's client side against a live server and
 * reports every answer that differs (docs/tapes.md, "Check").
 * Placeholder registered by tape-core; the tape-check branch replaces this file.
 */
import type { Command } from 'commander';
import { addExamples } from '../help-text.js';

export function registerTapeCheck(tape: Command): void {
  const command = tape
    .command('check')
    .summary('check a live server against a tape: every answer that differs')
    .argument('<file>', 'the tape')
    .argument('[command...]', 'the server to run (after --)')
    .action(() => {
      console.error('switchboard tape check: not in this build yet');
      process.exitCode = 2;
    });
  addExamples(command, [
    'switchboard tape check everything.tape.jsonl -- npx -y @modelcontextprotocol/server-everything',
  ]);
}
