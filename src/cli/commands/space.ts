/**
 * `switchboard space tail|send`: the MEUP space of a running `switchboard serve`, from a terminal
 * or a script (docs/space.md).
 *
 * - `tail` prints every envelope the participant receives, one line each (`--json`: the envelopes
 *   as JSON Lines, exactly as received), optionally only a context subtree and after the recent
 *   history of it. It runs until interrupted.
 * - `send` sends one envelope (a JSON object from the argument or stdin, or built from options;
 *   `protocol`, `id`, `ts` and `from` are filled in when absent) and prints the gateway's replies
 *   that correlate to it: a `system/error`, the `mcp/response` of a request to a server, the
 *   `system/history` of a history request; other envelopes are done once the gateway has handled
 *   them (`--wait MS` keeps listening for replies from participants).
 *
 * Credentials: `--token T` (or `SWITCHBOARD_TOKEN`) as `Authorization: Bearer` on the upgrade;
 * without one a join frame names the participant (`--participant`, default `local`), which only a
 * gateway without authentication accepts. Exit codes: 0 done; 1 the gateway refused (the join or
 * the envelope), answered with an error, or closed the connection; 2 bad usage or no gateway.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { isInSubtree, validateContext } from '../../meup/context-path.js';
import { newEnvelopeId } from '../../meup/ids.js';
import { isObject } from '../../protocol/jsonrpc/json-object.js';
import { type Io, ioOf, readAllBounded } from '../command-io.js';
import { SpaceClient, SpaceClientError, spaceUrl, type WireEnvelope } from './space-client.js';
import { formatEnvelopeLine } from './space-format.js';

const MAX_STDIN_BYTES = 8 * 1024 * 1024;

interface ConnectOptions {
  url?: string;
  token?: string;
  participant?: string;
  timeout: number;
  json?: boolean;
}

function parseContext(value: string): string {
  const issues = validateContext(value);
  if (issues.length > 0) throw new InvalidArgumentError(`not a context path: ${issues[0]!.message}`);
  return value;
}

function parseCount(max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > max)
      throw new InvalidArgumentError(`expected an integer from 0 to ${max}`);
    return n;
  };
}

function parseJsonValue(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (err) {
    throw new InvalidArgumentError(`not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function addConnectOptions(command: Command): Command {
  return command
    .option(
      '--url <url>',
      'the gateway: ws://host:port/meup, http://host:port or host:port',
      'ws://127.0.0.1:8787/meup',
    )
    .option('--token <token>', 'bearer token (env SWITCHBOARD_TOKEN); sent as Authorization on the upgrade')
    .option(
      '--participant <id>',
      'without a token: the participant id to join as (gateways without auth only)',
    )
    .option(
      '--timeout <ms>',
      'how long to wait for the welcome and for answers',
      parseCount(3_600_000),
      30_000,
    )
    .option('--json', 'print envelopes as JSON Lines, exactly as received');
}

async function connect(options: ConnectOptions, io: Io): Promise<SpaceClient | undefined> {
  let url: string;
  try {
    url = spaceUrl(options.url);
  } catch (err) {
    io.err(`switchboard: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
    return undefined;
  }
  const token = options.token ?? (process.env.SWITCHBOARD_TOKEN || undefined);
  try {
    return await SpaceClient.connect({
      url,
      token,
      participant: options.participant,
      timeoutMs: options.timeout,
    });
  } catch (err) {
    const refused = err instanceof SpaceClientError && err.kind === 'refused';
    io.err(
      `switchboard: ${refused ? 'the space refused the connection: ' : ''}${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exitCode = refused ? 1 : 2;
    return undefined;
  }
}

function printer(io: Io, json: boolean): (envelope: WireEnvelope) => void {
  return (envelope) => {
    if (json) {
      io.out(`${JSON.stringify(envelope)}\n`);
      return;
    }
    io.out(`${formatEnvelopeLine(envelope)}\n`);
    if (
      envelope.kind === 'system/history' &&
      isObject(envelope.payload) &&
      Array.isArray(envelope.payload.envelopes)
    ) {
      for (const e of envelope.payload.envelopes) io.out(`  ${formatEnvelopeLine(e)}\n`);
    }
  };
}

export interface SpaceCommandOptions {
  /** Where `space send` reads an envelope given as `-` (or not at all); default `process.stdin`. */
  readonly stdin?: AsyncIterable<string | Buffer>;
}

export function registerSpaceCommands(program: Command, options: SpaceCommandOptions = {}): void {
  const space = program
    .command('space')
    .description('take part in the MEUP space of a running switchboard serve (WebSocket /meup)');

  addConnectOptions(
    space
      .command('tail')
      .description('print the live space: every envelope this participant receives, one per line')
      .option(
        '--context <path>',
        'only envelopes in this context subtree (the path and below it)',
        parseContext,
      )
      .option(
        '--history <n>',
        'first print the last N envelopes (of the --context subtree) from the history',
        parseCount(10_000),
        0,
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  switchboard space tail\n' +
        '  switchboard space tail --token "$TOKEN" --json\n' +
        '  switchboard space tail --context 3xYq9/01JABCDEF --history 100\n',
    )
    .action(async (opts: ConnectOptions & { context?: string; history: number }, command: Command) => {
      const io = ioOf(command);
      const client = await connect(opts, io);
      if (!client) return;
      const print = printer(io, opts.json ?? false);
      const wanted = (envelope: WireEnvelope) =>
        opts.context === undefined ||
        isInSubtree(typeof envelope.context === 'string' ? envelope.context : undefined, opts.context);
      print(client.welcome);
      let historyId: string | undefined;
      client.onEnvelope((envelope) => {
        const correlation = Array.isArray(envelope.correlation_id) ? envelope.correlation_id : [];
        if (
          historyId !== undefined &&
          envelope.kind === 'system/history' &&
          correlation.includes(historyId)
        ) {
          const payload = isObject(envelope.payload) ? envelope.payload : {};
          for (const e of Array.isArray(payload.envelopes) ? payload.envelopes : [])
            if (isObject(e)) print(e);
          return;
        }
        if (wanted(envelope)) print(envelope);
      });
      if (opts.history > 0) {
        historyId = newEnvelopeId();
        client.sendText(
          JSON.stringify({
            protocol: client.protocol,
            id: historyId,
            ts: new Date().toISOString(),
            from: client.participant,
            to: ['gateway'],
            kind: 'space/history',
            payload: {
              limit: opts.history,
              ...(opts.context === undefined ? {} : { context: opts.context }),
            },
          }),
        );
      }
      let interrupted = false;
      const stop = () => {
        interrupted = true;
        client.close();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const closed = await client.closed;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      if (!interrupted) {
        io.err(
          `switchboard: the gateway closed the connection (${closed.code}${closed.reason ? `: ${closed.reason}` : ''})\n`,
        );
        process.exitCode = 1;
      }
    });

  addConnectOptions(
    space
      .command('send')
      .description('send one envelope and print the replies that correlate to it')
      .argument(
        '[envelope]',
        'the envelope as a JSON object; "-" or nothing (without --kind): read it from stdin',
      )
      .option('--kind <kind>', 'the kind, e.g. chat or mcp/request (builds the envelope from options)')
      .option('--payload <json>', 'the payload, a JSON object', parseJsonValue)
      .option('--to <ids>', 'recipients, comma-separated (default: everyone)', parseList)
      .option('--correlation <ids>', 'correlation_id: envelope ids, comma-separated', parseList)
      .option('--context <path>', 'the context path', parseContext)
      .option('--id <id>', 'the envelope id (default: a new one)')
      .option(
        '--wait <ms>',
        'after the gateway accepted it, listen this long for replies',
        parseCount(3_600_000),
        0,
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  switchboard space send --kind chat --payload \'{"text":"hello"}\'\n' +
        '  switchboard space send --token "$TOKEN" --kind mcp/request --to server-everything \\\n' +
        '      --payload \'{"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}\'\n' +
        '  echo \'{"kind":"mcp/reject","correlation_id":["01J..."],"payload":{"reason":"unsafe"}}\' | switchboard space send -\n',
    )
    .action(
      async (
        argument: string | undefined,
        opts: ConnectOptions & {
          kind?: string;
          payload?: unknown;
          to?: string[];
          correlation?: string[];
          context?: string;
          id?: string;
          wait: number;
        },
        command: Command,
      ) => {
        const io = ioOf(command);
        let base: Record<string, unknown> = {};
        const fromStdin = argument === '-' || (argument === undefined && opts.kind === undefined);
        const text = fromStdin
          ? await readAllBounded(options.stdin ?? process.stdin, MAX_STDIN_BYTES)
          : argument;
        if (text !== undefined && text.trim() !== '') {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text) as unknown;
          } catch (err) {
            io.err(
              `switchboard: the envelope is not JSON: ${err instanceof Error ? err.message : String(err)}\n`,
            );
            process.exitCode = 2;
            return;
          }
          if (!isObject(parsed)) {
            io.err('switchboard: the envelope must be a JSON object\n');
            process.exitCode = 2;
            return;
          }
          base = parsed;
        } else if (opts.kind === undefined) {
          io.err('switchboard: give an envelope (argument or stdin) or --kind\n');
          process.exitCode = 2;
          return;
        }
        if (opts.payload !== undefined && !isObject(opts.payload)) {
          io.err('switchboard: --payload must be a JSON object\n');
          process.exitCode = 2;
          return;
        }
        const client = await connect(opts, io);
        if (!client) return;
        const envelope: Record<string, unknown> = {
          protocol: client.protocol,
          id: opts.id ?? newEnvelopeId(),
          ts: new Date().toISOString(),
          from: client.participant,
          ...(opts.to === undefined ? {} : { to: opts.to }),
          ...(opts.kind === undefined ? {} : { kind: opts.kind }),
          ...(opts.correlation === undefined ? {} : { correlation_id: opts.correlation }),
          ...(opts.context === undefined ? {} : { context: opts.context }),
          ...(opts.payload === undefined
            ? opts.kind === undefined
              ? {}
              : { payload: {} }
            : { payload: opts.payload }),
          ...base,
        };
        process.exitCode = await sendAndReport(client, envelope, opts, printer(io, opts.json ?? false), io);
        client.close();
      },
    );
}

/** Sends `envelope`, prints what correlates to it, and says how it went (the exit code). */
async function sendAndReport(
  client: SpaceClient,
  envelope: Record<string, unknown>,
  opts: { timeout: number; wait: number },
  print: (envelope: WireEnvelope) => void,
  io: Io,
): Promise<number> {
  const id = envelope.id;
  const to = Array.isArray(envelope.to) ? envelope.to : [];
  const awaited =
    envelope.kind === 'mcp/request' && to.some((t) => typeof t === 'string' && t.startsWith('server-'))
      ? 'mcp/response'
      : envelope.kind === 'space/history'
        ? 'system/history'
        : undefined;
  let refused = false;
  let answered: WireEnvelope | undefined;
  let wake: (() => void) | undefined;
  client.onEnvelope((reply) => {
    const correlation = Array.isArray(reply.correlation_id) ? reply.correlation_id : [];
    if (typeof id !== 'string' || !correlation.includes(id)) return;
    print(reply);
    if (reply.kind === 'system/error') refused = true;
    if (awaited !== undefined && reply.kind === awaited) answered = reply;
    if (refused || answered) wake?.();
  });
  client.sendText(JSON.stringify(envelope));
  if (!(await client.barrier(opts.timeout))) {
    io.err(`switchboard: the gateway did not answer within ${opts.timeout} ms\n`);
    return 1;
  }
  if (refused) return 1;
  if (awaited !== undefined && answered === undefined) {
    const done = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), opts.timeout);
      wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      void client.closed.then(() => resolve(false));
    });
    if (!done) {
      io.err(`switchboard: no ${awaited} for ${String(id)} within ${opts.timeout} ms\n`);
      return 1;
    }
  }
  if (opts.wait > 0) await new Promise((resolve) => setTimeout(resolve, opts.wait));
  if (refused) return 1;
  const result = answered as WireEnvelope | undefined;
  if (result?.kind === 'mcp/response' && isObject(result.payload) && result.payload.error !== undefined)
    return 1;
  return 0;
}
