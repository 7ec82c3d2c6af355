import type { Command } from 'commander';
import { registerAuditCommands } from './audit.js';
import { registerAuthCommands } from './auth.js';
import { registerConfigCommands } from './config.js';
import { registerImportCommands } from './import.js';
import { registerServeCommand } from './serve.js';
import { registerSpaceCommands } from './space.js';
import { registerStdioCommand } from './stdio.js';
import { registerTapeCommands } from './tape.js';
import { registerTraceCommands } from './trace.js';

/** Each command module exports a `register...` function; the order here is the order in `--help`. */
export function registerCommands(program: Command): void {
  registerServeCommand(program);
  registerStdioCommand(program);
  registerTraceCommands(program);
  registerTapeCommands(program);
  registerSpaceCommands(program);
  registerAuditCommands(program);
  registerConfigCommands(program);
  registerImportCommands(program);
  registerAuthCommands(program);
}
