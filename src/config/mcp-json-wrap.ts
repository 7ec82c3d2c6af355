/**
 * `switchboard wrap`: a client's MCP JSON with each stdio server started through
 * `switchboard stdio`, and the way back.
 *
 * The contract: a wrapped entry keeps everything it had (its `type`, its `env`, client switches)
 * except `command` and `args`, which become `<switchboard> stdio --name <name> [--pass-env KEY]...
 * -- <command> <args...>`. `--pass-env` names each variable of the entry's `env`, because the
 * client sets those on the process it starts (now the gateway), and the gateway passes a server
 * only a minimal environment. Wrapping is idempotent (an entry already in that shape is left as
 * it is) and {@link unwrapServers} is its exact inverse on the entries it produced, so undoing
 * keeps every other edit made to the file since. Entries with a `url` are left alone: the client
 * reaches those itself (`switchboard stdio --url` can front one, by hand).
 */
import { isObject } from '../protocol/jsonrpc/json-object.js';

/** The names of the servers changed, and of those left alone with the reason. */
export interface WrapReport {
  readonly changed: readonly string[];
  readonly skipped: readonly { readonly name: string; readonly reason: string }[];
}

/** The parts of a wrapped entry's args, when they have exactly the shape `wrapEntry` writes. */
function wrappedParts(args: unknown): { command: string; args: string[] } | undefined {
  if (!Array.isArray(args) || args[0] !== 'stdio' || args[1] !== '--name') return undefined;
  let i = 3;
  while (args[i] === '--pass-env') i += 2;
  if (args[i] !== '--' || typeof args[i + 1] !== 'string') return undefined;
  if (!args.every((a) => typeof a === 'string')) return undefined;
  return { command: args[i + 1] as string, args: args.slice(i + 2) as string[] };
}

/**
 * Rewrites, in `servers` (the file's `mcpServers` or `servers` object, changed in place), every
 * stdio entry to run through `switchboard` (the command to write, e.g. an absolute path).
 */
export function wrapServers(servers: Record<string, unknown>, switchboard: string): WrapReport {
  const changed: string[] = [];
  const skipped: { name: string; reason: string }[] = [];
  for (const [name, entry] of Object.entries(servers)) {
    if (!isObject(entry)) {
      skipped.push({ name, reason: 'not an object' });
      continue;
    }
    if (typeof entry.command !== 'string') {
      skipped.push({
        name,
        reason: typeof entry.url === 'string' ? 'a URL, which the client reaches itself' : 'no command',
      });
      continue;
    }
    if (wrappedParts(entry.args)) {
      skipped.push({ name, reason: 'already runs through switchboard stdio' });
      continue;
    }
    const args = Array.isArray(entry.args)
      ? entry.args.filter((a): a is string => typeof a === 'string')
      : [];
    const envKeys = isObject(entry.env) ? Object.keys(entry.env) : [];
    entry.args = [
      'stdio',
      '--name',
      name,
      ...envKeys.flatMap((key) => ['--pass-env', key]),
      '--',
      entry.command,
      ...args,
    ];
    entry.command = switchboard;
    changed.push(name);
  }
  return { changed, skipped };
}

/** Puts back, in `servers` (changed in place), each entry's own command and args. */
export function unwrapServers(servers: Record<string, unknown>): WrapReport {
  const changed: string[] = [];
  const skipped: { name: string; reason: string }[] = [];
  for (const [name, entry] of Object.entries(servers)) {
    const parts = isObject(entry) ? wrappedParts(entry.args) : undefined;
    if (!isObject(entry) || !parts) {
      skipped.push({ name, reason: 'not wrapped' });
      continue;
    }
    entry.command = parts.command;
    if (parts.args.length > 0) entry.args = parts.args;
    else delete entry.args;
    changed.push(name);
  }
  return { changed, skipped };
}
