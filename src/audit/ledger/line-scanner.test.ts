import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scanLines, type TornLine } from './line-scanner.js';
import { readTailLines } from './tail-reader.js';
import { tempDir } from './test-support/ledger-fixture.js';

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

function files(contents: Record<string, string | Buffer>): string {
  const made = tempDir();
  cleanups.push(made.cleanup);
  for (const [name, content] of Object.entries(contents)) writeFileSync(join(made.dir, name), content);
  return made.dir;
}

interface Seen {
  file: string;
  lineNo: number;
  offset: number;
  text: string | undefined;
  hex: string;
}

async function scan(
  dir: string,
  names: string[],
  options = {},
): Promise<{ lines: Seen[]; torn: TornLine[] }> {
  const lines: Seen[] = [];
  const torn: TornLine[] = [];
  await scanLines(
    dir,
    names,
    (line) => {
      lines.push({
        file: line.file,
        lineNo: line.lineNo,
        offset: line.offset,
        text: line.text,
        hex: line.bytes.toString('hex'),
      });
      return true;
    },
    { ...options, onTorn: (t: TornLine) => void torn.push({ ...t, bytes: Buffer.from(t.bytes) }) },
  );
  return { lines, torn };
}

describe('scanLines', () => {
  it('visits lines across files with byte offsets, UTF-8 text and torn tails', async () => {
    const dir = files({ a: 'one\ntwé\n', b: Buffer.from([0x78, 0x0a, 0xff, 0x0a, 0x74, 0x6f, 0x72, 0x6e]) });
    const { lines, torn } = await scan(dir, ['a', 'b']);
    expect(lines.map((l) => [l.file, l.lineNo, l.offset, l.text])).toEqual([
      ['a', 1, 0, 'one'],
      ['a', 2, 4, 'twé'],
      ['b', 1, 0, 'x'],
      ['b', 2, 2, undefined],
    ]);
    expect(lines[3]?.hex).toBe('ff');
    expect(torn.map((t) => [t.file, t.lineNo, t.offset, t.bytes.toString()])).toEqual([['b', 3, 4, 'torn']]);
  });

  it('handles lines that span read chunks, long lines and non-ASCII at chunk edges', async () => {
    const long = `${'é'.repeat(700_000)}x`;
    const lines = ['short', long, 'a'.repeat(1024 * 1024 - 3), '€nd'];
    const dir = files({ f: `${lines.join('\n')}\n` });
    const seen = (await scan(dir, ['f'])).lines;
    expect(seen.map((l) => l.text)).toEqual(lines);
    let offset = 0;
    for (const [i, line] of lines.entries()) {
      expect(seen[i]?.offset).toBe(offset);
      offset += Buffer.byteLength(line) + 1;
    }
  });

  it('starts at an offset and stops when the visitor says so', async () => {
    const dir = files({ f: 'a\nb\nc\nd\n' });
    expect(
      (await scan(dir, ['f'], { startOffset: 4, startLineNo: 3 })).lines.map((l) => [l.lineNo, l.text]),
    ).toEqual([
      [3, 'c'],
      [4, 'd'],
    ]);
    const texts: (string | undefined)[] = [];
    const finished = await scanLines(dir, ['f'], (line) => {
      texts.push(line.text);
      return line.text !== 'b';
    });
    expect(finished).toBe(false);
    expect(texts).toEqual(['a', 'b']);
  });

  it('reads ahead without disturbing the visitor, which may overwrite the bytes before each line', async () => {
    // Lengths around and beyond the 1 MiB chunk, so lines and carried tails cross both buffers.
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const lines = Array.from({ length: 400 }, (_, i) => {
      const length = i % 97 === 5 ? 1_100_000 + random(300_000) : random(i % 3 === 0 ? 60_000 : 300);
      return `${i}:${String.fromCharCode(97 + (i % 26)).repeat(length)}`;
    });
    const dir = files({ f: `${lines.join('\n')}\n`, g: 'last\ntorn' });
    for (const decode of [false, true]) {
      const seen: string[] = [];
      const finished = await scanLines(
        dir,
        ['f', 'g'],
        (line) => {
          seen.push(line.bytes.toString('latin1'));
          line.data.fill(0x23, Math.max(0, line.start - 64), line.start);
          return true;
        },
        { decode },
      );
      expect(finished).toBe(true);
      expect(seen.length).toBe(lines.length + 1);
      expect(seen.slice(0, -1).every((text, i) => text === lines[i])).toBe(true);
      expect(seen.at(-1)).toBe('last');
    }
  });
});

describe('readTailLines', () => {
  it('reads the last lines backwards, with the torn tail apart', async () => {
    const dir = files({ f: 'a\nbb\nccc\ndd', g: '', h: 'x\ny\n' });
    expect(await readTailLines(join(dir, 'f'), 2)).toEqual({
      lines: [Buffer.from('bb'), Buffer.from('ccc')],
      offset: 2,
      torn: Buffer.from('dd'),
    });
    expect(await readTailLines(join(dir, 'f'), 10)).toMatchObject({
      offset: 0,
      lines: [Buffer.from('a'), Buffer.from('bb'), Buffer.from('ccc')],
    });
    expect(await readTailLines(join(dir, 'g'), 1)).toEqual({ lines: [], offset: 0, torn: undefined });
    expect(await readTailLines(join(dir, 'h'), 1)).toEqual({
      lines: [Buffer.from('y')],
      offset: 2,
      torn: undefined,
    });
    expect(await readTailLines(join(dir, 'missing'), 1)).toEqual({ lines: [], offset: 0, torn: undefined });
  });

  it('crosses its 64 KiB read chunks', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `${i}:${'z'.repeat(1000)}`);
    const dir = files({ f: `${lines.join('\n')}\n` });
    const tail = await readTailLines(join(dir, 'f'), 100);
    expect(tail.lines.map((b) => b.toString())).toEqual(lines.slice(200));
    expect(tail.offset).toBe(lines.slice(0, 200).reduce((n, l) => n + l.length + 1, 0));
  });
});
