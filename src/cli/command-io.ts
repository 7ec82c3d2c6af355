/**
 * What every CLI command shares for its input and output: where it writes (the root program's
 * configured output, so tests capture it), integer options, and bounded reads of stdin.
 */
import { type Command, InvalidArgumentError } from 'commander';

/**
 * Where a command writes; `color` says whether its stdout takes ANSI colours, `columns` how wide
 * its stdout is when that is a terminal (undefined for a pipe or a file).
 */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly color: boolean;
  readonly columns: number | undefined;
}

/** Where `command` writes: the root program's configured output, else the process streams. */
export function ioOf(command: Command): Io {
  let root = command;
  while (root.parent) root = root.parent;
  const config = root.configureOutput();
  return {
    out: (text) => (config.writeOut ? config.writeOut(text) : process.stdout.write(text)),
    err: (text) => (config.writeErr ? config.writeErr(text) : process.stderr.write(text)),
    color: config.getOutHasColors?.() ?? false,
    columns: config.getOutHelpWidth?.(),
  };
}

/** A commander option parser for a safe integer of at least `min`. */
export function integerOption(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer ≥ ${min}`);
    return n;
  };
}

/** The whole of `input` as UTF-8 text, or undefined as soon as it exceeds `maxBytes`. */
export async function readAllBounded(
  input: AsyncIterable<string | Buffer>,
  maxBytes: number,
): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.length;
    if (size > maxBytes) return undefined;
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
}
