/**
 * Writes signed checkpoints: formats the line for the accumulator's current root (chained to the
 * previous line), appends it to `checkpoints.jsonl`, saves `state.json` for the next restart, and
 * hands the line to the anchor. The caller (the ledger's flush loop) makes the records durable
 * first, so a checkpoint never covers a record that a crash could still take back.
 */
import { join } from 'node:path';
import type { Logger } from '../../observe/logger.js';
import type { NoteSigner } from '../signed-note.js';
import type { AnchorSink } from './anchor-sink.js';
import type { AppendFile, LedgerIo } from './append-file.js';
import { checkpointLineHash, formatCheckpointLine } from './checkpoint-line.js';
import { CHECKPOINTS_FILE, STATE_FILE } from './ledger-paths.js';
import type { LinePosition } from './ledger-recovery.js';
import { writeLedgerState } from './ledger-state.js';
import type { LedgerTree } from './ledger-tree.js';

/** What {@link CheckpointWriter} needs. */
export interface CheckpointWriterOptions {
  readonly dir: string;
  readonly io: LedgerIo;
  readonly signer: NoteSigner;
  readonly origin: string;
  /** fsync the checkpoint log and the state file. */
  readonly sync: boolean;
  readonly anchor: AnchorSink | undefined;
  readonly logger: Logger;
  readonly clock: () => number;
  /** The head of the chain found at start: the last line's size and hash, and whether the file ends torn. */
  readonly last: { readonly size: number; readonly lineHash: string; readonly torn: boolean };
}

/** Appends checkpoints; one at a time (the caller serializes). */
export class CheckpointWriter {
  readonly #options: CheckpointWriterOptions;
  #lastSize: number;
  #lineHash: string;
  /** The file ends with a torn line: start the next line on a line of its own. */
  #torn: boolean;
  #file: AppendFile | undefined;
  /** Committed size of the checkpoint log, known once it was opened. */
  #fileSize = 0;
  #dirty = false;

  constructor(options: CheckpointWriterOptions) {
    this.#options = options;
    this.#lastSize = options.last.size;
    this.#lineHash = options.last.lineHash;
    this.#torn = options.last.torn;
  }

  /** The tree size of the last checkpoint written (or found at start). */
  get lastSize(): number {
    return this.#lastSize;
  }

  /**
   * Signs and appends a checkpoint of `tree`, whose last record is at `lastLine`, then saves the
   * state and queues the anchor copy. A failure to save the state is only logged (the next start
   * rebuilds it); a failure to append the checkpoint rejects.
   */
  async write(
    tree: LedgerTree,
    head: { seq: number; entryHash: string },
    lastLine: LinePosition,
  ): Promise<void> {
    const o = this.#options;
    const line = formatCheckpointLine(
      {
        origin: o.origin,
        size: tree.size,
        root: tree.root(),
        prev: this.#lineHash,
        time: new Date(o.clock()).toISOString(),
      },
      o.signer,
    );
    const file = await this.#ready();
    const data = Buffer.from(`${this.#torn ? '\n' : ''}${line}\n`, 'utf8');
    try {
      await file.write(data);
      if (o.sync) await file.sync();
    } catch (error) {
      this.#dirty = true;
      throw error;
    }
    this.#fileSize += data.length;
    this.#torn = false;
    this.#lineHash = checkpointLineHash(line);
    this.#lastSize = tree.size;
    try {
      await writeLedgerState(
        join(o.dir, STATE_FILE),
        { v: 1, ...lastLine, seq: head.seq, entryHash: head.entryHash, tree: tree.state() },
        o.sync,
      );
    } catch (error) {
      o.logger.warn(
        { err: (error as Error).message },
        'audit ledger: cannot save state.json (the next start reads the log)',
      );
    }
    o.anchor?.push(line);
  }

  /** Closes the checkpoint log and waits for the anchor copies in flight. */
  async close(): Promise<void> {
    const file = this.#file;
    this.#file = undefined;
    await file?.close().catch(() => undefined);
    await this.#options.anchor?.flush();
  }

  async #ready(): Promise<AppendFile> {
    let file = this.#file;
    try {
      if (file === undefined) {
        file = await this.#options.io.openAppend(join(this.#options.dir, CHECKPOINTS_FILE));
        this.#file = file;
        this.#fileSize = await file.size();
      }
      if (this.#dirty) {
        if ((await file.size()) > this.#fileSize) await file.truncate(this.#fileSize);
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
