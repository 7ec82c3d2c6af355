/**
 * `switchboard tape replay FILE`: serves a tape as an MCP server (docs/tapes.md, "Replay").
 * Placeholder registered by tape-core; the tape-replay branch replaces this file.
 */
import type { Command } from 'commander';
import { addExamples } from '../help-text.js';

export function registerTapeReplay(tape: Command): void {
  const command = tape
    .command('replay')
    .summary('serve a tape as a mock MCP server (stdio or Streamable HTTP)')
    .argument('<file>', 'the tape')
    .action(() => {
      console.error('switchboard tape replay: not in this build yet');
      process.exitCode = 2;
    });
  addExamples(command, ['switchboard tape replay everything.tape.jsonl']);
}
