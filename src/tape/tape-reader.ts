/**
 * Reads a tape (`tape-format.ts`) from its text. The one way text becomes a `Tape`.
 *
 * Contract: `readTape` returns a tape whose every line was checked (version, kinds, required
 * fields, `seq` in order, `re` naming an earlier line, each message a valid JSON-RPC message), or
 * throws a `SwitchboardError` `SB_TAPE_INVALID` whose message starts with `<name>:<line>: ` and
 * whose details carry `{ file, line }`. It never throws anything else, whatever the bytes: tapes
 * are handed around between machines and CI jobs, and a broken one must say where it broke.
 * Unknown fields are ignored (forward compatible within version 1); an unknown version is refused.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import { parseMessage } from '../protocol/jsonrpc/parse.js';
import type { JsonObject } from '../protocol/jsonrpc/types.js';
import {
  READABLE_TAPE_VERSIONS,
  TAPE_VERSION,
  type Tape,
  type TapeHeader,
  type TapeIncomplete,
  type TapeMessage,
  type TapeRedaction,
  type TapeSource,
} from './tape-format.js';

/** A tape that cannot be read: `SB_TAPE_INVALID`, naming the file and the line. */
export function tapeError(name: string, line: number, what: string): SwitchboardError {
  return new SwitchboardError(SbErrorCode.TapeInvalid, `${name}:${line}: ${what}`, {
    details: { file: name, line },
  });
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** How to read a tape. */
export interface ReadTapeOptions {
  /**
   * Accept a tape without its end line (a recording cut by a crash or SIGKILL): its complete
   * lines are read, an unfinished last line is dropped, and the tape comes back marked
   * `truncated`. Every other fault is still refused. Off by default: a cut tape replays half a
   * session, which is only right when someone asked for it.
   */
  readonly allowTruncated?: boolean;
}

/** What the refusals of a cut tape say, so that the way to read one anyway is never a secret. */
const ALLOW_TRUNCATED_HINT = 'tape replay and tape check read its complete lines with --allow-truncated';

/**
 * Reads a tape from its text or bytes. `name` is how errors name the file (default `tape`).
 * Throws `SB_TAPE_INVALID` naming the line (see the module's contract).
 */
export function readTape(input: string | Uint8Array, name = 'tape', options: ReadTapeOptions = {}): Tape {
  const allowTruncated = options.allowTruncated === true;
  let bytes = typeof input === 'string' ? undefined : input;
  let dropped = false;
  // A crash cuts the file anywhere, even inside a character: with `allowTruncated`, bytes after the
  // last newline that are not a whole JSON object are the unfinished line, and are let go.
  if (allowTruncated && bytes !== undefined && bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a) {
    const cut = bytes.lastIndexOf(0x0a) + 1;
    if (cut > 0 && !isWholeLine(bytes.subarray(cut))) {
      bytes = bytes.subarray(0, cut);
      dropped = true;
    }
  }
  let text: string;
  if (bytes === undefined) text = input as string;
  else {
    try {
      text = decoder.decode(bytes);
    } catch {
      throw tapeError(name, lineOfBadUtf8(bytes), 'not UTF-8 text');
    }
  }
  if (allowTruncated && !dropped && text.length > 0 && !text.endsWith('\n')) {
    const cut = text.lastIndexOf('\n') + 1;
    if (cut > 0 && !isWholeLine(text.slice(cut))) {
      text = text.slice(0, cut);
      dropped = true;
    }
  }
  if (text.length === 0) throw tapeError(name, 1, 'empty: a tape starts with its header line');
  const ends = text.endsWith('\n');
  const lines = (ends ? text.slice(0, -1) : text).split('\n');
  const last = lines.length;
  const values: unknown[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const raw = lines[i] as string;
    const line = i + 1;
    const content = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (content.trim().length === 0)
      throw tapeError(name, line, 'blank line (a tape has one JSON object per line)');
    try {
      values.push(JSON.parse(content) as unknown);
    } catch (err) {
      if (line === last && !ends)
        throw tapeError(
          name,
          line,
          line === 1
            ? 'truncated (the header line has no end: nothing was recorded whole)'
            : `truncated (the last line has no end; ${ALLOW_TRUNCATED_HINT})`,
        );
      const reason = err instanceof Error ? err.message : 'unreadable';
      throw tapeError(name, line, `not JSON (${reason})`);
    }
  }
  const { header, version } = readHeader(values[0], name);
  const messages: TapeMessage[] = [];
  const redactions: TapeRedaction[] = version === 1 ? [...header.redactions] : [];
  const tapeOf = (truncated: boolean): Tape =>
    Object.freeze({
      header: version === 1 ? header : { ...header, redactions },
      messages: Object.freeze(messages),
      ...(truncated ? { truncated: true as const } : {}),
    });
  for (let i = 1; i < values.length; i += 1) {
    const value = values[i];
    if (isObject(value) && value.kind === 'end') {
      if (i !== values.length - 1) throw tapeError(name, i + 1, 'an end line before the last line');
      if (value.messages !== messages.length)
        throw tapeError(
          name,
          i + 1,
          `the end line counts ${typeof value.messages === 'number' ? value.messages : describe(value.messages)} messages, the tape holds ${messages.length}`,
        );
      return tapeOf(false);
    }
    const message = readMessage(value, i + 1, messages, name);
    messages.push(message);
    if (version !== 1) redactions.push(...lineRedactions(value, i + 1, message.seq, name));
  }
  if (allowTruncated) return tapeOf(true);
  throw tapeError(
    name,
    values.length,
    `truncated (no end line after line ${values.length}: the tape was cut short; ${ALLOW_TRUNCATED_HINT})`,
  );
}

/** Whether an unterminated last line is a whole JSON object (a cut one never is: its `}` is missing). */
function isWholeLine(tail: string | Uint8Array): boolean {
  try {
    const text = typeof tail === 'string' ? tail : decoder.decode(tail);
    return isObject(JSON.parse(text.endsWith('\r') ? text.slice(0, -1) : text));
  } catch {
    return false;
  }
}

/** Reads a tape file; errors name it by its base name. */
export function readTapeFile(path: string, options: ReadTapeOptions = {}): Tape {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new SwitchboardError(SbErrorCode.TapeInvalid, `cannot read tape ${path}: ${reason}`, {
      cause: err,
      details: { file: path },
    });
  }
  return readTape(bytes, basename(path), options);
}

function lineOfBadUtf8(bytes: Uint8Array): number {
  let line = 1;
  let start = 0;
  for (let i = 0; i <= bytes.length; i += 1) {
    if (i === bytes.length || bytes[i] === 0x0a) {
      try {
        decoder.decode(bytes.subarray(start, i));
      } catch {
        return line;
      }
      line += 1;
      start = i + 1;
    }
  }
  return line - 1;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}

function readHeader(value: unknown, name: string): { header: TapeHeader; version: number } {
  const fail = (what: string): never => {
    throw tapeError(name, 1, what);
  };
  if (!isObject(value)) return fail(`the header must be a JSON object, got ${describe(value)}`);
  if (!('tape' in value)) {
    return fail(
      value.kind === 'message'
        ? 'the first line is a message: a tape starts with its header line'
        : typeof value.protocol === 'string' && 'payload' in value
          ? 'this is a MEUP envelope (switchboard trace show --json?), not a tape: switchboard tape export <session> writes a tape'
          : 'not a tape header (no "tape" version)',
    );
  }
  if (typeof value.tape !== 'number' || !READABLE_TAPE_VERSIONS.includes(value.tape)) {
    const shown = typeof value.tape === 'number' ? String(value.tape) : JSON.stringify(value.tape);
    return fail(
      `tape version ${shown} is not supported (this build reads ${READABLE_TAPE_VERSIONS.join(' and ')})`,
    );
  }
  const version = value.tape;
  // Version 2 writes the header before the lines it would list: each line lists its own cuts.
  if (version !== 1 && value.redactions !== undefined)
    return fail('"redactions" belong on the message lines in tape version 2, not in the header');
  if (value.kind !== 'header')
    return fail(`the first line must have "kind": "header", got ${describe(value.kind)}`);
  if (typeof value.recordedAt !== 'string') return fail('header without "recordedAt" (an ISO 8601 time)');
  if (typeof value.protocolVersion !== 'string') return fail('header without "protocolVersion"');
  const source = readSource(value.source, fail);
  if (!isObject(value.server) || !isObject(value.server.initialize))
    return fail('header without "server.initialize" (the server\'s initialize result)');
  let client: { initialize: JsonObject } | undefined;
  if (value.client !== undefined) {
    if (!isObject(value.client) || !isObject(value.client.initialize))
      return fail('"client" must be {"initialize": {...}} when present');
    client = { initialize: value.client.initialize };
  }
  const redactions = readList(value.redactions, 'redactions', fail, (item, at): TapeRedaction => {
    if (!isObject(item) || !isSeq(item.seq) || typeof item.path !== 'string' || typeof item.rule !== 'string')
      return fail(`"redactions[${at}]" must be {"seq", "path", "rule"}`);
    return { seq: item.seq, path: item.path, rule: item.rule };
  });
  const incomplete = readList(value.incomplete, 'incomplete', fail, (item, at): TapeIncomplete => {
    if (!isObject(item) || !isSeq(item.seq) || typeof item.reason !== 'string')
      return fail(`"incomplete[${at}]" must be {"seq", "reason"}`);
    return typeof item.method === 'string'
      ? { seq: item.seq, method: item.method, reason: item.reason }
      : { seq: item.seq, reason: item.reason };
  });
  const header: TapeHeader = {
    tape: TAPE_VERSION,
    kind: 'header',
    recordedAt: value.recordedAt,
    source,
    protocolVersion: value.protocolVersion,
    server: { initialize: value.server.initialize },
    ...(client === undefined ? {} : { client }),
    redactions: version === 1 ? redactions : [],
    incomplete,
  };
  return { header, version };
}

/** The cuts a version-2 message line lists (`redactions: [{path, rule}]`), as the header's entries. */
function lineRedactions(value: unknown, line: number, seq: number, name: string): TapeRedaction[] {
  if (!isObject(value) || value.redactions === undefined) return [];
  const fail = (what: string): never => {
    throw tapeError(name, line, what);
  };
  if (!Array.isArray(value.redactions)) return fail('"redactions" must be an array');
  return value.redactions.map((item, at): TapeRedaction => {
    if (!isObject(item) || typeof item.path !== 'string' || typeof item.rule !== 'string')
      return fail(`"redactions[${at}]" must be {"path", "rule"}`);
    return { seq, path: item.path, rule: item.rule };
  });
}

function readSource(value: unknown, fail: (what: string) => never): TapeSource {
  if (!isObject(value)) return fail('header without "source"');
  if (value.via !== 'record' && value.via !== 'export')
    return fail(`"source.via" must be "record" or "export", got ${describe(value.via)}`);
  if (typeof value.gateway !== 'string') return fail('header without "source.gateway"');
  const source: { -readonly [K in keyof TapeSource]: TapeSource[K] } = {
    via: value.via,
    gateway: value.gateway,
  };
  if (value.command !== undefined) {
    if (!Array.isArray(value.command) || !value.command.every((part) => typeof part === 'string'))
      return fail('"source.command" must be an array of strings');
    source.command = value.command as string[];
  }
  for (const key of ['url', 'trace', 'session', 'context', 'upstream'] as const) {
    const field = value[key];
    if (field === undefined) continue;
    if (typeof field !== 'string') return fail(`"source.${key}" must be a string`);
    source[key] = field;
  }
  return source;
}

function readList<T>(
  value: unknown,
  field: string,
  fail: (what: string) => never,
  item: (value: unknown, at: number) => T,
): readonly T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return fail(`"${field}" must be an array`);
  return value.map((entry, at) => item(entry, at));
}

function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

function readMessage(
  value: unknown,
  line: number,
  before: readonly TapeMessage[],
  name: string,
): TapeMessage {
  const fail = (what: string): never => {
    throw tapeError(name, line, what);
  };
  if (!isObject(value)) return fail(`a line must be a JSON object, got ${describe(value)}`);
  if (value.kind === 'header' || 'tape' in value) return fail('a second header (a tape has one, on line 1)');
  if (value.kind !== 'message') return fail(`unknown line kind ${describe(value.kind)} (expected "message")`);
  if (!('seq' in value)) return fail('message line without seq');
  const expected = before.length + 1;
  if (!isSeq(value.seq)) return fail(`"seq" must be a positive integer, got ${describe(value.seq)}`);
  if (value.seq !== expected) return fail(`seq ${value.seq} out of order (expected ${expected})`);
  if (!('t' in value)) return fail('message line without t');
  if (typeof value.t !== 'number' || !Number.isFinite(value.t) || value.t < 0)
    return fail(`"t" must be a number of milliseconds, at least 0, got ${describe(value.t)}`);
  if (value.dir !== 'c2s' && value.dir !== 's2c')
    return fail(
      'dir' in value
        ? `"dir" must be "c2s" or "s2c", got ${describe(value.dir)}`
        : 'message line without dir',
    );
  if (!('message' in value)) return fail('message line without message');
  const parsed = parseMessage(value.message);
  if (!parsed.ok) return fail(`not a JSON-RPC message (${parsed.error.message})`);
  let re: number | undefined;
  if (value.re !== undefined) {
    if (!isSeq(value.re) || value.re >= value.seq)
      return fail(`"re" must name an earlier line's seq, got ${describe(value.re)}`);
    re = value.re;
  }
  for (const key of ['envelope', 'context'] as const) {
    if (value[key] !== undefined && typeof value[key] !== 'string') return fail(`"${key}" must be a string`);
  }
  return Object.freeze({
    kind: 'message',
    seq: value.seq,
    t: value.t,
    dir: value.dir,
    message: parsed.message,
    ...(re === undefined ? {} : { re }),
    ...(typeof value.envelope === 'string' ? { envelope: value.envelope } : {}),
    ...(typeof value.context === 'string' ? { context: value.context } : {}),
  });
}
