/**
 * docs/errors.md lists every stable code the code has: each `SB_*` of `SbErrorCode`, each other
 * `SB_*` string the sources send (such as `SB_EVENTS_LOST` in a notification), and each wire code
 * of `JsonRpcCode`. A code added without its row fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { SbErrorCode } from './switchboard-error.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOC = readFileSync(join(ROOT, 'docs/errors.md'), 'utf8');

/** The first cells of the table rows in the section that starts with `heading`. */
function firstCells(heading: string): string[] {
  const section = DOC.slice(DOC.indexOf(heading));
  const end = section.indexOf('\n## ', 1);
  return (end === -1 ? section : section.slice(0, end))
    .split('\n')
    .filter((line) => line.startsWith('| '))
    .map((line) => line.split('|')[1]?.trim() ?? '');
}

/** `SB_*` string literals in the production sources (not tests, not environment variables). */
function sentCodes(): Map<string, string> {
  const found = new Map<string, string>();
  const entries = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true });
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    if (path.split('/').includes('test-support')) continue;
    for (const match of readFileSync(path, 'utf8').matchAll(/['"`](SB_[A-Z_]+)['"`]/g)) {
      found.set(match[1] as string, relative(ROOT, path));
    }
  }
  return found;
}

describe('docs/errors.md', () => {
  const local = firstCells('## Local codes').flatMap((cell) =>
    [...cell.matchAll(/`(SB_[A-Z_]+)`/g)].map((m) => m[1]),
  );
  const wire = firstCells('## Wire codes')
    .filter((cell) => /^-\d+$/.test(cell))
    .map(Number);

  it('lists every SbErrorCode', () => {
    expect(Object.values(SbErrorCode).filter((code) => !local.includes(code))).toEqual([]);
  });

  it('lists every other SB_* code the sources send', () => {
    const missing = [...sentCodes()].filter(([code]) => !local.includes(code)).map(([c, f]) => `${c} (${f})`);
    expect(missing).toEqual([]);
  });

  it('lists every wire code', () => {
    expect(Object.values(JsonRpcCode).filter((code) => !wire.includes(code))).toEqual([]);
  });

  it('lists no code the sources do not have', () => {
    const known = new Set<string>([...Object.values(SbErrorCode), ...sentCodes().keys()]);
    expect(local.filter((code) => !known.has(code as string))).toEqual([]);
    expect(wire.filter((code) => !(Object.values(JsonRpcCode) as number[]).includes(code))).toEqual([]);
  });
});
