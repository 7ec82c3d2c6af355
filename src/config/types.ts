/**
 * The gateway's configuration after loading and validation: every default applied, every duration
 * in milliseconds, every size in bytes, every `${env:NAME}` resolved. The YAML file's shape is the
 * same with human units (`30s`, `4MiB`); see docs/configuration.md and examples/switchboard.yaml.
 */

import type { TracePayloadMode } from '../trace/payload-mode.js';
import type { MetricsConfig } from './sections/metrics.js';
import type { SpaceConfig } from './sections/space.js';

/**
 * How client sessions share an upstream: `shared` (one connection for all), `per-session` (one per
 * client session, initialized with that client's own `initialize`), `pooled` (stdio only: a bounded
 * pool of children, each serving one session's calls at a time, so every request the server sends
 * can be attributed; docs/architecture.md, "Pooled upstreams").
 */
export type SharingMode = 'shared' | 'per-session' | 'pooled';

/** The bounds of a `sharing: pooled` upstream (`upstreams.<name>.pool`). */
export interface PoolConfig {
  /** Children at most (1 to 64). */
  readonly max: number;
  /** A free child other than the first is stopped after this long without a lease. */
  readonly idleTimeoutMs: number;
  /** How long a call waits for a free child when all `max` are leased, before -32007. */
  readonly queueTimeoutMs: number;
  /** Calls that may wait for a child at once; one more is refused at once (-32007). */
  readonly maxQueued: number;
}
export type SessionsMode = 'lenient' | 'strict';
export type ResponseMode = 'auto' | 'json' | 'sse';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface RestartConfig {
  readonly enabled: boolean;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Restarts allowed in a row before giving up (Infinity: never give up). */
  readonly maxRestarts: number;
}

interface UpstreamCommon {
  /** Unique, `^[A-Za-z0-9][A-Za-z0-9_-]*$`, at most 32 characters, never containing `__`. */
  readonly name: string;
  readonly sharing: SharingMode;
  readonly maxMessageBytes: number;
  /**
   * Whether `GET /ready` answers 503 while this upstream cannot serve (down, starting, restarting).
   * Default false: an upstream that is not required only makes the gateway `degraded` (200), as
   * long as some upstream can serve (docs/observability.md, "Health and readiness").
   */
  readonly required: boolean;
}

export interface StdioUpstreamConfig extends UpstreamCommon {
  readonly transport: 'stdio';
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** Variables set for the child (values already resolved from `${env:NAME}`). */
  readonly env: Readonly<Record<string, string>>;
  /** Gateway variables passed through by name, beyond the minimal set. */
  readonly passEnv: readonly string[];
  /**
   * Bytes written to the child's stdin that it has not read yet, beyond which requests to it are
   * refused (-32007) until it reads: a child that stops reading never makes the gateway queue
   * without end.
   */
  readonly maxStdinBufferBytes: number;
  readonly restart: RestartConfig;
  /** The pool's bounds; set when `sharing` is `pooled` (defaults: `DEFAULTS.upstream.pool`). */
  readonly pool?: PoolConfig;
}

export interface HttpUpstreamConfig extends UpstreamCommon {
  readonly transport: 'http';
  readonly url: string;
  /** Headers sent upstream (values resolved from the environment); never taken from clients. */
  readonly headers: Readonly<Record<string, string>>;
  readonly restart: RestartConfig;
  /**
   * The upstream's protocol era: `auto` (the default) finds out with one `server/discover` probe
   * (and, after a modern answer, one `initialize`; remembered per upstream); `modern` speaks
   * 2026-07-28 and `legacy` the session-based revisions to every client without probing; `dual`
   * speaks to each client in its own era without probing (docs/eras.md).
   */
  readonly era: 'auto' | 'modern' | 'legacy' | 'dual';
  /**
   * The longest wait for each step of the handshake (the `initialize` answer; on Streamable HTTP
   * also the status of the first `notifications/initialized`). When it passes, what waits behind
   * the handshake fails with `SB_UPSTREAM_UNAVAILABLE` and the connection is retried with the
   * `restart` backoff, as for an upstream that is down. 30 s by default, at most 10 minutes.
   */
  readonly handshakeTimeoutMs: number;
}

export type UpstreamConfig = StdioUpstreamConfig | HttpUpstreamConfig;

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly maxBodyBytes: number;
  /**
   * Unsent bytes one SSE stream to a client may hold; a client that falls that far behind is cut
   * (a session-based stream resumes from the event store with `Last-Event-ID`).
   */
  readonly maxStreamBufferBytes: number;
  /**
   * Deepest nesting of objects and arrays accepted in one JSON message, from a client, an
   * upstream or the space: a deeper request is answered -32600 naming the limit.
   */
  readonly maxJsonDepth: number;
  /** Extra `Host` header values accepted (loopback names are always accepted on a loopback bind). */
  readonly allowedHosts: readonly string[];
  /** Origins accepted when a request carries `Origin` (loopback origins are accepted on a loopback bind). */
  readonly allowedOrigins: readonly string[];
  readonly responseMode: ResponseMode;
  /**
   * `auto` only: how long the answer to a request that may stream is held, to go as one JSON body,
   * before the POST becomes an SSE stream (0: it streams at once, as `sse` does).
   */
  readonly streamAfterMs: number;
  /** Interval of SSE keep-alive comments (0: none). */
  readonly keepAliveMs: number;
  /**
   * At shutdown (SIGINT, SIGTERM), how long calls in flight may take to finish before they are
   * answered with `SB_SHUTTING_DOWN` (0: at once).
   */
  readonly drainTimeoutMs: number;
  /**
   * The request line and headers must arrive within this from the start of the request (or of the
   * connection); else 408 and the connection is closed. Node's `headersTimeout`.
   */
  readonly headersTimeoutMs: number;
  /** A request body must arrive whole within this once its headers have; else 408, connection closed. */
  readonly bodyTimeoutMs: number;
  /** A kept-alive connection with no request in progress is closed after this. Node's `keepAliveTimeout`. */
  readonly idleConnectionTimeoutMs: number;
  /**
   * Open TCP connections at most (HTTP requests, SSE streams and WebSockets alike); a connection
   * beyond it is closed at once, unanswered. Node's `maxConnections`.
   */
  readonly maxConnections: number;
}

export interface SessionsConfig {
  /** Undefined in the file means: `strict` when authentication is configured, else `lenient`. */
  readonly mode: SessionsMode;
  readonly idleTimeoutMs: number;
  readonly maxAgeMs: number;
  readonly maxSessions: number;
  readonly maxSessionsPerPrincipal: number;
  readonly maxStreamsPerSession: number;
}

export interface ResumabilityConfig {
  readonly maxEventsPerSession: number;
  readonly maxEventAgeMs: number;
  /**
   * The event store's budget for all sessions together (event data plus a fixed charge per
   * event); past it the largest sessions lose their oldest events first, and a client resuming
   * past them is told with `SB_EVENTS_LOST`. 1 KiB to 4 GiB; default 64 MiB.
   */
  readonly maxTotalBytes: number;
  /** The SSE `retry` the gateway announces (2025-11-25 priming), in ms. */
  readonly retryMs: number;
}

export interface TimeoutsConfig {
  readonly requestMs: number;
  readonly resetOnProgress: boolean;
  readonly maxTotalMs: number;
}

export interface TraceConfig {
  readonly enabled: boolean;
  readonly maxPayloadBytes: number;
  /**
   * What the trace writes of each payload: `redacted` (output bodies as size and SHA-256, the rest
   * through the ledger's redactor and `audit.redact`) or `full` (as it passed).
   */
  readonly payloads: TracePayloadMode;
}

export interface LoggingConfig {
  readonly level: LogLevel;
}

/** The OTLP encodings the gateway can export in (OTLP/HTTP). */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/**
 * `observe.otel`: OpenTelemetry traces and metrics over OTLP/HTTP (docs/observability.md, "Traces").
 * A setting left out of the file is `undefined` here, so that the standard `OTEL_*` environment
 * variables can supply it when the gateway starts (`src/observe/otel/otel-settings.ts`).
 */
export interface OtelConfig {
  /**
   * `true`/`false` when the file says; undefined: each signal on when the environment asks for its
   * OTLP export (an endpoint, or `OTEL_*_EXPORTER=otlp`; docs/observability.md, "Turning it on").
   */
  readonly enabled?: boolean;
  /** The OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are appended). */
  readonly endpoint?: string;
  readonly protocol?: OtlpProtocol;
  /** Sent with every export (credentials of the collector), `${env:NAME}` already resolved. */
  readonly headers: Readonly<Record<string, string>>;
  /** The share of new traces recorded (0 to 1); a client's sampled flag is followed either way. */
  readonly sampleRatio?: number;
  readonly serviceName?: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  /** Pass a client's `_meta.baggage` on to the upstreams (default false: it stays at the gateway). */
  readonly forwardBaggage: boolean;
}

export interface GatewayConfig {
  readonly server: ServerConfig;
  readonly sessions: SessionsConfig;
  readonly resumability: ResumabilityConfig;
  readonly timeouts: TimeoutsConfig;
  /** In declaration order; at least one. */
  readonly upstreams: readonly UpstreamConfig[];
  readonly trace: TraceConfig;
  readonly logging: LoggingConfig;
  /** Undefined when no authentication is configured (the gateway then serves loopback only). */
  readonly auth?: AuthConfig;
  readonly policy: PolicyConfig;
  readonly audit: AuditConfig;
  /** The MEUP space on `serve` (docs/space.md). */
  readonly space: SpaceConfig;
  /** How the gateway is watched: Prometheus and OpenTelemetry (docs/observability.md). */
  readonly observe: ObserveConfig;
}

/** The `observe` section (`sections/observe.ts`). */
export interface ObserveConfig {
  /** `GET /metrics` on `serve` (`sections/metrics.ts`). */
  readonly metrics: MetricsConfig;
  /** OpenTelemetry export (`sections/otel.ts`). */
  readonly otel: OtelConfig;
}

// ------------------------------------------------------------------ authentication

/** A bearer token, stored only as the sha256 of the token (hex), mapped to a principal. */
export interface TokenCredential {
  readonly principal: string;
  /** Lower-case hex sha256 of the token: the token itself never appears in the configuration. */
  readonly sha256: string;
  readonly roles: readonly string[];
}

export interface JwtConfig {
  /**
   * Where the signing keys are: an `https://` URL (`http://` on loopback only), a `file:` URL, or
   * the path of a file holding a JWKS. A path is absolute here: a relative one in the file is
   * resolved against the configuration file's directory when it is read (sections/auth.ts).
   */
  readonly jwks: string;
  readonly issuer: string;
  readonly audience: readonly string[];
  /** The claim that names the principal (default `sub`). */
  readonly principalClaim: string;
  /** The claim holding the roles (a string array or a space-separated string), if any. */
  readonly rolesClaim?: string;
  readonly clockToleranceMs: number;
}

/** Present only when the file configures authentication. */
export interface AuthConfig {
  readonly tokens: readonly TokenCredential[];
  readonly jwt?: JwtConfig;
}

// ------------------------------------------------------------------ policy

export type Tier = 'T0' | 'T1' | 'T2' | 'T3';
export type PolicyAction = 'allow' | 'deny' | 'ask';
/** The calls policy and the ledger are about. */
export type GovernedMethod = 'tools/call' | 'resources/read' | 'prompts/get';

/**
 * One rule; rules are tried in order. The first matching rule that has an `action` decides the
 * action, the first matching rule that has a `tier` decides the tier. Every `match` field is
 * optional (absent: matches anything); glob patterns use `*` (any run) and `?` (one character).
 */
export interface PolicyRule {
  /** `rules[N]` or the rule's `id`, recorded in the ledger with the decision. */
  readonly id: string;
  readonly upstream?: string;
  /** Tool name (tools/call), prompt name (prompts/get) or resource URI (resources/read); glob. */
  readonly target?: string;
  readonly methods?: readonly GovernedMethod[];
  readonly principals?: readonly string[];
  readonly roles?: readonly string[];
  readonly action?: PolicyAction;
  readonly tier?: Tier;
}

export interface PolicyConfig {
  /** The action when no rule decides. */
  readonly default: PolicyAction;
  readonly rules: readonly PolicyRule[];
  readonly approvals: {
    /** No decision within this time means rejected. */
    readonly timeoutMs: number;
    /** Principals holding one of these roles may approve or reject. */
    readonly approverRoles: readonly string[];
    /**
     * Whether an approver may approve a call it made itself (the ledger then names it as both
     * caller and decider). False by default: four eyes. Without `auth` (the one local user) it is
     * always allowed, whatever this says.
     */
    readonly allowSelfApproval: boolean;
  };
}

// ------------------------------------------------------------------ audit ledger

export type FsyncPolicy = 'always' | 'critical' | 'never';

export interface AuditConfig {
  readonly enabled: boolean;
  /** Where the ledger lives; undefined: `<data-dir>/audit`. */
  readonly dir?: string;
  /** `critical`: fsync before answering a T2+ or denied call, batched otherwise. */
  readonly fsync: FsyncPolicy;
  /** How long a record that needs no fsync may wait for others to share its write (0: none). */
  readonly flushDelayMs: number;
  readonly rotateBytes: number;
  /**
   * A checkpoint after `everyRecords` records (but not sooner than `minIntervalMs` after the last
   * one: a busy gateway would otherwise sign several a second) and every `everyMs` (0: no timer).
   */
  readonly checkpoint: {
    readonly everyRecords: number;
    readonly everyMs: number;
    readonly minIntervalMs: number;
  };
  /** The checkpoint signing key file; undefined: `<dir>/keys/checkpoint.key`, created on first start. */
  readonly key?: string;
  /** Where each signed checkpoint is also copied, so that truncation can be detected. */
  readonly anchor?: {
    readonly path?: string;
    readonly url?: string;
    readonly headers: Readonly<Record<string, string>>;
  };
  /**
   * Extra redaction: key names and value regular expressions. Key names match as substrings,
   * ignoring case and every character but letters and digits (`api_key` also covers `apiKey`).
   */
  readonly redact: { readonly keys: readonly string[]; readonly patterns: readonly string[] };
  readonly maxErrorLength: number;
  /**
   * Below this many free bytes on the ledger's file system, calls of tier T1 and above are refused
   * before they are forwarded (their records might not be written); 0: not watched.
   */
  readonly minFreeBytes: number;
}
