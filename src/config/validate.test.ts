// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the ${env:NAME} syntax itself.
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from './defaults.js';
import { OBSERVE_DEFAULTS } from './sections/observe.js';
import { SPACE_DEFAULTS } from './sections/space.js';
import type { GatewayConfig, HttpUpstreamConfig, StdioUpstreamConfig } from './types.js';
import {
  type ConfigIssue,
  describeValue,
  formatPath,
  RESERVED_HEADERS,
  suggest,
  type ValidateOptions,
  validateConfig,
} from './validate.js';

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

/** MINIMAL with `section` replaced. */
const withSection = (section: string, value: unknown) => ({ ...MINIMAL, [section]: value });
/** MINIMAL's upstream with extra keys. */
const withUpstream = (settings: Record<string, unknown>) => ({
  upstreams: { everything: { command: 'npx', ...settings } },
});
const stdio = (config: GatewayConfig, index = 0) => config.upstreams[index] as StdioUpstreamConfig;
const http = (config: GatewayConfig, index = 0) => config.upstreams[index] as HttpUpstreamConfig;

describe('defaults', () => {
  it('applies every default to a minimal file', () => {
    const { config, warnings } = valid(MINIMAL);
    expect(warnings).toEqual([]);
    expect(config).toEqual({
      server: {
        host: '127.0.0.1',
        port: 8787,
        maxBodyBytes: 4 * 1024 * 1024,
        maxStreamBufferBytes: 4 * 1024 * 1024,
        maxJsonDepth: 128,
        allowedHosts: [],
        allowedOrigins: [],
        responseMode: 'auto',
        streamAfterMs: 100,
        keepAliveMs: 15_000,
        drainTimeoutMs: 5_000,
        headersTimeoutMs: 20_000,
        bodyTimeoutMs: 30_000,
        idleConnectionTimeoutMs: 65_000,
        maxConnections: 2048,
      },
      sessions: {
        mode: 'lenient',
        idleTimeoutMs: 30 * 60_000,
        maxAgeMs: 24 * 3_600_000,
        maxSessions: 10_000,
        maxSessionsPerPrincipal: 1000,
        maxStreamsPerSession: 16,
      },
      resumability: {
        maxEventsPerSession: 1000,
        maxEventAgeMs: 5 * 60_000,
        maxTotalBytes: 64 * 1024 * 1024,
        retryMs: 1000,
      },
      timeouts: { requestMs: 10 * 60_000, resetOnProgress: true, maxTotalMs: 3_600_000 },
      upstreams: [
        {
          name: 'everything',
          transport: 'stdio',
          command: 'npx',
          args: [],
          env: {},
          passEnv: [],
          maxStdinBufferBytes: 4 * 1024 * 1024,
          sharing: 'shared',
          maxMessageBytes: 8 * 1024 * 1024,
          required: false,
          restart: {
            enabled: true,
            initialDelayMs: 250,
            maxDelayMs: 30_000,
            maxRestarts: Number.POSITIVE_INFINITY,
          },
        },
      ],
      trace: { enabled: true, maxPayloadBytes: 1024 * 1024, payloads: 'redacted' },
      logging: { level: 'info' },
      policy: {
        default: 'allow',
        rules: [],
        approvals: { timeoutMs: 300_000, approverRoles: ['approver'], allowSelfApproval: false },
      },
      audit: {
        enabled: true,
        fsync: 'critical',
        flushDelayMs: 20,
        rotateBytes: 64 * 1024 * 1024,
        checkpoint: { everyRecords: 1000, everyMs: 60_000, minIntervalMs: 1000 },
        redact: { keys: [], patterns: [] },
        maxErrorLength: 1024,
        minFreeBytes: 64 * 1024 * 1024,
      },
      space: SPACE_DEFAULTS,
      observe: OBSERVE_DEFAULTS,
    });
  });

  it('treats empty sections as all defaults', () => {
    const empty = { server: null, sessions: {}, resumability: null, timeouts: {}, trace: {}, logging: null };
    expect(valid({ ...MINIMAL, ...empty }).config).toEqual(valid(MINIMAL).config);
  });

  it('makes sessions strict by default once authentication is configured', () => {
    expect(valid(MINIMAL, { authConfigured: true }).config.sessions.mode).toBe('strict');
    expect(valid(MINIMAL, { authConfigured: false }).config.sessions.mode).toBe('lenient');
    expect(valid(withSection('sessions', { mode: 'strict' })).config.sessions.mode).toBe('strict');
  });

  it('warns when authentication is configured but sessions are explicitly lenient', () => {
    const { warnings } = valid(withSection('sessions', { mode: 'lenient' }), { authConfigured: true });
    expect(warnings).toEqual([
      'sessions.mode: lenient although authentication is configured: clients may pick their own session ids and send requests without one',
    ]);
  });
});

describe('a complete file', () => {
  const raw = {
    server: {
      host: '127.0.0.1',
      port: 9000,
      maxBodyBytes: '2MiB',
      maxStreamBufferBytes: '512KiB',
      maxJsonDepth: 40,
      allowedHosts: ['Gateway.Internal:9000'],
      allowedOrigins: ['https://App.Example.com', 'http://localhost:6274/'],
      responseMode: 'sse',
      streamAfter: '250ms',
      keepAlive: 0,
      drainTimeout: '2s',
      headersTimeout: '5s',
      bodyTimeout: '1m',
      idleConnectionTimeout: '10s',
      maxConnections: 4096,
    },
    sessions: {
      mode: 'strict',
      idleTimeout: '10m',
      maxAge: '12h',
      maxSessions: 50,
      maxSessionsPerPrincipal: 5,
      maxStreamsPerSession: 4,
    },
    resumability: { maxEventsPerSession: 1, maxEventAge: '1m', maxTotalBytes: '2MiB', retry: '2s' },
    timeouts: { request: 0, resetOnProgress: false, maxTotal: '2h' },
    upstreams: {
      everything: {
        transport: 'stdio',
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'],
        cwd: './somewhere',
        env: { API_KEY: '${env:EVERYTHING_KEY}', MODE: 'demo' },
        passEnv: ['HTTPS_PROXY'],
        maxStdinBufferBytes: '1MiB',
        sharing: 'shared',
        maxMessageBytes: '16MiB',
        restart: {
          enabled: true,
          initialDelay: '100ms',
          maxDelay: '10s',
          maxRestarts: Number.POSITIVE_INFINITY,
        },
      },
      remote: {
        transport: 'http',
        url: 'https://mcp.example.com/mcp',
        headers: { Authorization: 'Bearer ${env:REMOTE_TOKEN}', 'X-Tenant': 'acme' },
        sharing: 'per-session',
        required: true,
        restart: { enabled: false, maxRestarts: 3 },
      },
    },
    trace: { enabled: false, maxPayloadBytes: '64KiB', payloads: 'full' },
    logging: { level: 'debug' },
  };
  const env = { EVERYTHING_KEY: 'k-123', REMOTE_TOKEN: 't-456' };

  it('converts units, resolves env and cwd, keeps the order of upstreams', () => {
    const { config, warnings } = valid(raw, { env });
    expect(warnings).toEqual([]);
    expect(config.server).toEqual({
      host: '127.0.0.1',
      port: 9000,
      maxBodyBytes: 2 * 1024 * 1024,
      maxStreamBufferBytes: 512 * 1024,
      maxJsonDepth: 40,
      allowedHosts: ['gateway.internal:9000'],
      allowedOrigins: ['https://app.example.com', 'http://localhost:6274'],
      responseMode: 'sse',
      streamAfterMs: 250,
      keepAliveMs: 0,
      drainTimeoutMs: 2_000,
      headersTimeoutMs: 5000,
      bodyTimeoutMs: 60_000,
      idleConnectionTimeoutMs: 10_000,
      maxConnections: 4096,
    });
    expect(config.sessions).toEqual({
      mode: 'strict',
      idleTimeoutMs: 600_000,
      maxAgeMs: 43_200_000,
      maxSessions: 50,
      maxSessionsPerPrincipal: 5,
      maxStreamsPerSession: 4,
    });
    expect(config.resumability).toEqual({
      maxEventsPerSession: 1,
      maxEventAgeMs: 60_000,
      maxTotalBytes: 2 * 1024 * 1024,
      retryMs: 2000,
    });
    expect(config.timeouts).toEqual({ requestMs: 0, resetOnProgress: false, maxTotalMs: 7_200_000 });
    expect(config.upstreams.map((u) => u.name)).toEqual(['everything', 'remote']);
    expect(stdio(config)).toEqual({
      name: 'everything',
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'],
      cwd: '/etc/switchboard/somewhere',
      env: { API_KEY: 'k-123', MODE: 'demo' },
      passEnv: ['HTTPS_PROXY'],
      maxStdinBufferBytes: 1024 * 1024,
      sharing: 'shared',
      maxMessageBytes: 16 * 1024 * 1024,
      required: false,
      restart: {
        enabled: true,
        initialDelayMs: 100,
        maxDelayMs: 10_000,
        maxRestarts: Number.POSITIVE_INFINITY,
      },
    });
    expect(http(config, 1)).toEqual({
      name: 'remote',
      transport: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { Authorization: 'Bearer t-456', 'X-Tenant': 'acme' },
      era: 'auto',
      handshakeTimeoutMs: 30_000,
      sharing: 'per-session',
      maxMessageBytes: 8 * 1024 * 1024,
      required: true,
      restart: { enabled: false, initialDelayMs: 250, maxDelayMs: 30_000, maxRestarts: 3 },
    });
    expect(config.trace).toEqual({ enabled: false, maxPayloadBytes: 65_536, payloads: 'full' });
    expect(config.logging).toEqual({ level: 'debug' });
  });

  it('reads Maps as well as plain objects, keeping the order of numeric names', () => {
    const upstreams = new Map<unknown, unknown>([
      ['zeta', { command: 'a' }],
      [10, { command: 'b' }],
      ['2', { command: 'c' }],
    ]);
    const { config } = valid(new Map<string, unknown>([['upstreams', upstreams]]));
    expect(config.upstreams.map((u) => u.name)).toEqual(['zeta', '10', '2']);
  });
});

describe('upstreams', () => {
  it.each([
    [{}, 'nothing', 'at least one upstream: a map from upstream name to its settings', 'upstreams'],
    [null, 'nothing (an empty file)', 'a map of settings with at least "upstreams"', ''],
    [
      { server: {} },
      'nothing',
      'at least one upstream: a map from upstream name to its settings',
      'upstreams',
    ],
    [{ upstreams: {} }, 'an empty map', 'at least one upstream', 'upstreams'],
    [{ upstreams: null }, 'an empty value', 'a map from upstream name to its settings', 'upstreams'],
    [
      { upstreams: [{ name: 'x' }] },
      'a list of 1 item',
      'a map from upstream name to its settings',
      'upstreams',
    ],
    [['a'], 'a list of 1 item', 'a map of settings with at least "upstreams"', ''],
    ['upstreams', '"upstreams"', 'a map of settings with at least "upstreams"', ''],
  ])('rejects %j', (raw, found, expected, path) => {
    const i = issue(raw === null ? null : raw);
    expect(i).toMatchObject({ path, found });
    expect(i.expected).toContain(expected);
  });

  it('accepts names of letters, digits, _ and - up to 32 characters', () => {
    for (const name of ['a', 'A1', '1password', 'my-server', 'my_server', 'x'.repeat(32), 'a_b-c', 'a-']) {
      expect(valid({ upstreams: { [name]: { command: 'x' } } }).config.upstreams[0]?.name).toBe(name);
    }
  });

  it.each([
    [
      '-leading',
      'the name "-leading"',
      'an upstream name of letters, digits, _ and -, starting with a letter or digit',
    ],
    ['_leading', 'the name "_leading"', 'starting with a letter or digit'],
    ['has space', 'the name "has space"', 'letters, digits, _ and -'],
    ['dot.ted', 'the name "dot.ted"', 'letters, digits, _ and -'],
    ['ünï', 'the name "ünï"', 'letters, digits, _ and -'],
    [
      'x'.repeat(33),
      `the name "${'x'.repeat(33)}" (33 characters)`,
      'an upstream name of at most 32 characters',
    ],
    ['git__hub', 'the name "git__hub"', 'an upstream name without "__" and not ending in "_"'],
    [
      'trailing_',
      'the name "trailing_"',
      '"__" separates the upstream from the tool in aggregated tool names',
    ],
  ])('rejects the name %j', (name, found, expected) => {
    const i = issue({ upstreams: { [name]: { command: 'x' } } });
    expect(i.path).toBe(formatPath(['upstreams', name]));
    expect(i.found).toBe(found);
    expect(i.expected).toContain(expected);
  });

  it('infers the transport from command or url', () => {
    const { config } = valid({ upstreams: { a: { command: 'x' }, b: { url: 'https://b.example/mcp' } } });
    expect(config.upstreams.map((u) => u.transport)).toEqual(['stdio', 'http']);
  });

  it('needs a transport when neither or both of command and url are given', () => {
    for (const settings of [{}, { command: 'x', url: 'https://x' }, { sharing: 'shared' }]) {
      const errors = invalid({ upstreams: { a: settings } });
      expect(errors[0]).toMatchObject({
        path: 'upstreams.a.transport',
        found: 'nothing',
        expected: 'stdio or http (or a "command" for stdio, a "url" for http)',
      });
    }
  });

  it('rejects an unknown transport with a suggestion', () => {
    expect(issue({ upstreams: { a: { transport: 'stdin', command: 'x' } } })).toEqual({
      path: 'upstreams.a.transport',
      found: '"stdin"',
      expected: 'stdio or http (did you mean "stdio"?)',
    });
  });

  it('rejects settings that are not a map', () => {
    expect(issue({ upstreams: { a: 'npx server' } })).toMatchObject({
      path: 'upstreams.a',
      found: '"npx server"',
      expected: 'the upstream\'s settings: a map with "transport" and "command" (stdio) or "url" (http)',
    });
  });

  it('points keys of the other transport out', () => {
    expect(issue({ upstreams: { a: { transport: 'stdio', command: 'x', headers: {} } } }).expected).toContain(
      '(headers belongs to http upstreams; this one has transport stdio)',
    );
    expect(issue({ upstreams: { a: { url: 'https://x.example', args: [] } } }).expected).toContain(
      '(args belongs to stdio upstreams; this one has transport http)',
    );
  });

  describe('stdio', () => {
    it.each([
      [{ command: '' }, 'command', '""', 'a non-empty string: the program to run'],
      [{ command: '   ' }, 'command', '"   "', 'a non-empty string'],
      [{ command: ['npx', 'x'] }, 'command', 'a list of 2 items', 'the program to run, e.g. npx'],
      [{ command: 7 }, 'command', '7', 'the program to run'],
      [{ args: 'stdio' }, 'args', '"stdio"', 'a list, e.g. [a, b] or one "- item" per line'],
      [{ args: ['--port', 8080] }, 'args[1]', '8080', 'a string (quote numbers: "8080")'],
      [{ cwd: '' }, 'cwd', '""', 'a non-empty directory path (relative to the configuration file)'],
      [{ cwd: 5 }, 'cwd', '5', 'a directory path (relative to the configuration file)'],
      [{ env: ['A=1'] }, 'env', 'a list of 1 item', 'a map from name to value, e.g. { NAME: value }'],
      [
        { env: { 'BAD-NAME': 'x' } },
        'env.BAD-NAME',
        'the name "BAD-NAME"',
        'an environment variable name: letters, digits and _',
      ],
      [{ env: { '1X': 'x' } }, 'env.1X', 'the name "1X"', 'not starting with a digit'],
      [{ env: { PORT: 8080 } }, 'env.PORT', '8080', 'a string (quote numbers and booleans: "8080", "true")'],
      [{ env: { DEBUG: true } }, 'env.DEBUG', 'true', 'a string (quote numbers and booleans'],
      [
        { env: { X: 'a\0b' } },
        'env.X',
        'a string containing a NUL character (value not shown)',
        'without NUL',
      ],
      [{ passEnv: 'HOME' }, 'passEnv', '"HOME"', 'a list'],
      [{ passEnv: ['HTTPS-PROXY'] }, 'passEnv[0]', '"HTTPS-PROXY"', 'an environment variable name'],
      [{ maxStdinBufferBytes: 0 }, 'maxStdinBufferBytes', '0', 'a size larger than 0'],
      [
        { sharing: 'per_session' },
        'sharing',
        '"per_session"',
        'shared, per-session or pooled (did you mean "per-session"?)',
      ],
      [{ maxMessageBytes: 0 }, 'maxMessageBytes', '0', 'a size larger than 0, e.g. 64KiB or 4MiB'],
      [
        { maxMessageBytes: '8M' },
        'maxMessageBytes',
        '"8M"',
        'a unit B, KiB, MiB, GiB, KB, MB or GB after the number, not "M"',
      ],
    ])('%j: %s', (settings, key, found, expected) => {
      const i = issue(withUpstream(settings));
      expect(i.path).toBe(`upstreams.everything.${key}`);
      expect(i.found).toBe(found);
      expect(i.expected).toContain(expected);
    });

    it('needs a command', () => {
      expect(issue({ upstreams: { a: { transport: 'stdio' } } })).toEqual({
        path: 'upstreams.a.command',
        found: 'nothing',
        expected: 'the program to run, e.g. npx or /usr/local/bin/my-server',
      });
    });

    it('resolves a relative cwd against the base directory and keeps an absolute one', () => {
      expect(stdio(valid(withUpstream({ cwd: 'sub/dir' })).config).cwd).toBe('/etc/switchboard/sub/dir');
      expect(stdio(valid(withUpstream({ cwd: '../up' })).config).cwd).toBe('/etc/up');
      expect(stdio(valid(withUpstream({ cwd: '/srv/x' })).config).cwd).toBe('/srv/x');
      expect(stdio(valid(withUpstream({})).config).cwd).toBeUndefined();
    });
  });

  describe('sharing: pooled', () => {
    it('applies the pool defaults, and reads the bounds given', () => {
      expect(stdio(valid(withUpstream({ sharing: 'pooled' })).config).pool).toEqual(DEFAULTS.upstream.pool);
      expect(
        stdio(
          valid(
            withUpstream({
              sharing: 'pooled',
              pool: { max: 3, idleTimeout: '10s', queueTimeout: '2s', maxQueued: 0 },
            }),
          ).config,
        ).pool,
      ).toEqual({ max: 3, idleTimeoutMs: 10_000, queueTimeoutMs: 2000, maxQueued: 0 });
    });

    it.each([
      [{ max: 0 }, 'max', '0', 'an integer from 1 to 64'],
      [{ max: 65 }, 'max', '65', 'an integer from 1 to 64'],
      [{ idleTimeout: 0 }, 'idleTimeout', '0', 'a duration longer than 0'],
      [{ queueTimeout: 'soon' }, 'queueTimeout', '"soon"', 'a duration'],
      [{ maxQueued: -1 }, 'maxQueued', '-1', 'a non-negative integer'],
      [{ size: 3 }, 'size', '', 'max'],
    ])('rejects pool %j', (pool, key, found, expected) => {
      const i = issue(withUpstream({ sharing: 'pooled', pool }));
      expect(i.path).toBe(`upstreams.everything.pool.${key}`);
      if (found) expect(i.found).toBe(found);
      expect(i.expected).toContain(expected);
    });

    it('warns that a pool is ignored unless the upstream is pooled', () => {
      const { config, warnings } = valid(withUpstream({ sharing: 'shared', pool: { max: 2 } }));
      expect(stdio(config).pool).toBeUndefined();
      expect(warnings).toEqual([
        'upstreams.everything.pool: ignored: it applies to sharing: pooled, and this upstream is shared',
      ]);
    });

    it('is for stdio upstreams only', () => {
      const i = issue({ upstreams: { remote: { url: 'https://x.example/mcp', sharing: 'pooled' } } });
      expect(i.path).toBe('upstreams.remote.sharing');
      expect(i.expected).toContain('pooled is for stdio upstreams');
    });
  });

  describe('restart', () => {
    const restart = (r: unknown) => withUpstream({ restart: r });

    it.each([
      [0, 0],
      [5, 5],
      ['7', 7],
      [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY],
      ['.inf', Number.POSITIVE_INFINITY],
    ])('maxRestarts %j is %d', (value, expected) => {
      expect(stdio(valid(restart({ maxRestarts: value })).config).restart.maxRestarts).toBe(expected);
    });

    it.each([[-1], [1.5], ['forever'], [Number.NEGATIVE_INFINITY], [null]])(
      'rejects maxRestarts %j',
      (value) => {
        const i = issue(restart({ maxRestarts: value }));
        expect(i.path).toBe('upstreams.everything.restart.maxRestarts');
        expect(i.found).toBe(describeValue(value));
        expect(i.expected).toBe('a non-negative integer, or .inf to restart forever');
      },
    );

    it.each([
      [{ initialDelay: 0 }, 'initialDelay', '0', 'a duration longer than 0, e.g. 30s or 10m'],
      [
        { maxDelay: '1 week' },
        'maxDelay',
        '"1 week"',
        'a unit ms, s, m, h or d after the number, not "week"',
      ],
      [{ enabled: 'yes' }, 'enabled', '"yes"', 'true or false'],
      [{ enabled: 1 }, 'enabled', '1', 'true or false'],
      [true, '', 'true', 'a map with the keys enabled, initialDelay, maxDelay, maxRestarts'],
    ])('%j: %s', (value, key, found, expected) => {
      const i = issue(restart(value));
      expect(i.path).toBe(`upstreams.everything.restart${key === '' ? '' : `.${key}`}`);
      expect(i.found).toBe(found);
      expect(i.expected).toContain(expected);
    });

    it('needs maxDelay at least as long as initialDelay', () => {
      expect(issue(restart({ initialDelay: '10s', maxDelay: '1s' }))).toEqual({
        path: 'upstreams.everything.restart.maxDelay',
        found: '"1s", shorter than initialDelay (10s)',
        expected:
          'a maxDelay at least as long as initialDelay: the backoff doubles from initialDelay up to maxDelay',
      });
      expect(issue(restart({ initialDelay: '1m' }))).toEqual({
        path: 'upstreams.everything.restart.initialDelay',
        found: '"1m", longer than the default maxDelay (30s)',
        expected:
          'an initialDelay no longer than maxDelay (set maxDelay as well): the backoff doubles from initialDelay up to maxDelay',
      });
      expect(
        valid(restart({ initialDelay: '1m', maxDelay: '1m' })).config.upstreams[0]?.restart.maxDelayMs,
      ).toBe(60_000);
    });
  });

  describe('http', () => {
    const remote = (settings: Record<string, unknown>) => ({
      upstreams: { remote: { transport: 'http', url: 'https://mcp.example.com/mcp', ...settings } },
    });

    it.each([
      ['http://127.0.0.1:3000/mcp'],
      ['https://mcp.example.com/mcp?tenant=a'],
      ['HTTPS://MCP.EXAMPLE.COM/'],
      ['http://[::1]:8080/mcp'],
    ])('accepts the URL %s as written', (url) => {
      expect(http(valid(remote({ url })).config).url).toBe(url);
    });

    it.each([
      ['ftp://x', '"ftp://x"'],
      ['mcp.example.com/mcp', '"mcp.example.com/mcp"'],
      ['/mcp', '"/mcp"'],
      ['http:/x', '"http:/x"'],
      ['https://', '"https://"'],
      ['http://exa mple.com', '"http://exa mple.com"'],
      [42, '42'],
    ])('rejects the URL %j', (url, found) => {
      expect(issue(remote({ url }))).toEqual({
        path: 'upstreams.remote.url',
        found,
        expected: 'an absolute http:// or https:// URL',
      });
    });

    it('takes the era auto by default, and modern, legacy or dual when given', () => {
      expect(http(valid(remote({})).config).era).toBe('auto');
      expect(http(valid(remote({ era: 'modern' })).config).era).toBe('modern');
      expect(http(valid(remote({ era: 'legacy' })).config).era).toBe('legacy');
      expect(http(valid(remote({ era: 'dual' })).config).era).toBe('dual');
      expect(issue(remote({ era: '2026' })).path).toBe('upstreams.remote.era');
      expect(issue({ upstreams: { local: { command: 'npx', era: 'modern' } } }).path).toBe(
        'upstreams.local.era',
      );
    });

    it('bounds the handshake: 30s by default, a duration above 0 and at most 10m when given', () => {
      expect(http(valid(remote({})).config).handshakeTimeoutMs).toBe(30_000);
      expect(http(valid(remote({ handshakeTimeout: '5s' })).config).handshakeTimeoutMs).toBe(5000);
      expect(http(valid(remote({ handshakeTimeout: '10m' })).config).handshakeTimeoutMs).toBe(600_000);
      expect(issue(remote({ handshakeTimeout: '0s' })).path).toBe('upstreams.remote.handshakeTimeout');
      expect(issue(remote({ handshakeTimeout: '11m' }))).toEqual({
        path: 'upstreams.remote.handshakeTimeout',
        found: '"11m"',
        expected: 'a duration of at most 10m',
      });
      expect(issue({ upstreams: { local: { command: 'npx', handshakeTimeout: '5s' } } }).path).toBe(
        'upstreams.local.handshakeTimeout',
      );
    });

    it('needs a URL', () => {
      expect(issue({ upstreams: { remote: { transport: 'http' } } })).toEqual({
        path: 'upstreams.remote.url',
        found: 'nothing',
        expected:
          "an absolute http:// or https:// URL, the upstream's MCP endpoint (e.g. https://mcp.example.com/mcp)",
      });
    });

    it('rejects credentials in the URL without showing them', () => {
      const i = issue(remote({ url: 'https://user:hunter2@mcp.example.com/mcp' }));
      expect(i).toEqual({
        path: 'upstreams.remote.url',
        found: 'a URL with user:password@ (value not shown)',
        expected: 'an absolute http:// or https:// URL without credentials (send them in headers)',
      });
      expect(JSON.stringify(i)).not.toContain('hunter2');
    });

    it.each([
      'Host',
      'Content-Length',
      'Mcp-Session-Id',
      'MCP-Protocol-Version',
      'Accept',
      'Content-Type',
      'host',
      'mcp-session-id',
      'ACCEPT',
      'Last-Event-ID',
      'Connection',
      'Transfer-Encoding',
    ])('does not let %s be configured', (name) => {
      const i = issue(remote({ headers: { [name]: 'x' } }));
      expect(i.path).toBe(`upstreams.remote.headers.${name}`);
      expect(i.found).toBe(`the name "${name}"`);
      expect(i.expected).toMatch(
        /^a header the gateway does not set itself \(it owns Host, Content-Length, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID and the connection headers\)$/,
      );
    });

    it('lists every reserved header in lower case', () => {
      for (const name of [
        'host',
        'content-length',
        'mcp-session-id',
        'mcp-protocol-version',
        'accept',
        'content-type',
      ]) {
        expect(RESERVED_HEADERS).toContain(name);
      }
    });

    it.each(['X Tenant', 'X-Tenant:', 'Tenant(1)', 'Ümlaut', ''])('rejects the header name %j', (name) => {
      const i = issue(remote({ headers: { [name]: 'x' } }));
      expect(i.found).toBe(`the name ${JSON.stringify(name)}`);
      expect(i.expected).toBe("a header name made of letters, digits and !#$%&'*+.^_`|~- (an HTTP token)");
    });

    it('accepts token header names, including unusual ones', () => {
      const headers = { Authorization: 'Bearer x', 'X-Api-Key': 'k', "x!#$%&'*+.^_`|~": 'v', 'X-Empty': '' };
      expect(http(valid(remote({ headers })).config).headers).toEqual(headers);
    });

    it('rejects header values that are not strings, or contain line breaks, without showing them', () => {
      expect(issue(remote({ headers: { 'X-Retries': 3 } }))).toEqual({
        path: 'upstreams.remote.headers.X-Retries',
        found: '3',
        expected: 'a string (quote numbers: "42"); use ${env:NAME} for secrets',
      });
      const i = issue(remote({ headers: { Authorization: 'Bearer abc\r\nX-Evil: 1' } }));
      expect(i).toEqual({
        path: 'upstreams.remote.headers.Authorization',
        found: 'a string with a line break or control character (value not shown)',
        expected: 'a header value on one line, without control characters',
      });
      expect(valid(remote({ headers: { A: 'tab\there' } })).config.upstreams).toHaveLength(1);
    });

    it('checks header values after interpolation', () => {
      const i = issue(remote({ headers: { Authorization: '${env:TOKEN}' } }), { env: { TOKEN: 'a\nb' } });
      expect(i.found).toBe('a string with a line break or control character (value not shown)');
    });

    it('rejects the same header twice in different case', () => {
      expect(issue(remote({ headers: { 'X-Key': 'a', 'x-key': 'b' } }))).toEqual({
        path: 'upstreams.remote.headers.x-key',
        found: 'the header x-key, already given as X-Key',
        expected: 'each header once (names are case-insensitive)',
      });
    });

    it('warns when headers would travel over plain http to another machine', () => {
      const { warnings } = valid(
        remote({ url: 'http://mcp.example.com/mcp', headers: { Authorization: 'x' } }),
      );
      expect(warnings).toEqual([
        'upstreams.remote.headers: sent unencrypted to mcp.example.com (the URL is http://, not https://)',
      ]);
      expect(valid(remote({ url: 'http://localhost:3000/mcp', headers: { A: 'x' } })).warnings).toEqual([]);
      expect(valid(remote({ url: 'http://[::1]:3000/mcp', headers: { A: 'x' } })).warnings).toEqual([]);
      expect(valid(remote({ url: 'http://mcp.example.com/mcp' })).warnings).toEqual([]);
    });
  });
});

describe('server', () => {
  const server = (settings: Record<string, unknown>) => withSection('server', settings);

  it.each([
    ['127.0.0.1', '127.0.0.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['::1', '::1'],
    ['[::1]', '::1'],
    ['::', '::'],
    ['localhost', 'localhost'],
    ['gateway.internal', 'gateway.internal'],
    ['my-host', 'my-host'],
  ])('accepts the host %s', (host, expected) => {
    expect(valid(server({ host }), { authConfigured: true }).config.server.host).toBe(expected);
  });

  it.each([
    ['999.1.1.1'],
    ['exa mple'],
    ['-bad.example'],
    ['http://localhost'],
    ['localhost:8787'],
    [''],
    [8080],
    ['a'.repeat(64)],
  ])('rejects the host %j', (host) => {
    expect(issue(server({ host }))).toEqual({
      path: 'server.host',
      found: describeValue(host),
      expected: 'a host name or IP address to listen on, e.g. 127.0.0.1, ::1, localhost or 0.0.0.0',
    });
  });

  it('refuses to listen beyond loopback without authentication', () => {
    expect(issue(server({ host: '0.0.0.0' }))).toMatchObject({
      path: 'server.host',
      found: '"0.0.0.0"',
      expected: expect.stringMatching(/^a loopback address .*configure auth to listen elsewhere/),
    });
    expect(valid(server({ host: '0.0.0.0' }), { authConfigured: true }).warnings).toEqual([]);
    const withAuth = {
      ...server({ host: '0.0.0.0' }),
      auth: { tokens: [{ principal: 'a', sha256: 'a'.repeat(64) }] },
    };
    expect(valid(withAuth).config.server.host).toBe('0.0.0.0');
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost'])
      expect(valid(server({ host })).warnings).toEqual([]);
  });

  it.each([
    [0, 0],
    [65_535, 65_535],
    ['8080', 8080],
  ])('accepts the port %j', (port, expected) => {
    expect(valid(server({ port })).config.server.port).toBe(expected);
  });

  it.each([[-1], [65_536], [80.5], ['http'], ['80 '], [true], [null]])('rejects the port %j', (port) => {
    expect(issue(server({ port }))).toEqual({
      path: 'server.port',
      found: describeValue(port),
      expected: 'an integer from 0 to 65535 (0: any free port)',
    });
  });

  it.each([
    [{ maxBodyBytes: 0 }, 'maxBodyBytes', '0', 'a size larger than 0, e.g. 64KiB or 4MiB'],
    [{ maxStreamBufferBytes: 0 }, 'maxStreamBufferBytes', '0', 'a size larger than 0, e.g. 64KiB or 4MiB'],
    [
      { maxStreamBufferBytes: 'plenty' },
      'maxStreamBufferBytes',
      '"plenty"',
      'a size: a whole number of bytes',
    ],
    [
      { maxBodyBytes: '4 megabytes' },
      'maxBodyBytes',
      '"4 megabytes"',
      'a unit B, KiB, MiB, GiB, KB, MB or GB after the number, not "megabytes"',
    ],
    [{ responseMode: 'JSON' }, 'responseMode', '"JSON"', 'auto, json or sse (did you mean "json"?)'],
    [{ responseMode: 'stream' }, 'responseMode', '"stream"', 'auto, json or sse'],
    [
      { streamAfter: '1 minute' },
      'streamAfter',
      '"1 minute"',
      'a unit ms, s, m, h or d after the number, not "minute"; 0 disables',
    ],
    [
      { drainTimeout: 'soon' },
      'drainTimeout',
      '"soon"',
      'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h); 0 disables',
    ],
    [
      { keepAlive: '-1s' },
      'keepAlive',
      '"-1s"',
      'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h); 0 disables',
    ],
    [{ headersTimeout: 0 }, 'headersTimeout', '0', 'a duration longer than 0, e.g. 30s or 10m'],
    [{ bodyTimeout: '0s' }, 'bodyTimeout', '"0s"', 'a duration longer than 0, e.g. 30s or 10m'],
    [{ idleConnectionTimeout: 0 }, 'idleConnectionTimeout', '0', 'a duration longer than 0, e.g. 30s or 10m'],
    [{ maxConnections: 0 }, 'maxConnections', '0', 'a positive integer'],
    [{ allowedHosts: 'x' }, 'allowedHosts', '"x"', 'a list'],
    [
      { allowedHosts: ['a b'] },
      'allowedHosts[0]',
      '"a b"',
      'a host as clients send it in the Host header, optionally with a port',
    ],
    [
      { allowedHosts: ['x.example:99999'] },
      'allowedHosts[0]',
      '"x.example:99999"',
      'a host as clients send it',
    ],
    [
      { allowedHosts: ['http://x.example'] },
      'allowedHosts[0]',
      '"http://x.example"',
      'a host as clients send it',
    ],
    [
      { allowedOrigins: ['app.example.com'] },
      'allowedOrigins[0]',
      '"app.example.com"',
      'an origin: scheme://host[:port] with no path',
    ],
    [
      { allowedOrigins: ['https://app.example.com/path'] },
      'allowedOrigins[0]',
      '"https://app.example.com/path"',
      'an origin',
    ],
    [{ allowedOrigins: ['null'] }, 'allowedOrigins[0]', '"null"', 'an origin'],
    [{ allowedOrigins: ['*.example.com'] }, 'allowedOrigins[0]', '"*.example.com"', 'an origin'],
    [{ allowedOrigins: [42] }, 'allowedOrigins[0]', '42', 'an origin'],
  ])('%j: %s', (settings, key, found, expected) => {
    const i = issue(server(settings));
    expect(i.path).toBe(`server.${key}`);
    expect(i.found).toBe(found);
    expect(i.expected).toContain(expected);
  });

  it.each([15, 1001, 64.5, 'deep', -1])(
    'rejects the JSON depth limit %j, naming the range',
    (maxJsonDepth) => {
      expect(issue(server({ maxJsonDepth }))).toEqual({
        path: 'server.maxJsonDepth',
        found: describeValue(maxJsonDepth),
        expected:
          'an integer from 16 to 1000 (deeper JSON overflows the stack of the walkers that serialise, redact and hash messages)',
      });
    },
  );

  it.each([16, 1000, '64'])('accepts the JSON depth limit %j', (maxJsonDepth) => {
    expect(valid(server({ maxJsonDepth })).config.server.maxJsonDepth).toBe(Number(maxJsonDepth));
  });

  it('accepts allowed hosts with ports and IPv6 literals, lower-cased', () => {
    const allowedHosts = ['Gateway.Internal', 'gateway.internal:8787', '[::1]:8787', '10.0.0.5'];
    expect(valid(server({ allowedHosts })).config.server.allowedHosts).toEqual([
      'gateway.internal',
      'gateway.internal:8787',
      '[::1]:8787',
      '10.0.0.5',
    ]);
  });

  it('normalizes allowed origins, including non-web schemes', () => {
    const allowedOrigins = [
      'HTTPS://App.Example.com:443',
      'http://localhost:6274',
      'vscode-webview://abc',
      '*',
    ];
    expect(valid(server({ allowedOrigins })).config.server.allowedOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:6274',
      'vscode-webview://abc',
      '*',
    ]);
  });
});

describe('limits and durations', () => {
  it.each([
    ['sessions', 'idleTimeout', '30 mins', 'not "mins"'],
    ['sessions', 'maxAge', -1, '0 disables'],
    ['sessions', 'maxSessions', 0, 'a positive integer'],
    ['sessions', 'maxSessionsPerPrincipal', -3, 'a positive integer'],
    ['sessions', 'maxStreamsPerSession', 1.5, 'a positive integer'],
    ['sessions', 'mode', 'open', 'lenient or strict'],
    ['resumability', 'maxEventsPerSession', 0, 'a positive integer'],
    ['resumability', 'maxEventAge', 0, 'a duration longer than 0'],
    ['resumability', 'retry', 0, 'a duration longer than 0'],
    ['resumability', 'maxTotalBytes', 0, 'a size larger than 0'],
    ['resumability', 'maxTotalBytes', '1000B', 'a size from 1KiB to 4GiB'],
    ['resumability', 'maxTotalBytes', '5GiB', 'a size from 1KiB to 4GiB'],
    ['timeouts', 'request', '10 min', 'not "min"'],
    ['timeouts', 'resetOnProgress', 'on', 'true or false'],
    ['timeouts', 'maxTotal', -1, '0 disables'],
    ['trace', 'enabled', 'no', 'true or false'],
    ['trace', 'maxPayloadBytes', 0, 'a size larger than 0'],
    ['trace', 'payloads', 'none', 'redacted or full'],
    ['logging', 'level', 'verbose', 'debug, info, warn, error or silent'],
    ['logging', 'level', 'warning', 'debug, info, warn, error or silent (did you mean "warn"?)'],
  ])('%s.%s = %j', (section, key, value, expected) => {
    const i = issue(withSection(section, { [key]: value }));
    expect(i.path).toBe(`${section}.${key}`);
    expect(i.found).toBe(describeValue(value));
    expect(i.expected).toContain(expected);
  });

  it('lets 0 disable the keep-alive, session expiry, the request timeout and its cap', () => {
    const { config, warnings } = valid({
      ...MINIMAL,
      server: { keepAlive: 0 },
      sessions: { idleTimeout: 0, maxAge: '0s' },
      timeouts: { request: '0', maxTotal: 0 },
    });
    expect([config.server.keepAliveMs, config.sessions.idleTimeoutMs, config.sessions.maxAgeMs]).toEqual([
      0, 0, 0,
    ]);
    expect([config.timeouts.requestMs, config.timeouts.maxTotalMs]).toEqual([0, 0]);
    expect(warnings).toEqual([]);
    expect(valid(withSection('sessions', { idleTimeout: '2h', maxAge: 0 })).warnings).toEqual([]);
  });

  it('rejects a section that is not a map', () => {
    expect(issue(withSection('timeouts', '10m'))).toEqual({
      path: 'timeouts',
      found: '"10m"',
      expected: 'a map with the keys request, resetOnProgress, maxTotal',
    });
  });

  it('warns about combinations that cannot all take effect', () => {
    const { warnings } = valid({
      ...MINIMAL,
      sessions: { idleTimeout: '2d', maxAge: '1d', maxSessions: 5, maxSessionsPerPrincipal: 10 },
      timeouts: { request: '1h', maxTotal: '10m' },
    });
    expect(warnings).toEqual([
      'sessions.idleTimeout: longer than sessions.maxAge, so sessions always end at maxAge first',
      'sessions.maxSessionsPerPrincipal: above sessions.maxSessions, which caps it',
      'timeouts.maxTotal: shorter than timeouts.request, so requests always end at maxTotal first',
    ]);
  });

  it('warns when the space alone could hold every connection of the server', () => {
    expect(valid({ ...MINIMAL, server: { maxConnections: 1000 } }).warnings).toEqual([
      'server.maxConnections: not above space.maxConnections (1000): WebSocket participants alone could hold every connection',
    ]);
    expect(valid({ ...MINIMAL, server: { maxConnections: 1001 } }).warnings).toEqual([]);
    expect(valid({ ...MINIMAL, server: { maxConnections: 10 }, space: { enabled: false } }).warnings).toEqual(
      [],
    );
  });
});

describe('unknown keys', () => {
  it.each([
    [{ ...MINIMAL, upstream: {} }, 'upstream', 'upstreams'],
    [{ ...MINIMAL, Server: {} }, 'Server', 'server'],
    [{ ...MINIMAL, logs: {} }, 'logs', undefined],
    [withSection('server', { prot: 1 }), 'server.prot', 'port'],
    [withSection('server', { hots: 'x' }), 'server.hots', 'host'],
    [withSection('server', { keepAliveMs: 1 }), 'server.keepAliveMs', 'keepAlive'],
    [withSection('server', { max_body_bytes: 1 }), 'server.max_body_bytes', 'maxBodyBytes'],
    [withSection('server', { 'allowed-origins': [] }), 'server.allowed-origins', 'allowedOrigins'],
    [withSection('server', { colour: 'blue' }), 'server.colour', undefined],
    [withSection('sessions', { idleTimeoutMs: 1 }), 'sessions.idleTimeoutMs', 'idleTimeout'],
    [withSection('resumability', { retryMs: 1 }), 'resumability.retryMs', 'retry'],
    [withSection('timeouts', { requestTimeout: '1m' }), 'timeouts.requestTimeout', 'request'],
    [withSection('trace', { enable: true }), 'trace.enable', 'enabled'],
    [withSection('logging', { levle: 'info' }), 'logging.levle', 'level'],
    [withUpstream({ comand: 'x' }), 'upstreams.everything.comand', 'command'],
    [withUpstream({ argv: [] }), 'upstreams.everything.argv', 'args'],
    [withUpstream({ environment: {} }), 'upstreams.everything.environment', 'env'],
    [withUpstream({ tranport: 'stdio' }), 'upstreams.everything.tranport', 'transport'],
    [withUpstream({ restart: { maxRestart: 3 } }), 'upstreams.everything.restart.maxRestart', 'maxRestarts'],
  ])('%#: %s', (raw, path, suggestion) => {
    const errors = invalid(raw);
    const i = errors.find((e) => e.path === path);
    expect(i?.found).toBe('an unknown key');
    expect(i?.expected).toMatch(/^one of the keys allowed (at the top level|in [a-z.]+): /);
    if (suggestion === undefined) expect(i?.expected).not.toContain('did you mean');
    else expect(i?.expected).toMatch(new RegExp(`\\(did you mean "${suggestion}"\\?\\)$`));
  });

  it('lists the allowed keys of the section', () => {
    expect(issue(withSection('server', { prot: 1 }))).toEqual({
      path: 'server.prot',
      found: 'an unknown key',
      expected:
        'one of the keys allowed in server: host, port, maxBodyBytes, maxStreamBufferBytes, maxJsonDepth, allowedHosts, allowedOrigins, responseMode, streamAfter, keepAlive, drainTimeout, headersTimeout, bodyTimeout, idleConnectionTimeout, maxConnections (did you mean "port"?)',
    });
    expect(issue({ ...MINIMAL, version: 1 }).expected).toBe(
      'one of the keys allowed at the top level: server, sessions, resumability, timeouts, upstreams, trace, logging, auth, policy, audit, space, observe',
    );
  });
});

describe('interpolation', () => {
  it('applies to any string value, and numbers, booleans, durations and sizes may come from it', () => {
    const env = {
      HOST: '0.0.0.0',
      PORT: '9999',
      LEVEL: 'warn',
      KEEP: '20s',
      BODY: '1MiB',
      ON: 'false',
      CMD: 'node',
      DIR: 'srv',
    };
    const { config } = valid(
      {
        server: {
          host: '${env:HOST}',
          port: '${env:PORT}',
          keepAlive: '${env:KEEP}',
          maxBodyBytes: '${env:BODY}',
        },
        trace: { enabled: '${env:ON}' },
        logging: { level: '${env:LEVEL}' },
        upstreams: { a: { command: '${env:CMD}', args: ['--dir=${env:DIR}'], cwd: '${env:DIR}' } },
      },
      { env, authConfigured: true },
    );
    expect(config.server).toMatchObject({
      host: '0.0.0.0',
      port: 9999,
      keepAliveMs: 20_000,
      maxBodyBytes: 1_048_576,
    });
    expect(config.trace.enabled).toBe(false);
    expect(config.logging.level).toBe('warn');
    expect(stdio(config)).toMatchObject({
      command: 'node',
      args: ['--dir=srv'],
      cwd: '/etc/switchboard/srv',
    });
  });

  it('reports a missing variable at the key that references it', () => {
    expect(issue(withSection('server', { port: '${env:SB_PORT}' }))).toEqual({
      path: 'server.port',
      found: '${env:SB_PORT}, but SB_PORT is not set',
      expected: 'the environment variable SB_PORT to be set',
    });
    const errors = invalid({
      upstreams: {
        remote: { url: 'https://x.example', headers: { Authorization: 'Bearer ${env:REMOTE_TOKEN}' } },
        local: { command: 'x', env: { KEY: '${env:A}${env:B}' } },
      },
    });
    expect(errors.map((e) => [e.path, e.found])).toEqual([
      ['upstreams.remote.headers.Authorization', '${env:REMOTE_TOKEN}, but REMOTE_TOKEN is not set'],
      ['upstreams.local.env.KEY', '${env:A}, but A is not set'],
      ['upstreams.local.env.KEY', '${env:B}, but B is not set'],
    ]);
  });

  it('rejects a malformed reference and keeps escaped ones literal', () => {
    expect(issue(withUpstream({ args: ['${HOME}'] }))).toMatchObject({
      path: 'upstreams.everything.args[0]',
      found: '"${HOME}"',
    });
    expect(stdio(valid(withUpstream({ args: ['$${HOME}'] })).config).args).toEqual(['${HOME}']);
  });

  it('reads only the environment it is given', () => {
    expect(invalid(withUpstream({ env: { P: '${env:PATH}' } }), { env: {} })[0]?.path).toBe(
      'upstreams.everything.env.P',
    );
  });
});

describe('all issues at once', () => {
  it('collects every error, not just the first', () => {
    const errors = invalid({
      server: { port: 'eighty', hots: 'x' },
      sessions: { mode: 'x' },
      upstreams: { 'bad name': { command: '' }, remote: { url: 'ftp://x' } },
      logging: { level: 'loud' },
    });
    expect(errors.map((e) => e.path)).toEqual([
      'server.hots',
      'server.port',
      'sessions.mode',
      'upstreams["bad name"]',
      'upstreams["bad name"].command',
      'upstreams.remote.url',
      'logging.level',
    ]);
  });

  it('attaches the positions the locate option gives, for keys or values', () => {
    const calls: [string, string][] = [];
    const errors = invalid(withSection('server', { prot: 1, port: -1 }), {
      locate: (path, target) => {
        calls.push([formatPath(path), target]);
        return { line: path.length, column: target === 'key' ? 3 : 9 };
      },
    });
    expect(calls).toEqual([
      ['server.prot', 'key'],
      ['server.port', 'value'],
    ]);
    expect(errors.map((e) => [e.path, e.line, e.column])).toEqual([
      ['server.prot', 2, 3],
      ['server.port', 2, 9],
    ]);
  });
});

describe('helpers', () => {
  it.each([
    [[], ''],
    [['server', 'port'], 'server.port'],
    [['upstreams', 'a', 'args', 2], 'upstreams.a.args[2]'],
    [['upstreams', 'r', 'headers', 'X.Trace'], 'upstreams.r.headers["X.Trace"]'],
  ])('formatPath(%j) is %s', (path, text) => {
    expect(formatPath(path)).toBe(text);
  });

  it.each([
    [undefined, 'nothing'],
    [null, 'an empty value'],
    ['x', '"x"'],
    ['x'.repeat(70), `"${'x'.repeat(57)}..."`],
    [3, '3'],
    [Number.POSITIVE_INFINITY, '.inf'],
    [Number.NaN, '.nan'],
    [false, 'false'],
    [[], 'an empty list'],
    [[1, 2], 'a list of 2 items'],
    [{}, 'an empty map'],
    [{ a: 1, b: 2, c: 3, d: 4 }, 'a map (a, b, c, ...)'],
    [new Map([['k', 1]]), 'a map (k)'],
  ])('describeValue(%j) is %s', (value, text) => {
    expect(describeValue(value)).toBe(text);
  });

  it('suggests only close candidates', () => {
    expect(suggest('prot', ['host', 'port'])).toBe('port');
    expect(suggest('URL', ['url', 'headers'])).toBe('url');
    expect(suggest('zzzz', ['host', 'port'])).toBeUndefined();
    expect(suggest('x', ['url'])).toBeUndefined();
    expect(suggest('version', ['server', 'sessions'])).toBeUndefined();
    expect(suggest('warning', ['debug', 'info', 'warn'])).toBe('warn');
    expect(suggest('ma', ['maxAge'])).toBeUndefined();
  });
});

describe('values from the environment', () => {
  it('shows both the value and the reference it came from when it is wrong', () => {
    const env = { PORT: 'eighty', ON: 'yes', WAIT: '5 min', MODE: 'strcit', HOST: 'not a host' };
    const errors = invalid(
      {
        server: { port: '${env:PORT}', host: '${env:HOST}', keepAlive: '${env:WAIT}' },
        sessions: { mode: '${env:MODE}' },
        trace: { enabled: '${env:ON}' },
        upstreams: { a: { command: 'x', restart: { maxRestarts: '${env:PORT}' } } },
      },
      { env },
    );
    expect(errors.map((e) => [e.path, e.found])).toEqual([
      ['server.host', '"not a host" (from "${env:HOST}")'],
      ['server.port', '"eighty" (from "${env:PORT}")'],
      ['server.keepAlive', '"5 min" (from "${env:WAIT}")'],
      ['sessions.mode', '"strcit" (from "${env:MODE}")'],
      ['upstreams.a.restart.maxRestarts', '"eighty" (from "${env:PORT}")'],
      ['trace.enabled', '"yes" (from "${env:ON}")'],
    ]);
  });
});
