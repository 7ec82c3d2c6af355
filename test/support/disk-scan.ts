/** Scans a data directory for bytes that must never reach the disk (the issue 4 sentinel tests). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir`, recursively. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The files under `dir` whose bytes contain `needle` (as UTF-8). */
export function filesHolding(dir: string, needle: string): string[] {
  return filesUnder(dir).filter((path) => readFileSync(path).includes(Buffer.from(needle, 'utf8')));
}
