/**
 * Newline-delimited framing for MCP over stdio: one JSON-RPC message per `\n`-terminated line
 * (a trailing `\r` is tolerated). A line longer than `maxBytes` is not buffered: its bytes are
 * discarded up to the next newline, and the caller is told once, with the first bytes of the line
 * so that an id can still be read and answered. The stream survives it.
 */
import { StringDecoder } from 'node:string_decoder';

/** Where the decoder reports what it reads, synchronously, in stream order. */
export interface LineDecoderHandlers {
  /** One complete line that is not blank, decoded as UTF-8, without its `\n` (or `\r\n`). */
  line(text: string): void;
  /** An over-long line was dropped; `head` holds its first bytes (at most `headBytes`). */
  oversized(head: string, bytes: number): void;
}

const NEWLINE = 0x0a;

/** Splits a byte stream into lines (see the module comment); keeps at most `maxBytes` of a line. */
export class LineDecoder {
  readonly #maxBytes: number;
  readonly #headBytes: number;
  readonly #handlers: LineDecoderHandlers;
  #chunks: Buffer[] = [];
  #length = 0;
  /** Set while discarding the rest of an oversized line. */
  #discarding: { head: string; bytes: number } | undefined;

  /** A decoder reporting to `handlers`; an oversized line's `head` keeps `headBytes` (4096 by default). */
  constructor(handlers: LineDecoderHandlers, options: { maxBytes: number; headBytes?: number }) {
    this.#handlers = handlers;
    this.#maxBytes = options.maxBytes;
    this.#headBytes = options.headBytes ?? 4096;
  }

  /** Reads `chunk`, reporting every line it completes; a partial line waits for the next chunk. */
  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#take(chunk.subarray(start, end));
      if (newline === -1) return;
      this.#endLine();
      start = newline + 1;
    }
  }

  /** Flushes a last line that had no newline (the peer closed its stream mid-line). */
  end(): void {
    if (this.#length > 0 || this.#discarding) this.#endLine();
  }

  #take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.#discarding) {
      this.#discarding.bytes += part.length;
      return;
    }
    if (this.#length + part.length > this.#maxBytes) {
      const all = Buffer.concat([...this.#chunks, part]);
      this.#discarding = { head: decodeHead(all.subarray(0, this.#headBytes)), bytes: all.length };
      this.#chunks = [];
      this.#length = 0;
      return;
    }
    this.#chunks.push(part);
    this.#length += part.length;
  }

  #endLine(): void {
    if (this.#discarding) {
      const { head, bytes } = this.#discarding;
      this.#discarding = undefined;
      this.#handlers.oversized(head, bytes);
      return;
    }
    const buffer = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks, this.#length);
    this.#chunks = [];
    this.#length = 0;
    let text = buffer.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim().length === 0) return;
    this.#handlers.line(text);
  }
}

function decodeHead(bytes: Buffer): string {
  // A cut may split a multi-byte character; the decoder drops the incomplete tail.
  return new StringDecoder('utf8').write(bytes);
}
