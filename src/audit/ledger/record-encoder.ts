/**
 * Turns an event into its record line, the way the ledger's flush loop needs it: the line's bytes
 * (newline included) in an append-only arena, its entry hash, and its RFC 6962 leaf digest. The
 * bytes are exactly those of `encodeRecord(seq, ts, prevHash, recordFields(event, ...))` (the
 * reference, property-tested against this), made with less work per record:
 *
 * - The canonical text is written member by member in the fixed canonical order, from the event
 *   itself, with no intermediate object. A member whose value is plain printable ASCII (no `"` or
 *   `\`, short enough, trimmed where ids are trimmed) is written as it is, which is what bounding,
 *   redaction and JSON escaping would leave of it; any other value goes through the same bounding
 *   functions as `recordFields` and the same escaping as `encodeRecord`.
 * - A member whose value usually repeats from one record to the next (session, client, upstream,
 *   target, method: a busy session's calls share them) keeps the text of its last value, so its
 *   checks, redaction and escaping run once per new value, not once per record (about 6% of the
 *   encoder's own time per record, measured in the ledger-on gateway at C=32).
 * - The text is encoded once, into a scratch buffer that starts with the domain tag, so the entry
 *   hash is one hash of a view (no concatenated string to flatten and encode again). The suffix
 *   goes after it, and with the byte before the line set to 0x00 the same bytes are the leaf
 *   hash's input. The finished line is copied into the arena.
 *
 * Lines built one after another lie one after another in the arena (a batch is one slice). A full
 * arena is replaced, not overwritten, so a slice handed to a write stays valid while the write is in
 * flight, whatever is built meanwhile. It is reused only once the writer says ({@link
 * RecordEncoder.written}) that a later arena's lines are written, hence every line in it too (lines
 * are written in the order they were built, or dropped): a fresh 4 MiB arena costs a page fault
 * per 4 KiB on first touch (the ledger benchmark, reusing: 100.5k appends per CPU-second against
 * 87.1k, medians of five alternating pairs).
 */
import { hash } from 'node:crypto';
import { boundId } from '../bound-id.js';
import type { Redactor, RedactorOptions } from '../redaction.js';
import type { AuditEvent } from './audit-event.js';
import {
  boundError,
  boundName,
  boundTarget,
  checkedMethodName,
  checkedObject,
  checkedTierAndDecision,
  eventOutput,
  MAX_NAME_LENGTH,
  MAX_TARGET_LENGTH,
  member,
  microseconds,
} from './record-fields.js';
import { ENTRY_HASH_DOMAIN } from './record-line.js';
import { createRedactedCanonicalJson } from './redacted-canonical-json.js';

/** A built record line. */
export interface EncodedLine {
  /** The arena holding the line; `buffer[start, start + bytes)` is the line and its newline. */
  readonly buffer: Buffer;
  readonly start: number;
  readonly bytes: number;
  readonly entryHash: string;
  /** The RFC 6962 leaf digest of the line (without its newline), as `leafDigest` returns it. */
  readonly leaf: string;
}

/** What {@link RecordEncoder} needs. */
export interface RecordEncoderOptions {
  /** The redaction rules (`createRedactor`'s options). */
  readonly redact: RedactorOptions;
  /** `error` is cut to this many code points (the cut mark included). */
  readonly maxErrorLength: number;
  /** Bytes of a fresh arena; default 4 MiB (a line longer than that gets an arena of its own). */
  readonly arenaBytes?: number;
}

/**
 * Printable ASCII but `"` and `\`, 1 to 128 characters, no space at either end: what `boundId`
 * returns unchanged and JSON writes without escapes.
 */
const PLAIN_ID = /^[!#-[\]-~](?:[ !#-[\]-~]{0,126}[!#-[\]-~])?$/;
/** Printable ASCII but `"` and `\`, 1 to 256 characters: unchanged by `boundName`, unescaped. */
const PLAIN_NAME = /^[ !#-[\]-~]{1,256}$/;
/** The same up to the target's length limit (redaction is asked separately). */
const PLAIN_TARGET = new RegExp(`^[ !#-[\\]-~]{1,${MAX_TARGET_LENGTH}}$`);

const DOMAIN = Buffer.from(ENTRY_HASH_DOMAIN, 'latin1');
/** The line starts right after the domain tag in the scratch buffer. */
const LINE_AT = DOMAIN.length;
/** Bytes after the canonical text: `,"entry_hash":"<64 hex>"}` and the newline. */
const SUFFIX_BYTES = 82;
const DEFAULT_ARENA_BYTES = 4 * 1024 * 1024;

/** `,"name":"<id>"` for an id member (`boundId`), or `''` when it is absent. */
function idMember(head: string, name: string, value: unknown): string {
  if (typeof value === 'string') {
    if (PLAIN_ID.test(value)) return `${head}${value}"`;
  } else if (typeof value === 'number') {
    // Any number's String() is printable ASCII without spaces or quotes, at most 24 characters.
    return `${head}${value}"`;
  }
  return member(name, boundId(value));
}

/** `,"name":"<name>"` for a name member (`boundName`), or `''` when it is absent. */
function nameMember(head: string, name: string, value: unknown): string {
  if (typeof value === 'string' && PLAIN_NAME.test(value)) return `${head}${value}"`;
  return member(name, boundName(value, MAX_NAME_LENGTH));
}

/**
 * One member's text for the last string value it was asked for. The text depends on the value
 * alone (and on the encoder's fixed options), and a string cannot change, so equal values get the
 * text already made; any other value is written anew (a value that is not a string is never kept).
 */
class RepeatedMember {
  #value: string | undefined;
  #text = '';
  readonly #write: (value: unknown) => string;

  constructor(write: (value: unknown) => string) {
    this.#write = write;
  }

  /** The member's text for `value`; throws as `write` does (nothing is kept then). */
  text(value: unknown): string {
    if (value === this.#value && value !== undefined) return this.#text;
    const text = this.#write(value);
    if (typeof value === 'string') {
      this.#value = value;
      this.#text = text;
    }
    return text;
  }
}

/** Builds record lines; one per ledger (it keeps the scratch buffer and the arena). */
export class RecordEncoder {
  readonly redactor: Redactor;
  readonly #canonicalArgs: (args: unknown) => string;
  readonly #maxErrorLength: number;
  readonly #arenaBytes: number;
  #scratch: Buffer;
  #arena: Buffer;
  #used = 0;
  /** Full arenas, oldest first, that may still hold lines not yet written. */
  readonly #retired: Buffer[] = [];
  /** A retired arena whose lines are all written, for the next one. */
  #spare: Buffer | undefined;
  readonly #method = new RepeatedMember((value) => {
    const method = checkedMethodName(value);
    return PLAIN_NAME.test(method) ? `,"method":"${method}"` : member('method', method);
  });
  readonly #client = new RepeatedMember((value) => idMember(',"client_id":"', 'client_id', value));
  readonly #session = new RepeatedMember((value) => idMember(',"session_id":"', 'session_id', value));
  readonly #upstream = new RepeatedMember((value) => nameMember(',"upstream":"', 'upstream', value));
  readonly #target = new RepeatedMember((value) =>
    typeof value === 'string' && PLAIN_TARGET.test(value) && this.redactor(value) === value
      ? `,"target":"${value}"`
      : member('target', boundTarget(value, this.redactor)),
  );

  constructor(options: RecordEncoderOptions) {
    const redaction = createRedactedCanonicalJson(options.redact);
    this.redactor = redaction.redactor;
    this.#canonicalArgs = redaction.encode;
    this.#maxErrorLength = options.maxErrorLength;
    this.#arenaBytes = options.arenaBytes ?? DEFAULT_ARENA_BYTES;
    this.#scratch = Buffer.alloc(64 * 1024);
    DOMAIN.copy(this.#scratch, 0);
    this.#arena = Buffer.allocUnsafe(this.#arenaBytes);
  }

  /**
   * The line of `event` as record `seq`, stamped `ts`, chained to `prevHash`.
   *
   * @throws SwitchboardError `SB_INTERNAL` for an invalid event, as `recordFields` does (nothing is
   *   written to the arena then).
   */
  encode(event: AuditEvent, seq: number, ts: string, prevHash: string): EncodedLine {
    // The checks `checkedMethod` makes, in its order (so the same event fails with the same error).
    checkedObject(event);
    const method = this.#method.text(event.method);
    checkedTierAndDecision(event);
    // Every member starts with a comma; the first one's becomes the opening brace below.
    let text = event.args === undefined ? '' : `,"args":${this.#canonicalArgs(event.args)}`;
    text += this.#client.text(event.client_id);
    text += nameMember(',"decided_by":"', 'decided_by', event.decided_by);
    text += `,"decision":"${event.decision}","duration_ms":${microseconds(Number(event.duration_ms))}`;
    text += member('error', boundError(event.error, this.redactor, this.#maxErrorLength));
    text += method;
    const output = eventOutput(event);
    if (typeof output === 'string') {
      text += `,"output_len":${Buffer.byteLength(output, 'utf8')},"output_sha256":"${hash('sha256', output, 'hex')}"`;
    }
    text += `,"prev_hash":"${prevHash}"`;
    text += idMember(',"request_id":"', 'request_id', event.request_id);
    text += nameMember(',"rule":"', 'rule', event.rule);
    text += `,"seq":${seq}`;
    text += this.#session.text(event.session_id);
    text += this.#target.text(event.target);
    text += `,"tier":"${event.tier}"`;
    text += nameMember(',"trace_id":"', 'trace_id', event.trace_id);
    text += `,"ts":"${ts}"`;
    text += this.#upstream.text(event.upstream);
    text += ',"v":1';
    return this.#finish(text);
  }

  /** Hashes and stores the line whose canonical members (each with a leading comma) are `text`. */
  #finish(text: string): EncodedLine {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const most = LINE_AT + 3 * text.length + SUFFIX_BYTES;
    if (this.#scratch.length < most) {
      this.#scratch = Buffer.alloc(most * 2);
      DOMAIN.copy(this.#scratch, 0);
    }
    const scratch = this.#scratch;
    const n = scratch.write(text, LINE_AT, 'utf8');
    scratch[LINE_AT] = 0x7b; // `{` over the first member's comma
    scratch[LINE_AT + n] = 0x7d; // `}`: the canonical text ends here
    // Plain views: cheaper than Buffer#subarray, and all `hash` needs.
    const { buffer, byteOffset } = scratch;
    const entryHash = hash('sha256', new Uint8Array(buffer, byteOffset, LINE_AT + n + 1), 'hex');
    scratch.write(`,"entry_hash":"${entryHash}"}\n`, LINE_AT + n, 'latin1');
    const end = LINE_AT + n + SUFFIX_BYTES;
    scratch[LINE_AT - 1] = 0x00; // the leaf prefix, over the domain tag's newline
    const leaf = hash('sha256', new Uint8Array(buffer, byteOffset + LINE_AT - 1, n + SUFFIX_BYTES), 'binary');
    scratch[LINE_AT - 1] = 0x0a;
    const bytes = end - LINE_AT;
    if (this.#used + bytes > this.#arena.length) this.#replaceArena(bytes);
    const start = this.#used;
    scratch.copy(this.#arena, start, LINE_AT, end);
    this.#used += bytes;
    return { buffer: this.#arena, start, bytes, entryHash, leaf };
  }

  #replaceArena(bytes: number): void {
    this.#retired.push(this.#arena);
    const spare = this.#spare;
    this.#spare = undefined;
    this.#arena =
      spare !== undefined && spare.length >= bytes
        ? spare
        : Buffer.allocUnsafe(Math.max(this.#arenaBytes, bytes));
    this.#used = 0;
  }

  /**
   * The writer wrote lines of `arena` (the `buffer` of their `EncodedLine`s): every line built
   * before them is written or dropped, so the arenas retired before `arena` may be built over.
   */
  written(arena: Buffer): void {
    // The current arena was retired after all the others; an unknown one frees nothing.
    const before = arena === this.#arena ? this.#retired.length : this.#retired.indexOf(arena);
    for (const free of this.#retired.splice(0, Math.max(0, before))) {
      // One spare of the usual size is enough; a line's own oversized arena is let go.
      if (free.length === this.#arenaBytes) this.#spare = free;
    }
  }
}
