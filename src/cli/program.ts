/**
 * The `switchboard` command tree: the composition root. Each command lives in `commands/<name>.ts`
 * and registers itself on the program; nothing else in the project imports from `src/cli/`.
 */
import { Command } from 'commander';
import { registerCommands } from './commands/index.js';
import { readPackageVersion } from './version.js';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('switchboard')
    .description(
      'An MCP gateway: proxies MCP over stdio and Streamable HTTP, records every message as a MEUP envelope, ' +
        'correlates responses, progress, cancellations and server requests, and keeps a queryable trace.',
    )
    .version(readPackageVersion())
    .option(
      '--data-dir <dir>',
      'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)',
    )
    .showHelpAfterError()
    .enablePositionalOptions();
  registerCommands(program);
  return program;
}
