/**
 * Appends batches of record lines to the current ledger file and rotates to the next one by size.
 * It owns the file handle and knows the file's committed size (every byte of a batch that was
 * fully written, and synced when asked). A batch that fails part-way may leave a fragment behind:
 * the next write first cuts the file back to the committed size, so a fragment of lines that were
 * reported as not written never merges with the next line. Those records were refused to their
 * callers, so removing them keeps the file and the callers' view in agreement.
 */
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../observe/logger.js';
import type { AppendFile, LedgerIo } from './append-file.js';
import { ledgerFileName } from './ledger-paths.js';

/** The file {@link LedgerFileWriter.probe} writes and removes. */
export const PROBE_FILE = 'write-probe';

/** What {@link LedgerFileWriter} needs. */
export interface LedgerFileWriterOptions {
  readonly dir: string;
  readonly io: LedgerIo;
  /** Start a new file before a batch would take the current one past this size. */
  readonly rotateBytes: number;
  /** fsync a file before leaving it, and the directory after creating one. */
  readonly syncOnRotate: boolean;
  readonly logger: Logger;
}

/** Writes ledger files; one batch at a time (the caller serializes). */
export class LedgerFileWriter {
  readonly #options: LedgerFileWriterOptions;
  #index = 1;
  #size = 0;
  #file: AppendFile | undefined;
  /** A write failed: bytes beyond #size may be on disk. */
  #dirty = false;

  constructor(options: LedgerFileWriterOptions) {
    this.#options = options;
  }

  /** The current file's name. */
  get file(): string {
    return ledgerFileName(this.#index);
  }

  /** The current file's committed size. */
  get size(): number {
    return this.#size;
  }

  /** Bytes the current file takes before it reaches the rotation size. */
  get room(): number {
    return Math.max(0, this.#options.rotateBytes - this.#size);
  }

  /** Opens (creating it) file number `index`, whose current size is `size`. */
  async open(index: number, size: number): Promise<void> {
    this.#index = index;
    this.#size = size;
    await this.#ready();
    if (size === 0 && this.#options.syncOnRotate) await this.#options.io.syncDirectory(this.#options.dir);
  }

  /** Continues in the next file; the current one stays as it is if the new one cannot be created. */
  async rotate(): Promise<void> {
    const next = await this.#options.io.openAppend(join(this.#options.dir, ledgerFileName(this.#index + 1)));
    if (this.#options.syncOnRotate) await this.#options.io.syncDirectory(this.#options.dir);
    const old = this.#file;
    this.#file = next;
    this.#index++;
    this.#size = 0;
    this.#dirty = false;
    if (old !== undefined) {
      try {
        if (this.#options.syncOnRotate) await old.sync();
      } finally {
        await old.close().catch(() => undefined);
      }
    }
  }

  /**
   * Appends `data` (whole lines) and, with `sync`, fdatasyncs it. Resolves with the byte offset the
   * data starts at. On failure nothing counts as written.
   */
  async write(data: Uint8Array, sync: boolean): Promise<number> {
    const file = await this.#ready();
    const offset = this.#size;
    try {
      await file.write(data);
      if (sync) await file.sync();
    } catch (error) {
      this.#dirty = true;
      throw error;
    }
    this.#size += data.length;
    return offset;
  }

  /** fdatasyncs what was written. */
  async sync(): Promise<void> {
    await (await this.#ready()).sync();
  }

  /**
   * Whether the ledger can be written again, without writing a record: the file is reopened and
   * repaired if needed and synced, and a probe file in the same directory is written, synced and
   * removed. Rejects while the file system still refuses.
   */
  async probe(): Promise<void> {
    await this.sync();
    const path = join(this.#options.dir, PROBE_FILE);
    const probe = await this.#options.io.openAppend(path);
    try {
      await probe.write(Buffer.from('probe\n'));
      await probe.sync();
    } finally {
      await probe.close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
    }
  }

  /** Syncs (when asked) and closes the file. */
  async close(sync: boolean): Promise<void> {
    const file = this.#file;
    this.#file = undefined;
    if (file === undefined) return;
    try {
      if (sync && !this.#dirty) await file.sync();
    } finally {
      await file.close();
    }
  }

  /** The open file, reopened after a failure and cut back to its committed size. */
  async #ready(): Promise<AppendFile> {
    let file = this.#file;
    try {
      if (file === undefined) {
        file = await this.#options.io.openAppend(join(this.#options.dir, this.file));
        this.#file = file;
        this.#dirty = true;
      }
      if (this.#dirty) {
        const actual = await file.size();
        if (actual > this.#size) {
          await file.truncate(this.#size);
          this.#options.logger.warn(
            { file: this.file, removedBytes: actual - this.#size },
            'audit ledger: removed the fragment of a batch whose write failed',
          );
        } else if (actual < this.#size) {
          this.#options.logger.error(
            { file: this.file, expected: this.#size, actual },
            'audit ledger: the ledger file is shorter than what was written to it (truncated by someone else?)',
          );
          this.#size = actual;
        }
        this.#dirty = false;
      }
      return file;
    } catch (error) {
      if (file !== undefined) await file.close().catch(() => undefined);
      this.#file = undefined;
      throw error;
    }
  }
}
