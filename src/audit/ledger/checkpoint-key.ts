/**
 * The checkpoint signing key: read from the key file, or created there on first start (Go
 * `note` key strings, see `signed-note.ts`). The key file is secret (0600, created exclusively so
 * two processes starting at once cannot overwrite each other's key); the verifier key is written
 * beside the ledger as `keys/checkpoint.pub` so that `switchboard audit verify` finds it. That copy
 * is a convenience, not a trust anchor: whoever can rewrite the ledger can rewrite it too, so a
 * third party verifies with a copy of the verifier key it obtained out of band.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import type { Logger } from '../../observe/logger.js';
import { generateNoteKey, type NoteSigner, parseSignerKey } from '../signed-note.js';

/** Where the key lives and how to name a new one. */
export interface CheckpointKeyOptions {
  /** The signer key file (`PRIVATE+KEY+...`). */
  readonly keyFile: string;
  /** Where to publish the verifier key. */
  readonly verifierFile: string;
  /** Name of a newly created key (it becomes the default origin); default `switchboard/audit/<16 hex>`. */
  readonly name?: string;
  readonly logger: Logger;
}

/** A key name for a new ledger: stable (stored in the key) and unique per ledger. */
export function defaultKeyName(): string {
  return `switchboard/audit/${randomBytes(8).toString('hex')}`;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function createKey(options: CheckpointKeyOptions): Promise<string> {
  const { signerKey } = generateNoteKey(options.name ?? defaultKeyName());
  await mkdir(dirname(options.keyFile), { recursive: true, mode: 0o700 });
  try {
    await writeFile(options.keyFile, `${signerKey}\n`, { mode: 0o600, flag: 'wx' });
    options.logger.info({ keyFile: options.keyFile }, 'audit ledger: created the checkpoint signing key');
    return signerKey;
  } catch (error) {
    // Another process created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readFile(options.keyFile, 'utf8');
    throw error;
  }
}

/**
 * The checkpoint signer, created on first use, with its verifier key published.
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` when the key file holds no valid signer key or the
 *   requested name is not a valid key name; `SB_AUDIT_UNAVAILABLE` when the files cannot be read or
 *   written.
 */
export async function loadCheckpointSigner(options: CheckpointKeyOptions): Promise<NoteSigner> {
  try {
    const text = (await readIfExists(options.keyFile)) ?? (await createKey(options));
    const signer = parseSignerKey(text);
    const mode = (await stat(options.keyFile)).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      options.logger.warn(
        { keyFile: options.keyFile, mode: `0${mode.toString(8)}` },
        'audit ledger: the checkpoint signing key is readable by others; chmod 600 it',
      );
    }
    const published = await readIfExists(options.verifierFile);
    if (published?.trim() !== signer.verifierKey) {
      if (published !== undefined) {
        options.logger.warn(
          { verifierFile: options.verifierFile },
          'audit ledger: the published verifier key did not match the signing key; replacing it',
        );
      }
      await mkdir(dirname(options.verifierFile), { recursive: true, mode: 0o700 });
      await writeFile(options.verifierFile, `${signer.verifierKey}\n`, { mode: 0o644 });
    }
    return signer;
  } catch (error) {
    if (error instanceof SwitchboardError) throw error;
    throw new SwitchboardError(
      SbErrorCode.AuditUnavailable,
      `Cannot read or create the audit checkpoint key ${options.keyFile}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
