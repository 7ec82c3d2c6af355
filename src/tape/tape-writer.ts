/**
 * Writes a tape (`tape-format.ts`): the one way a `Tape` becomes text, and `TapeBuilder`, which
 * numbers and times messages as they come and ties each to the call it belongs to.
 *
 * Contract: `writeTape` gives text that `readTape` reads back as the same tape (a property test
 * holds them to it), one JSON object per line, `\n`-terminated, with the end line last.
 * `writeTapeFile` writes a complete file or nothing: it writes beside the target, flushes it to
 * disk and renames it into place, so a reader never sees a half-written tape under the name.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import { idKey, type JsonObject, type JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import {
  TAPE_VERSION,
  type Tape,
  type TapeDirection,
  type TapeHeader,
  type TapeMessage,
} from './tape-format.js';

/**
 * The tape as text (version {@link TAPE_VERSION}): header, messages, end line; each line ends
 * with `\n`. Each of the header's redactions is written on the line it names (a cut naming no
 * line of the tape is an error of the caller's, and throws).
 */
export function writeTape(tape: Tape): string {
  const cuts = new Map<number, TapeLineCut[]>();
  for (const cut of tape.header.redactions) {
    if (!Number.isSafeInteger(cut.seq) || cut.seq < 1 || cut.seq > tape.messages.length)
      throw new RangeError(
        `a redaction names seq ${cut.seq}, the tape holds ${tape.messages.length} messages`,
      );
    const list = cuts.get(cut.seq) ?? [];
    list.push({ path: cut.path, rule: cut.rule });
    cuts.set(cut.seq, list);
  }
  const lines = [headerLine(tape.header)];
  for (const message of tape.messages) lines.push(messageLine(message, cuts.get(message.seq) ?? []));
  lines.push(endLine(tape.messages.length));
  return `${lines.join('\n')}\n`;
}

/** A cut as its line lists it (version 2): the line is its `seq`. */
export interface TapeLineCut {
  /** JSON Pointer into the line (so it starts with `/message`) of the value that was changed. */
  readonly path: string;
  /** The rule that matched (a secret pattern's name, or `member-name` for a secret-named member). */
  readonly rule: string;
}

/** The header line, without its `\n`: version {@link TAPE_VERSION}, no `redactions` (the lines list them). */
export function headerLine(header: TapeHeader): string {
  const { redactions: _lines, ...rest } = header;
  return JSON.stringify({ ...rest, tape: TAPE_VERSION });
}

/** A message line, without its `\n`, listing the cuts made in it (none: no `redactions` member). */
export function messageLine(message: TapeMessage, cuts: readonly TapeLineCut[]): string {
  return JSON.stringify(cuts.length === 0 ? message : { ...message, redactions: cuts });
}

/** The end line, without its `\n`. */
export function endLine(messages: number): string {
  return JSON.stringify({ kind: 'end', messages });
}

/** Writes `tape` to `path` whole or not at all (temporary file, fsync, rename). Synchronous, so
 * it also completes from a signal handler or an `exit` hook. */
export function writeTapeFile(path: string, tape: Tape): void {
  const text = writeTape(tape);
  const temporary = `${path}.${process.pid}.partial`;
  const fd = openSync(temporary, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(temporary, path);
}

/** A message handed to the builder. */
export interface TapeEntry {
  /** Who sent it. */
  readonly dir: TapeDirection;
  /** The message, as it goes on the tape. */
  readonly message: JsonRpcMessage;
  /** Monotonic milliseconds (any origin: `performance.now()`, a trace's `received`). */
  readonly at: number;
  /** The call it belongs to, when the caller knows better than ids and progress tokens. */
  readonly re?: number;
  /** The hop's MEUP envelope id, when known; copied to the line. */
  readonly envelope?: string;
  /** The hop's MEUP context, when known; copied to the line. */
  readonly context?: string;
}

/**
 * Builds a tape's message lines as the messages come: numbers them, times them from the first,
 * and fills `re` where the caller does not: a response names the request with its id in the
 * other direction, a `notifications/progress` the request that carried its `progressToken`, a
 * `notifications/cancelled` the request it cancels. The caller gives `re` for what only it knows
 * (a server→client request made during a call). Ids are per direction, and an id is forgotten
 * once answered, so a client that reuses ids is still matched right.
 */
export class TapeBuilder {
  readonly #messages: TapeMessage[] = [];
  #origin: number | undefined;
  /** Open requests, per direction of the request: id key → seq. */
  readonly #open = { c2s: new Map<string, number>(), s2c: new Map<string, number>() };
  /** Progress tokens of open requests → seq of the request. */
  readonly #tokens = new Map<string, number>();

  /** Adds a message; returns its line. */
  add(entry: TapeEntry): TapeMessage {
    if (this.#origin === undefined) this.#origin = entry.at;
    const seq = this.#messages.length + 1;
    const t = Math.max(0, round3(entry.at - this.#origin));
    const re = entry.re ?? this.#relate(entry);
    this.#remember(entry, seq);
    const line: TapeMessage = Object.freeze({
      kind: 'message',
      seq,
      t,
      dir: entry.dir,
      message: entry.message,
      ...(re === undefined ? {} : { re }),
      ...(entry.envelope === undefined ? {} : { envelope: entry.envelope }),
      ...(entry.context === undefined ? {} : { context: entry.context }),
    });
    this.#messages.push(line);
    return line;
  }

  /** The lines added so far, in order (the builder's own list: read, do not keep). */
  get messages(): readonly TapeMessage[] {
    return this.#messages;
  }

  /** The seq of the open request `id` sent in direction `dir`, if it is still open. */
  openRequest(dir: TapeDirection, id: string | number): number | undefined {
    return this.#open[dir].get(idKey(id));
  }

  /** A frozen tape of `header` and a copy of the lines added so far. */
  tape(header: TapeHeader): Tape {
    return Object.freeze({ header, messages: Object.freeze([...this.#messages]) });
  }

  #relate(entry: TapeEntry): number | undefined {
    const message = entry.message;
    const other: TapeDirection = entry.dir === 'c2s' ? 's2c' : 'c2s';
    if (!('method' in message)) {
      return message.id === null ? undefined : this.#open[other].get(idKey(message.id));
    }
    const params = isObject(message.params) ? message.params : undefined;
    if (message.method === 'notifications/progress') {
      const token = params?.progressToken;
      return typeof token === 'string' || typeof token === 'number'
        ? this.#tokens.get(tokenKey(token))
        : undefined;
    }
    if (message.method === 'notifications/cancelled') {
      const id = params?.requestId;
      // A peer cancels a request it sent itself.
      return typeof id === 'string' || typeof id === 'number'
        ? this.#open[entry.dir].get(idKey(id))
        : undefined;
    }
    return undefined;
  }

  #remember(entry: TapeEntry, seq: number): void {
    const message = entry.message;
    if ('method' in message) {
      if (!('id' in message)) return;
      this.#open[entry.dir].set(idKey(message.id), seq);
      const token = progressToken(message.params);
      if (token !== undefined) this.#tokens.set(tokenKey(token), seq);
      return;
    }
    if (message.id === null) return;
    const other: TapeDirection = entry.dir === 'c2s' ? 's2c' : 'c2s';
    const key = idKey(message.id);
    const request = this.#open[other].get(key);
    this.#open[other].delete(key);
    if (request === undefined) return;
    for (const [token, owner] of this.#tokens) if (owner === request) this.#tokens.delete(token);
  }
}

function progressToken(params: JsonObject | readonly unknown[] | undefined): string | number | undefined {
  if (!isObject(params) || !isObject(params._meta)) return undefined;
  const token = params._meta.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

function tokenKey(token: string | number): string {
  return typeof token === 'number' ? `n${token}` : `s${token}`;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}
