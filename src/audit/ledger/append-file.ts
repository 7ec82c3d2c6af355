/**
 * The ledger's one I/O port: files opened for appending. The default opens them `O_APPEND` with
 * mode 0600, so every write lands at the end of the file whatever else writes to it, and the
 * ledger's lines are owner-only. Tests inject a port that fails on demand to exercise fail-closed.
 *
 * Why the default writes synchronously: a write of a batch is a copy into the page cache, a few
 * microseconds, while the same write through the libuv thread pool (`FileHandle.write`) costs some
 * 70-90 µs of CPU per call on a 2-core VM (a hand-off to a pool thread and a wake-up of the event
 * loop), paid once per batch, i.e. once per call when calls come one at a time (the ledger bench's
 * "one at a time" row; docs/audit-ledger.md, "Writing"). What can take long, `fdatasync`, stays
 * asynchronous. The price: a file system that blocks writes (dirty-page throttling under heavy
 * I/O, a network mount) stalls the event loop for that long; the ledger belongs on a local disk.
 */
import { constants, writeSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

/** A file open for appending. */
export interface AppendFile {
  /** Appends all of `data` (looping over short writes); rejects on any error. */
  write(data: Uint8Array): Promise<void>;
  /** `fdatasync`: the data written so far survives a crash once this resolves. */
  sync(): Promise<void>;
  /** The file's current size. */
  size(): Promise<number>;
  /** Cuts the file back to `size` bytes (to remove a partly written batch). */
  truncate(size: number): Promise<void>;
  close(): Promise<void>;
}

/** Opens files for appending. */
export interface LedgerIo {
  /** Opens (creating it with mode 0600 when missing) `path` for appending. */
  openAppend(path: string): Promise<AppendFile>;
  /** fsyncs a directory, so that a file created in it survives a crash (best effort). */
  syncDirectory(path: string): Promise<void>;
}

/** `O_WRONLY | O_CREAT | O_APPEND`, as a number so the flags are explicit. */
export const APPEND_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND;

class NodeAppendFile implements AppendFile {
  readonly #handle: FileHandle;

  constructor(handle: FileHandle) {
    this.#handle = handle;
  }

  async write(data: Uint8Array): Promise<void> {
    // Synchronous on purpose: see the module comment. Errors still reject (this is async).
    const fd = this.#handle.fd;
    let done = 0;
    while (done < data.length) {
      const bytesWritten = writeSync(fd, data, done, data.length - done, null);
      if (bytesWritten <= 0) throw new Error('write returned no progress');
      done += bytesWritten;
    }
  }

  sync(): Promise<void> {
    return this.#handle.datasync();
  }

  async size(): Promise<number> {
    return (await this.#handle.stat()).size;
  }

  truncate(size: number): Promise<void> {
    return this.#handle.truncate(size);
  }

  close(): Promise<void> {
    return this.#handle.close();
  }
}

/** The real file system. */
export const nodeLedgerIo: LedgerIo = {
  async openAppend(path: string): Promise<AppendFile> {
    return new NodeAppendFile(await open(path, APPEND_FLAGS, 0o600));
  },
  async syncDirectory(path: string): Promise<void> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(path, 'r');
      await handle.sync();
    } catch {
      // Some file systems refuse fsync on a directory; the file's own fsync still holds its data.
    } finally {
      await handle?.close().catch(() => undefined);
    }
  },
};
