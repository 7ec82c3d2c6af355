import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { DATA_DIR_ENV, defaultDataDir, ensureDataDir, resolveDataDir } from './data-dir.js';

describe('resolveDataDir', () => {
  const linux = { platform: 'linux', home: '/home/ada' } as const;

  it('is the per-user state directory, not the working directory, when neither the flag nor the environment says', () => {
    // A client starts `switchboard stdio` wherever it likes (Claude Desktop in /): the default
    // must not follow it.
    expect(resolveDataDir(undefined, {}, linux)).toBe('/home/ada/.local/state/switchboard');
    expect(resolveDataDir(undefined, {})).not.toBe(resolve(process.cwd(), '.switchboard'));
    expect(resolveDataDir(undefined, {})).toBe(defaultDataDir({}));
  });

  it('takes SWITCHBOARD_DATA_DIR over the default, and the flag over both, as absolute paths', () => {
    expect(DATA_DIR_ENV).toBe('SWITCHBOARD_DATA_DIR');
    expect(resolveDataDir(undefined, { SWITCHBOARD_DATA_DIR: 'from-env' }, linux)).toBe(resolve('from-env'));
    expect(resolveDataDir('/srv/flag', { SWITCHBOARD_DATA_DIR: 'from-env' }, linux)).toBe('/srv/flag');
    expect(resolveDataDir(undefined, { SWITCHBOARD_DATA_DIR: '' }, linux)).toBe(
      '/home/ada/.local/state/switchboard',
    );
  });
});

describe('defaultDataDir', () => {
  it('follows XDG_STATE_HOME on Linux when it is absolute, and ignores it when relative', () => {
    const linux = { platform: 'linux', home: '/home/ada' } as const;
    expect(defaultDataDir({ XDG_STATE_HOME: '/xdg/state' }, linux)).toBe('/xdg/state/switchboard');
    expect(defaultDataDir({ XDG_STATE_HOME: 'relative' }, linux)).toBe('/home/ada/.local/state/switchboard');
    expect(defaultDataDir({ XDG_STATE_HOME: '' }, linux)).toBe('/home/ada/.local/state/switchboard');
  });

  it('is ~/Library/Application Support/switchboard on macOS', () => {
    expect(defaultDataDir({ XDG_STATE_HOME: '/ignored' }, { platform: 'darwin', home: '/Users/ada' })).toBe(
      '/Users/ada/Library/Application Support/switchboard',
    );
  });

  it('is %LOCALAPPDATA%\\switchboard on Windows, else under the profile', () => {
    const windows = { platform: 'win32', home: 'C:\\Users\\ada' } as const;
    expect(defaultDataDir({ LOCALAPPDATA: 'D:\\Local' }, windows)).toBe('D:\\Local\\switchboard');
    expect(defaultDataDir({}, windows)).toBe('C:\\Users\\ada\\AppData\\Local\\switchboard');
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
