/**
 * `switchboard stdio -- <command> [args...]`: a drop-in wrapper for a stdio MCP server. The client
 * talks to the gateway's stdin/stdout exactly as it would to the server; the gateway forwards
 * everything (initialize included), correlates it, and records every hop.
 *
 * Lifecycle: when the child exits, every request in flight is answered with an error at once; the
 * gateway then exits with the child's status, or with `restart` starts a new child after a backoff
 * and replays the client's `initialize` so the client never notices. The gateway shuts down cleanly
 * when the client closes stdin, or on SIGINT / SIGTERM: it drains (new requests are refused, the
 * calls in flight get `drainTimeoutMs` to finish, the rest are answered with `SB_SHUTTING_DOWN`),
 * then closes the child with the MCP sequence and flushes what it recorded.
 *
 * `switchboard stdio --url <url>` is the same gateway with an HTTP upstream in place of the child
 * (`http`): a remote MCP server reached over Streamable HTTP (or whatever its era calls for, as for a
 * configured upstream), for a client that only speaks stdio; the client's `initialize` goes through
 * to it, and with `restart` a session the server ends is opened again and re-initialized. The
 * gateway exits 0 when the client closes stdin, 1 when the server is gone for good.
 *
 * Flow control, end to end as with plain pipes: while the client does not read stdout, neither the
 * client's stdin nor the child's stdout is read; while the child does not read its stdin, the
 * client's stdin is not read (each past `maxBufferedBytes` unsent; see `StdioDownstream`).
 */
import type { Readable, Writable } from 'node:stream';
import { createRedactor } from '../audit/redaction.js';
import { runInRequestScope } from '../audit/request-scope.js';
import { POLICY_DEFAULTS } from '../config/sections/policy.js';
import type { CorrelationTimeouts } from '../core/correlation-table.js';
import type { CallObserver } from '../core/observations.js';
import { PassthroughResolver } from '../core/passthrough-resolver.js';
import type { UpstreamClose } from '../core/ports.js';
import { Router, type TraceContextWriter } from '../core/router.js';
import { newSessionKey } from '../core/session-key.js';
import { type Tap, TapBus } from '../core/taps.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { ApprovalRegistry } from '../policy/approvals.js';
import { PolicyEngine } from '../policy/policy-engine.js';
import type { TraceSessionInfo } from '../trace/types.js';
import type { BackoffOptions } from '../transports/backoff.js';
import { FlowGate } from '../transports/flow-gate.js';
import { SupervisedHttpUpstream } from '../transports/http/upstream/supervised-http-upstream.js';
import { childEnvironment } from '../transports/stdio/child-env.js';
import { StdioDownstream } from '../transports/stdio/stdio-downstream.js';
import { SupervisedUpstream } from '../transports/stdio/supervised-upstream.js';
import { DEFAULT_DRAIN_TIMEOUT_MS, drainCalls } from './drain.js';
import type { AuditSink } from './governance/audit-sink.js';
import { GovernanceInterceptor } from './governance/governance-interceptor.js';
import { listAllTools } from './governance/list-tools.js';
import { ToolCatalog } from './governance/tool-catalog.js';

export const DEFAULT_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** The remote server of `stdio --url`: where it is and the headers sent with every request. */
export interface StdioGatewayHttpUpstream {
  readonly url: string;
  /** Sent on every request to the server (credentials), already resolved from the environment. */
  readonly headers: Readonly<Record<string, string>>;
  /** The server's protocol era, as for a configured HTTP upstream (default `auto`). */
  readonly era?: 'auto' | 'modern' | 'legacy';
}

export interface StdioGatewayOptions {
  /** The child to run; ignored when `http` is given. */
  readonly command: string;
  readonly args: readonly string[];
  /** A remote server in place of the child (`stdio --url`). */
  readonly http?: StdioGatewayHttpUpstream;
  readonly cwd?: string;
  /** Variables set in the child's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Names of the gateway's own variables passed through to the child (beyond the minimal set). */
  readonly passEnv?: readonly string[];
  /** The upstream's name in the trace (participant `server-<name>`). */
  readonly name: string;
  readonly restart: boolean;
  readonly maxRestarts?: number;
  readonly backoff?: BackoffOptions;
  readonly maxMessageBytes?: number;
  /**
   * Unsent bytes the client's stdout, and the child's stdin, may hold before the gateway stops
   * reading what feeds them. Default `DEFAULT_MAX_BUFFERED_BYTES` (4 MiB).
   */
  readonly maxBufferedBytes?: number;
  /** Deepest nesting accepted in a message from either side; default `DEFAULT_MAX_JSON_DEPTH`. */
  readonly maxJsonDepth?: number;
  readonly timeouts?: Partial<CorrelationTimeouts>;
  readonly shutdownGraceMs?: number;
  /**
   * At shutdown, how long the calls in flight may take to finish before they are answered with
   * `SB_SHUTTING_DOWN` (default {@link DEFAULT_DRAIN_TIMEOUT_MS}; 0: at once).
   */
  readonly drainTimeoutMs?: number;
  readonly input: Readable;
  readonly output: Writable;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly taps?: readonly Tap[];
  /** Writes the gateway's trace context into what it sends (OpenTelemetry on); see `RouterOptions`. */
  readonly traceContext?: TraceContextWriter;
  /** Who hears of calls, upstream requests, sessions and links (metrics); see `RouterOptions`. */
  readonly observers?: readonly CallObserver[];
  /** Told about the session at start and at end (the trace's session table). */
  readonly onSession?: (info: TraceSessionInfo) => void;
  /**
   * The audit ledger: every `tools/call`, `resources/read` and `prompts/get` leaves one record
   * (request_id = the JSON-RPC id; no client_id: one client), tiered by the tools' annotations; a
   * T1+ call is refused while the ledger cannot be written. Undefined: no ledger.
   */
  readonly ledger?: AuditSink;
}

const LINK = 'upstream';

export class StdioGateway {
  readonly #o: StdioGatewayOptions;
  readonly #sessionKey = newSessionKey();
  readonly #router: Router;
  readonly #upstream: SupervisedUpstream | SupervisedHttpUpstream;
  readonly #downstream: StdioDownstream;
  readonly #startedAt = Date.now();
  /** Where the client's messages come from: one object for all of them (the router only reads it). */
  readonly #clientTransport = { kind: 'stdio', pid: process.pid } as const;
  #exitCode: number | undefined;
  #resolveDone: (code: number) => void = () => {};
  readonly done: Promise<number>;
  #shuttingDown: Promise<void> | undefined;
  /** The child is gone for good: nothing in flight can finish any more. */
  #upstreamGone = false;
  #approvals: ApprovalRegistry | undefined;

  constructor(options: StdioGatewayOptions) {
    this.#o = options;
    this.done = new Promise<number>((resolve) => {
      this.#resolveDone = resolve;
    });
    const taps = new TapBus(options.logger, options.metrics, options.taps ?? []);
    this.#router = new Router({
      resolver: new PassthroughResolver(LINK, this.#sessionKey),
      logger: options.logger,
      metrics: options.metrics,
      taps,
      ...(options.traceContext === undefined ? {} : { traceContext: options.traceContext }),
      ...(options.observers === undefined ? {} : { observers: options.observers }),
      ...(options.timeouts ? { timeouts: options.timeouts } : {}),
      ...(options.maxJsonDepth === undefined ? {} : { maxJsonDepth: options.maxJsonDepth }),
    });
    if (options.ledger) {
      // Policy allows everything here (the wrapper has no configuration); the interceptor still
      // tiers each call and writes its record, and fails closed when the ledger cannot write.
      // One local user and no authentication: nobody else could approve (and nothing asks here).
      this.#approvals = new ApprovalRegistry({
        timeoutMs: POLICY_DEFAULTS.approvals.timeoutMs,
        allowSelfApproval: true,
      });
      this.#router.addInterceptor(
        new GovernanceInterceptor({
          policy: new PolicyEngine(POLICY_DEFAULTS),
          approvals: this.#approvals,
          catalog: new ToolCatalog(() => listAllTools(this.#router, LINK, this.#sessionKey)),
          ledger: options.ledger,
          redact: createRedactor(),
          localIsTrusted: true,
          logger: options.logger,
          metrics: options.metrics,
        }),
      );
    }
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    // The client's stdin: held closed by stdout and by the child's stdin while either is behind.
    const clientInput = new FlowGate();
    // The child's stdout: held closed by the client's stdout while it is behind.
    const upstreamOutput = new FlowGate();
    const buffers =
      options.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: options.maxBufferedBytes };
    this.#downstream = new StdioDownstream({
      ...buffers,
      inputGate: clientInput,
      producers: [upstreamOutput],
      input: options.input,
      output: options.output,
      maxMessageBytes,
      ...(options.maxJsonDepth === undefined ? {} : { maxJsonDepth: options.maxJsonDepth }),
      inFlight: (id) => this.#router.hasCall(this.#sessionKey, id),
      logger: options.logger,
      metrics: options.metrics,
      revision: () => this.#router.session(this.#sessionKey)?.protocolVersion ?? '',
      // Seed 002: stdio binds the JSON-RPC id as request_id (and no client_id: one client only).
      onmessage: (message, raw) =>
        runInRequestScope(
          { requestId: 'id' in message && 'method' in message ? message.id : undefined },
          () => this.#router.handleClientMessage(this.#sessionKey, message, this.#clientTransport, raw),
        ),
      onend: () => void this.shutdown('the client closed stdin'),
    });
    this.#upstream = options.http
      ? new SupervisedHttpUpstream({
          router: this.#router,
          link: LINK,
          http: {
            name: options.name,
            url: options.http.url,
            headers: options.http.headers,
            maxMessageBytes,
            ...(options.maxJsonDepth === undefined ? {} : { maxJsonDepth: options.maxJsonDepth }),
            era: options.http.era ?? 'auto',
          },
          logger: options.logger,
          metrics: options.metrics,
          restart: options.restart,
          ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
          ...(options.backoff ? { backoff: options.backoff } : {}),
          initialize: (restart) => this.#reinitialize(restart),
          onstop: (close) => this.#upstreamStopped(close),
        })
      : this.#stdioUpstream(options, maxMessageBytes, clientInput, upstreamOutput);
  }

  #stdioUpstream(
    options: StdioGatewayOptions,
    maxMessageBytes: number,
    clientInput: FlowGate,
    upstreamOutput: FlowGate,
  ): SupervisedUpstream {
    return new SupervisedUpstream({
      router: this.#router,
      link: LINK,
      child: {
        name: options.name,
        command: options.command,
        args: options.args,
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        env: childEnvironment({ passEnv: options.passEnv ?? [], env: options.env ?? {} }),
        maxMessageBytes,
        ...(options.shutdownGraceMs === undefined ? {} : { shutdownGraceMs: options.shutdownGraceMs }),
        ...(options.maxBufferedBytes === undefined ? {} : { maxStdinBufferBytes: options.maxBufferedBytes }),
        stdinGate: clientInput,
        stdoutGate: upstreamOutput,
      },
      logger: options.logger,
      metrics: options.metrics,
      restart: options.restart,
      ...(options.maxRestarts === undefined ? {} : { maxRestarts: options.maxRestarts }),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      initialize: (restart) => this.#reinitialize(restart),
      onstop: (close) => this.#upstreamStopped(close),
    });
  }

  get sessionKey(): string {
    return this.#sessionKey;
  }

  get router(): Router {
    return this.#router;
  }

  get upstreamPid(): number | undefined {
    return this.#upstream instanceof SupervisedUpstream ? this.#upstream.pid : undefined;
  }

  /** Starts the child, then reads the client. Rejects when the child cannot be started. */
  async start(): Promise<void> {
    this.#router.openSession({
      key: this.#sessionKey,
      port: this.#downstream,
      transport: 'stdio',
      transportContext: this.#clientTransport,
    });
    this.#reportSession();
    await this.#upstream.start();
    this.#downstream.start();
  }

  /**
   * After a restart, replays the client's `initialize` (and `initialized`) so the new child is in
   * the state the client believes it is in. The new child's answer is for the gateway only.
   */
  async #reinitialize(restart: number): Promise<void> {
    if (restart === 0) return;
    const session = this.#router.session(this.#sessionKey);
    const params = session?.initializeParams;
    if (!params) return;
    const reply = await this.#router.requestUpstream(LINK, 'initialize', params, {
      traceSession: this.#sessionKey,
      bypassQueue: true,
    });
    if ('error' in reply.response) throw new Error(`re-initialize failed: ${reply.response.error.message}`);
    if (session.state === 'active')
      this.#router.notifyUpstream(LINK, 'notifications/initialized', undefined, {
        bypassQueue: true,
        traceSession: this.#sessionKey,
      });
    this.#o.logger.info(
      { upstream: this.#o.name, restart },
      'upstream re-initialized with the client’s initialize',
    );
  }

  #upstreamStopped(close: UpstreamClose): void {
    this.#upstreamGone = true;
    if (this.#exitCode === undefined) {
      // A child's own status; a remote server has none: gone by itself is a failure, closed by
      // the gateway's own shutdown is not.
      this.#exitCode =
        typeof close.code === 'number'
          ? close.code
          : close.signal
            ? 1
            : this.#o.http && this.#shuttingDown === undefined
              ? 1
              : 0;
    }
    void this.shutdown(`upstream ${close.reason}`);
  }

  /**
   * Clean shutdown: drained (see the file comment), the child closed with the MCP sequence, then
   * everything recorded flushed. Idempotent.
   */
  shutdown(reason: string): Promise<void> {
    if (this.#shuttingDown) return this.#shuttingDown;
    this.#shuttingDown = (async () => {
      this.#o.logger.info({ reason }, 'shutting down');
      await drainCalls(this.#router, {
        graceMs: this.#upstreamGone ? 0 : (this.#o.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS),
        logger: this.#o.logger,
        metrics: this.#o.metrics,
      });
      await this.#upstream.close();
      this.#reportSession(Date.now());
      this.#router.closeSession(this.#sessionKey, reason);
      this.#router.close();
      this.#approvals?.close();
      this.#resolveDone(this.#exitCode ?? 0);
    })();
    return this.#shuttingDown;
  }

  #reportSession(endedAt?: number): void {
    const session = this.#router.session(this.#sessionKey);
    const clientInfo = session?.initializeParams?.clientInfo;
    const info: { -readonly [K in keyof TraceSessionInfo]: TraceSessionInfo[K] } = {
      key: this.#sessionKey,
      transport: 'stdio',
      upstreams: [this.#o.name],
      startedAt: this.#startedAt,
    };
    if (endedAt !== undefined) info.endedAt = endedAt;
    if (session) info.protocolVersion = session.protocolVersion;
    if (clientInfo && typeof clientInfo === 'object') info.clientInfo = clientInfo as Record<string, unknown>;
    this.#o.onSession?.(info);
  }
}
