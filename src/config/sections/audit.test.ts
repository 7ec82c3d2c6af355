// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write ${env:NAME} references.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { slowPatternProblem } from '../../audit/pattern-safety.js';
import type { AuditConfig, GatewayConfig } from '../types.js';
import { type ConfigIssue, type ValidateOptions, validateConfig } from '../validate.js';

const BASE: ValidateOptions = { baseDir: '/etc/switchboard', env: {} };
const MINIMAL = { upstreams: { everything: { command: 'npx' } } };

function valid(
  raw: unknown,
  options: Partial<ValidateOptions> = {},
): { config: GatewayConfig; warnings: string[] } {
  const result = validateConfig(raw, { ...BASE, ...options });
  if (!result.ok)
    throw new Error(`expected a valid configuration, got:\n${JSON.stringify(result.errors, null, 2)}`);
  return result;
}

function invalid(raw: unknown, options: Partial<ValidateOptions> = {}): ConfigIssue[] {
  const result = validateConfig(raw, { ...BASE, ...options });
  if (result.ok) throw new Error('expected issues, the configuration is valid');
  return result.errors;
}

/** The one issue of `raw`, which must have exactly one. */
function issue(raw: unknown, options: Partial<ValidateOptions> = {}): ConfigIssue {
  const errors = invalid(raw, options);
  expect(errors).toHaveLength(1);
  return errors[0]!;
}

const withAudit = (audit: unknown) => ({ ...MINIMAL, audit });
const auditOf = (audit: unknown, options: Partial<ValidateOptions> = {}): AuditConfig =>
  valid(withAudit(audit), options).config.audit;

const DEFAULTS: AuditConfig = {
  enabled: true,
  fsync: 'critical',
  flushDelayMs: 20,
  rotateBytes: 64 * 1024 * 1024,
  checkpoint: { everyRecords: 1000, everyMs: 60_000, minIntervalMs: 1000 },
  redact: { keys: [], patterns: [] },
  maxErrorLength: 1024,
  minFreeBytes: 64 * 1024 * 1024,
};
const AUDIT_KEYS =
  'enabled, dir, fsync, flushDelay, rotate, checkpoint, key, anchor, redact, maxErrorLength, minFreeBytes';
const LIST_EXPECTED = 'a list, e.g. [a, b] or one "- item" per line';
const DURATION_EXPECTED =
  'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h)';
const SIZE_EXPECTED =
  'a size: a whole number of bytes or a number with a unit B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000), e.g. 64KiB, 4MiB';
const ONE_OF_PATH_AND_URL = 'exactly one of path (a file on another disk or host) and url (an HTTP endpoint)';

describe('audit defaults', () => {
  it.each([
    ['absent', MINIMAL],
    ['empty', withAudit(null)],
    ['an empty map', withAudit({})],
    ['with empty sub-sections', withAudit({ checkpoint: null, redact: {} })],
  ])('keeps a ledger with the defaults when %s', (_name, raw) => {
    const { audit } = valid(raw).config;
    expect(audit).toEqual(DEFAULTS);
    expect('key' in audit || 'anchor' in audit || 'dir' in audit).toBe(false);
  });

  it.each([
    [false, 'false'],
    ['off', '"off"'],
    [[], 'an empty list'],
  ])('refuses the section %j with one issue', (audit, found) => {
    expect(issue(withAudit(audit))).toEqual({
      path: 'audit',
      found,
      expected: `a map with the keys ${AUDIT_KEYS}`,
    });
  });

  it.each([
    ['directory', 'dir'],
    ['rotateBytes', 'rotate'],
    ['sync', 'fsync'],
    ['enable', 'enabled'],
    ['max_error_length', 'maxErrorLength'],
    ['keyFile', 'key'],
    ['checkpoints', 'checkpoint'],
    ['flush_delay', 'flushDelay'],
  ])('reports the unknown key %j, suggesting %j', (key, suggestion) => {
    expect(issue(withAudit({ [key]: 1 }))).toEqual({
      path: `audit.${key}`,
      found: 'an unknown key',
      expected: `one of the keys allowed in audit: ${AUDIT_KEYS} (did you mean "${suggestion}"?)`,
    });
  });
});

describe('audit.enabled and audit.fsync', () => {
  it.each([
    [true, true],
    [false, false],
    ['true', true],
    ['false', false],
  ])('reads enabled %j', (enabled, expected) => {
    expect(auditOf({ enabled }).enabled).toBe(expected);
  });

  it('reads enabled from the environment', () => {
    expect(auditOf({ enabled: '${env:AUDIT}' }, { env: { AUDIT: 'false' } }).enabled).toBe(false);
  });

  it.each([
    ['yes', '"yes"'],
    [0, '0'],
    ['False', '"False"'],
  ])('refuses enabled %j', (enabled, found) => {
    expect(issue(withAudit({ enabled }))).toEqual({
      path: 'audit.enabled',
      found,
      expected: 'true or false',
    });
  });

  it.each(['always', 'critical', 'never'] as const)('reads fsync %j', (fsync) => {
    expect(auditOf({ fsync }).fsync).toBe(fsync);
  });

  it.each([
    ['Always', '"Always"', ' (did you mean "always"?)'],
    ['sometimes', '"sometimes"', ''],
    [false, 'false', ''],
  ])('refuses fsync %j', (fsync, found, hint) => {
    expect(issue(withAudit({ fsync }))).toEqual({
      path: 'audit.fsync',
      found,
      expected: `always, critical or never${hint}`,
    });
  });
});

describe('audit paths: dir, key, anchor.path', () => {
  it.each([
    ['/var/lib/ledger', '/var/lib/ledger'],
    ['ledger', '/etc/switchboard/ledger'],
    ['./ledger/', '/etc/switchboard/ledger'],
    ['../ledger', '/etc/ledger'],
  ])('resolves dir %j against the configuration directory', (dir, resolved) => {
    expect(auditOf({ dir }).dir).toBe(resolved);
  });

  it.each([
    ['/keys/cp.key', '/keys/cp.key'],
    ['keys/cp.key', '/etc/switchboard/keys/cp.key'],
  ])('resolves key %j against the configuration directory', (key, resolved) => {
    expect(auditOf({ key }).key).toBe(resolved);
  });

  it.each([
    ['/mnt/other/anchor.jsonl', '/mnt/other/anchor.jsonl'],
    ['anchor.jsonl', '/etc/switchboard/anchor.jsonl'],
  ])('resolves anchor.path %j against the configuration directory', (path, resolved) => {
    expect(auditOf({ anchor: { path } }).anchor).toEqual({ path: resolved, headers: {} });
  });

  it('resolves against the baseDir given, after interpolation', () => {
    const audit = auditOf(
      { dir: '${env:DIR}', key: 'k.key', anchor: { path: 'a.jsonl' } },
      { baseDir: '/srv/gw', env: { DIR: 'ledger' } },
    );
    expect(audit).toMatchObject({
      dir: '/srv/gw/ledger',
      key: '/srv/gw/k.key',
      anchor: { path: '/srv/gw/a.jsonl' },
    });
  });

  it.each([
    ['dir', 'directory path'],
    ['key', 'file path'],
  ])('refuses an empty, NUL-bearing or non-string %s', (key, what) => {
    expect(issue(withAudit({ [key]: '' }))).toEqual({
      path: `audit.${key}`,
      found: '""',
      expected: `a non-empty ${what} (relative to the configuration file)`,
    });
    expect(issue(withAudit({ [key]: ' ' }))).toEqual({
      path: `audit.${key}`,
      found: '" "',
      expected: `a non-empty ${what} (relative to the configuration file)`,
    });
    expect(issue(withAudit({ [key]: 'a\0b' }))).toEqual({
      path: `audit.${key}`,
      found: '"a\\u0000b"',
      expected: `a NUL-free ${what} (relative to the configuration file)`,
    });
    expect(issue(withAudit({ [key]: 7 }))).toEqual({
      path: `audit.${key}`,
      found: '7',
      expected: `a ${what} (relative to the configuration file)`,
    });
  });
});

describe('audit.flushDelay', () => {
  it.each([
    ['20ms', 20],
    ['0', 0],
    [0, 0],
    ['1s', 1000],
    [250, 250],
  ])('reads %j as %d ms', (flushDelay, ms) => {
    expect(auditOf({ flushDelay }).flushDelayMs).toBe(ms);
  });

  it.each([
    ['2s', '2000ms', 'at most 1s (records wait in memory that long)'],
    ['-5ms', '"-5ms"', `${DURATION_EXPECTED}; 0 disables`],
    ['soon', '"soon"', `${DURATION_EXPECTED}; 0 disables`],
  ])('refuses %j', (flushDelay, found, expected) => {
    expect(issue(withAudit({ flushDelay }))).toMatchObject({ path: 'audit.flushDelay', found, expected });
  });
});

describe('audit.rotate', () => {
  it.each([
    ['64MiB', 64 * 1024 * 1024],
    ['4 MiB', 4 * 1024 * 1024],
    ['1.5MiB', 1.5 * 1024 * 1024],
    ['1GB', 1_000_000_000],
    ['100kB', 100_000],
    ['512B', 512],
    ['512', 512],
    [1024, 1024],
  ])('reads %j as %d bytes', (rotate, bytes) => {
    expect(auditOf({ rotate }).rotateBytes).toBe(bytes);
  });

  it('reads any whole number of any unit', () => {
    const units = {
      B: 1,
      KiB: 1024,
      MiB: 1024 ** 2,
      GiB: 1024 ** 3,
      KB: 1000,
      kB: 1000,
      MB: 1e6,
      GB: 1e9,
    } as const;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])),
        (n, unit) => {
          expect(auditOf({ rotate: `${n}${unit}` }).rotateBytes).toBe(n * units[unit]);
        },
      ),
    );
  });

  it.each([
    [0, 'a size larger than 0, e.g. 64KiB or 4MiB'],
    ['0MiB', 'a size larger than 0, e.g. 64KiB or 4MiB'],
    ['10M', 'a unit B, KiB, MiB, GiB, KB, MB or GB after the number, not "M"'],
    ['64mb', 'a unit B, KiB, MiB, GiB, KB, MB or GB after the number, not "mb"'],
    [-1, SIZE_EXPECTED],
    ['1.5', 'a whole number of bytes (use a unit for fractions, e.g. 1.5MiB)'],
  ])('refuses %j', (rotate, expected) => {
    expect(issue(withAudit({ rotate }))).toEqual({
      path: 'audit.rotate',
      found: JSON.stringify(rotate),
      expected,
    });
  });
});

describe('audit.minFreeBytes', () => {
  it.each([
    ['64MiB', 64 * 1024 * 1024],
    ['1GB', 1_000_000_000],
    ['512', 512],
    [0, 0],
    ['0MiB', 0],
  ])('reads %j as %d bytes (0: not watched)', (minFreeBytes, bytes) => {
    expect(auditOf({ minFreeBytes }).minFreeBytes).toBe(bytes);
  });

  it('reads any whole number of any unit', () => {
    const units = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, MB: 1e6, GB: 1e9 } as const;
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])),
        (n, unit) => {
          expect(auditOf({ minFreeBytes: `${n}${unit}` }).minFreeBytes).toBe(n * units[unit]);
        },
      ),
    );
  });

  it.each([
    ['10M', 'a unit B, KiB, MiB, GiB, KB, MB or GB after the number, not "M"; 0 disables'],
    [-1, `${SIZE_EXPECTED}; 0 disables`],
    ['lots', `${SIZE_EXPECTED}; 0 disables`],
    [true, `${SIZE_EXPECTED}; 0 disables`],
  ])('refuses %j', (minFreeBytes, expected) => {
    expect(issue(withAudit({ minFreeBytes }))).toMatchObject({ path: 'audit.minFreeBytes', expected });
  });
});

describe('audit.checkpoint', () => {
  it.each([
    [{ every: 1 }, { everyRecords: 1, everyMs: 60_000, minIntervalMs: 1000 }],
    [{ every: '500' }, { everyRecords: 500, everyMs: 60_000, minIntervalMs: 1000 }],
    [{ interval: '5m' }, { everyRecords: 1000, everyMs: 300_000, minIntervalMs: 1000 }],
    [{ interval: 0 }, { everyRecords: 1000, everyMs: 0, minIntervalMs: 1000 }],
    [{ interval: '0' }, { everyRecords: 1000, everyMs: 0, minIntervalMs: 1000 }],
    [
      { every: 10_000, interval: '1.5s' },
      { everyRecords: 10_000, everyMs: 1500, minIntervalMs: 1000 },
    ],
    [{ minInterval: 0 }, { everyRecords: 1000, everyMs: 60_000, minIntervalMs: 0 }],
    [{ minInterval: '250ms' }, { everyRecords: 1000, everyMs: 60_000, minIntervalMs: 250 }],
  ])('reads %j', (checkpoint, expected) => {
    expect(auditOf({ checkpoint }).checkpoint).toEqual(expected);
  });

  it('reads any whole interval', () => {
    const units = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
    fc.assert(
      fc.property(
        fc.nat({ max: 100_000 }),
        fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])),
        (n, unit) => {
          expect(auditOf({ checkpoint: { interval: `${n}${unit}` } }).checkpoint.everyMs).toBe(
            n * units[unit],
          );
        },
      ),
    );
  });

  it.each([0, -1, 1.5, '1.5', 'ten', '1e3', true])('refuses every %j', (every) => {
    expect(issue(withAudit({ checkpoint: { every } }))).toEqual({
      path: 'audit.checkpoint.every',
      found: JSON.stringify(every),
      expected: 'a number of records, at least 1',
    });
  });

  it.each([
    ['-1s', `${DURATION_EXPECTED}; 0 disables`],
    ['1h30m', `${DURATION_EXPECTED}; 0 disables`],
    ['10 minutes', 'a unit ms, s, m, h or d after the number, not "minutes"; 0 disables'],
    ['0.5ms', 'a whole number of milliseconds; 0 disables'],
  ])('refuses interval %j', (interval, expected) => {
    expect(issue(withAudit({ checkpoint: { interval } }))).toEqual({
      path: 'audit.checkpoint.interval',
      found: JSON.stringify(interval),
      expected,
    });
  });

  it('refuses a checkpoint that is not a map, and unknown keys', () => {
    expect(issue(withAudit({ checkpoint: 1000 }))).toEqual({
      path: 'audit.checkpoint',
      found: '1000',
      expected: 'a map with the keys every, interval, minInterval',
    });
    expect(issue(withAudit({ checkpoint: { everyRecords: 5 } }))).toEqual({
      path: 'audit.checkpoint.everyRecords',
      found: 'an unknown key',
      expected:
        'one of the keys allowed in audit.checkpoint: every, interval, minInterval (did you mean "every"?)',
    });
    expect(issue(withAudit({ checkpoint: { intervalMs: 5 } }))).toMatchObject({
      expected:
        'one of the keys allowed in audit.checkpoint: every, interval, minInterval (did you mean "interval"?)',
    });
  });
});

describe('audit.anchor', () => {
  it('reads a URL with headers from the environment', () => {
    const audit = auditOf(
      {
        anchor: { url: 'https://anchor.example.com/cp', headers: { Authorization: 'Bearer ${env:ANCHOR}' } },
      },
      { env: { ANCHOR: 's3cret' } },
    );
    expect(audit.anchor).toEqual({
      url: 'https://anchor.example.com/cp',
      headers: { Authorization: 'Bearer s3cret' },
    });
    expect('path' in (audit.anchor ?? {})).toBe(false);
  });

  it('reads a URL without headers', () => {
    expect(auditOf({ anchor: { url: 'http://127.0.0.1:9000/cp' } }).anchor).toEqual({
      url: 'http://127.0.0.1:9000/cp',
      headers: {},
    });
  });

  it.each([
    [{}, 'neither path nor url'],
    [null, 'neither path nor url'],
    [{ headers: { 'X-A': 'b' } }, 'neither path nor url'],
    [{ path: '/a', url: 'https://a.example.com' }, 'both path and url'],
  ])('refuses %j', (anchor, found) => {
    expect(issue(withAudit({ anchor }))).toEqual({
      path: 'audit.anchor',
      found,
      expected: ONE_OF_PATH_AND_URL,
    });
  });

  it('refuses headers next to a path, where nothing would send them', () => {
    expect(issue(withAudit({ anchor: { path: '/a', headers: { 'X-A': 'b' } } }))).toEqual({
      path: 'audit.anchor.headers',
      found: 'headers with a path',
      expected: 'headers only with url (they are sent with each POST)',
    });
  });

  it('refuses an anchor that is not a map with one issue', () => {
    expect(issue(withAudit({ anchor: 'https://anchor.example.com' }))).toEqual({
      path: 'audit.anchor',
      found: '"https://anchor.example.com"',
      expected: 'a map with the keys path, url, headers',
    });
  });

  it.each([
    ['ftp://anchor.example.com/cp', '"ftp://anchor.example.com/cp"', 'an absolute http:// or https:// URL'],
    ['anchor.example.com/cp', '"anchor.example.com/cp"', 'an absolute http:// or https:// URL'],
    [
      'https://u:p@anchor.example.com/cp',
      'a URL with user:password@ (value not shown)',
      'an absolute http:// or https:// URL without credentials (send them in headers)',
    ],
  ])('refuses the URL %j', (url, found, expected) => {
    expect(issue(withAudit({ anchor: { url } }))).toEqual({ path: 'audit.anchor.url', found, expected });
  });

  it('checks headers as for an HTTP upstream', () => {
    expect(
      invalid(
        withAudit({
          anchor: { url: 'https://a.example.com', headers: { 'Content-Type': 'x', 'Bad Name': 'y' } },
        }),
      ),
    ).toEqual([
      {
        path: 'audit.anchor.headers.Content-Type',
        found: 'the name "Content-Type"',
        expected:
          'a header the gateway does not set itself (it owns Host, Content-Length, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID and the connection headers)',
      },
      {
        path: 'audit.anchor.headers["Bad Name"]',
        found: 'the name "Bad Name"',
        expected: "a header name made of letters, digits and !#$%&'*+.^_`|~- (an HTTP token)",
      },
    ]);
    expect(
      issue(withAudit({ anchor: { url: 'https://a.example.com', headers: { 'X-A': 'a\nb' } } })),
    ).toEqual({
      path: 'audit.anchor.headers.X-A',
      found: 'a string with a line break or control character (value not shown)',
      expected: 'a header value on one line, without control characters',
    });
  });

  it('warns about headers sent over plain http:// to another machine, only then', () => {
    const headers = { Authorization: 'Bearer x' };
    expect(
      valid(withAudit({ anchor: { url: 'http://anchor.example.com:8080/cp', headers } })).warnings,
    ).toEqual([
      'audit.anchor.headers: sent unencrypted to anchor.example.com:8080 (the URL is http://, not https://)',
    ]);
    for (const url of ['https://anchor.example.com/cp', 'http://localhost:8080/cp', 'http://[::1]/cp'])
      expect(valid(withAudit({ anchor: { url, headers } })).warnings).toEqual([]);
    expect(valid(withAudit({ anchor: { url: 'http://anchor.example.com/cp' } })).warnings).toEqual([]);
  });

  it('reports an unknown key with its suggestion', () => {
    expect(issue(withAudit({ anchor: { url: 'https://a.example.com', header: {} } }))).toEqual({
      path: 'audit.anchor.header',
      found: 'an unknown key',
      expected: 'one of the keys allowed in audit.anchor: path, url, headers (did you mean "headers"?)',
    });
  });
});

describe('audit.redact', () => {
  it('reads keys and patterns', () => {
    expect(
      auditOf({
        redact: { keys: ['ssn', 'x-internal-token'], patterns: ['\\bEMP-\\d{6}\\b', 'acct_[0-9]+'] },
      }).redact,
    ).toEqual({
      keys: ['ssn', 'x-internal-token'],
      patterns: ['\\bEMP-\\d{6}\\b', 'acct_[0-9]+'],
    });
  });

  it('reads a literal ${ in a pattern written $${', () => {
    expect(auditOf({ redact: { patterns: ['$${[A-Z]+}'] } }).redact.patterns).toEqual(['${[A-Z]+}']);
  });

  it.each([
    ['(', 'a valid regular expression (Invalid regular expression: /(/g: Unterminated group)'],
    ['[a-', 'a valid regular expression (Invalid regular expression: /[a-/g: Unterminated character class)'],
    ['a**', 'a valid regular expression (Invalid regular expression: /a**/g: Nothing to repeat)'],
  ])('refuses the pattern %j, quoting the engine', (pattern, expected) => {
    expect(issue(withAudit({ redact: { patterns: ['ok', pattern] } }))).toEqual({
      path: 'audit.redact.patterns[1]',
      found: JSON.stringify(pattern),
      expected,
    });
  });

  it.each([
    ['(a+)+$', /^a regular expression that cannot make matching slow: \(a\+\)\+ repeats a group/],
    ['\\s*\\s*$', /^a regular expression that cannot make matching slow: \\s\* and \\s\* can match/],
    ['(x)\\1', /^a regular expression that cannot make matching slow: \\1 is a backreference/],
  ])('refuses the pattern %j, which could backtrack without bound', (pattern, expected) => {
    expect(issue(withAudit({ redact: { patterns: [pattern] } }))).toEqual({
      path: 'audit.redact.patterns[0]',
      found: JSON.stringify(pattern),
      expected: expect.stringMatching(expected),
    });
  });

  it('accepts exactly the patterns that compile as the redactor compiles them and cannot be slow', () => {
    const compiles = (p: string) => {
      try {
        new RegExp(p, 'g');
        return true;
      } catch {
        return false;
      }
    };
    const regexish = fc.array(
      fc.constantFrom(
        '(',
        ')',
        '[',
        ']',
        '{',
        '}',
        '*',
        '+',
        '?',
        '\\',
        '|',
        '^',
        '$$',
        'a',
        '1',
        '-',
        ',',
        '.',
      ),
      {
        maxLength: 12,
      },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          regexish.map((parts) => parts.join('')),
          fc.string({ maxLength: 20 }).filter((s) => !s.includes('$')),
        ),
        (pattern) => {
          const result = validateConfig(withAudit({ redact: { patterns: [pattern] } }), BASE);
          const literal = pattern.replaceAll('$${', '${');
          const acceptable = compiles(literal) && slowPatternProblem(literal) === undefined;
          expect(result.ok).toBe(acceptable);
          if (!result.ok)
            expect(result.errors).toEqual([
              {
                path: 'audit.redact.patterns[0]',
                found: expect.any(String),
                expected: expect.stringMatching(
                  compiles(literal)
                    ? /^a regular expression that cannot make matching slow: .+$/
                    : /^a valid regular expression \(.+\)$/,
                ),
              },
            ]);
        },
      ),
    );
  });

  it.each([
    ['keys', 42, '42', 'a key name or part of one, with at least one letter or digit'],
    ['keys', '--', '"--"', 'a key name or part of one, with at least one letter or digit'],
    ['keys', '', '""', 'a key name or part of one, with at least one letter or digit'],
    ['patterns', 42, '42', 'a regular expression'],
  ])('refuses the %s item %j', (list, item, found, expected) => {
    expect(issue(withAudit({ redact: { [list]: [item] } }))).toEqual({
      path: `audit.redact.${list}[0]`,
      found,
      expected,
    });
  });

  it('refuses lists written as one string, and unknown keys', () => {
    expect(issue(withAudit({ redact: { keys: 'ssn' } }))).toEqual({
      path: 'audit.redact.keys',
      found: '"ssn"',
      expected: LIST_EXPECTED,
    });
    expect(issue(withAudit({ redact: { pattern: ['x'] } }))).toEqual({
      path: 'audit.redact.pattern',
      found: 'an unknown key',
      expected: 'one of the keys allowed in audit.redact: keys, patterns (did you mean "patterns"?)',
    });
    expect(issue(withAudit({ redact: ['ssn'] }))).toEqual({
      path: 'audit.redact',
      found: 'a list of 1 item',
      expected: 'a map with the keys keys, patterns',
    });
  });
});

describe('audit.maxErrorLength', () => {
  it.each([
    [64, 64],
    [1024, 1024],
    ['100', 100],
    [1_000_000, 1_000_000],
  ])('reads %j', (maxErrorLength, expected) => {
    expect(auditOf({ maxErrorLength }).maxErrorLength).toBe(expected);
  });

  it('accepts every integer from 64, refuses every one below', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 100_000 }), (n) => {
        const result = validateConfig(withAudit({ maxErrorLength: n }), BASE);
        if (n >= 64) expect(result.ok && result.config.audit.maxErrorLength).toBe(n);
        else
          expect(result.ok ? [] : result.errors).toEqual([
            {
              path: 'audit.maxErrorLength',
              found: String(n),
              expected: 'a number of characters, at least 64',
            },
          ]);
      }),
    );
  });

  it.each([64.5, '64.0', '1e3', 'lots', Number.POSITIVE_INFINITY, null])('refuses %j', (maxErrorLength) => {
    expect(issue(withAudit({ maxErrorLength }))).toMatchObject({
      path: 'audit.maxErrorLength',
      expected: 'a number of characters, at least 64',
    });
  });
});

it('validates every setting while the ledger is disabled', () => {
  expect(issue(withAudit({ enabled: false, fsync: 'sometimes' }))).toMatchObject({ path: 'audit.fsync' });
});
