/**
 * Real small file systems for the tests of what a full disk does: a tmpfs of a given size (mounting
 * needs root, which CI has; elsewhere `mountTmpfs` answers undefined and the tests that need one
 * say they are skipped), and a filler that uses up its free space.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './cli.js';

/** A fresh tmpfs of `size` (e.g. `16m`) on a new temp directory, or undefined when none can be mounted. */
export function mountTmpfs(size: string): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = tempDir('switchboard-tmpfs-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  return dir;
}

/** Unmounts (lazily when busy) and removes a directory `mountTmpfs` made. */
export function unmountTmpfs(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Whether this machine can mount a tmpfs (tried once, with a 1 MiB one). */
export function canMountTmpfs(): boolean {
  const probe = mountTmpfs('1m');
  if (probe === undefined) return false;
  unmountTmpfs(probe);
  return true;
}

/**
 * Fills the file system of `dir` with a file until `leave` bytes are free (0: until a write fails
 * with ENOSPC); returns the file, whose removal gives the space back.
 */
export function fillFileSystem(dir: string, leave: number): string {
  const file = join(dir, 'filler');
  const fd = openSync(file, 'a');
  try {
    const chunk = Buffer.alloc(64 * 1024, 1);
    for (;;) {
      const s = statfsSync(dir);
      const room = s.bavail * s.bsize - leave;
      if (room <= 0) break;
      try {
        writeSync(fd, chunk, 0, Math.min(chunk.length, room));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
        throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}
