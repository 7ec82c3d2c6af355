/**
 * Runs the `switchboard` CLI in-process for tests: output captured, `process.exitCode` and
 * commander's exits turned into a code, and `process.exitCode` restored afterwards.
 */
import { type Command, CommanderError } from 'commander';
import { buildProgram } from '../program.js';

export interface CliRun {
  readonly out: string;
  readonly err: string;
  readonly code: number;
}

export interface CliRunOptions {
  /** The program to run (default: the whole `switchboard` program). */
  readonly program?: Command;
  /** What the commands are told about colour on stdout (default false). */
  readonly color?: boolean;
}

export async function runCli(args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  const program = options.program ?? buildProgram();
  let out = '';
  let err = '';
  const configure = (command: Command): void => {
    command.exitOverride();
    command.configureOutput({
      writeOut: (s) => {
        out += s;
      },
      writeErr: (s) => {
        err += s;
      },
      getOutHasColors: () => options.color ?? false,
      getErrHasColors: () => false,
    });
    for (const sub of command.commands) configure(sub);
  };
  configure(program);
  const saved = process.exitCode;
  process.exitCode = undefined;
  try {
    await program.parseAsync([...args], { from: 'user' });
    return { out, err, code: Number(process.exitCode ?? 0) };
  } catch (e) {
    if (e instanceof CommanderError) return { out, err, code: e.exitCode };
    throw e;
  } finally {
    process.exitCode = saved;
  }
}
