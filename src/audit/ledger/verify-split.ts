/**
 * Where a parallel `verifyLedger` cuts the ledger into segments: at line boundaries near chosen
 * byte positions of the files taken end to end. The first segment is the caller's (it also builds
 * the Merkle tree of every segment's leaves, so it gets a smaller share); the others are equal.
 */
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { LinePlace } from './verify-segment.js';

/** How far past a cut position a newline is looked for; no line is longer in practice. */
const SEARCH_BYTES = 256 * 1024;

/**
 * The first line start at or after `offset` in `file` (its size when the line at `offset` is the
 * last), or `undefined` when no newline is found.
 */
async function lineStartFrom(
  dir: string,
  file: string,
  offset: number,
  size: number,
): Promise<number | undefined> {
  if (offset === 0) return 0;
  const handle = await open(join(dir, file), 'r');
  try {
    const buffer = Buffer.allocUnsafe(Math.min(SEARCH_BYTES, size - offset + 1));
    // The byte before `offset` too: a newline there means a line starts exactly at `offset`.
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset - 1);
    const newline = buffer.subarray(0, bytesRead).indexOf(10);
    if (newline < 0) return undefined;
    return offset + newline;
  } finally {
    await handle.close();
  }
}

/**
 * The first lines of segments 2 to `segments` (fewer when a cut finds no line start), in order.
 * `firstShare` is the first segment's share of the bytes (0 < firstShare < 1).
 */
export async function segmentStarts(
  dir: string,
  files: readonly string[],
  segments: number,
  firstShare: number,
): Promise<LinePlace[]> {
  const sizes = await Promise.all(files.map(async (file) => (await stat(join(dir, file))).size));
  const total = sizes.reduce((a, b) => a + b, 0);
  const starts: LinePlace[] = [];
  const otherShare = (1 - firstShare) / (segments - 1);
  for (let s = 1; s < segments; s++) {
    let cut = Math.floor(total * (firstShare + (s - 1) * otherShare));
    let index = 0;
    while (index < files.length && cut >= (sizes[index] as number)) cut -= sizes[index++] as number;
    if (index >= files.length) break;
    let file = files[index] as string;
    let offset = await lineStartFrom(dir, file, cut, sizes[index] as number);
    if (offset === undefined) continue;
    if (offset >= (sizes[index] as number)) {
      // Past the file's last line: the next file's first line (after any empty files).
      do index++;
      while (index < files.length && sizes[index] === 0);
      if (index >= files.length) break;
      file = files[index] as string;
      offset = 0;
    }
    const previous = starts[starts.length - 1];
    const after =
      previous === undefined ||
      files.indexOf(previous.file) < index ||
      (previous.file === file && previous.offset < offset);
    if (after && !(index === 0 && offset === 0)) starts.push({ file, offset });
  }
  return starts;
}
