/**
 * `switchboard tape replay`: a tape served as an MCP server, over stdio or Streamable HTTP, built
 * from the gateway's own parts: the router, the downstream transports (`StdioDownstream`;
 * `McpHttpServer` with its session-based and 2026-07-28 endpoints and the HTTP+SSE pair) and, in
 * place of a server, a `TapeUpstream` link per client session that plays the tape
 * (`src/tape/replay/`). So a replayed session looks to its client exactly like a live session
 * through the gateway, era adaptation included, and nothing here is a second HTTP server.
 *
 * No trace, no ledger, no policy: the replay is a test double. Warnings (an approximate match, a
 * client answer unlike the recorded one, a request the tape cannot answer) go to the log.
 */

import type { Readable, Writable } from 'node:stream';
import { DEFAULTS } from '../../config/defaults.js';
import { PassthroughResolver } from '../../core/passthrough-resolver.js';
import { Router } from '../../core/router.js';
import { newSessionKey } from '../../core/session-key.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import type { JsonObject } from '../../protocol/jsonrpc/types.js';
import type { ReplayScript } from '../../tape/replay/replay-script.js';
import type { MatchMode } from '../../tape/replay/tape-matcher.js';
import { TapeUpstream } from '../../tape/replay/tape-upstream.js';
import { MemoryEventStore } from '../../transports/http/events/memory-event-store.js';
import { McpHttpServer } from '../../transports/http/server/mcp-http-server.js';
import { StdioDownstream } from '../../transports/stdio/stdio-downstream.js';
import { DEFAULT_DRAIN_TIMEOUT_MS, drainCalls } from '../drain.js';
import { ReplayResolver } from './replay-resolver.js';

/** The upstream name the replay is known by (in logs, and `/servers/tape/mcp`). */
export const REPLAY_UPSTREAM = 'tape';

export interface ReplayOptions {
  readonly script: ReplayScript;
  readonly mode: MatchMode;
  /** Recorded gaps are divided by this; 0: no waits. */
  readonly speed: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

function tapeLink(options: ReplayOptions, session: string): TapeUpstream {
  return new TapeUpstream({
    script: options.script,
    mode: options.mode,
    speed: options.speed,
    warn: (text, data) => options.logger.warn({ session, ...data }, text),
  });
}

/** The replay on the process's stdin/stdout: one client, one replay of the tape. */
export class StdioReplay {
  readonly #key = newSessionKey();
  readonly #router: Router;
  readonly #downstream: StdioDownstream;
  readonly #tape: TapeUpstream;
  readonly #o: ReplayOptions;
  readonly #transport = { kind: 'stdio', pid: process.pid } as const;
  #resolveDone: () => void = () => {};
  /** Settles once the client closed stdin and the replay stopped. */
  readonly done: Promise<void>;
  #closing: Promise<void> | undefined;

  constructor(options: ReplayOptions & { readonly input: Readable; readonly output: Writable }) {
    this.#o = options;
    this.done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
    this.#router = new Router({
      resolver: new PassthroughResolver(REPLAY_UPSTREAM, this.#key),
      logger: options.logger,
      metrics: options.metrics,
    });
    this.#downstream = new StdioDownstream({
      input: options.input,
      output: options.output,
      maxMessageBytes: DEFAULTS.upstream.maxMessageBytes,
      inFlight: (id) => this.#router.hasCall(this.#key, id),
      logger: options.logger,
      metrics: options.metrics,
      revision: () => this.#router.session(this.#key)?.protocolVersion ?? '',
      onmessage: (message, raw) => this.#router.handleClientMessage(this.#key, message, this.#transport, raw),
      onend: () => void this.close('the client closed stdin'),
    });
    this.#tape = tapeLink(options, this.#key);
  }

  /** Recorded requests the client has not asked (yet). */
  get remaining(): number {
    return this.#tape.remaining;
  }

  async start(): Promise<void> {
    this.#router.openSession({
      key: this.#key,
      port: this.#downstream,
      transport: 'stdio',
      transportContext: this.#transport,
    });
    this.#router.addLink({
      id: REPLAY_UPSTREAM,
      name: REPLAY_UPSTREAM,
      transport: this.#tape,
      transportContext: { kind: 'memory' },
    });
    await this.#tape.start();
    this.#downstream.start();
  }

  close(reason: string): Promise<void> {
    this.#closing ??= (async () => {
      // The calls asked before stdin closed are answered first (a client may write its requests
      // and close at once: `printf ... | switchboard tape replay`), as the stdio gateway drains.
      await drainCalls(this.#router, {
        graceMs: DEFAULT_DRAIN_TIMEOUT_MS,
        logger: this.#o.logger,
        metrics: this.#o.metrics,
      });
      this.#o.logger.info({ reason, unanswered: this.#tape.remaining }, 'replay ending');
      this.#router.closeSession(this.#key, reason);
      await this.#tape.close();
      this.#router.close();
      this.#resolveDone();
    })();
    return this.#closing;
  }
}

/**
 * The replay over Streamable HTTP (`/mcp`, and `/servers/tape/mcp`), for clients of both eras:
 * each session-based client session gets its own replay; 2026-07-28 clients are told the recorded
 * server's capabilities by `server/discover` and share the replay of their principal's session.
 */
export class HttpReplay {
  readonly #o: ReplayOptions;
  readonly #router: Router;
  readonly #resolver = new ReplayResolver();
  readonly #links = new Map<string, TapeUpstream>();
  readonly http: McpHttpServer;

  constructor(
    options: ReplayOptions & { readonly host: string; readonly port: number; readonly version: string },
  ) {
    this.#o = options;
    this.#router = new Router({ resolver: this.#resolver, logger: options.logger, metrics: options.metrics });
    const initialize = options.script.initialize;
    this.http = new McpHttpServer({
      config: {
        server: { ...DEFAULTS.server, host: options.host, port: options.port },
        sessions: { ...DEFAULTS.sessions, mode: 'lenient' },
        resumability: DEFAULTS.resumability,
      },
      router: this.#router,
      store: new MemoryEventStore(),
      upstreamNames: [REPLAY_UPSTREAM],
      logger: options.logger,
      metrics: options.metrics,
      gatewayVersion: options.version,
      hooks: {
        opened: (key) => this.#open(key),
        closed: (key) => this.#close(key),
      },
      modern: {
        discover: async () => ({
          capabilities: (initialize.capabilities as JsonObject | undefined) ?? {},
          ...(typeof initialize.instructions === 'string' ? { instructions: initialize.instructions } : {}),
        }),
        paramHeaders: async () => undefined,
        forwardsParamHeaders: () => false,
      },
    });
  }

  #open(key: string): void {
    const link = `${REPLAY_UPSTREAM}#${key}`;
    const tape = tapeLink(this.#o, key);
    this.#links.set(link, tape);
    this.#router.addLink({
      id: link,
      name: REPLAY_UPSTREAM,
      transport: tape,
      transportContext: { kind: 'memory' },
    });
    this.#resolver.bind(key, link);
    void tape.start();
  }

  #close(key: string): void {
    const link = this.#resolver.unbind(key);
    if (link === undefined) return;
    const tape = this.#links.get(link);
    this.#links.delete(link);
    if (tape) this.#o.logger.info({ session: key, unanswered: tape.remaining }, 'replay of a session ended');
    void tape?.close();
  }

  listen(): ReturnType<McpHttpServer['listen']> {
    return this.http.listen();
  }

  async close(): Promise<void> {
    await this.http.close();
    for (const tape of this.#links.values()) await tape.close();
    this.#links.clear();
    this.#router.close();
  }
}
