import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { APPEND_FLAGS, nodeLedgerIo } from './append-file.js';

describe('nodeLedgerIo (the real file system port)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sb-append-file-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates the file owner-only and appends every byte in order', async () => {
    const path = join(dir, 'ledger.jsonl');
    const file = await nodeLedgerIo.openAppend(path);
    await file.write(Buffer.from('{"seq":1}\n'));
    await file.write(new TextEncoder().encode('{"seq":2}\n'));
    expect(await file.size()).toBe(20);
    await file.close();
    expect(readFileSync(path, 'utf8')).toBe('{"seq":1}\n{"seq":2}\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('lands every write at the end of the file, whatever else wrote to it (O_APPEND)', async () => {
    const path = join(dir, 'ledger.jsonl');
    const file = await nodeLedgerIo.openAppend(path);
    await file.write(Buffer.from('a\n'));
    const other = openSync(path, APPEND_FLAGS);
    writeSync(other, 'b\n');
    closeSync(other);
    await file.write(Buffer.from('c\n'));
    await file.close();
    expect(readFileSync(path, 'utf8')).toBe('a\nb\nc\n');
  });

  it('writes a batch larger than one page in full', async () => {
    const path = join(dir, 'ledger.jsonl');
    const file = await nodeLedgerIo.openAppend(path);
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 0x78);
    await file.write(big);
    await file.sync();
    await file.close();
    expect(statSync(path).size).toBe(big.length);
  });

  it('cuts the file back with truncate and keeps appending after it', async () => {
    const path = join(dir, 'ledger.jsonl');
    const file = await nodeLedgerIo.openAppend(path);
    await file.write(Buffer.from('kept\nfragment'));
    await file.truncate(5);
    await file.write(Buffer.from('next\n'));
    await file.close();
    expect(readFileSync(path, 'utf8')).toBe('kept\nnext\n');
  });

  // The write is synchronous underneath (see the module comment), but a failure must still arrive
  // as a rejection: the ledger's fail-closed path awaits it and never expects a throw.
  it('reports a failed write as a rejection, never a synchronous throw', async () => {
    const file = await nodeLedgerIo.openAppend(join(dir, 'ledger.jsonl'));
    await file.close();
    let pending: Promise<void> | undefined;
    expect(() => {
      pending = file.write(Buffer.from('late\n'));
    }).not.toThrow();
    await expect(pending).rejects.toThrow();
  });
});
