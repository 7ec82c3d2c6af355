import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { FileLineSink } from './tape-line-sink.js';

const fresh = (): string => join(mkdtempSync(join(tmpdir(), 'switchboard-sink-')), 't.tape.jsonl');
const onDisk = (path: string): string => readFileSync(`${path}.partial`, 'utf8');

describe('FileLineSink', () => {
  it('hands an urgent line, and every line held before it, to the system before write returns', () => {
    const path = fresh();
    const sink = new FileLineSink(path, { maxDelayMs: 60_000 });
    sink.write('{"a":1}', false);
    expect(onDisk(path)).toBe('');
    sink.write('{"b":2}', true);
    expect(onDisk(path)).toBe('{"a":1}\n{"b":2}\n');
    sink.abandon();
  });

  it('writes held lines at maxLines at once, and the rest after maxDelayMs', async () => {
    const path = fresh();
    const sink = new FileLineSink(path, { maxLines: 3, maxDelayMs: 10 });
    for (const n of [1, 2, 3]) sink.write(`{"n":${n}}`, false);
    expect(onDisk(path)).toBe('{"n":1}\n{"n":2}\n{"n":3}\n');
    sink.write('{"n":4}', false);
    await vi.waitFor(() => expect(onDisk(path)).toContain('{"n":4}\n'));
    sink.abandon();
  });

  it('renames FILE.partial to FILE at the end, and removes it when abandoned', () => {
    const path = fresh();
    const sink = new FileLineSink(path);
    sink.write('{"h":1}', false);
    sink.end('{"kind":"end","messages":0}');
    expect(existsSync(`${path}.partial`)).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('{"h":1}\n{"kind":"end","messages":0}\n');
    expect(() => sink.end('x')).toThrow('already ended');
    const other = fresh();
    new FileLineSink(other).abandon();
    expect(existsSync(`${other}.partial`)).toBe(false);
  });

  it('refuses a partial file that exists, and leaves it as it was', () => {
    const path = fresh();
    writeFileSync(`${path}.partial`, 'kept');
    expect(() => new FileLineSink(path)).toThrow(/t\.tape\.jsonl\.partial exists: .*--allow-truncated/);
    expect(onDisk(path)).toBe('kept');
  });
});
