/**
 * The `audit` section: the tamper-evident ledger of tool calls (on by default). See
 * docs/configuration.md and the README's section on the ledger.
 */
import { isAbsolute, resolve } from 'node:path';
import { slowPatternProblem } from '../../audit/pattern-safety.js';
import { type Checker, type ConfigPath, describeValue, entriesOf, isLoopback } from '../checker.js';
import type { AuditConfig, FsyncPolicy } from '../types.js';

export const AUDIT_KEYS = [
  'enabled',
  'dir',
  'fsync',
  'flushDelay',
  'rotate',
  'checkpoint',
  'key',
  'anchor',
  'redact',
  'maxErrorLength',
  'minFreeBytes',
] as const;
export const CHECKPOINT_KEYS = ['every', 'interval', 'minInterval'] as const;
export const ANCHOR_KEYS = ['path', 'url', 'headers'] as const;
export const REDACT_KEYS = ['keys', 'patterns'] as const;
const FSYNC: readonly FsyncPolicy[] = ['always', 'critical', 'never'];
/** `flushDelay` at most: a record waits in memory up to that long before it is written. */
const MAX_FLUSH_DELAY_MS = 1000;

export const AUDIT_DEFAULTS: AuditConfig = {
  enabled: true,
  fsync: 'critical',
  flushDelayMs: 20,
  rotateBytes: 64 * 1024 * 1024,
  checkpoint: { everyRecords: 1000, everyMs: 60_000, minIntervalMs: 1000 },
  redact: { keys: [], patterns: [] },
  maxErrorLength: 1024,
  minFreeBytes: 64 * 1024 * 1024,
};

/**
 * A path given in the file (`dir`, `key`, `anchor.path`): a relative one is resolved against the
 * configuration file's directory, as `cwd` and `auth.jwt.jwks` are, not against wherever the
 * gateway happens to run.
 */
function pathSetting(
  c: Checker,
  f: Map<string, unknown>,
  p: ConfigPath,
  key: string,
  what: string,
): string | undefined {
  const value = f.get(key);
  if (value === undefined) return undefined;
  const expected = `a ${what} (relative to the configuration file)`;
  const text = c.text(value, [...p, key], expected);
  if (text === undefined) return undefined;
  if (text.trim() === '' || text.includes('\0')) {
    const which = text.trim() === '' ? 'non-empty' : 'NUL-free';
    c.issue([...p, key], describeValue(text), `a ${which} ${what} (relative to the configuration file)`);
    return undefined;
  }
  return isAbsolute(text) ? text : resolve(c.options.baseDir, text);
}

function readAnchor(c: Checker, raw: unknown): AuditConfig['anchor'] {
  const ap = ['audit', 'anchor'];
  const af = c.section(raw, ap, ANCHOR_KEYS);
  if (raw !== null && entriesOf(raw) === undefined) return undefined;
  const file = pathSetting(c, af, ap, 'path', 'file path');
  const url = af.get('url') === undefined ? undefined : c.url(af, ap);
  const headers = c.headers(af, ap);
  if (af.has('path') === af.has('url')) {
    c.issue(
      ap,
      af.has('path') ? 'both path and url' : 'neither path nor url',
      'exactly one of path (a file on another disk or host) and url (an HTTP endpoint)',
    );
  } else if (af.has('path') && af.has('headers')) {
    c.issue(
      [...ap, 'headers'],
      'headers with a path',
      'headers only with url (they are sent with each POST)',
      'key',
    );
  }
  if (url !== undefined && Object.keys(headers).length > 0 && URL.canParse(url)) {
    const u = new URL(url);
    if (u.protocol === 'http:' && !isLoopback(u.hostname.replace(/^\[|\]$/g, '')))
      c.warn([...ap, 'headers'], `sent unencrypted to ${u.host} (the URL is http://, not https://)`);
  }
  return { headers, ...(file === undefined ? {} : { path: file }), ...(url === undefined ? {} : { url }) };
}

export function readAudit(c: Checker, raw: unknown): AuditConfig {
  if (raw === undefined || raw === null) return AUDIT_DEFAULTS;
  const p = ['audit'];
  const f = c.section(raw, p, AUDIT_KEYS);
  const d = AUDIT_DEFAULTS;
  const enabled = c.boolean(f, p, 'enabled', d.enabled);
  const dir = pathSetting(c, f, p, 'dir', 'directory path');
  const fsync = c.choice(f, p, 'fsync', FSYNC, d.fsync);
  const flushDelayMs = c.duration(f, p, 'flushDelay', d.flushDelayMs, true);
  if (flushDelayMs > MAX_FLUSH_DELAY_MS) {
    c.issue([...p, 'flushDelay'], `${flushDelayMs}ms`, 'at most 1s (records wait in memory that long)');
  }
  const rotateBytes = c.size(f, p, 'rotate', d.rotateBytes, false);
  const cp = [...p, 'checkpoint'];
  const cf = c.section(f.get('checkpoint'), cp, CHECKPOINT_KEYS);
  const everyRecords = c.integer(cf, cp, 'every', {
    min: 1,
    fallback: d.checkpoint.everyRecords,
    expected: 'a number of records, at least 1',
  });
  const everyMs = c.duration(cf, cp, 'interval', d.checkpoint.everyMs, true);
  const minIntervalMs = c.duration(cf, cp, 'minInterval', d.checkpoint.minIntervalMs, true);
  const key = pathSetting(c, f, p, 'key', 'file path');
  const anchor = f.has('anchor') ? readAnchor(c, f.get('anchor')) : undefined;
  const rp = [...p, 'redact'];
  const rf = c.section(f.get('redact'), rp, REDACT_KEYS);
  const keys = c.list<string>(rf, rp, 'keys', [], (v, kp) => {
    const expected = 'a key name or part of one, with at least one letter or digit';
    const text = c.text(v, kp, expected);
    // The redactor compares letters and digits only (`api_key` covers apiKey and API-KEY): a
    // name without any would be silently ignored.
    if (text !== undefined && !/[A-Za-z0-9]/.test(text)) {
      c.issue(kp, describeValue(text), expected);
      return undefined;
    }
    return text;
  });
  const patterns = c.list<string>(rf, rp, 'patterns', [], (v, pp) => {
    const text = c.text(v, pp, 'a regular expression');
    if (text === undefined) return undefined;
    try {
      // As the redactor compiles it.
      new RegExp(text, 'g');
    } catch (error) {
      c.issue(
        pp,
        describeValue(text),
        `a valid regular expression (${error instanceof Error ? error.message : 'invalid'})`,
      );
      return undefined;
    }
    // Clients choose the text a pattern runs over: one that can backtrack without bound would
    // let any of them stall the gateway.
    const slow = slowPatternProblem(text);
    if (slow !== undefined) {
      c.issue(pp, describeValue(text), `a regular expression that cannot make matching slow: ${slow}`);
      return undefined;
    }
    return text;
  });
  const maxErrorLength = c.integer(f, p, 'maxErrorLength', {
    min: 64,
    fallback: d.maxErrorLength,
    expected: 'a number of characters, at least 64',
  });
  const minFreeBytes = c.size(f, p, 'minFreeBytes', d.minFreeBytes, true);
  return {
    enabled,
    fsync,
    flushDelayMs,
    rotateBytes,
    checkpoint: { everyRecords, everyMs, minIntervalMs },
    redact: { keys, patterns },
    maxErrorLength,
    minFreeBytes,
    ...(dir === undefined ? {} : { dir }),
    ...(key === undefined ? {} : { key }),
    ...(anchor === undefined ? {} : { anchor }),
  };
}
