/**
 * The blocks every command's `--help` ends with, in one shape: `Examples:` with one command a line,
 * then any notes. Commander wraps descriptions to the terminal, so descriptions hold no line breaks
 * of their own; these blocks are printed as written, so they hold the lines that must stay lines.
 */
import type { Command } from 'commander';

/** Adds an `Examples:` block (each line `  switchboard ...`) and optional notes after `command`'s help. */
export function addExamples(command: Command, examples: readonly string[], notes = ''): Command {
  const lines = examples.map((example) => `  ${example}`).join('\n');
  return command.addHelpText(
    'after',
    `\nExamples:\n${lines}\n${notes === '' ? '' : `\n${notes.replace(/^\n+/, '')}`}`,
  );
}
