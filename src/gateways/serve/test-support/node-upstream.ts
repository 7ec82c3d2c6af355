/**
 * The fixture the upstream manager's tests share: a stdio upstream named `up` that runs a
 * `node -e` script, and the supervised child the manager starts for it (wired as `ServeGateway`
 * wires one, with a test's backoff and a short shutdown grace).
 */
import { DEFAULTS } from '../../../config/defaults.js';
import type { PoolConfig, SharingMode, StdioUpstreamConfig } from '../../../config/types.js';
import type { LinkHost } from '../../../core/ports.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import { childEnvironment } from '../../../transports/stdio/child-env.js';
import { SupervisedUpstream } from '../../../transports/stdio/supervised-upstream.js';
import type { LinkFactoryParams } from '../upstream-manager.js';

/** How the tests' upstream differs from one test to the next. */
export interface NodeUpstreamOptions {
  /** How sessions share it. */
  readonly sharing: SharingMode;
  /** The pool's bounds, for `sharing: pooled`. */
  readonly pool?: PoolConfig;
  /** Arguments after the script (`process.argv[1]` onwards in it). */
  readonly scriptArgs?: readonly string[];
  /** The first restart's delay; 300 ms unless given. */
  readonly initialDelayMs?: number;
  /** Restarts before it is down for good; no limit unless given. */
  readonly maxRestarts?: number;
}

/** The config of upstream `up`: `node -e script`, 64 KiB messages, restarting with backoff. */
export function nodeUpstreamConfig(script: string, options: NodeUpstreamOptions): StdioUpstreamConfig {
  return {
    name: 'up',
    transport: 'stdio',
    sharing: options.sharing,
    ...(options.pool === undefined ? {} : { pool: options.pool }),
    maxMessageBytes: 64 * 1024,
    required: false,
    maxStdinBufferBytes: DEFAULTS.upstream.maxStdinBufferBytes,
    command: process.execPath,
    args: ['-e', script, ...(options.scriptArgs ?? [])],
    env: {},
    passEnv: [],
    restart: {
      enabled: true,
      initialDelayMs: options.initialDelayMs ?? 300,
      maxDelayMs: 10_000,
      maxRestarts: options.maxRestarts ?? Number.POSITIVE_INFINITY,
    },
  };
}

/**
 * The supervised child the manager's `makeLink` starts for `config` (`params` from the manager),
 * attached to `host`: the manager's observed host (`params.host`) or, where a test wants it, the
 * router itself.
 */
export function supervisedNodeChild(
  config: StdioUpstreamConfig,
  params: LinkFactoryParams,
  host: LinkHost,
  logger: Logger,
  metrics: Metrics,
): SupervisedUpstream {
  return new SupervisedUpstream({
    router: host,
    link: params.link,
    child: {
      name: config.name,
      command: config.command,
      args: config.args,
      env: childEnvironment({}),
      maxMessageBytes: config.maxMessageBytes,
      shutdownGraceMs: 500,
    },
    logger,
    metrics,
    restart: true,
    maxRestarts: config.restart.maxRestarts,
    backoff: { initialMs: config.restart.initialDelayMs, maxMs: 10_000, stableMs: 60_000 },
    initialize: params.initialize,
    onstop: params.onstop,
  });
}
