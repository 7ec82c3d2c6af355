/**
 * Reads the last lines of a file backwards, in chunks, without reading the rest: how the writer
 * finds the head of the checkpoint chain and `switchboard audit tail` finds the latest records.
 */
import { open } from 'node:fs/promises';

const CHUNK_SIZE = 64 * 1024;

/** The last complete lines of a file, and its torn last line if it has one. */
export interface TailLines {
  /** Up to the requested number of complete lines, oldest first, without their newlines. */
  readonly lines: Buffer[];
  /** Byte offset of `lines[0]` (the file size when there are none). */
  readonly offset: number;
  /** Bytes after the last newline, when the file does not end with one. */
  readonly torn: Buffer | undefined;
}

/** The last `count` complete lines of the file at `path` (missing file: none). */
export async function readTailLines(path: string, count: number): Promise<TailLines> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { lines: [], offset: 0, torn: undefined };
    throw error;
  }
  try {
    const size = (await handle.stat()).size;
    let data = Buffer.alloc(0);
    let start = size;
    // Newlines needed: one after each wanted line, plus the one before the first (unless at 0).
    const enough = (): boolean => {
      let newlines = 0;
      for (let i = data.length - 1; i >= 0; i--) if (data[i] === 10 && ++newlines > count) return true;
      return false;
    };
    while (start > 0 && !enough()) {
      const length = Math.min(CHUNK_SIZE, start);
      start -= length;
      const chunk = Buffer.alloc(length);
      await handle.read(chunk, 0, length, start);
      data = Buffer.concat([chunk, data]);
    }
    const lastNewline = data.lastIndexOf(10);
    const torn = lastNewline + 1 < data.length ? Buffer.from(data.subarray(lastNewline + 1)) : undefined;
    const lines: Buffer[] = [];
    let end = lastNewline;
    while (end >= 0 && lines.length < count) {
      // lastIndexOf with a negative offset counts from the end: guard the start of the data.
      const begin = end === 0 ? -1 : data.lastIndexOf(10, end - 1);
      if (begin < 0 && start > 0) break;
      lines.unshift(Buffer.from(data.subarray(begin + 1, end)));
      end = begin;
    }
    const offset = lines.length === 0 ? size : start + end + 1;
    return { lines, offset, torn };
  } finally {
    await handle.close();
  }
}
