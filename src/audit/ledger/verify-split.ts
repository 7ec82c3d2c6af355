/**
 * Where a parallel `verifyLedger` cuts the ledger into segments: at line boundaries near chosen
 * byte positions of the files taken end to end, each segment's share of the bytes given by its
 * weight.
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
    return newline < 0 ? undefined : offset + newline;
  } finally {
    await handle.close();
  }
}

/** A segment's first line, and which weight (segment) it starts. */
export interface SegmentStart extends LinePlace {
  readonly index: number;
}

/** The ledger files' sizes, in order. */
export function ledgerSizes(dir: string, files: readonly string[]): Promise<number[]> {
  return Promise.all(files.map(async (file) => (await stat(join(dir, file))).size));
}

/**
 * The first lines of segments 1 to `weights.length - 1` (segment 0 starts the ledger), in order.
 * Segment i gets about `weights[i] / sum(weights)` of the bytes. A cut that finds no line start,
 * or the same one as the cut before it, is left out: the segment before it grows by that much.
 */
export async function segmentStarts(
  dir: string,
  files: readonly string[],
  sizes: readonly number[],
  weights: readonly number[],
): Promise<SegmentStart[]> {
  const total = sizes.reduce((a, b) => a + b, 0);
  const sum = weights.reduce((a, b) => a + b, 0);
  const starts: SegmentStart[] = [];
  let before = 0;
  for (let s = 1; s < weights.length; s++) {
    before += weights[s - 1] as number;
    let cut = Math.floor((total * before) / sum);
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
      previous === undefined
        ? index > 0 || offset > 0
        : files.indexOf(previous.file) < index || (previous.file === file && previous.offset < offset);
    if (after) starts.push({ file, offset, index: s });
  }
  return starts;
}
