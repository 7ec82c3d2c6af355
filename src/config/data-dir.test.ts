import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { DATA_DIR_ENV, ensureDataDir, resolveDataDir } from './data-dir.js';

describe('resolveDataDir', () => {
  it('is ./.switchboard under the working directory when neither the flag nor the environment says', () => {
    expect(resolveDataDir(undefined, {})).toBe(resolve(process.cwd(), '.switchboard'));
  });

  it('takes SWITCHBOARD_DATA_DIR over the default, and the flag over both, as absolute paths', () => {
    expect(DATA_DIR_ENV).toBe('SWITCHBOARD_DATA_DIR');
    expect(resolveDataDir(undefined, { SWITCHBOARD_DATA_DIR: 'from-env' })).toBe(resolve('from-env'));
    expect(resolveDataDir('/srv/flag', { SWITCHBOARD_DATA_DIR: 'from-env' })).toBe('/srv/flag');
  });
});

describe('ensureDataDir', () => {
  it('creates the directory and its parents, owner-only, and a sub-directory when asked', () => {
    const base = mkdtempSync(join(tmpdir(), 'sb-data-dir-'));
    try {
      const dir = join(base, 'a', 'b');
      expect(ensureDataDir(dir)).toBe(dir);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(ensureDataDir(dir, 'audit')).toBe(join(dir, 'audit'));
      expect(existsSync(join(dir, 'audit'))).toBe(true);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('throws a SwitchboardError naming the path when it cannot be created', () => {
    const base = mkdtempSync(join(tmpdir(), 'sb-data-dir-'));
    try {
      const file = join(base, 'a-file');
      ensureDataDir(base);
      writeFileSync(file, 'x');
      expect(() => ensureDataDir(join(file, 'below'))).toThrow(SwitchboardError);
      expect(() => ensureDataDir(join(file, 'below'))).toThrow(/cannot create the data directory/);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
