/**
 * The recording tap: the hops between the gateway and ONE upstream, kept as a tape's messages.
 *
 * A tap observes and never steers (`core/taps.ts`): `observe` only appends the hop to the
 * builder, and everything costly (redaction, the header) happens once, in `tape()`, after the
 * session. The hops kept are the upstream side of the gateway — gateway→server (`c2s`, as written,
 * timed when written) and server→gateway (`s2c`, timed when read) — so the tape holds the ids,
 * progress tokens and messages exactly as the server saw them, and replaying it is being that server.
 */
import type { HopEvent, Tap } from '../core/taps.js';
import { serverParticipant } from '../core/trace-mapping.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type {
  Tape,
  TapeDirection,
  TapeHeader,
  TapeIncomplete,
  TapeMessage,
  TapeRedaction,
  TapeSource,
} from './tape-format.js';
import { TAPE_VERSION } from './tape-format.js';
import type { MessageRedactor } from './tape-redaction.js';
import { TapeBuilder, type TapeEntry } from './tape-writer.js';

/**
 * The side of `hop` that faces `upstream`: `c2s` for gateway→server, `s2c` for server→gateway,
 * undefined for a client-side hop or another upstream's.
 */
export function upstreamSide(
  hop: { readonly from: string; readonly to: string },
  upstream: string,
): TapeDirection | undefined {
  const server = serverParticipant(upstream);
  if (hop.to === server) return 'c2s';
  if (hop.from === server) return 's2c';
  return undefined;
}

/**
 * Ties a message to the call it belongs to by its MEUP context: a call's hops share the context
 * `<session>/<request>`, and a server→client request made during a call lies one level below it.
 */
export class ContextCalls {
  readonly #calls = new Map<string, number>();

  /** Records the context of a `c2s` request that opened a call (`seq`: its line). */
  note(dir: TapeDirection, message: JsonRpcMessage, context: string | undefined, seq: number): void {
    if (context === undefined) return;
    // A session-level context (no `/`: the session's own, or the gateway's) is no call's.
    if (dir === 'c2s' && 'method' in message && 'id' in message && context.includes('/'))
      this.#calls.set(context, seq);
  }

  /** The seq of the client call a server message in `context` belongs to, if any. */
  callOf(dir: TapeDirection, message: JsonRpcMessage, context: string | undefined): number | undefined {
    if (context === undefined || dir !== 's2c' || !('method' in message)) return undefined;
    if ('id' in message) {
      const slash = context.lastIndexOf('/');
      return slash < 0 ? undefined : this.#calls.get(context.slice(0, slash));
    }
    return this.#calls.get(context);
  }
}

/** What the header needs that the hops do not say. */
export interface TapeHeaderFacts {
  /** Where the tape comes from, for the header. */
  readonly source: TapeSource;
  /** The revision when no initialize was seen (a stateless-era session). */
  readonly protocolVersion?: string;
  /** The server's initialize result when the tape holds no handshake (an export from `serve`). */
  readonly serverInitialize?: JsonObject;
  /** Messages the source could not give whole (an export); none when left out. */
  readonly incomplete?: readonly TapeIncomplete[];
  /** Redactions already made by the source (a trace kept redacted). */
  readonly redactions?: readonly TapeRedaction[];
}

/**
 * A tape from entries: redacts them with `redactor` (none: kept whole), and reads the header's
 * handshake from the first `initialize` request and its response.
 */
export function buildTape(
  entries: Iterable<TapeEntry>,
  facts: TapeHeaderFacts,
  redactor: MessageRedactor | undefined,
): Tape {
  const builder = new TapeBuilder();
  const redactions: TapeRedaction[] = [...(facts.redactions ?? [])];
  let firstWall: number | undefined;
  for (const entry of entries) {
    firstWall ??= entry.at;
    if (redactor === undefined) {
      builder.add(entry);
      continue;
    }
    const { message, cuts } = redactor(entry.message);
    const line = builder.add({ ...entry, message });
    for (const cut of cuts) redactions.push({ seq: line.seq, path: `/message${cut.path}`, rule: cut.rule });
  }
  const messages = builder.messages;
  const handshake = handshakeOf(messages);
  const serverInitialize = handshake.server ?? facts.serverInitialize ?? {};
  const version =
    typeof serverInitialize.protocolVersion === 'string'
      ? serverInitialize.protocolVersion
      : (facts.protocolVersion ?? 'unknown');
  const header: TapeHeader = {
    tape: TAPE_VERSION,
    kind: 'header',
    recordedAt: new Date(firstWall ?? Date.now()).toISOString(),
    source: facts.source,
    protocolVersion: version,
    server: { initialize: serverInitialize },
    ...(handshake.client === undefined ? {} : { client: { initialize: handshake.client } }),
    redactions,
    incomplete: facts.incomplete ?? [],
  };
  return builder.tape(header);
}

/** The first `initialize` request's params and its answer's result, from a tape's lines. */
export function handshakeOf(messages: readonly TapeMessage[]): { client?: JsonObject; server?: JsonObject } {
  const request = messages.find(
    (m) => m.dir === 'c2s' && 'method' in m.message && m.message.method === 'initialize' && 'id' in m.message,
  );
  if (request === undefined) return {};
  const response = messages.find((m) => m.re === request.seq && m.dir === 's2c' && !('method' in m.message));
  const params = 'params' in request.message ? request.message.params : undefined;
  const result = response !== undefined && 'result' in response.message ? response.message.result : undefined;
  return {
    ...(isObject(params) ? { client: params } : {}),
    ...(isObject(result) ? { server: result } : {}),
  };
}

/**
 * The tap of `switchboard tape record`: keeps the hops between the gateway and `upstream`.
 * Observing costs one array push; `tape()` builds the tape (redacted unless no redactor).
 */
export class TapeRecorderTap implements Tap {
  /** The tap's name (`Tap.name`). */
  readonly name = 'tape';
  readonly #upstream: string;
  readonly #entries: TapeEntry[] = [];
  readonly #contexts = new ContextCalls();

  /** A recorder of the hops to and from the upstream named `upstream`; others are passed over. */
  constructor(upstream: string) {
    this.#upstream = upstream;
  }

  /** Keeps `event` when it is a hop between the gateway and the upstream, with its call's `re`. */
  observe(event: HopEvent): void {
    const dir = upstreamSide(event, this.#upstream);
    if (dir === undefined) return;
    const seq = this.#entries.length + 1;
    const re = this.#contexts.callOf(dir, event.message, event.context);
    this.#contexts.note(dir, event.message, event.context, seq);
    this.#entries.push({
      dir,
      message: event.message,
      // A hop toward the server is timed when it was written to it, one from it when it was read.
      at: dir === 'c2s' ? (event.sentAt ?? event.receivedAt) : event.receivedAt,
      ...(re === undefined ? {} : { re }),
      envelope: event.id,
      context: event.context,
    });
  }

  /** How many messages were recorded. */
  get size(): number {
    return this.#entries.length;
  }

  /** The tape of what was recorded so far (`buildTape`); recording may go on. */
  tape(facts: TapeHeaderFacts, redactor: MessageRedactor | undefined): Tape {
    return buildTape(this.#entries, facts, redactor);
  }
}
