/**
 * The recording tap: the hops between the gateway and ONE upstream, kept as a tape's messages.
 *
 * A tap observes and never steers (`core/taps.ts`): `TapeRecorderTap` writes each hop to its
 * sink as it comes (a recording cut by a crash keeps what came before), and `buildTape` builds a
 * whole tape from entries at once (export, `tape check --update`). The hops kept are the upstream side of the gateway — gateway→server (`c2s`, as written,
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
import type { TapeLineSink } from './tape-line-sink.js';
import type { MessageRedactor } from './tape-redaction.js';
import {
  endLine,
  headerLine,
  messageLine,
  TapeBuilder,
  type TapeEntry,
  type TapeLineCut,
} from './tape-writer.js';

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
    const { line, cuts } = addRedacted(builder, entry, redactor);
    for (const cut of cuts) redactions.push({ seq: line.seq, ...cut });
  }
  return builder.tape(tapeHeader(builder.messages, facts, firstWall, redactions));
}

/** Adds `entry` to `builder`, redacted by `redactor`; gives its line and the cuts (pointers into the line). */
function addRedacted(
  builder: TapeBuilder,
  entry: TapeEntry,
  redactor: MessageRedactor | undefined,
): { line: TapeMessage; cuts: TapeLineCut[] } {
  if (redactor === undefined) return { line: builder.add(entry), cuts: [] };
  const { message, cuts } = redactor(entry.message);
  const line = builder.add({ ...entry, message });
  return { line, cuts: cuts.map((cut) => ({ path: `/message${cut.path}`, rule: cut.rule })) };
}

/** The header of a tape whose first lines are `messages` (the handshake is read from them). */
function tapeHeader(
  messages: readonly TapeMessage[],
  facts: TapeHeaderFacts,
  firstWall: number | undefined,
  redactions: readonly TapeRedaction[],
): TapeHeader {
  const handshake = handshakeOf(messages);
  const serverInitialize = handshake.server ?? facts.serverInitialize ?? {};
  const version =
    typeof serverInitialize.protocolVersion === 'string'
      ? serverInitialize.protocolVersion
      : (facts.protocolVersion ?? 'unknown');
  return {
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
}

/** The first `initialize` request's params and its answer's result, from a tape's lines. */
export function handshakeOf(messages: readonly TapeMessage[]): { client?: JsonObject; server?: JsonObject } {
  const request = messages.find(isInitialize);
  if (request === undefined) return {};
  const response = messages.find((m) => m.re === request.seq && m.dir === 's2c' && !('method' in m.message));
  const params = 'params' in request.message ? request.message.params : undefined;
  const result = response !== undefined && 'result' in response.message ? response.message.result : undefined;
  return {
    ...(isObject(params) ? { client: params } : {}),
    ...(isObject(result) ? { server: result } : {}),
  };
}

function isInitialize(m: TapeMessage): boolean {
  return m.dir === 'c2s' && 'method' in m.message && m.message.method === 'initialize' && 'id' in m.message;
}

/** What `TapeRecorderTap` needs to write a tape as it goes. */
export interface TapeRecorderOptions {
  /** Where the lines go (`FileLineSink`: `<file>.partial`, renamed at the end). */
  readonly sink: TapeLineSink;
  /** The header's facts the hops do not say. */
  readonly facts: TapeHeaderFacts;
  /** Cuts secrets from each message before it is written; none keeps them whole. */
  readonly redactor?: MessageRedactor | undefined;
}

/**
 * The tap of `switchboard tape record`: writes the hops between the gateway and `upstream` to a
 * tape as they happen, so that a recording cut by a crash still holds what came before.
 *
 * The header is written as soon as the handshake is known: when the server answers the
 * `initialize` that opens the session, or at once when the session opens with anything else (a
 * stateless-era session has no handshake). Until then the lines wait in memory (the handshake is
 * the first two lines of a session). Each line is redacted as it comes and lists its own cuts
 * (tape version 2: the header cannot list cuts made after it was written). A line that answers a
 * request (the end of a call) is written through at once; others may wait for the sink's flush.
 * `finish()` writes the end line. Observing costs the redaction of one message, its JSON and a
 * held line; a `write(2)` per answered call.
 */
export class TapeRecorderTap implements Tap {
  /** The tap's name (`Tap.name`). */
  readonly name = 'tape';
  readonly #upstream: string;
  readonly #contexts = new ContextCalls();
  readonly #builder = new TapeBuilder();
  readonly #options: TapeRecorderOptions;
  /** Lines waiting for the header (the handshake not known yet); undefined once it is written. */
  #waiting: { line: TapeMessage; cuts: TapeLineCut[] }[] | undefined = [];
  #firstWall: number | undefined;
  #redactions = 0;

  /** A recorder of the hops to and from the upstream named `upstream` (others are passed over), writing to `options.sink`. */
  constructor(upstream: string, options: TapeRecorderOptions) {
    this.#upstream = upstream;
    this.#options = options;
  }

  /** Keeps `event` when it is a hop between the gateway and the upstream, with its call's `re`. */
  observe(event: HopEvent): void {
    const dir = upstreamSide(event, this.#upstream);
    if (dir === undefined) return;
    const seq = this.#builder.messages.length + 1;
    const re = this.#contexts.callOf(dir, event.message, event.context);
    this.#contexts.note(dir, event.message, event.context, seq);
    // A hop toward the server is timed when it was written to it, one from it when it was read.
    const at = dir === 'c2s' ? (event.sentAt ?? event.receivedAt) : event.receivedAt;
    this.#firstWall ??= at;
    const entry: TapeEntry = {
      dir,
      message: event.message,
      at,
      ...(re === undefined ? {} : { re }),
      envelope: event.id,
      context: event.context,
    };
    const added = addRedacted(this.#builder, entry, this.#options.redactor);
    this.#redactions += added.cuts.length;
    if (this.#waiting === undefined) {
      this.#write(added.line, added.cuts);
      return;
    }
    this.#waiting.push(added);
    if (this.#handshakeKnown()) this.#writeHeader();
  }

  /** How many messages were recorded. */
  get size(): number {
    return this.#builder.messages.length;
  }

  /** Writes the header if it is not yet written, and the end line; throws the sink's failure. */
  finish(): { messages: number; redactions: number } {
    if (this.#waiting !== undefined) this.#writeHeader();
    this.#options.sink.end(endLine(this.size));
    return { messages: this.size, redactions: this.#redactions };
  }

  #handshakeKnown(): boolean {
    const first = this.#waiting?.[0]?.line;
    if (first === undefined) return false;
    if (!isInitialize(first)) return true;
    return this.#builder.messages.some(
      (m) => m.re === first.seq && m.dir === 's2c' && !('method' in m.message),
    );
  }

  #writeHeader(): void {
    const waiting = this.#waiting ?? [];
    this.#waiting = undefined;
    const header = tapeHeader(this.#builder.messages, this.#options.facts, this.#firstWall, []);
    this.#options.sink.write(headerLine(header), waiting.length === 0);
    for (const { line, cuts } of waiting) this.#write(line, cuts);
  }

  #write(line: TapeMessage, cuts: readonly TapeLineCut[]): void {
    // An answer ends a call: it is on disk before the client can act on it.
    this.#options.sink.write(messageLine(line, cuts), !('method' in line.message));
  }
}
