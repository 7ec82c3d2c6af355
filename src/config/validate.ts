/**
 * Validation of a parsed configuration file into a {@link GatewayConfig}. It never throws and never
 * stops at the first problem: a person fixing a file wants every mistake at once, each naming the
 * key, what was found there and what is allowed. Unknown keys are errors (a misspelt key would
 * otherwise silently fall back to its default), with a "did you mean" for near misses.
 *
 * The input is what a YAML parser produces: plain objects or `Map`s (the loader uses `Map`s so that
 * upstreams named like numbers keep the file's order), lists, strings, numbers, booleans, null.
 * Strings go through `${env:NAME}` interpolation; numbers, durations, sizes and booleans are also
 * accepted as strings so that they can come from the environment (`port: ${env:PORT}`).
 */
import { resolve } from 'node:path';
import {
  Checker,
  type ConfigPath,
  describeValue,
  ENV_NAME,
  ENV_NAME_EXPECTED,
  entriesOf,
  isLoopback,
  LOG_LEVELS,
  type ValidateOptions,
  type ValidationResult,
} from './checker.js';
import { DEFAULTS, defaultSessionsMode } from './defaults.js';
import type {
  GatewayConfig,
  HttpUpstreamConfig,
  LoggingConfig,
  PoolConfig,
  RestartConfig,
  ResumabilityConfig,
  ServerConfig,
  SessionsConfig,
  StdioUpstreamConfig,
  TimeoutsConfig,
  TraceConfig,
  UpstreamConfig,
} from './types.js';
import { formatDuration } from './units.js';

export * from './checker.js';

import { MAX_JSON_DEPTH_LIMIT, MIN_JSON_DEPTH_LIMIT } from '../protocol/jsonrpc/parse.js';
import { TRACE_PAYLOAD_MODES } from '../trace/payload-mode.js';
import { readAudit } from './sections/audit.js';
import { readAuth } from './sections/auth.js';
import { readObserve } from './sections/observe.js';
import { checkApprovers, readPolicy, warnAboutPolicy } from './sections/policy.js';
import { readSpace } from './sections/space.js';

/** The keys of each section, in the order the documentation lists them. */
export const CONFIG_KEYS = {
  root: [
    'server',
    'sessions',
    'resumability',
    'timeouts',
    'upstreams',
    'trace',
    'logging',
    'auth',
    'policy',
    'audit',
    'space',
    'observe',
  ],
  server: [
    'host',
    'port',
    'maxBodyBytes',
    'maxStreamBufferBytes',
    'maxJsonDepth',
    'allowedHosts',
    'allowedOrigins',
    'responseMode',
    'streamAfter',
    'keepAlive',
    'drainTimeout',
    'headersTimeout',
    'bodyTimeout',
    'idleConnectionTimeout',
    'maxConnections',
  ],
  sessions: [
    'mode',
    'idleTimeout',
    'maxAge',
    'maxSessions',
    'maxSessionsPerPrincipal',
    'maxStreamsPerSession',
  ],
  resumability: ['maxEventsPerSession', 'maxEventAge', 'maxTotalBytes', 'retry'],
  timeouts: ['request', 'resetOnProgress', 'maxTotal'],
  upstreamCommon: ['transport', 'sharing', 'maxMessageBytes', 'restart', 'required'],
  stdio: ['command', 'args', 'cwd', 'env', 'passEnv', 'maxStdinBufferBytes', 'pool'],
  pool: ['max', 'idleTimeout', 'queueTimeout', 'maxQueued'],
  http: ['url', 'headers', 'era', 'handshakeTimeout'],
  restart: ['enabled', 'initialDelay', 'maxDelay', 'maxRestarts'],
  trace: ['enabled', 'maxPayloadBytes', 'payloads'],
  logging: ['level'],
} as const;

/**
 * Validates a parsed configuration file: applies every default, converts units, resolves
 * `${env:NAME}` from `options.env` and relative `cwd` against `options.baseDir`. Returns all
 * problems found, in the order of the sections (the loader sorts them by position).
 */
export function validateConfig(raw: unknown, options: ValidateOptions): ValidationResult {
  const c = new Checker(options);
  const root = c.section(raw, [], CONFIG_KEYS.root, 'a map of settings with at least "upstreams"');
  const auth = readAuth(c, root.get('auth'));
  const server = readServer(c, root.get('server'));
  const sessions = readSessions(
    c,
    root.get('sessions'),
    auth !== undefined || (options.authConfigured ?? false),
  );
  const resumability = readResumability(c, root.get('resumability'));
  const timeouts = readTimeouts(c, root.get('timeouts'));
  const upstreams = readUpstreams(c, root.get('upstreams'), entriesOf(raw) !== undefined);
  const trace = readTrace(c, root.get('trace'));
  const logging = readLogging(c, root.get('logging'));
  const policy = readPolicy(c, root.get('policy'));
  const audit = readAudit(c, root.get('audit'));
  const space = readSpace(c, root.get('space'), auth);
  const observe = readObserve(
    c,
    root.get('observe'),
    auth !== undefined || (options.authConfigured ?? false),
  );
  // Across sections: who may approve depends on auth, what can ask on the policy.
  checkApprovers(c, policy, auth !== undefined || (options.authConfigured ?? false));
  if (!isLoopback(server.host) && auth === undefined && !(options.authConfigured ?? false)) {
    c.issue(
      ['server', 'host'],
      JSON.stringify(server.host),
      'a loopback address (127.0.0.1, ::1 or localhost): without authentication the gateway serves this machine only (configure auth to listen elsewhere)',
    );
  }
  if (c.errors.length > 0) return { ok: false, errors: c.errors };
  const config: GatewayConfig = {
    server,
    sessions,
    resumability,
    timeouts,
    upstreams,
    trace,
    logging,
    policy,
    audit,
    space,
    observe,
    ...(auth === undefined ? {} : { auth }),
  };
  warnAboutCombinations(c, config, root);
  warnAboutPolicy(c, config);
  return { ok: true, config, warnings: c.warnings };
}

function readServer(c: Checker, raw: unknown): ServerConfig {
  const p = ['server'];
  const f = c.section(raw, p, CONFIG_KEYS.server);
  const d = DEFAULTS.server;
  return {
    host: c.host(f, p, d.host),
    port: c.integer(f, p, 'port', {
      min: 0,
      max: 65_535,
      fallback: d.port,
      expected: 'an integer from 0 to 65535 (0: any free port)',
    }),
    maxBodyBytes: c.size(f, p, 'maxBodyBytes', d.maxBodyBytes, false),
    maxStreamBufferBytes: c.size(f, p, 'maxStreamBufferBytes', d.maxStreamBufferBytes, false),
    maxJsonDepth: c.integer(f, p, 'maxJsonDepth', {
      min: MIN_JSON_DEPTH_LIMIT,
      max: MAX_JSON_DEPTH_LIMIT,
      fallback: d.maxJsonDepth,
      expected: `an integer from ${MIN_JSON_DEPTH_LIMIT} to ${MAX_JSON_DEPTH_LIMIT} (deeper JSON overflows the stack of the walkers that serialise, redact and hash messages)`,
    }),
    allowedHosts: c.list(f, p, 'allowedHosts', d.allowedHosts, (v, at) => c.allowedHost(v, at)),
    allowedOrigins: c.list(f, p, 'allowedOrigins', d.allowedOrigins, (v, at) => c.origin(v, at)),
    responseMode: c.choice(f, p, 'responseMode', ['auto', 'json', 'sse'], d.responseMode),
    streamAfterMs: c.duration(f, p, 'streamAfter', d.streamAfterMs, true),
    keepAliveMs: c.duration(f, p, 'keepAlive', d.keepAliveMs, true),
    drainTimeoutMs: c.duration(f, p, 'drainTimeout', d.drainTimeoutMs, true),
    headersTimeoutMs: c.duration(f, p, 'headersTimeout', d.headersTimeoutMs, false),
    bodyTimeoutMs: c.duration(f, p, 'bodyTimeout', d.bodyTimeoutMs, false),
    idleConnectionTimeoutMs: c.duration(f, p, 'idleConnectionTimeout', d.idleConnectionTimeoutMs, false),
    maxConnections: c.integer(f, p, 'maxConnections', { min: 1, fallback: d.maxConnections }),
  };
}

function readSessions(c: Checker, raw: unknown, authConfigured: boolean): SessionsConfig {
  const p = ['sessions'];
  const f = c.section(raw, p, CONFIG_KEYS.sessions);
  const d = DEFAULTS.sessions;
  return {
    mode: c.choice(f, p, 'mode', ['lenient', 'strict'], defaultSessionsMode(authConfigured)),
    idleTimeoutMs: c.duration(f, p, 'idleTimeout', d.idleTimeoutMs, true),
    maxAgeMs: c.duration(f, p, 'maxAge', d.maxAgeMs, true),
    maxSessions: c.integer(f, p, 'maxSessions', { min: 1, fallback: d.maxSessions }),
    maxSessionsPerPrincipal: c.integer(f, p, 'maxSessionsPerPrincipal', {
      min: 1,
      fallback: d.maxSessionsPerPrincipal,
    }),
    maxStreamsPerSession: c.integer(f, p, 'maxStreamsPerSession', {
      min: 1,
      fallback: d.maxStreamsPerSession,
    }),
  };
}

function readResumability(c: Checker, raw: unknown): ResumabilityConfig {
  const p = ['resumability'];
  const f = c.section(raw, p, CONFIG_KEYS.resumability);
  const d = DEFAULTS.resumability;
  return {
    maxEventsPerSession: c.integer(f, p, 'maxEventsPerSession', { min: 1, fallback: d.maxEventsPerSession }),
    maxEventAgeMs: c.duration(f, p, 'maxEventAge', d.maxEventAgeMs, false),
    maxTotalBytes: readEventBudget(c, f, p),
    retryMs: c.duration(f, p, 'retry', d.retryMs, false),
  };
}

/**
 * The bounds of `resumability.maxTotalBytes`: below 1 KiB not even a few events fit (every one
 * would be evicted as it is stored); above 4 GiB the budget no longer bounds anything a Node heap
 * can hold.
 */
export const EVENT_BUDGET_BOUNDS = { min: 1024, max: 4 * 1024 ** 3 } as const;

function readEventBudget(c: Checker, f: Map<string, unknown>, p: ConfigPath): number {
  const fallback = DEFAULTS.resumability.maxTotalBytes;
  const bytes = c.size(f, p, 'maxTotalBytes', fallback, false);
  if (bytes >= EVENT_BUDGET_BOUNDS.min && bytes <= EVENT_BUDGET_BOUNDS.max) return bytes;
  c.issue([...p, 'maxTotalBytes'], describeValue(f.get('maxTotalBytes')), 'a size from 1KiB to 4GiB');
  return fallback;
}

function readTimeouts(c: Checker, raw: unknown): TimeoutsConfig {
  const p = ['timeouts'];
  const f = c.section(raw, p, CONFIG_KEYS.timeouts);
  const d = DEFAULTS.timeouts;
  return {
    requestMs: c.duration(f, p, 'request', d.requestMs, true),
    resetOnProgress: c.boolean(f, p, 'resetOnProgress', d.resetOnProgress),
    maxTotalMs: c.duration(f, p, 'maxTotal', d.maxTotalMs, true),
  };
}

function readLogging(c: Checker, raw: unknown): LoggingConfig {
  const p = ['logging'];
  const f = c.section(raw, p, CONFIG_KEYS.logging);
  return { level: c.choice(f, p, 'level', LOG_LEVELS, DEFAULTS.logging.level) };
}

function readTrace(c: Checker, raw: unknown): TraceConfig {
  const p = ['trace'];
  const f = c.section(raw, p, CONFIG_KEYS.trace);
  return {
    enabled: c.boolean(f, p, 'enabled', DEFAULTS.trace.enabled),
    maxPayloadBytes: c.size(f, p, 'maxPayloadBytes', DEFAULTS.trace.maxPayloadBytes, false),
    payloads: c.choice(f, p, 'payloads', TRACE_PAYLOAD_MODES, DEFAULTS.trace.payloads),
  };
}

const UPSTREAMS_EXPECTED =
  'a map from upstream name to its settings, e.g. upstreams: { everything: { transport: stdio, command: npx } }';

function readUpstreams(c: Checker, raw: unknown, reportMissing: boolean): UpstreamConfig[] {
  const p = ['upstreams'];
  if (raw === undefined) {
    if (reportMissing) c.issue(p, 'nothing', `at least one upstream: ${UPSTREAMS_EXPECTED}`, 'key');
    return [];
  }
  const entries = entriesOf(raw);
  if (entries === undefined) {
    c.issue(p, describeValue(raw), UPSTREAMS_EXPECTED);
    return [];
  }
  if (entries.length === 0) {
    c.issue(p, describeValue(raw), `at least one upstream: ${UPSTREAMS_EXPECTED}`);
    return [];
  }
  const out: UpstreamConfig[] = [];
  for (const [name, value] of entries) {
    const upstream = readUpstream(c, name, value);
    if (upstream) out.push(upstream);
  }
  return out;
}

function readUpstream(c: Checker, name: string, raw: unknown): UpstreamConfig | undefined {
  const p = ['upstreams', name];
  c.upstreamName(name, p);
  const entries = entriesOf(raw);
  if (entries === undefined) {
    c.issue(
      p,
      describeValue(raw),
      'the upstream\'s settings: a map with "transport" and "command" (stdio) or "url" (http)',
    );
    return undefined;
  }
  const keys = new Map(entries);
  let transport: 'stdio' | 'http' | undefined;
  if (keys.has('transport')) {
    transport = c.choice(keys, p, 'transport', ['stdio', 'http'] as const, undefined);
  } else if (keys.has('command') !== keys.has('url')) {
    transport = keys.has('command') ? 'stdio' : 'http';
  } else {
    c.issue(
      [...p, 'transport'],
      'nothing',
      'stdio or http (or a "command" for stdio, a "url" for http)',
      'key',
    );
  }
  const own = transport === undefined ? [...CONFIG_KEYS.stdio, ...CONFIG_KEYS.http] : CONFIG_KEYS[transport];
  const other = transport === 'stdio' ? CONFIG_KEYS.http : transport === 'http' ? CONFIG_KEYS.stdio : [];
  const f = c.section(raw, p, [...CONFIG_KEYS.upstreamCommon, ...own], undefined, (key) =>
    (other as readonly string[]).includes(key)
      ? `${key} belongs to ${transport === 'stdio' ? 'http' : 'stdio'} upstreams; this one has transport ${transport}`
      : undefined,
  );
  const d = DEFAULTS.upstream;
  const common = {
    name,
    sharing: c.choice(f, p, 'sharing', ['shared', 'per-session', 'pooled'] as const, d.sharing),
    maxMessageBytes: c.size(f, p, 'maxMessageBytes', d.maxMessageBytes, false),
    required: c.boolean(f, p, 'required', d.required),
    restart: readRestart(c, f.get('restart'), [...p, 'restart']),
  };
  if (transport === 'stdio') {
    const cwd = c.optionalText(f, p, 'cwd');
    const stdio: StdioUpstreamConfig = {
      ...common,
      transport,
      command: c.requiredText(f, p, 'command', 'the program to run, e.g. npx or /usr/local/bin/my-server'),
      args: c.list(f, p, 'args', [], (v, at) => c.text(v, at, 'a string (quote numbers: "8080")')),
      ...(cwd === undefined ? {} : { cwd: resolve(c.options.baseDir, cwd) }),
      env: c.record(
        f,
        p,
        'env',
        (n) => (ENV_NAME.test(n) ? undefined : ENV_NAME_EXPECTED),
        (v, at) => c.envValue(v, at),
      ),
      passEnv: c.list(f, p, 'passEnv', [], (v, at) => c.envName(v, at)),
      maxStdinBufferBytes: c.size(f, p, 'maxStdinBufferBytes', d.maxStdinBufferBytes, false),
      ...(common.sharing === 'pooled' ? { pool: readPool(c, f.get('pool'), [...p, 'pool']) } : {}),
    };
    if (common.sharing !== 'pooled' && f.has('pool'))
      c.warn(
        [...p, 'pool'],
        `ignored: it applies to sharing: pooled, and this upstream is ${common.sharing}`,
      );
    return stdio;
  }
  if (transport === 'http' && common.sharing === 'pooled') {
    // An HTTP upstream says which call each of its requests belongs to (the request's stream), so
    // a shared connection already attributes them: a pool would only multiply sessions upstream.
    c.issue(
      [...p, 'sharing'],
      'pooled',
      'shared or per-session: pooled is for stdio upstreams (an HTTP upstream tells which call its requests belong to, so shared already attributes them)',
    );
  }
  if (transport === 'http') {
    const http: HttpUpstreamConfig = {
      ...common,
      transport,
      url: c.url(f, p),
      headers: c.headers(f, p),
      era: c.choice(f, p, 'era', ['auto', 'modern', 'legacy', 'dual'] as const, 'auto'),
      handshakeTimeoutMs: readHandshakeTimeout(c, f, p),
    };
    return http;
  }
  return undefined;
}

/** The longest `handshakeTimeout` accepted: a handshake slower than a call's deadline is a fault. */
export const MAX_HANDSHAKE_TIMEOUT_MS = 10 * 60_000;

/** `upstreams.<name>.handshakeTimeout`: a duration above 0, at most `MAX_HANDSHAKE_TIMEOUT_MS`. */
function readHandshakeTimeout(c: Checker, f: Map<string, unknown>, p: ConfigPath): number {
  const fallback = DEFAULTS.upstream.handshakeTimeoutMs;
  const ms = c.duration(f, p, 'handshakeTimeout', fallback, false);
  if (ms <= MAX_HANDSHAKE_TIMEOUT_MS) return ms;
  c.issue([...p, 'handshakeTimeout'], describeValue(f.get('handshakeTimeout')), 'a duration of at most 10m');
  return fallback;
}

/** `upstreams.<name>.pool`: the bounds of a pooled upstream. */
function readPool(c: Checker, raw: unknown, p: ConfigPath): PoolConfig {
  const f = c.section(raw, p, CONFIG_KEYS.pool);
  const d = DEFAULTS.upstream.pool;
  return {
    max: c.integer(f, p, 'max', {
      min: 1,
      max: 64,
      fallback: d.max,
      expected: 'an integer from 1 to 64 (the most children the pool runs at once)',
    }),
    idleTimeoutMs: c.duration(f, p, 'idleTimeout', d.idleTimeoutMs, false),
    queueTimeoutMs: c.duration(f, p, 'queueTimeout', d.queueTimeoutMs, false),
    maxQueued: c.integer(f, p, 'maxQueued', { min: 0, fallback: d.maxQueued }),
  };
}

function readRestart(c: Checker, raw: unknown, p: ConfigPath): RestartConfig {
  const f = c.section(raw, p, CONFIG_KEYS.restart);
  const d = DEFAULTS.upstream.restart;
  const before = c.errors.length;
  const initialDelayMs = c.duration(f, p, 'initialDelay', d.initialDelayMs, false);
  const maxDelayMs = c.duration(f, p, 'maxDelay', d.maxDelayMs, false);
  if (maxDelayMs < initialDelayMs && c.errors.length === before) {
    const why = 'the backoff doubles from initialDelay up to maxDelay';
    if (f.has('maxDelay')) {
      c.issue(
        [...p, 'maxDelay'],
        `${describeValue(f.get('maxDelay'))}, shorter than initialDelay (${formatDuration(initialDelayMs)})`,
        `a maxDelay at least as long as initialDelay: ${why}`,
      );
    } else {
      c.issue(
        [...p, 'initialDelay'],
        `${describeValue(f.get('initialDelay'))}, longer than the default maxDelay (${formatDuration(maxDelayMs)})`,
        `an initialDelay no longer than maxDelay (set maxDelay as well): ${why}`,
      );
    }
  }
  return {
    enabled: c.boolean(f, p, 'enabled', d.enabled),
    initialDelayMs,
    maxDelayMs,
    maxRestarts: c.maxRestarts(f, p, d.maxRestarts),
  };
}

function warnAboutCombinations(c: Checker, config: GatewayConfig, root: Map<string, unknown>): void {
  const { sessions, timeouts } = config;
  if (sessions.maxAgeMs > 0 && sessions.idleTimeoutMs > sessions.maxAgeMs) {
    c.warn(
      ['sessions', 'idleTimeout'],
      'longer than sessions.maxAge, so sessions always end at maxAge first',
    );
  }
  if (sessions.maxSessionsPerPrincipal > sessions.maxSessions) {
    c.warn(['sessions', 'maxSessionsPerPrincipal'], 'above sessions.maxSessions, which caps it');
  }
  if (config.space.enabled && config.space.maxConnections >= config.server.maxConnections) {
    c.warn(
      ['server', 'maxConnections'],
      `not above space.maxConnections (${config.space.maxConnections}): WebSocket participants alone could hold every connection`,
    );
  }
  if (timeouts.requestMs > 0 && timeouts.maxTotalMs > 0 && timeouts.maxTotalMs < timeouts.requestMs) {
    c.warn(
      ['timeouts', 'maxTotal'],
      'shorter than timeouts.request, so requests always end at maxTotal first',
    );
  }
  const explicitMode = entriesOf(root.get('sessions'))?.some(([k]) => k === 'mode') ?? false;
  if (
    (config.auth !== undefined || c.options.authConfigured) &&
    explicitMode &&
    sessions.mode === 'lenient'
  ) {
    c.warn(
      ['sessions', 'mode'],
      'lenient although authentication is configured: clients may pick their own session ids and send requests without one',
    );
  }
  for (const upstream of config.upstreams) {
    if (upstream.transport !== 'http' || Object.keys(upstream.headers).length === 0) continue;
    const url = new URL(upstream.url);
    if (url.protocol === 'http:' && !isLoopback(url.hostname.replace(/^\[|\]$/g, ''))) {
      c.warn(
        ['upstreams', upstream.name, 'headers'],
        `sent unencrypted to ${url.host} (the URL is http://, not https://)`,
      );
    }
  }
}
