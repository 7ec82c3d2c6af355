/**
 * Streams the lines of ledger files in large chunks, for the verifier, the writer's recovery, the
 * prover and the CLI. Each chunk's complete lines are validated as UTF-8 and decoded once (not line
 * by line), then cut at the newlines of both the bytes and the text, which line up because a
 * newline byte never occurs inside a multi-byte UTF-8 sequence.
 *
 * A file whose last byte is not a newline ends in a torn line (a crash mid-write): it is reported
 * through `onTorn`, never passed off as a line.
 */
import { isUtf8 } from 'node:buffer';
import { open } from 'node:fs/promises';
import { join } from 'node:path';

/** Bytes read per `read` call. */
const CHUNK_SIZE = 1024 * 1024;

/**
 * One complete line, handed to the visitor. Its bytes are `data[start, end)`; `data` is a reused
 * buffer, only valid during the call (copy what you keep), and `data[end]` is the line's newline.
 * `data[0, start)` holds lines already visited, which the scanner never reads again: a visitor may
 * overwrite those bytes (the verifier hashes in place). `bytes` makes the view on demand: the hot
 * paths work on `data` directly instead.
 */
export class ScannedLine {
  /** The decoded text; `null` until decoded (scans with `decode: false` decode on first use). */
  #text: string | undefined | null;
  /** Whether the line's bytes are known to be valid UTF-8 (its whole chunk was). */
  readonly #chunkUtf8: boolean;

  constructor(
    /** The file's name (not its path). */
    readonly file: string,
    /** 1-based line number within the file (counted from `startLineNo` when a start offset is given). */
    readonly lineNo: number,
    /** Byte offset of the line's first byte in the file. */
    readonly offset: number,
    text: string | undefined | null,
    readonly data: Buffer,
    readonly start: number,
    readonly end: number,
    chunkUtf8: boolean,
  ) {
    this.#text = text;
    this.#chunkUtf8 = chunkUtf8;
  }

  /** The decoded line, or `undefined` when its bytes are not valid UTF-8. */
  get text(): string | undefined {
    if (this.#text === null)
      this.#text = this.utf8 ? this.data.toString('utf8', this.start, this.end) : undefined;
    return this.#text;
  }

  /** Whether the line's bytes are valid UTF-8. */
  get utf8(): boolean {
    if (this.#chunkUtf8) return true;
    return this.#text === null ? isUtf8(this.bytes) : this.#text !== undefined;
  }

  /** The line's bytes without the newline (a view into `data`). */
  get bytes(): Buffer {
    return this.data.subarray(this.start, this.end);
  }

  /** Byte length of the line without the newline. */
  get length(): number {
    return this.end - this.start;
  }
}

/** The incomplete last line of a file. */
export interface TornLine {
  readonly file: string;
  readonly lineNo: number;
  readonly offset: number;
  readonly bytes: Buffer;
}

/** Called per line; return `false` to stop the whole scan. */
export type LineVisitor = (line: ScannedLine) => boolean | undefined;

/** Where and how {@link scanLines} reads. */
export interface ScanOptions {
  /** Start reading the first file at this byte offset (a line boundary); default 0. */
  readonly startOffset?: number;
  /** Line number of the line at `startOffset`; default 1. */
  readonly startLineNo?: number;
  /** Called for a file's incomplete last line; return `false` to stop the scan. */
  readonly onTorn?: (torn: TornLine) => boolean | undefined;
  /**
   * Decode each chunk's text up front (default `true`); `false` decodes a line only when its
   * `text` is read, for visitors that mostly work on the bytes (the verifier).
   */
  readonly decode?: boolean;
}

/** The two buffers a scan reads into in turn: one is visited while the next read fills the other. */
interface Reader {
  buffer: Buffer;
  spare: Buffer;
}

/**
 * Visits every complete line of `files` (names inside `dir`), in order. Resolves `false` when a
 * callback stopped the scan, `true` when every file was read to its end.
 *
 * The next chunk is read while the lines of the current one are visited, so the visitor's work and
 * the read (on the thread pool) overlap instead of taking turns.
 */
export async function scanLines(
  dir: string,
  files: readonly string[],
  visit: LineVisitor,
  options: ScanOptions = {},
): Promise<boolean> {
  const reader: Reader = { buffer: Buffer.allocUnsafe(CHUNK_SIZE), spare: Buffer.allocUnsafe(CHUNK_SIZE) };
  for (let i = 0; i < files.length; i++) {
    const file = files[i] as string;
    const start = i === 0 ? (options.startOffset ?? 0) : 0;
    const lineNo = i === 0 ? (options.startLineNo ?? 1) : 1;
    if (!(await scanFile(join(dir, file), file, start, lineNo, reader, visit, options))) return false;
  }
  return true;
}

async function scanFile(
  path: string,
  file: string,
  start: number,
  firstLineNo: number,
  reader: Reader,
  visit: LineVisitor,
  { onTorn, decode = true }: ScanOptions,
): Promise<boolean> {
  const handle = await open(path, 'r');
  /** The read in flight: into `reader.buffer`, after the `carry` bytes at its front. */
  let reading: Promise<{ bytesRead: number }> | undefined;
  try {
    let position = start;
    let lineNo = firstLineNo;
    /** Bytes of an unfinished line at the front of `reader.buffer`; the read in flight goes after them. */
    let carry = 0;
    reading = handle.read(reader.buffer, 0, reader.buffer.length, position);
    for (;;) {
      const { bytesRead } = await reading;
      reading = undefined;
      if (bytesRead === 0) break;
      const buffer = reader.buffer;
      const data = buffer.subarray(0, carry + bytesRead);
      const dataOffset = position - carry;
      position += bytesRead;
      const last = data.lastIndexOf(10);
      if (last < 0) {
        // No complete line yet: read on after it, first growing the buffer when it is full.
        carry = data.length;
        if (carry === buffer.length) {
          const bigger = Buffer.allocUnsafe(buffer.length * 2);
          buffer.copy(bigger, 0, 0, carry);
          reader.buffer = bigger;
        }
        reading = handle.read(reader.buffer, carry, reader.buffer.length - carry, position);
        continue;
      }
      // The unfinished line moves to the front of the spare buffer, and the next read goes after
      // it while this chunk's lines are visited (visitors touch only this chunk, before each line).
      if (reader.spare.length < buffer.length) reader.spare = Buffer.allocUnsafe(buffer.length);
      const spare = reader.spare;
      const next = data.length - (last + 1);
      data.copy(spare, 0, last + 1, data.length);
      reading = handle.read(spare, next, spare.length - next, position);
      const region = data.subarray(0, last + 1);
      const valid = isUtf8(region);
      if (!decode) {
        // Lines by their newline bytes; text decoded on demand.
        let at = 0;
        while (at <= last) {
          const end = data.indexOf(10, at);
          const line = new ScannedLine(file, lineNo, dataOffset + at, null, data, at, end, valid);
          if (visit(line) === false) return false;
          lineNo++;
          at = end + 1;
        }
      } else {
        const text = valid ? region.toString('utf8') : undefined;
        // Pure ASCII (bytes and UTF-16 units line up): the text's newlines are the bytes' newlines.
        const ascii = text !== undefined && text.length === region.length;
        let at = 0;
        let textAt = 0;
        while (at <= last) {
          let end: number;
          let lineText: string | undefined | null;
          if (text !== undefined) {
            const textEnd = text.indexOf('\n', textAt);
            lineText = text.slice(textAt, textEnd);
            textAt = textEnd + 1;
            end = ascii ? textEnd : data.indexOf(10, at);
          } else {
            end = data.indexOf(10, at);
            lineText = null;
          }
          const line = new ScannedLine(file, lineNo, dataOffset + at, lineText, data, at, end, valid);
          if (visit(line) === false) return false;
          lineNo++;
          at = end + 1;
        }
      }
      reader.spare = buffer;
      reader.buffer = spare;
      carry = next;
    }
    if (carry > 0 && onTorn !== undefined) {
      const bytes = Buffer.from(reader.buffer.subarray(0, carry));
      return onTorn({ file, lineNo, offset: position - carry, bytes }) !== false;
    }
    return true;
  } finally {
    // A scan stopped early leaves a read in flight: it ends before the file is closed.
    if (reading !== undefined) await reading.catch(() => undefined);
    await handle.close();
  }
}
