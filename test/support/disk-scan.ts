/** Scans a data directory for bytes that must never reach the disk (the issue 4 sentinel tests). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

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

/** What a sentinel run (stdio-sentinel and serve-sentinel tests) leaves to check. */
export interface SentinelRun {
  readonly dataDir: string;
  /** A secret a tool returned in its output. */
  readonly secret: string;
  /** A secret-shaped token the client sent as a tool argument. */
  readonly token: string;
  /** The output as the client received it. */
  readonly body: string;
}

/**
 * The sentinel's claim: the output did reach the client with the secret, the data directory holds
 * a trace database and a ledger, and no file under it holds the secret or the token.
 */
export function expectSecretsOffDisk({ dataDir, secret, token, body }: SentinelRun): void {
  expect(body).toContain(secret);
  const files = filesUnder(dataDir);
  expect(files.some((path) => path.endsWith('trace.db'))).toBe(true);
  expect(files.some((path) => path.endsWith('.jsonl'))).toBe(true);
  expect(filesHolding(dataDir, secret)).toEqual([]);
  expect(filesHolding(dataDir, token)).toEqual([]);
}
