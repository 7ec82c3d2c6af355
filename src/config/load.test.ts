// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the ${env:NAME} syntax itself.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { formatConfigIssues, loadConfigFile, parseConfigText } from './load.js';
import { ANCHOR_KEYS, AUDIT_KEYS, CHECKPOINT_KEYS, REDACT_KEYS } from './sections/audit.js';
import { AUTH_KEYS, JWT_KEYS, TOKEN_KEYS } from './sections/auth.js';
import { APPROVAL_KEYS, POLICY_KEYS, RULE_KEYS } from './sections/policy.js';
import { CONTEXT_KEYS, DEFAULTS_KEYS, HISTORY_KEYS, PARTICIPANT_KEYS, SPACE_KEYS } from './sections/space.js';
import type { StdioUpstreamConfig } from './types.js';
import { CONFIG_KEYS, type ConfigIssue, type ValidateOptions } from './validate.js';

const BASE: Omit<ValidateOptions, 'locate'> = { baseDir: '/srv/gw', env: {} };
const root = mkdtempSync(join(tmpdir(), 'sb-config-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE = join(REPO, 'examples', 'switchboard.yaml');

function issues(text: string): ConfigIssue[] {
  const result = parseConfigText(text, BASE);
  if (result.ok) throw new Error('expected issues');
  return result.errors;
}

const at = (list: readonly ConfigIssue[]) => list.map((i) => `${i.line}:${i.column} ${i.path}`);

describe('parseConfigText: positions', () => {
  const text = [
    'server:', //                                   1
    '  port: 99999', //                             2
    '  prot: 1', //                                 3
    'upstreams:', //                                4
    '  local:', //                                  5
    '    command: npx', //                          6
    '    args: [-y, 8080]', //                      7
    '    restart:', //                              8
    '      maxRestarts: -1', //                     9
    '  remote:', //                                10
    '    transport: http', //                      11
    '    headers:', //                             12
    '      Authorization: "Bearer ${env:NOPE}"', // 13
    '      Host: x', //                            14
    '  bad__name:', //                             15
    '    command: x', //                           16
  ].join('\n');

  it('locates values, unknown keys, missing keys and names, sorted by position', () => {
    expect(at(issues(text))).toEqual([
      '2:9 server.port',
      '3:3 server.prot',
      '7:16 upstreams.local.args[1]',
      '9:20 upstreams.local.restart.maxRestarts',
      '10:3 upstreams.remote.url', // missing: at the upstream's key
      '13:22 upstreams.remote.headers.Authorization',
      '14:7 upstreams.remote.headers.Host', // a bad name: at the key
      '15:3 upstreams.bad__name',
    ]);
  });

  it('formats each issue on one line with file, line and column', () => {
    expect(formatConfigIssues(issues(text), 'switchboard.yaml').split('\n')).toEqual([
      'switchboard.yaml:2:9 server.port: found 99999, expected an integer from 0 to 65535 (0: any free port)',
      'switchboard.yaml:3:3 server.prot: found an unknown key, expected one of the keys allowed in server: host, port, maxBodyBytes, maxStreamBufferBytes, maxJsonDepth, allowedHosts, allowedOrigins, responseMode, streamAfter, keepAlive, drainTimeout, headersTimeout, bodyTimeout, idleConnectionTimeout, maxConnections (did you mean "port"?)',
      'switchboard.yaml:7:16 upstreams.local.args[1]: found 8080, expected a string (quote numbers: "8080")',
      'switchboard.yaml:9:20 upstreams.local.restart.maxRestarts: found -1, expected a non-negative integer, or .inf to restart forever',
      "switchboard.yaml:10:3 upstreams.remote.url: found nothing, expected an absolute http:// or https:// URL, the upstream's MCP endpoint (e.g. https://mcp.example.com/mcp)",
      'switchboard.yaml:13:22 upstreams.remote.headers.Authorization: found ${env:NOPE}, but NOPE is not set, expected the environment variable NOPE to be set',
      'switchboard.yaml:14:7 upstreams.remote.headers.Host: found the name "Host", expected a header the gateway does not set itself (it owns Host, Content-Length, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID and the connection headers)',
      'switchboard.yaml:15:3 upstreams.bad__name: found the name "bad__name", expected an upstream name without "__" and not ending in "_" ("__" separates the upstream from the tool in aggregated tool names)',
    ]);
  });

  it('locates in flow collections, block lists and through aliases', () => {
    const list = issues(
      [
        'defaults: &d { sharing: everyone }', // unknown key at the top too
        'upstreams:',
        '  a: { command: x, restart: { initialDelay: soon } }',
        '  b:',
        '    command: y',
        '    passEnv:',
        '      - HOME',
        '      - not-a-name',
        '  c: *d',
      ].join('\n'),
    );
    expect(at(list)).toEqual([
      '1:1 defaults',
      '1:25 upstreams.c.sharing', // where the alias points
      '3:45 upstreams.a.restart.initialDelay',
      '8:9 upstreams.b.passEnv[1]',
      '9:3 upstreams.c.transport',
    ]);
  });

  it('locates problems of the whole file at its start', () => {
    expect(issues('# nothing but a comment\n')).toEqual([
      {
        path: '',
        found: 'nothing (an empty file)',
        expected: 'a map of settings with at least "upstreams"',
        line: 1,
        column: 1,
      },
    ]);
    expect(at(issues('\n\nserver: {}\n'))).toEqual(['3:1 upstreams']);
    expect(at(issues('- a\n- b\n'))).toEqual(['1:1 ']);
  });

  it('keeps the order of upstreams named like numbers', () => {
    const result = parseConfigText(
      'upstreams:\n  zeta: {command: a}\n  10: {command: b}\n  2: {command: c}\n',
      BASE,
    );
    expect(result.ok && result.config.upstreams.map((u) => u.name)).toEqual(['zeta', '10', '2']);
  });

  it('reads YAML 1.2: yes/no and on/off are strings, .inf is infinity', () => {
    const list = issues('upstreams:\n  a: {command: x, restart: {enabled: yes}}\ntrace: {enabled: off}\n');
    expect(list.map((i) => [i.path, i.found, i.expected])).toEqual([
      ['upstreams.a.restart.enabled', '"yes"', 'true or false'],
      ['trace.enabled', '"off"', 'true or false'],
    ]);
  });
});

describe('parseConfigText: YAML errors', () => {
  it.each([
    ['server:\n  port: 1\n  port: 2\nupstreams: {a: {command: x}}\n', 3, 3, 'Map keys must be unique'],
    ['upstreams:\n  a: {command: x\n', 3, 1, ''],
    ['server:\n  host: x\n port: 1\n', 3, 1, ''],
    ['upstreams: [a, b\n', 2, 1, ''],
    ['a: "unterminated\n', 2, 1, 'Missing closing "quote'],
    ['a: 1\n---\nb: 2\n', 2, 1, 'Source contains multiple documents'],
  ])('%j: line %d, column %d', (text, line, column, message) => {
    const list = issues(text);
    expect(list[0]).toMatchObject({ path: '', found: 'invalid YAML', expected: 'valid YAML', line, column });
    expect(list[0]?.message).toMatch(/^YAML syntax error: /);
    expect(list[0]?.message).toContain(message);
    expect(formatConfigIssues(list.slice(0, 1), 'gw.yaml')).toMatch(
      new RegExp(`^gw\\.yaml:${line}:${column} YAML syntax error: `),
    );
  });

  it('reports an alias without its anchor', () => {
    const [issue] = issues('upstreams: *nowhere\n');
    expect(issue?.message).toMatch(/^YAML syntax error: .*nowhere/);
  });

  it('refuses alias bombs', () => {
    const lines = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const next = String.fromCharCode(97 + i);
      lines.push(
        `${next}: &${next} [*${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}, *${prev}]`,
      );
    }
    const [issue] = issues(`${lines.join('\n')}\n`);
    expect(issue?.message).toMatch(/^YAML syntax error: .*alias/i);
  });

  it('passes YAML warnings on with their position', () => {
    const result = parseConfigText('upstreams:\n  a:\n    command: !custom x\n', BASE);
    expect(result.ok && result.warnings).toEqual(['line 3, column 14: Unresolved tag: !custom']);
  });
});

describe('formatConfigIssues', () => {
  it('shows issues without a position, and the top level by name', () => {
    expect(
      formatConfigIssues(
        [
          { path: 'server.port', found: '"x"', expected: 'a port' },
          { path: '', found: 'nothing', expected: 'a map', line: 1, column: 1 },
        ],
        'cfg.yaml',
      ),
    ).toBe(
      'cfg.yaml: server.port: found "x", expected a port\ncfg.yaml:1:1 (top level): found nothing, expected a map',
    );
  });
});

describe('loadConfigFile', () => {
  it('reads, validates and resolves cwd against the file directory', async () => {
    const dir = join(root, 'ok');
    mkdirSync(dir);
    const file = join(dir, 'switchboard.yaml');
    writeFileSync(file, 'upstreams:\n  a:\n    command: node\n    cwd: work\n    env: { K: "${env:K}" }\n');
    const loaded = await loadConfigFile(file, { env: { K: 'v' } });
    expect(loaded.file).toBe(file);
    expect(loaded.warnings).toEqual([]);
    const upstream = loaded.config.upstreams[0] as StdioUpstreamConfig;
    expect(upstream.cwd).toBe(join(dir, 'work'));
    expect(upstream.env).toEqual({ K: 'v' });
  });

  it('throws SB_CONFIG_NOT_FOUND naming the path of a missing file', async () => {
    const file = join(root, 'missing.yaml');
    const error = await loadConfigFile(file, { env: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    expect(error).toMatchObject({
      code: SbErrorCode.ConfigNotFound,
      message: `no configuration file at ${file}`,
      details: { file, reason: 'ENOENT' },
    });
  });

  it('throws SB_CONFIG_NOT_FOUND for a directory', async () => {
    const error = await loadConfigFile(root, { env: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: SbErrorCode.ConfigNotFound,
      message: `the configuration path ${root} is a directory, not a file`,
    });
  });

  it('throws SB_CONFIG_INVALID with every issue in details and in the message', async () => {
    const file = join(root, 'bad.yaml');
    writeFileSync(file, 'server:\n  port: http\nupstreams:\n  a: {url: "ftp://x"}\n');
    const error = await loadConfigFile(file, { env: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchboardError);
    const e = error as SwitchboardError;
    expect(e.code).toBe(SbErrorCode.ConfigInvalid);
    expect(e.details?.file).toBe(file);
    expect((e.details?.issues as ConfigIssue[] | undefined)?.map((i) => i.path)).toEqual([
      'server.port',
      'upstreams.a.url',
    ]);
    expect(e.message).toBe(
      'invalid configuration (2 problems):\n' +
        `${file}:2:9 server.port: found "http", expected an integer from 0 to 65535 (0: any free port)\n` +
        `${file}:4:12 upstreams.a.url: found "ftp://x", expected an absolute http:// or https:// URL`,
    );
  });
});

describe('examples/switchboard.yaml', () => {
  const env = {
    EVERYTHING_KEY: 'dummy-key',
    REMOTE_TOKEN: 'dummy-token',
    ANCHOR_TOKEN: 'dummy-anchor',
    OTLP_TOKEN: 'dummy-otlp',
  };

  it('is a valid configuration once the variables it references are set', async () => {
    const loaded = await loadConfigFile(EXAMPLE, { env });
    expect(loaded.warnings).toEqual([]);
    const { config } = loaded;
    expect(config.upstreams.map((u) => `${u.name}:${u.transport}:${u.sharing}`)).toEqual([
      'everything:stdio:pooled',
      'remote:http:per-session',
    ]);
    const everything = config.upstreams[0] as StdioUpstreamConfig;
    expect(everything.cwd).toBe(join(REPO, 'examples'));
    expect(everything.env.API_KEY).toBe('dummy-key');
    // With auth configured, sessions are strict (lenient would give a warning).
    expect(config.sessions.mode).toBe('strict');
    expect(config.auth?.tokens.map((t) => `${t.principal}:${t.roles.join('+')}`)).toEqual([
      'alice:approver+admin',
      'ci-bot:ci',
    ]);
    expect(config.auth?.jwt?.jwks).toMatch(/^https:\/\//);
    expect(config.policy.default).toBe('deny');
    expect(config.policy.rules.every((rule) => !rule.id.startsWith('rules['))).toBe(true);
    expect(config.policy.rules.find((rule) => rule.id === 'env-needs-approval')?.target).toBe('get-env');
    expect(config.audit.anchor?.headers).toEqual({ Authorization: 'Bearer dummy-anchor' });
    expect(config.space.participants.map((p) => p.id)).toEqual(['alice', 'build-bot', 'carol@example.com']);
    expect(config.space.participants[1]?.capabilities).toContainEqual({
      kind: 'mcp/request',
      payload: { method: 'tools/*' },
    });
  });

  it('holds token hashes, never tokens', async () => {
    const { config } = await loadConfigFile(EXAMPLE, { env });
    const hashes = [
      ...(config.auth?.tokens ?? []).map((t) => t.sha256),
      ...config.space.participants.flatMap((p) => p.tokens.map((t) => t.sha256)),
    ];
    expect(hashes).toHaveLength(3);
    for (const hash of hashes) expect(hash).toMatch(/^[0-9a-f]{64}$/);
    // `switchboard auth token` tokens start with sbt_: none may be in the file, not even in a comment.
    expect(readFileSync(EXAMPLE, 'utf8')).not.toMatch(/sbt_[A-Za-z0-9_-]/);
  });

  it('names the variables it needs when they are not set', async () => {
    const error = (await loadConfigFile(EXAMPLE, { env: {} }).catch((e: unknown) => e)) as SwitchboardError;
    expect((error.details?.issues as ConfigIssue[] | undefined)?.map((i) => i.expected)).toEqual([
      'the environment variable EVERYTHING_KEY to be set',
      'the environment variable REMOTE_TOKEN to be set',
      'the environment variable ANCHOR_TOKEN to be set',
      'the environment variable OTLP_TOKEN to be set',
    ]);
    // The header comment lists every variable the file references.
    const text = readFileSync(EXAMPLE, 'utf8');
    const header = text.slice(0, text.search(/^[^#\s]/m));
    const values = text.replace(/^\s*#.*$/gm, '');
    const names = new Set([...values.matchAll(/\$\{env:([A-Za-z0-9_]+)\}/g)].map((m) => m[1] ?? ''));
    expect(names.size).toBe(4);
    for (const name of names) expect(header).toContain(name);
  });

  it('sets every option, each with its default in a comment', () => {
    const text = readFileSync(EXAMPLE, 'utf8');
    const doc = parseDocument(text).toJS() as Record<string, Record<string, unknown>>;
    for (const section of ['server', 'sessions', 'resumability', 'timeouts', 'trace', 'logging'] as const) {
      expect(Object.keys(doc[section] ?? {}).sort()).toEqual([...CONFIG_KEYS[section]].sort());
    }
    const upstreams = doc.upstreams as Record<string, Record<string, unknown>>;
    const stdioKeys = [...CONFIG_KEYS.upstreamCommon, ...CONFIG_KEYS.stdio];
    const httpKeys = [...CONFIG_KEYS.upstreamCommon, ...CONFIG_KEYS.http];
    expect(Object.keys(upstreams.everything ?? {}).sort()).toEqual(stdioKeys.sort());
    expect(Object.keys(upstreams.remote ?? {}).sort()).toEqual(httpKeys.sort());
    expect(Object.keys((upstreams.everything?.restart ?? {}) as object).sort()).toEqual(
      [...CONFIG_KEYS.restart].sort(),
    );
    // auth, policy, audit and space: every key, and every key of their maps and list items (over
    // all items: tool and target are alternatives, and are shown in different rules).
    const keysOf = (value: unknown) => Object.keys((value ?? {}) as object).sort();
    const keysOfAll = (items: unknown) =>
      [...new Set(Object.values((items ?? {}) as object).flatMap((item) => keysOf(item)))].sort();
    const expectKeys = (value: unknown, keys: readonly string[]) => expect(value).toEqual([...keys].sort());
    const { auth, policy, audit, space } = doc as Record<string, Record<string, Record<string, unknown>>>;
    expectKeys(keysOf(auth), AUTH_KEYS);
    expectKeys(keysOfAll(auth?.tokens), TOKEN_KEYS);
    expectKeys(keysOf(auth?.jwt), JWT_KEYS);
    expectKeys(keysOf(policy), POLICY_KEYS);
    expectKeys(keysOfAll(policy?.rules), RULE_KEYS);
    expectKeys(keysOf(policy?.approvals), APPROVAL_KEYS);
    expectKeys(keysOf(audit), AUDIT_KEYS);
    expectKeys(keysOf(audit?.checkpoint), CHECKPOINT_KEYS);
    expectKeys(keysOf(audit?.redact), REDACT_KEYS);
    // An anchor takes url (with headers) or path: the file shows url, and path in a comment.
    expectKeys(
      keysOf(audit?.anchor),
      ANCHOR_KEYS.filter((key) => key !== 'path'),
    );
    expect(text).toMatch(/^\s*#.*\bpath: \//m);
    expectKeys(keysOf(space), SPACE_KEYS);
    expectKeys(keysOf(space?.context), CONTEXT_KEYS);
    expectKeys(keysOf(space?.history), HISTORY_KEYS);
    expectKeys(keysOf(space?.defaults), DEFAULTS_KEYS);
    expectKeys(keysOfAll(space?.participants), PARTICIPANT_KEYS);
    // Each option is preceded by a comment that states its default (or why it has none). The keys
    // of rules and tokens are described by the comment above their list (roles, a key of both, is
    // left out here).
    const options = new Set<string>([
      ...Object.values(CONFIG_KEYS).flat(),
      ...[AUTH_KEYS, JWT_KEYS, POLICY_KEYS, APPROVAL_KEYS, AUDIT_KEYS, CHECKPOINT_KEYS].flat(),
      ...[ANCHOR_KEYS, REDACT_KEYS, SPACE_KEYS, CONTEXT_KEYS, HISTORY_KEYS, DEFAULTS_KEYS].flat(),
    ]);
    const lines = text.split('\n');
    let checked = 0;
    lines.forEach((line, index) => {
      const key = /^\s+([A-Za-z]+):/.exec(line)?.[1];
      if (key === undefined || !options.has(key)) return;
      const comment: string[] = [];
      for (let i = index - 1; i >= 0 && /^\s*#/.test(lines[i] ?? ''); i--) comment.unshift(lines[i] ?? '');
      expect(comment.length, `a comment above ${key} (line ${index + 1})`).toBeGreaterThan(0);
      if (key !== 'restart' || line.includes('{')) {
        expect(comment.join(' '), `the default of ${key} (line ${index + 1})`).toMatch(
          /Default|[Rr]equired|left out|defaults/,
        );
      }
      checked++;
    });
    expect(checked).toBeGreaterThan(90);
  });
});

describe('docs/configuration.md', () => {
  it('documents every key', () => {
    const docs = readFileSync(join(REPO, 'docs', 'configuration.md'), 'utf8');
    for (const section of CONFIG_KEYS.root) expect(docs).toContain(`### \`${section}\``);
    const { root: _sections, ...sections } = CONFIG_KEYS;
    for (const key of new Set<string>(Object.values(sections).flat())) expect(docs).toContain(`| \`${key}\``);
  });
});
