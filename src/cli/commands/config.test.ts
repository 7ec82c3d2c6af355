// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the ${env:NAME} syntax itself.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { defaultConfig } from '../../config/defaults.js';
import { loadConfigFile, parseConfigText } from '../../config/load.js';
import type {
  AuditConfig,
  GatewayConfig,
  HttpUpstreamConfig,
  StdioUpstreamConfig,
} from '../../config/types.js';
import { CONFIG_KEYS, validateConfig } from '../../config/validate.js';
import { type CliRun, runCli } from '../test-support/run-cli.js';
import { hideUrlSecrets, REDACTED, redact, summary, toFileShape } from './config.js';

const root = mkdtempSync(join(tmpdir(), 'sb-config-cli-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const EXAMPLE = resolve(dirname(fileURLToPath(import.meta.url)), '../../../examples/switchboard.yaml');

const run = (args: readonly string[]): Promise<CliRun> => runCli(args);

/** The environment variables examples/switchboard.yaml references. */
const EXAMPLE_VARIABLES = ['EVERYTHING_KEY', 'REMOTE_TOKEN', 'ANCHOR_TOKEN', 'OTLP_TOKEN'] as const;

/** Every section of a configuration, in the order `config show` prints them (the validator's list). */
const ALL_SECTIONS = CONFIG_KEYS.root;

function file(name: string, text: string): string {
  const path = join(root, name);
  writeFileSync(path, text);
  return path;
}

const VALID = `
upstreams:
  everything:
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything", stdio]
    env: { API_KEY: sk-live-123 }
  remote:
    url: https://mcp.example.com/mcp?api_key=sk-query-000&region=eu#top
    headers: { Authorization: Bearer sk-remote-456 }
    sharing: per-session
`;

const INVALID = `
server:
  port: 99999
upstreams:
  remote:
    url: ftp://x
`;

describe('switchboard config check', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('prints a one-line summary of a valid file and exits 0', async () => {
    const r = await run(['config', 'check', file('valid.yaml', VALID)]);
    expect(r).toEqual({
      code: 0,
      err: '',
      out: 'ok: 2 upstreams (everything: stdio shared, remote: http per-session), listening on 127.0.0.1:8787\n',
    });
  });

  it('prints warnings on stderr, still exiting 0', async () => {
    const path = file(
      'warn.yaml',
      'server: { port: 9000 }\nsessions: { idleTimeout: 2h, maxAge: 1h }\nupstreams: { a: { command: x } }\n',
    );
    const r = await run(['config', 'check', path]);
    expect(r.code).toBe(0);
    expect(r.out).toBe('ok: 1 upstream (a: stdio shared), listening on 127.0.0.1:9000\n');
    expect(r.err).toMatch(
      new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: warning: sessions\\.idleTimeout: `),
    );
  });

  it('lists every issue on stderr with line and column and exits 1', async () => {
    const path = file('invalid.yaml', INVALID);
    const r = await run(['config', 'check', path]);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toBe(
      `${path}:3:9 server.port: found 99999, expected an integer from 0 to 65535 (0: any free port)\n` +
        `${path}:6:10 upstreams.remote.url: found "ftp://x", expected an absolute http:// or https:// URL\n`,
    );
  });

  it('reports YAML syntax errors the same way', async () => {
    const path = file('syntax.yaml', 'upstreams:\n  a: {command: x\n');
    const r = await run(['config', 'check', path]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(new RegExp(`^${path.replace(/[.\\]/g, '\\$&')}:3:1 YAML syntax error: `));
  });

  it('exits 2 when the file is missing or is a directory', async () => {
    const missing = join(root, 'nope.yaml');
    expect(await run(['config', 'check', missing])).toEqual({
      code: 2,
      out: '',
      err: `switchboard: no configuration file at ${missing}\n`,
    });
    const dir = await run(['config', 'check', root]);
    expect(dir.code).toBe(2);
    expect(dir.err).toBe(`switchboard: the configuration path ${root} is a directory, not a file\n`);
  });

  it('--json prints the normalized configuration, secrets redacted', async () => {
    const path = file('valid-json.yaml', VALID);
    const r = await run(['config', 'check', '--json', path]);
    expect(r.code).toBe(0);
    for (const secret of ['sk-live-123', 'sk-remote-456', 'sk-query-000']) {
      expect(r.out).not.toContain(secret);
    }
    const json = JSON.parse(r.out) as {
      ok: boolean;
      file: string;
      warnings: string[];
      config: GatewayConfig;
    };
    expect(json.ok).toBe(true);
    expect(json.file).toBe(path);
    expect(json.warnings).toEqual([]);
    expect(json.config.server.maxBodyBytes).toBe(4 * 1024 * 1024);
    const [everything, remote] = json.config.upstreams as [StdioUpstreamConfig, HttpUpstreamConfig];
    expect(everything.env).toEqual({ API_KEY: REDACTED });
    expect(remote.headers).toEqual({ Authorization: REDACTED });
    expect(remote.url).toBe(`https://mcp.example.com/mcp?api_key=${REDACTED}&region=${REDACTED}#top`);
    expect(everything.restart.maxRestarts).toBe('.inf');
  });

  it('--json prints the issues, with positions, and exits 1', async () => {
    const path = file('invalid-json.yaml', INVALID);
    const r = await run(['config', 'check', '--json', path]);
    expect(r.code).toBe(1);
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toEqual({
      ok: false,
      file: path,
      issues: [
        {
          path: 'server.port',
          found: '99999',
          expected: 'an integer from 0 to 65535 (0: any free port)',
          line: 3,
          column: 9,
        },
        {
          path: 'upstreams.remote.url',
          found: '"ftp://x"',
          expected: 'an absolute http:// or https:// URL',
          line: 6,
          column: 10,
        },
      ],
    });
  });

  it('--json reports a missing file as JSON too, exiting 2', async () => {
    const missing = join(root, 'nope.yaml');
    const r = await run(['config', 'check', '--json', missing]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out)).toEqual({
      ok: false,
      file: missing,
      error: { code: 'SB_CONFIG_NOT_FOUND', message: `no configuration file at ${missing}` },
    });
  });

  it('finds nothing wrong in examples/switchboard.yaml but its unset variables', async () => {
    for (const name of EXAMPLE_VARIABLES) vi.stubEnv(name, undefined);
    const r = await run(['config', 'check', EXAMPLE]);
    expect(r.code).toBe(1);
    const lines = r.err.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(
      /upstreams\.everything\.env\.API_KEY: found \$\{env:EVERYTHING_KEY\}, but EVERYTHING_KEY is not set/,
    );
    expect(lines[1]).toMatch(
      /upstreams\.remote\.headers\.Authorization: found \$\{env:REMOTE_TOKEN\}, but REMOTE_TOKEN is not set/,
    );
    expect(lines[2]).toMatch(
      /audit\.anchor\.headers\.Authorization: found \$\{env:ANCHOR_TOKEN\}, but ANCHOR_TOKEN is not set/,
    );
    expect(lines[3]).toMatch(
      /observe\.otel\.headers\.Authorization: found \$\{env:OTLP_TOKEN\}, but OTLP_TOKEN is not set/,
    );
  });

  it('passes examples/switchboard.yaml, every section set, without a warning once its variables are set', async () => {
    for (const name of EXAMPLE_VARIABLES) vi.stubEnv(name, `value of ${name}`);
    const r = await run(['config', 'check', EXAMPLE]);
    const json = await run(['config', 'check', '--json', EXAMPLE]);
    expect(r).toEqual({
      code: 0,
      err: '',
      out: 'ok: 2 upstreams (everything: stdio pooled, remote: http per-session), listening on 127.0.0.1:8787\n',
    });
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.out) as { warnings: unknown[]; config: Record<string, unknown> };
    expect(parsed.warnings).toEqual([]);
    expect(Object.keys(parsed.config).sort()).toEqual([...ALL_SECTIONS].sort());
  });

  it('needs a file argument', async () => {
    const r = await run(['config', 'check']);
    expect(r.code).toBe(1);
    expect(r.err).toContain("missing required argument 'file'");
  });
});

describe('switchboard config show', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('prints the built-in configuration so that it validates back to itself', async () => {
    const dataDir = join(root, 'data');
    const r = await run(['config', 'show', '--data-dir', dataDir]);
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    expect(r.out).toMatch(
      /^# Effective configuration of the built-in configuration \(serve without --config\)\n/,
    );
    const shown = parse(r.out) as { upstreams: Record<string, { command: string; args: string[] }> };
    expect(shown.upstreams.everything?.command).toBe(process.execPath);
    expect(shown.upstreams.everything?.args[1]).toBe('stdio');
    for (const section of ['policy', 'audit', 'space']) expect(shown).toHaveProperty(section);
    // No auth in the built-in configuration: the section is left out, not printed empty.
    expect(shown).not.toHaveProperty('auth');
    const revalidated = parseConfigText(r.out, { baseDir: dataDir, env: {} });
    expect(revalidated).toEqual({ ok: true, config: redact(defaultConfig({ dataDir })), warnings: [] });
  });

  it("prints a file's effective configuration in human units, defaults applied, secrets redacted", async () => {
    const path = file('show.yaml', VALID);
    const r = await run(['config', 'show', '--config', path]);
    expect(r.code).toBe(0);
    for (const secret of ['sk-live-123', 'sk-remote-456', 'sk-query-000']) {
      expect(r.out).not.toContain(secret);
    }
    expect(r.out).toContain(`# Effective configuration of ${path}\n`);
    expect(r.out).toContain('  maxBodyBytes: 4MiB\n');
    expect(r.out).toContain('  keepAlive: 15s\n');
    expect(r.out).toContain('      maxRestarts: .inf\n');
    expect(r.out).toContain('      Authorization: "***"\n');
    const loaded = await loadConfigFile(path, { env: {} });
    const revalidated = validateConfig(parse(r.out), { baseDir: root, env: {} });
    expect(revalidated).toEqual({ ok: true, config: redact(loaded.config), warnings: [] });
  });

  it('prints every section of examples/switchboard.yaml so that it validates back to itself', async () => {
    for (const name of EXAMPLE_VARIABLES) vi.stubEnv(name, `secret-of-${name}`);
    const r = await run(['config', 'show', '--config', EXAMPLE]);
    expect(r).toMatchObject({ code: 0, err: '' });
    for (const name of EXAMPLE_VARIABLES) expect(r.out).not.toContain(`secret-of-${name}`);
    const shown = parse(r.out) as Record<string, unknown>;
    expect(Object.keys(shown)).toEqual(ALL_SECTIONS);
    const loaded = await loadConfigFile(EXAMPLE, { env: process.env });
    expect(loaded.warnings).toEqual([]);
    // Validated again from the example's directory, it is the configuration, secrets redacted.
    const revalidated = parseConfigText(r.out, { baseDir: dirname(EXAMPLE), env: {} });
    expect(revalidated).toEqual({ ok: true, config: redact(loaded.config), warnings: [] });
  });

  it('exits 1 for an invalid file and 2 for a missing one', async () => {
    const invalid = await run(['config', 'show', '--config', file('show-invalid.yaml', INVALID)]);
    expect(invalid.code).toBe(1);
    expect(invalid.out).toBe('');
    expect(invalid.err).toContain('server.port: found 99999');
    const missing = await run(['config', 'show', '--config', join(root, 'nope.yaml')]);
    expect(missing.code).toBe(2);
  });
});

/**
 * Hashes of three tokens (any 64 hex digits will do: the tokens themselves are never needed). The
 * space token is in upper case, which the reader stores in lower case.
 */
const SHA = { alice: 'a'.repeat(64), bot: `${'0123456789'.repeat(6)}abcd`, space: 'C'.repeat(64) };

/** The secrets of {@link everySection}: none may ever be printed. */
const SECRETS = {
  env: 'sk-env-secret-111',
  header: 'sk-header-secret-222',
  anchorHeader: 'anchor-secret-333',
  fromEnvironment: 'env-var-secret-444',
};

/**
 * A file that sets every section and almost every key to something other than its default, so
 * that a section or key `config show` dropped would come back different. `anchor` is the audit
 * anchor (path, or url with headers).
 */
function everySection(anchor: string): string {
  return `
server:
  host: 0.0.0.0
  port: 9100
  maxBodyBytes: 2MiB
  allowedHosts: [gw.internal:9100]
  allowedOrigins: [https://app.example.com]
  responseMode: sse
  streamAfter: 250ms
  keepAlive: 20s
sessions:
  idleTimeout: 10m
  maxAge: 2h
  maxSessions: 50
  maxSessionsPerPrincipal: 5
  maxStreamsPerSession: 4
resumability: { maxEventsPerSession: 20, maxEventAge: 90s, retry: 2500ms }
timeouts: { request: 2m, resetOnProgress: false, maxTotal: 30m }
upstreams:
  files:
    command: npx
    args: [-y, server-filesystem, "$\${HOME}/docs"]
    cwd: ./work
    env: { API_KEY: ${SECRETS.env}, MODE: "\${env:SB_CONFIG_TEST_SECRET}" }
    passEnv: [HTTPS_PROXY]
    sharing: pooled
    pool: { max: 3, idleTimeout: 2m, queueTimeout: 5s, maxQueued: 7 }
    restart: { enabled: false, initialDelay: 500ms, maxDelay: 1m, maxRestarts: 5 }
  remote:
    url: https://mcp.example.com/mcp
    headers:
      Authorization: Bearer ${SECRETS.header}
      X-From-Env: "\${env:SB_CONFIG_TEST_SECRET}"
    era: modern
    sharing: per-session
    maxMessageBytes: 16MiB
trace: { enabled: false, maxPayloadBytes: 512KiB }
logging: { level: debug }
auth:
  tokens:
    - { principal: alice, sha256: ${SHA.alice}, roles: [approver] }
    - { principal: bot, sha256: "${SHA.bot}" }
  jwt:
    jwks: ./keys/jwks.json
    issuer: https://idp.example.com/
    audience: [switchboard, gateway]
    principalClaim: email
    rolesClaim: groups
    clockTolerance: 5s
policy:
  default: ask
  rules:
    - { id: no-deletes, upstream: files, tool: "delete_*", action: deny, tier: T3 }
    - { target: "read_*", methods: [tools/call], principals: ["bot*"], roles: [reader], action: allow }
    - { upstream: remote, target: "$\${literal}", tier: T2 }
  approvals: { timeout: 90s, approverRoles: [approver, admin] }
audit:
  enabled: true
  dir: ./audit
  fsync: always
  flushDelay: 5ms
  rotate: 8MiB
  checkpoint: { every: 50, interval: 0 }
  key: ./keys/checkpoint.key
  anchor: ${anchor}
  redact: { keys: [api_key, password], patterns: ["sk-[A-Za-z0-9]+", "$\${x}"] }
  maxErrorLength: 256
  minFreeBytes: 1GiB
space:
  enabled: true
  name: team
  protocols: [meup/v0.2, mew/v0.4]
  correlation: strict
  context: { mode: warn, maxDepth: 8, maxLength: 512 }
  maxFrameBytes: 2MiB
  maxBufferedBytes: 4MiB
  heartbeat: 0
  joinTimeout: 5s
  maxConnections: 100
  maxConnectionsPerParticipant: 4
  maxProposals: 500
  history: { maxEnvelopes: 0, maxBytes: 1MiB, maxResults: 10 }
  defaults: { capabilities: [chat, { kind: mcp/proposal }], observe: true }
  participants:
    alice: { observe: false, capabilities: [{ kind: "mcp/*" }, chat] }
    build-bot:
      roles: [builder]
      tokens: [{ sha256: ${SHA.space} }]
      capabilities:
        - { kind: mcp/request, payload: { method: "tools/*", params: { name: "!delete_*", n: 3, x: null } } }
        - { kind: [chat, "reasoning/*"], payload: { text: "/^\\\\$\${[a-z]+}$/i" } }
    "42": {}
observe:
  metrics: { enabled: false, role: scraper, listen: "[::1]:9464", principalLabel: true, maxPrincipals: 7 }
`;
}

const ANCHORS = {
  path: '{ path: ../anchor/checkpoints.log }',
  url: `{ url: https://anchor.example.com/cp, headers: { Authorization: "Bearer ${SECRETS.anchorHeader}", X-Env: "\${env:SB_CONFIG_TEST_SECRET}" } }`,
};

describe('config show and config check --json print every section', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it.each(Object.entries(ANCHORS))(
    'round-trip: a file setting every section (anchor %s) validates back to itself, secrets aside',
    async (kind, anchor) => {
      vi.stubEnv('SB_CONFIG_TEST_SECRET', SECRETS.fromEnvironment);
      const path = file(`every-section-${kind}.yaml`, everySection(anchor));
      writeFileSync(join(root, 'jwks.json'), '{"keys":[]}');
      const loaded = await loadConfigFile(path, { env: process.env });
      expect(loaded.warnings).toEqual([]);
      // The file really sets what this test is about.
      const { config } = loaded;
      expect(config.auth?.jwt?.jwks).toBe(join(root, 'keys/jwks.json'));
      expect(config.auth?.tokens.map((t) => t.sha256)).toEqual([SHA.alice, SHA.bot]);
      expect(config.policy.rules.map((rule) => rule.id)).toEqual(['no-deletes', 'rules[1]', 'rules[2]']);
      expect(config.policy.rules[2]?.target).toBe('${literal}');
      expect((config.upstreams[1] as HttpUpstreamConfig).era).toBe('modern');
      expect(config.space.participants.map((p) => p.id)).toEqual(['alice', 'build-bot', '42']);
      const expectedAnchor: AuditConfig['anchor'] =
        kind === 'path'
          ? { path: resolve(root, '../anchor/checkpoints.log'), headers: {} }
          : {
              url: 'https://anchor.example.com/cp',
              headers: { Authorization: `Bearer ${SECRETS.anchorHeader}`, 'X-Env': SECRETS.fromEnvironment },
            };
      expect(config.audit.anchor).toEqual(expectedAnchor);

      const r = await run(['config', 'show', '--config', path]);
      expect(r).toMatchObject({ code: 0, err: '' });
      expect(r.out).toContain(
        '# Every default applied; values of upstream env and headers, of audit.anchor.headers and observe.otel.headers and of URL query parameters shown as ***.\n',
      );
      expect(r.out).toContain('    era: modern\n');
      expect(r.out).toContain(`    - principal: alice\n      sha256: ${SHA.alice}\n`);
      const shown = parse(r.out) as Record<string, unknown>;
      expect(Object.keys(shown)).toEqual(ALL_SECTIONS);
      // Validated again from the same directory, it is the configuration, secrets redacted.
      const revalidated = parseConfigText(r.out, { baseDir: root, env: {} });
      expect(revalidated).toEqual({ ok: true, config: redact(config), warnings: [] });
    },
  );

  it('never prints a secret: env, headers and anchor headers values, in show and check --json', async () => {
    vi.stubEnv('SB_CONFIG_TEST_SECRET', SECRETS.fromEnvironment);
    writeFileSync(join(root, 'jwks.json'), '{"keys":[]}');
    for (const [kind, anchor] of Object.entries(ANCHORS)) {
      const path = file(`secrets-${kind}.yaml`, everySection(anchor));
      const show = await run(['config', 'show', '--config', path]);
      const check = await run(['config', 'check', '--json', path]);
      expect(show.code).toBe(0);
      expect(check.code).toBe(0);
      for (const output of [show.out, show.err, check.out, check.err]) {
        for (const secret of Object.values(SECRETS)) expect(output).not.toContain(secret);
      }
      // The hashes of tokens are not secrets: they are what the file holds.
      for (const output of [show.out, check.out]) {
        expect(output).toContain(SHA.alice);
        expect(output).toContain(SHA.space.toLowerCase());
      }
      const json = JSON.parse(check.out) as { ok: boolean; config: GatewayConfig };
      const [files, remote] = json.config.upstreams as [StdioUpstreamConfig, HttpUpstreamConfig];
      expect(files.env).toEqual({ API_KEY: REDACTED, MODE: REDACTED });
      expect(remote.headers).toEqual({ Authorization: REDACTED, 'X-From-Env': REDACTED });
      expect(json.config.audit.anchor?.headers).toEqual(
        kind === 'url' ? { Authorization: REDACTED, 'X-Env': REDACTED } : {},
      );
      const shown = parse(show.out) as { audit: { anchor: Record<string, unknown> } };
      expect(shown.audit.anchor).toEqual(
        kind === 'url'
          ? { url: 'https://anchor.example.com/cp', headers: { Authorization: REDACTED, 'X-Env': REDACTED } }
          : { path: resolve(root, '../anchor/checkpoints.log') },
      );
    }
  });
});

describe('toFileShape', () => {
  it('gives back the configuration when validated again, for every option of the example', async () => {
    const env = {
      EVERYTHING_KEY: 'key with ${literal} braces',
      REMOTE_TOKEN: 'token',
      ANCHOR_TOKEN: 'anchor ${token}',
      OTLP_TOKEN: 'otlp ${token}',
    };
    const { config } = await loadConfigFile(EXAMPLE, { env });
    // The example sets every section, so the round trip covers each of them.
    expect(config.auth?.jwt).toBeDefined();
    expect(config.policy.rules.length).toBeGreaterThan(0);
    expect(config.audit.anchor?.headers).toEqual({ Authorization: 'Bearer anchor ${token}' });
    expect(config.space.participants.length).toBeGreaterThan(0);
    const shape = toFileShape(config);
    expect(Object.keys(shape)).toEqual(ALL_SECTIONS);
    const result = validateConfig(shape, { baseDir: '/elsewhere', env: {} });
    expect(result).toEqual({ ok: true, config, warnings: [] });
  });

  it('keeps upstreams named like numbers in order', () => {
    const result = validateConfig(
      {
        upstreams: new Map([
          ['b', { command: 'x' }],
          ['2', { command: 'y' }],
        ]),
      },
      {
        baseDir: '/',
        env: {},
      },
    );
    if (!result.ok) throw new Error('invalid');
    const again = validateConfig(toFileShape(result.config), { baseDir: '/', env: {} });
    expect(again.ok && again.config.upstreams.map((u) => u.name)).toEqual(['b', '2']);
  });
});

describe('summary', () => {
  it('brackets IPv6 addresses', async () => {
    const result = validateConfig(
      { server: { host: '::1', port: 0 }, upstreams: { a: { command: 'x' } } },
      {
        baseDir: '/',
        env: {},
      },
    );
    if (!result.ok) throw new Error('invalid');
    expect(summary(result.config)).toBe('ok: 1 upstream (a: stdio shared), listening on [::1]:0');
  });
});

describe('hideUrlSecrets', () => {
  it.each([
    ['https://mcp.example.com/mcp', 'https://mcp.example.com/mcp'],
    ['https://u:p@h/x', `https://u:${REDACTED}@h/x`],
    ['https://u@h/x?a=1&b=&c', `https://u@h/x?a=${REDACTED}&b=${REDACTED}&c`],
    ['http://h/x?key=abc#frag=1', `http://h/x?key=${REDACTED}#frag=1`],
    ['/etc/jwks.json', '/etc/jwks.json'],
    ['file:///etc/jwks.json', 'file:///etc/jwks.json'],
  ])('%s', (url, expected) => {
    expect(hideUrlSecrets(url)).toBe(expected);
    // Idempotent: what config show prints validates to itself.
    expect(hideUrlSecrets(expected)).toBe(expected);
  });
});
