/**
 * Default values of every optional configuration key, and the built-in configuration that
 * `switchboard serve` uses without `--config`: the project's demo upstreams, so that the README's
 * first command serves a working gateway on a fresh machine with nothing to write first.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { DEFAULT_MAX_JSON_DEPTH } from '../protocol/jsonrpc/parse.js';
import { AUDIT_DEFAULTS } from './sections/audit.js';
import { OBSERVE_DEFAULTS } from './sections/observe.js';
import { POLICY_DEFAULTS } from './sections/policy.js';
import { SPACE_DEFAULTS } from './sections/space.js';
import type {
  GatewayConfig,
  LoggingConfig,
  PoolConfig,
  RestartConfig,
  ResumabilityConfig,
  ServerConfig,
  SessionsConfig,
  SharingMode,
  StdioUpstreamConfig,
  TimeoutsConfig,
  TraceConfig,
} from './types.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * The value of every key that may be left out, in the validated units (milliseconds, bytes).
 * `sessions.mode` is absent: it depends on whether authentication is configured (see
 * {@link defaultSessionsMode}). `upstream` holds the per-upstream defaults.
 */
export const DEFAULTS: {
  readonly server: ServerConfig;
  readonly sessions: Omit<SessionsConfig, 'mode'>;
  readonly resumability: ResumabilityConfig;
  readonly timeouts: TimeoutsConfig;
  readonly upstream: {
    readonly sharing: SharingMode;
    readonly maxMessageBytes: number;
    /** Whether `/ready` needs this upstream (see `UpstreamCommon.required`). */
    readonly required: boolean;
    readonly restart: RestartConfig;
    /** stdio upstreams only. */
    readonly maxStdinBufferBytes: number;
    /** `sharing: pooled` (stdio) only. */
    readonly pool: PoolConfig;
    /** http upstreams only: the longest wait for each handshake step (`HttpUpstreamConfig`). */
    readonly handshakeTimeoutMs: number;
  };
  readonly trace: TraceConfig;
  readonly logging: LoggingConfig;
} = deepFreeze({
  server: {
    host: '127.0.0.1',
    port: 8787,
    maxBodyBytes: 4 * MiB,
    maxStreamBufferBytes: 4 * MiB,
    maxJsonDepth: DEFAULT_MAX_JSON_DEPTH,
    allowedHosts: [],
    allowedOrigins: [],
    responseMode: 'auto',
    streamAfterMs: 100,
    keepAliveMs: 15 * SECOND,
    drainTimeoutMs: 5 * SECOND,
    headersTimeoutMs: 20 * SECOND,
    bodyTimeoutMs: 30 * SECOND,
    idleConnectionTimeoutMs: 65 * SECOND,
    maxConnections: 2048,
  },
  sessions: {
    idleTimeoutMs: 30 * MINUTE,
    maxAgeMs: 24 * HOUR,
    maxSessions: 10_000,
    maxSessionsPerPrincipal: 1000,
    maxStreamsPerSession: 16,
  },
  resumability: {
    maxEventsPerSession: 1000,
    maxEventAgeMs: 5 * MINUTE,
    maxTotalBytes: 64 * MiB,
    retryMs: SECOND,
  },
  timeouts: { requestMs: 10 * MINUTE, resetOnProgress: true, maxTotalMs: HOUR },
  upstream: {
    sharing: 'shared',
    maxMessageBytes: 8 * MiB,
    required: false,
    restart: {
      enabled: true,
      initialDelayMs: 250,
      maxDelayMs: 30 * SECOND,
      maxRestarts: Number.POSITIVE_INFINITY,
    },
    maxStdinBufferBytes: 4 * MiB,
    pool: { max: 8, idleTimeoutMs: MINUTE, queueTimeoutMs: 30 * SECOND, maxQueued: 256 },
    handshakeTimeoutMs: 30 * SECOND,
  },
  trace: { enabled: true, maxPayloadBytes: MiB, payloads: 'redacted' },
  logging: { level: 'info' },
});

/**
 * `sessions.mode` when the file does not set it: `strict` (sessions bound to the authenticated
 * principal) once authentication is configured, `lenient` before, since without authentication
 * there is no principal to bind to.
 */
export function defaultSessionsMode(authConfigured: boolean): SessionsConfig['mode'] {
  return authConfigured ? 'strict' : 'lenient';
}

/** The npm packages of the built-in upstreams. */
export const DEMO_PACKAGES = {
  everything: '@modelcontextprotocol/server-everything',
  memory: '@modelcontextprotocol/server-memory',
} as const;

/** Resolves a module specifier to a file path, like `require.resolve`; throws when not installed. */
export type ResolvePackage = (specifier: string) => string;

/**
 * The built-in configuration: every default, and two stdio upstreams run with this Node binary
 * (`process.execPath`, so no `npx` and no network):
 * - `everything`: `@modelcontextprotocol/server-everything` (a dependency) with the argument
 *   `stdio`, pooled: its tools ask the client for sampling and elicitation, which a child shared by
 *   several clients cannot say the session of; it keeps nothing across clients that matters, so
 *   a pool of children, each serving one session's calls at a time, is safe;
 * - `memory`: `@modelcontextprotocol/server-memory`, shared, keeping its knowledge graph in
 *   `<dataDir>/memory.jsonl` (`MEMORY_FILE_PATH`). Left out when the package is not installed.
 *
 * The caller creates `dataDir`. `resolvePackage` is for tests; it defaults to this module's
 * `require.resolve`. Throws `SB_CONFIG_NOT_FOUND` when server-everything is missing (a broken
 * install): there is then no configuration to serve without `--config`.
 */
export function defaultConfig(options: {
  dataDir: string;
  authConfigured?: boolean;
  resolvePackage?: ResolvePackage;
}): GatewayConfig {
  const resolvePackage = options.resolvePackage ?? createRequire(import.meta.url).resolve;
  const everything = packageBin(DEMO_PACKAGES.everything, resolvePackage);
  if (everything === undefined) {
    throw new SwitchboardError(
      SbErrorCode.ConfigNotFound,
      `the built-in configuration needs ${DEMO_PACKAGES.everything}, which is not installed; ` +
        'reinstall switchboard or pass --config FILE',
      { details: { package: DEMO_PACKAGES.everything } },
    );
  }
  const memory = packageBin(DEMO_PACKAGES.memory, resolvePackage);
  const common = {
    maxMessageBytes: DEFAULTS.upstream.maxMessageBytes,
    required: DEFAULTS.upstream.required,
  } as const;
  const upstreams: StdioUpstreamConfig[] = [
    {
      name: 'everything',
      transport: 'stdio',
      command: process.execPath,
      args: [everything, 'stdio'],
      sharing: 'pooled',
      pool: DEFAULTS.upstream.pool,
      env: {},
      passEnv: [],
      maxStdinBufferBytes: DEFAULTS.upstream.maxStdinBufferBytes,
      restart: DEFAULTS.upstream.restart,
      ...common,
    },
  ];
  if (memory !== undefined) {
    upstreams.push({
      name: 'memory',
      transport: 'stdio',
      command: process.execPath,
      args: [memory],
      // One knowledge graph for every client: children of a pool would each hold their own copy.
      sharing: 'shared',
      env: { MEMORY_FILE_PATH: join(resolve(options.dataDir), 'memory.jsonl') },
      passEnv: [],
      maxStdinBufferBytes: DEFAULTS.upstream.maxStdinBufferBytes,
      restart: DEFAULTS.upstream.restart,
      ...common,
    });
  }
  return {
    server: DEFAULTS.server,
    sessions: { ...DEFAULTS.sessions, mode: defaultSessionsMode(options.authConfigured ?? false) },
    resumability: DEFAULTS.resumability,
    timeouts: DEFAULTS.timeouts,
    upstreams,
    trace: DEFAULTS.trace,
    logging: DEFAULTS.logging,
    policy: POLICY_DEFAULTS,
    audit: AUDIT_DEFAULTS,
    space: SPACE_DEFAULTS,
    observe: OBSERVE_DEFAULTS,
  };
}

/**
 * The absolute path of a package's executable entry (its `bin`, else `main`, else `index.js`),
 * or undefined when the package is not installed.
 */
function packageBin(name: string, resolvePackage: ResolvePackage): string | undefined {
  let manifestPath: string;
  try {
    manifestPath = resolvePackage(`${name}/package.json`);
  } catch {
    return undefined;
  }
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: unknown; main?: unknown };
    const bin = manifest.bin;
    const entry =
      typeof bin === 'string'
        ? bin
        : typeof bin === 'object' && bin !== null
          ? Object.values(bin).find((v): v is string => typeof v === 'string')
          : typeof manifest.main === 'string'
            ? manifest.main
            : 'index.js';
    return resolve(dirname(manifestPath), entry ?? 'index.js');
  } catch {
    return undefined;
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
