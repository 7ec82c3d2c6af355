/**
 * An incremental `text/event-stream` parser, after the WHATWG HTML "Server-sent events" parsing
 * rules, for the gateway's HTTP clients (Streamable HTTP answers, GET streams, the 2024-11-05
 * transport). It is fed chunks as they arrive and calls back once per dispatched event, so nothing
 * waits for a stream to end.
 *
 * What the spec asks and this parser does:
 * - lines end with CR, LF or CRLF, and a chunk boundary may fall anywhere, even between CR and LF;
 * - one leading BOM is skipped;
 * - `data` lines are joined with LF; `event` sets the type (default `message`); `id` sets the last
 *   event id unless its value contains NUL; `retry` with only ASCII digits sets the reconnection
 *   time; lines starting with `:` are comments; other fields are ignored;
 * - an event is dispatched on a blank line; one whose data buffer is empty (only `id:`/`retry:`)
 *   updates the last event id without being dispatched; a stream that ends mid-event discards it.
 *
 * Note that `data:` followed by a blank line *is* dispatched, with empty data (the data buffer holds
 * one LF): that is the shape of the MCP 2025-11-25 priming event, which callers must skip.
 *
 * Memory is bounded: a line or an event longer than `maxEventChars` is not buffered; the event is
 * reported through `onOversized` with its first characters, so a caller can still read its id.
 */
import { StringDecoder } from 'node:string_decoder';

/** One dispatched event. */
export interface SseEvent {
  /** The `event` field, or `message` when none was given. */
  readonly type: string;
  /** The `data` fields joined with LF; may be empty. */
  readonly data: string;
  /** The stream's last event id once this event is dispatched (`''` when never set). */
  readonly lastEventId: string;
}

/** Where the parser reports what it reads; only `onEvent` is required. */
export interface SseParserHandlers {
  /** An event ended (a blank line) that had a `data` field, not an oversized one (`onOversized`). */
  onEvent(event: SseEvent): void;
  /** A valid `retry` field, in milliseconds. */
  onRetry?(ms: number): void;
  /** A comment line, without its leading colon (keep-alives are comments). */
  onComment?(text: string): void;
  /**
   * An event whose data exceeded the limit was dropped. `head` is the beginning of its data (at
   * most `headChars` characters); `chars` is how many characters of data it had.
   */
  onOversized?(head: string, chars: number, lastEventId: string): void;
}

/** Limits and the starting cursor of a parser. */
export interface SseParserOptions {
  /**
   * The largest event (its data, or any one line) kept in memory, in UTF-16 code units: about the
   * byte size for JSON, which is mostly ASCII. Default: unlimited.
   */
  readonly maxEventChars?: number;
  /** How much of an oversized event is kept for `onOversized` (default 4096). */
  readonly headChars?: number;
  /** The last event id to start from, e.g. the one a resumed stream continues after. */
  readonly lastEventId?: string;
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const BOM = 0xfeff;
const DIGITS = /^[0-9]+$/;
/** Room for `data: ` in front of the head kept from an over-long line. */
const FIELD_MARGIN = 8;

/**
 * The parser for one stream. Feed it with `push` (strings, or bytes decoded as UTF-8 across chunk
 * boundaries) and finish with `end`. Not reusable across streams: make one per connection.
 */
export class SseParser {
  readonly #handlers: SseParserHandlers;
  readonly #max: number;
  readonly #headChars: number;
  #decoder: StringDecoder | undefined;
  /** Whether the first character of the stream has been seen (for the BOM). */
  #started = false;
  /** The previous chunk ended with CR: an LF at the start of the next one ends no new line. */
  #skipLf = false;
  /** The unfinished line carried over from earlier chunks. */
  #partial = '';
  /** Set while dropping the rest of a line that outgrew the limit: its head and length. */
  #longLine: { head: string; chars: number } | undefined;
  #data: string | undefined;
  #type = '';
  #idBuffer: string;
  #lastEventId: string;
  #retry: number | undefined;
  /** Set once the current event's data outgrew the limit. */
  #oversized: { head: string; chars: number } | undefined;

  /** A parser reporting to `handlers`; no limit on an event's data unless `options` sets one. */
  constructor(handlers: SseParserHandlers, options: SseParserOptions = {}) {
    this.#handlers = handlers;
    this.#max = options.maxEventChars ?? Number.POSITIVE_INFINITY;
    this.#headChars = options.headChars ?? 4096;
    this.#idBuffer = options.lastEventId ?? '';
    this.#lastEventId = this.#idBuffer;
  }

  /** The last event id as of the last dispatch (what a reconnection sends as `Last-Event-ID`). */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** The last valid `retry` value seen, in milliseconds. */
  get retryMs(): number | undefined {
    return this.#retry;
  }

  /** Parses the next chunk. Bytes are decoded as UTF-8, a character may straddle two chunks. */
  push(chunk: string | Uint8Array): void {
    if (typeof chunk === 'string') this.#text(chunk);
    else {
      // StringDecoder keeps a BOM as U+FEFF, so the parser itself skips exactly one.
      this.#decoder ??= new StringDecoder('utf8');
      this.#text(this.#decoder.write(chunk));
    }
  }

  /** The stream ended: anything not terminated by a blank line is discarded, as the spec says. */
  end(): void {
    if (this.#decoder) this.#text(this.#decoder.end());
    this.#partial = '';
    this.#longLine = undefined;
    this.#data = undefined;
    this.#type = '';
    this.#oversized = undefined;
  }

  #text(chunk: string): void {
    const n = chunk.length;
    if (n === 0) return;
    let start = 0;
    if (!this.#started) {
      this.#started = true;
      if (chunk.charCodeAt(0) === BOM) start = 1;
    }
    if (this.#skipLf) {
      this.#skipLf = false;
      if (chunk.charCodeAt(start) === LF) start++;
    }
    let lf = chunk.indexOf('\n', start);
    let cr = chunk.indexOf('\r', start);
    while (start < n) {
      if (lf !== -1 && lf < start) lf = chunk.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = chunk.indexOf('\r', start);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) {
        this.#carry(chunk, start, n);
        return;
      }
      this.#endLine(chunk, start, end);
      if (chunk.charCodeAt(end) === CR) {
        if (end + 1 === n) this.#skipLf = true;
        else if (chunk.charCodeAt(end + 1) === LF) {
          start = end + 2;
          continue;
        }
      }
      start = end + 1;
    }
  }

  /** Keeps an unfinished line for the next chunk, or only its head once it is too long. */
  #carry(chunk: string, from: number, to: number): void {
    const long = this.#longLine;
    if (long) {
      this.#topUp(long, chunk, from, to);
      return;
    }
    const length = this.#partial.length + (to - from);
    if (length <= this.#max) {
      this.#partial =
        this.#partial.length === 0 ? chunk.slice(from, to) : this.#partial + chunk.slice(from, to);
      return;
    }
    // The field name and colon come first: keep a little more than the head of the value.
    const keep = this.#headChars + FIELD_MARGIN;
    const whole = this.#partial + chunk.slice(from, Math.min(to, from + keep));
    this.#longLine = { head: whole.slice(0, keep), chars: length };
    this.#partial = '';
  }

  /** Counts more of an over-long line, completing its head when it is still short. */
  #topUp(long: { head: string; chars: number }, chunk: string, from: number, to: number): void {
    const keep = this.#headChars + FIELD_MARGIN;
    if (long.head.length < keep) long.head += chunk.slice(from, Math.min(to, from + keep - long.head.length));
    long.chars += to - from;
  }

  #endLine(chunk: string, from: number, to: number): void {
    const long = this.#longLine;
    if (long) {
      this.#longLine = undefined;
      this.#topUp(long, chunk, from, to);
      this.#longField(long.head, long.chars);
      return;
    }
    let line: string;
    if (this.#partial.length === 0) line = chunk.slice(from, to);
    else {
      line = this.#partial + chunk.slice(from, to);
      this.#partial = '';
    }
    if (line.length > this.#max) this.#longField(line.slice(0, this.#headChars + FIELD_MARGIN), line.length);
    else this.#line(line);
  }

  #line(line: string): void {
    if (line.length === 0) {
      this.#dispatch();
      return;
    }
    const colon = line.indexOf(':');
    if (colon === 0) {
      this.#handlers.onComment?.(line.slice(1));
      return;
    }
    let field: string;
    let value: string;
    if (colon === -1) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      value = line.slice(line.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1);
    }
    switch (field) {
      case 'data':
        this.#appendData(value);
        break;
      case 'event':
        this.#type = value;
        break;
      case 'id':
        if (!value.includes('\u0000')) this.#idBuffer = value;
        break;
      case 'retry':
        if (DIGITS.test(value)) {
          const ms = Number.parseInt(value, 10);
          this.#retry = ms;
          this.#handlers.onRetry?.(ms);
        }
        break;
      default:
        break;
    }
  }

  #appendData(value: string): void {
    const over = this.#oversized;
    if (over) {
      over.chars += value.length + 1;
      return;
    }
    const data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    if (data.length > this.#max) {
      this.#oversized = { head: data.slice(0, this.#headChars), chars: data.length };
      this.#data = '';
      return;
    }
    this.#data = data;
  }

  /** A line too long to keep: only `data` matters (its event is oversized); others are dropped. */
  #longField(head: string, chars: number): void {
    if (!head.startsWith('data')) return;
    const colon = head.indexOf(':');
    if (colon !== 4 && !(colon === -1 && head.length === 4)) return;
    const valueStart =
      colon === -1 ? head.length : head.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1;
    const value = head.slice(valueStart, valueStart + this.#headChars);
    const valueChars = chars - valueStart;
    const over = this.#oversized;
    if (over) over.chars += valueChars + 1;
    else {
      const before = this.#data;
      const joined = before === undefined ? value : `${before}\n${value}`;
      this.#oversized = {
        head: joined.slice(0, this.#headChars),
        chars: (before === undefined ? 0 : before.length + 1) + valueChars,
      };
    }
    this.#data = '';
  }

  #dispatch(): void {
    this.#lastEventId = this.#idBuffer;
    const data = this.#data;
    const type = this.#type;
    const over = this.#oversized;
    this.#data = undefined;
    this.#type = '';
    this.#oversized = undefined;
    if (over) {
      this.#handlers.onOversized?.(over.head, over.chars, this.#lastEventId);
      return;
    }
    if (data === undefined) return;
    this.#handlers.onEvent({ type: type === '' ? 'message' : type, data, lastEventId: this.#lastEventId });
  }
}
