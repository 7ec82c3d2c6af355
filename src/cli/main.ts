#!/usr/bin/env node
/** Entry point of the `switchboard` binary. Commands set `process.exitCode`; usage errors exit 2. */
import type { Command, CommanderError } from 'commander';
import { buildProgram } from './program.js';

/** commander's own exits (help, version) keep their codes; usage errors exit 2. */
function exitOnCommanderError(err: CommanderError): never {
  process.exit(err.exitCode === 1 ? 2 : err.exitCode);
}

/** commander copies an exit handler only into subcommands created after it, so set it on every one. */
function applyExitHandler(command: Command): void {
  command.exitOverride(exitOnCommanderError);
  for (const sub of command.commands) applyExitHandler(sub);
}

const program = buildProgram();
applyExitHandler(program);
program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`switchboard: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 2;
});
