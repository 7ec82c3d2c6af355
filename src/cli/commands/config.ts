/**
 * `switchboard config check|show`: validate a configuration file without starting the gateway,
 * and print the configuration a `serve` would run with. Both load files exactly as `serve` does
 * (same validation, `${env:NAME}` from this process's environment).
 *
 * Exit codes: 0 valid, 1 invalid (every issue on stderr, one per line, with line and column),
 * 2 the file is missing or unreadable, or bad usage. Secrets never reach the output: the values of
 * upstream `env` and `headers`, of `audit.anchor.headers` and of `observe.otel.headers` are printed as `***`.
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { defaultConfig } from '../../config/defaults.js';
import { escapeInterpolation } from '../../config/env-interpolation.js';
import { formatConfigIssues, type LoadedConfig, loadConfigFile } from '../../config/load.js';
import type { SpaceConfig } from '../../config/sections/space.js';
import type {
  AuditConfig,
  AuthConfig,
  GatewayConfig,
  OtelConfig,
  PolicyConfig,
  UpstreamConfig,
} from '../../config/types.js';
import { formatDuration, formatSize } from '../../config/units.js';
import type { ConfigIssue } from '../../config/validate.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import type { CapabilityPattern, ValuePattern } from '../../space/capability-pattern.js';
import { type Io, ioOf } from '../command-io.js';
import { dataDirOf } from '../global-options.js';
import { addExamples } from '../help-text.js';

/**
 * What replaces secret values (of upstream `env` and `headers`, of `audit.anchor.headers`) in
 * printed configurations.
 */
export const REDACTED = '***';

/**
 * Adds `switchboard config check <file> [--json]` and `switchboard config show [--config FILE]`.
 * `check --json` prints one JSON document on stdout: `{ ok: true, file, warnings, config }` (the
 * normalized, redacted configuration; `maxRestarts` forever as the string ".inf") or
 * `{ ok: false, file, issues }` / `{ ok: false, file, error: { code, message } }`.
 */
export function registerConfigCommands(program: Command): void {
  const config = program
    .command('config')
    .description('validate a configuration file, or print the configuration the gateway would use');

  const check = config
    .command('check')
    .description('validate a configuration file without starting the gateway')
    .argument('<file>', 'the YAML configuration file')
    .option('--json', 'print the result as JSON: the issues, or the normalized configuration')
    .action(async (file: string, options: { json?: boolean }, command: Command) => {
      const io = ioOf(command);
      const loaded = await load(file, io, options.json === true);
      if (loaded === undefined) return;
      if (options.json) {
        io.out(
          `${toJson({ ok: true, file: loaded.file, warnings: loaded.warnings, config: redact(loaded.config) })}\n`,
        );
        return;
      }
      io.out(`${summary(loaded.config)}\n`);
      for (const warning of loaded.warnings) io.err(`${file}: warning: ${warning}\n`);
    });

  const show = config
    .command('show')
    .description('print the effective configuration as YAML: every default applied, secrets redacted')
    .option(
      '--config <file>',
      'the configuration file (default: the built-in configuration serve uses without --config)',
    )
    .option(
      '--data-dir <dir>',
      'where the gateway keeps its data (env SWITCHBOARD_DATA_DIR; default the per-user state directory, e.g. ~/.local/state/switchboard)',
    )
    .action(async (options: { config?: string }, command: Command) => {
      const io = ioOf(command);
      let gateway: GatewayConfig;
      let source: string;
      if (options.config === undefined) {
        try {
          gateway = defaultConfig({ dataDir: dataDirOf(command) });
        } catch (error) {
          io.err(`switchboard: ${error instanceof Error ? error.message : String(error)}\n`);
          process.exitCode = 2;
          return;
        }
        source = 'the built-in configuration (serve without --config)';
      } else {
        const loaded = await load(options.config, io, false);
        if (loaded === undefined) return;
        for (const warning of loaded.warnings) io.err(`${options.config}: warning: ${warning}\n`);
        gateway = loaded.config;
        source = loaded.file;
      }
      io.out(`# Effective configuration of ${source}\n`);
      io.out(
        `# Every default applied; values of upstream env and headers, of audit.anchor.headers and observe.otel.headers and of URL query parameters shown as ${REDACTED}.\n`,
      );
      io.out(stringify(toFileShape(redact(gateway)), { lineWidth: 0 }));
    });
  addExamples(check, [
    'switchboard config check switchboard.yaml',
    'switchboard config check switchboard.yaml --json',
  ]);
  addExamples(show, ['switchboard config show', 'switchboard config show --config switchboard.yaml']);
}

/** Loads `file`, reporting failures (exit 1 invalid, 2 unreadable); undefined when it failed. */
async function load(file: string, io: Io, json: boolean): Promise<LoadedConfig | undefined> {
  try {
    return await loadConfigFile(file, { env: process.env });
  } catch (error) {
    if (!(error instanceof SwitchboardError)) throw error;
    if (error.code === SbErrorCode.ConfigInvalid) {
      const issues = (error.details?.issues ?? []) as ConfigIssue[];
      if (json) io.out(`${toJson({ ok: false, file: error.details?.file, issues })}\n`);
      else io.err(`${formatConfigIssues(issues, file)}\n`);
      process.exitCode = 1;
    } else {
      if (json) {
        io.out(
          `${toJson({ ok: false, file: error.details?.file, error: { code: error.code, message: error.message } })}\n`,
        );
      }
      io.err(`switchboard: ${error.message}\n`);
      process.exitCode = 2;
    }
    return undefined;
  }
}

/**
 * One line for a valid configuration: `ok: 2 upstreams (everything: stdio shared, remote: http
 * per-session), listening on 127.0.0.1:8787`.
 */
export function summary(config: GatewayConfig): string {
  const n = config.upstreams.length;
  const list = config.upstreams.map((u) => `${u.name}: ${u.transport} ${u.sharing}`).join(', ');
  const { host, port } = config.server;
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return `ok: ${n} upstream${n === 1 ? '' : 's'} (${list}), listening on ${address}`;
}

/** A URL's password (`scheme://user:password@host`), up to the `@`. */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^\s:@/?#]*:)[^\s/?#@]*(?=@)/i;
/** One query parameter's value, after its `name=`. */
const QUERY_VALUE = /([?&][^=&#]*=)[^&#]*/g;

/**
 * `url` with its password and every query parameter's value replaced by {@link REDACTED} (API
 * keys often travel as `?key=...`); the rest is left exactly as written, so the result validates
 * to itself.
 */
export function hideUrlSecrets(url: string): string {
  const hash = url.indexOf('#');
  const head = hash === -1 ? url : url.slice(0, hash);
  const tail = hash === -1 ? '' : url.slice(hash);
  return head.replace(URL_PASSWORD, `$1${REDACTED}`).replace(QUERY_VALUE, `$1${REDACTED}`) + tail;
}

/**
 * The configuration with every secret replaced by {@link REDACTED}: the values of upstream `env`
 * and `headers`, of `audit.anchor.headers` and of `observe.otel.headers` (names are kept), and the passwords and query values
 * of the URLs (HTTP upstreams, the anchor, the JWKS). Token hashes (`auth.tokens`,
 * `space.participants.*.tokens`) are kept: they are what the file holds, not the tokens.
 */
export function redact(config: GatewayConfig): GatewayConfig {
  const hide = (record: Readonly<Record<string, string>>) =>
    Object.fromEntries(Object.keys(record).map((key) => [key, REDACTED]));
  const { anchor } = config.audit;
  const { auth } = config;
  return {
    ...config,
    upstreams: config.upstreams.map(
      (u): UpstreamConfig =>
        u.transport === 'stdio'
          ? { ...u, env: hide(u.env) }
          : { ...u, url: hideUrlSecrets(u.url), headers: hide(u.headers) },
    ),
    audit:
      anchor === undefined
        ? config.audit
        : {
            ...config.audit,
            anchor: {
              ...anchor,
              ...(anchor.url === undefined ? {} : { url: hideUrlSecrets(anchor.url) }),
              headers: hide(anchor.headers),
            },
          },
    ...(auth?.jwt === undefined
      ? {}
      : { auth: { ...auth, jwt: { ...auth.jwt, jwks: hideUrlSecrets(auth.jwt.jwks) } } }),
    observe: {
      ...config.observe,
      otel: {
        ...config.observe.otel,
        ...(config.observe.otel.endpoint === undefined
          ? {}
          : { endpoint: hideUrlSecrets(config.observe.otel.endpoint) }),
        headers: hide(config.observe.otel.headers),
      },
    },
  };
}

/** Durations as the file writes them (`15s`; 0 as the number 0). */
const dur = (ms: number): string | number => (ms === 0 ? 0 : formatDuration(ms));
/** Sizes as the file writes them (`4MiB`; 0 as the number 0). */
const size = (bytes: number): string | number => (bytes === 0 ? 0 : formatSize(bytes));
/** A literal string where `${env:NAME}` interpolation applies. */
const e = escapeInterpolation;
const escapeRecord = (record: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, e(v)]));

/**
 * The configuration in the file's shape: the file's key names, human units, upstreams and space
 * participants as maps by name, literal `${` escaped, optional keys that are unset left out.
 * Validating the result (with the same base directory) gives the configuration back.
 */
export function toFileShape(config: GatewayConfig): Record<string, unknown> {
  const { server, sessions, resumability, timeouts, trace, logging } = config;
  // A Map keeps the declaration order even for upstreams named like numbers.
  const upstreams = new Map(
    config.upstreams.map((u) => {
      const specific =
        u.transport === 'stdio'
          ? {
              command: e(u.command),
              args: u.args.map(e),
              ...(u.cwd === undefined ? {} : { cwd: e(u.cwd) }),
              env: escapeRecord(u.env),
              passEnv: [...u.passEnv],
              maxStdinBufferBytes: size(u.maxStdinBufferBytes),
              ...(u.pool === undefined
                ? {}
                : {
                    pool: {
                      max: u.pool.max,
                      idleTimeout: dur(u.pool.idleTimeoutMs),
                      queueTimeout: dur(u.pool.queueTimeoutMs),
                      maxQueued: u.pool.maxQueued,
                    },
                  }),
            }
          : { url: e(u.url), headers: escapeRecord(u.headers), era: u.era };
      const restart = {
        enabled: u.restart.enabled,
        initialDelay: dur(u.restart.initialDelayMs),
        maxDelay: dur(u.restart.maxDelayMs),
        maxRestarts: u.restart.maxRestarts,
      };
      return [
        u.name as string,
        {
          transport: u.transport,
          ...specific,
          sharing: u.sharing,
          maxMessageBytes: size(u.maxMessageBytes),
          required: u.required,
          restart,
        },
      ];
    }),
  );
  return {
    server: {
      host: e(server.host),
      port: server.port,
      maxBodyBytes: size(server.maxBodyBytes),
      maxStreamBufferBytes: size(server.maxStreamBufferBytes),
      maxJsonDepth: server.maxJsonDepth,
      allowedHosts: server.allowedHosts.map(e),
      allowedOrigins: server.allowedOrigins.map(e),
      responseMode: server.responseMode,
      streamAfter: dur(server.streamAfterMs),
      keepAlive: dur(server.keepAliveMs),
      drainTimeout: dur(server.drainTimeoutMs),
    },
    sessions: {
      mode: sessions.mode,
      idleTimeout: dur(sessions.idleTimeoutMs),
      maxAge: dur(sessions.maxAgeMs),
      maxSessions: sessions.maxSessions,
      maxSessionsPerPrincipal: sessions.maxSessionsPerPrincipal,
      maxStreamsPerSession: sessions.maxStreamsPerSession,
    },
    resumability: {
      maxEventsPerSession: resumability.maxEventsPerSession,
      maxEventAge: dur(resumability.maxEventAgeMs),
      retry: dur(resumability.retryMs),
    },
    timeouts: {
      request: dur(timeouts.requestMs),
      resetOnProgress: timeouts.resetOnProgress,
      maxTotal: dur(timeouts.maxTotalMs),
    },
    upstreams,
    trace: { enabled: trace.enabled, maxPayloadBytes: size(trace.maxPayloadBytes), payloads: trace.payloads },
    logging: { level: logging.level },
    // Absent means no authentication: leave it out rather than print an (invalid) empty section.
    ...(config.auth === undefined ? {} : { auth: authShape(config.auth) }),
    policy: policyShape(config.policy),
    audit: auditShape(config.audit),
    space: spaceShape(config.space),
    observe: {
      metrics: {
        enabled: config.observe.metrics.enabled,
        role: config.observe.metrics.role,
        ...(config.observe.metrics.listen === undefined
          ? {}
          : { listen: listenText(config.observe.metrics.listen) }),
        principalLabel: config.observe.metrics.principalLabel,
        maxPrincipals: config.observe.metrics.maxPrincipals,
      },
      otel: otelShape(config.observe.otel),
    },
  };
}

/** `observe.otel`: what the file set (the rest is left to the `OTEL_*` environment at start). */
function otelShape(otel: OtelConfig): Record<string, unknown> {
  return {
    ...(otel.enabled === undefined ? {} : { enabled: otel.enabled }),
    ...(otel.endpoint === undefined ? {} : { endpoint: e(otel.endpoint) }),
    ...(otel.protocol === undefined ? {} : { protocol: otel.protocol }),
    headers: escapeRecord(otel.headers),
    ...(otel.sampleRatio === undefined ? {} : { sampleRatio: otel.sampleRatio }),
    ...(otel.serviceName === undefined ? {} : { serviceName: e(otel.serviceName) }),
    resourceAttributes: escapeRecord(otel.resourceAttributes),
    forwardBaggage: otel.forwardBaggage,
  };
}

/** `host:port`, an IPv6 host in brackets, as `observe.metrics.listen` is written. */
function listenText(listen: { readonly host: string; readonly port: number }): string {
  return listen.host.includes(':') ? `[${listen.host}]:${listen.port}` : `${listen.host}:${listen.port}`;
}

/** `auth`: tokens by their sha256 (never a token), `jwt` with its keys as the file writes them. */
function authShape(auth: AuthConfig): Record<string, unknown> {
  const tokens = auth.tokens.map((t) => ({
    principal: e(t.principal),
    sha256: t.sha256,
    roles: t.roles.map(e),
  }));
  if (auth.jwt === undefined) return { tokens };
  const j = auth.jwt;
  return {
    tokens,
    jwt: {
      // A relative path was resolved against the file's directory: it is absolute here.
      jwks: e(j.jwks),
      issuer: e(j.issuer),
      audience: j.audience.map(e),
      principalClaim: e(j.principalClaim),
      ...(j.rolesClaim === undefined ? {} : { rolesClaim: e(j.rolesClaim) }),
      clockTolerance: dur(j.clockToleranceMs),
    },
  };
}

/** `policy`: each rule's match fields under their file names (`target`), ids other than the default. */
function policyShape(policy: PolicyConfig): Record<string, unknown> {
  const rules = policy.rules.map((rule, index) => ({
    // `rules[N]` is what a rule without an id gets: printing it would change nothing.
    ...(rule.id === `rules[${index}]` ? {} : { id: e(rule.id) }),
    ...(rule.upstream === undefined ? {} : { upstream: e(rule.upstream) }),
    ...(rule.target === undefined ? {} : { target: e(rule.target) }),
    ...(rule.methods === undefined ? {} : { methods: [...rule.methods] }),
    ...(rule.principals === undefined ? {} : { principals: rule.principals.map(e) }),
    ...(rule.roles === undefined ? {} : { roles: rule.roles.map(e) }),
    ...(rule.action === undefined ? {} : { action: rule.action }),
    ...(rule.tier === undefined ? {} : { tier: rule.tier }),
  }));
  return {
    default: policy.default,
    rules,
    approvals: {
      timeout: dur(policy.approvals.timeoutMs),
      approverRoles: policy.approvals.approverRoles.map(e),
      allowSelfApproval: policy.approvals.allowSelfApproval,
    },
  };
}

/** `audit`: sizes and durations in human units, `anchor` with `path`, or `url` and `headers`. */
function auditShape(audit: AuditConfig): Record<string, unknown> {
  const { anchor } = audit;
  return {
    enabled: audit.enabled,
    ...(audit.dir === undefined ? {} : { dir: e(audit.dir) }),
    fsync: audit.fsync,
    flushDelay: dur(audit.flushDelayMs),
    rotate: size(audit.rotateBytes),
    checkpoint: {
      every: audit.checkpoint.everyRecords,
      interval: dur(audit.checkpoint.everyMs),
      minInterval: dur(audit.checkpoint.minIntervalMs),
    },
    ...(audit.key === undefined ? {} : { key: e(audit.key) }),
    ...(anchor === undefined
      ? {}
      : {
          anchor: {
            ...(anchor.path === undefined ? {} : { path: e(anchor.path) }),
            // headers are an error next to path, so they go with url only.
            ...(anchor.url === undefined
              ? {}
              : { url: e(anchor.url), headers: escapeRecord(anchor.headers) }),
          },
        }),
    redact: { keys: audit.redact.keys.map(e), patterns: audit.redact.patterns.map(e) },
    maxErrorLength: audit.maxErrorLength,
    minFreeBytes: size(audit.minFreeBytes),
  };
}

/**
 * A capability as the file writes it: the shorthand `chat` for a bare kind, else `{kind,
 * payload?}`. Every string in it is interpolated when read (keys are not), so every string value
 * is escaped.
 */
function capabilityShape(capability: CapabilityPattern): unknown {
  const kind = typeof capability.kind === 'string' ? e(capability.kind) : capability.kind.map(e);
  if (capability.payload === undefined) return typeof kind === 'string' ? kind : { kind };
  return { kind, payload: patternShape(capability.payload) };
}

function patternShape(value: ValuePattern): unknown {
  if (typeof value === 'string') return e(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(patternShape);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, patternShape(v as ValuePattern)]));
}

/** `space`: participants as a map by id, each with its token hashes (never tokens). */
function spaceShape(space: SpaceConfig): Record<string, unknown> {
  // A Map, as for upstreams: participants named like numbers keep their order.
  const participants = new Map(
    space.participants.map((p) => [
      p.id,
      {
        ...(p.capabilities === undefined ? {} : { capabilities: p.capabilities.map(capabilityShape) }),
        ...(p.observe === undefined ? {} : { observe: p.observe }),
        roles: p.roles.map(e),
        tokens: p.tokens.map((t) => ({ sha256: t.sha256 })),
      },
    ]),
  );
  return {
    enabled: space.enabled,
    name: e(space.name),
    protocols: [...space.protocols],
    correlation: space.correlation,
    context: { ...space.context },
    maxFrameBytes: size(space.maxFrameBytes),
    maxBufferedBytes: size(space.maxBufferedBytes),
    heartbeat: dur(space.heartbeatMs),
    joinTimeout: dur(space.joinTimeoutMs),
    maxConnections: space.maxConnections,
    maxConnectionsPerParticipant: space.maxConnectionsPerParticipant,
    maxProposals: space.maxProposals,
    history: {
      maxEnvelopes: space.history.maxEnvelopes,
      maxBytes: size(space.history.maxBytes),
      maxResults: space.history.maxResults,
    },
    defaults: {
      capabilities: space.defaults.capabilities.map(capabilityShape),
      observe: space.defaults.observe,
    },
    participants,
  };
}

/** JSON with `Infinity` (restart forever) written as ".inf", as in the YAML file. */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v === Number.POSITIVE_INFINITY ? '.inf' : v), 2);
}
