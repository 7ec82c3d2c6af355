/**
 * SIGINT and SIGTERM for the long-running commands (`serve`, `stdio`): the first one starts the
 * graceful shutdown (a drain, bounded by the drain timeout); any later one means "now", and the
 * process exits at once with the shell's status for that signal (128 + its number), without
 * waiting for the drain or flushing what is left.
 */
import { constants } from 'node:os';
import type { Logger } from '../observe/logger.js';

/** Calls `shutdown` on the first SIGINT or SIGTERM; exits at once on the next. */
export function handleShutdownSignals(
  shutdown: (signal: NodeJS.Signals) => void,
  logger: Logger,
  exit: (code: number) => void = (code) => process.exit(code),
): void {
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received === undefined) {
      received = signal;
      shutdown(signal);
      return;
    }
    logger.warn({ signal, first: received }, 'second signal: exiting now, without finishing the shutdown');
    exit(128 + (constants.signals[signal] ?? 0));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
