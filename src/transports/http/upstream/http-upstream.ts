/**
 * The gateway's client for one MCP server reached over HTTP: the `UpstreamTransport` the router
 * links to. It picks the wire protocol and hides switching between them:
 *
 * - `auto` (the default) goes by the era. With `era: 'auto'` it first probes (`era-probe.ts`: a
 *   `server/discover`; the answer is kept in `eraCache` when given) and speaks 2026-07-28
 *   (`modern-http.ts`) to a modern server. A legacy server (and `era: 'legacy'`, the default when
 *   no era is given) gets Streamable HTTP; when the `initialize` POST gets 400, 404 or 405 it falls
 *   back, as the spec asks, to the 2024-11-05 HTTP+SSE transport on the same URL and sends that
 *   `initialize` again there. Anything sent meanwhile waits and follows in order. A server that
 *   speaks both eras (the probe's `dual`) gets each request in its client's era
 *   (`dual-era-transport.ts`). `era: 'modern'` skips the probe and speaks 2026-07-28 to every
 *   client (bridging 2025 clients); `era: 'legacy'` speaks 2025 to every client.
 * - a known kind (`modern-http`, `streamable-http`, `sse`, `dual-http`) skips every probe: the supervisor passes
 *   the kind it learned on the first connection, so a restart does not probe again.
 *
 * One keep-alive `Pool` serves every era transport this object creates (unless a dispatcher is
 * given) and is destroyed on close.
 */
import type { Dispatcher, Pool } from 'undici';
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../../core/ports.js';
import type { HttpTransportContext } from '../../../envelope/message-context.js';
import {
  isRequest,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcRequest,
} from '../../../protocol/jsonrpc/types.js';
import type { Wire } from '../../../protocol/mcp/reserved-meta.js';
import type { EraCache } from './era-cache.js';
import { probeEra, type UpstreamEra } from './era-probe.js';
import { createEraTransport, type EraTransport, type HttpUpstreamKind } from './era-transport.js';
import { createUpstreamPool } from './http-connection.js';
import type { InitializeRejection } from './legacy-streamable-http.js';
import type { ModernHttpOptions } from './modern-http.js';
import { UpstreamOutlet } from './upstream-outlet.js';

/** The common options (and the 2026-07-28 transport's), plus which protocol to speak. */
export interface HttpUpstreamTransportOptions extends ModernHttpOptions {
  /** Which protocol to speak; `auto` (default) goes by `era`. */
  readonly transport?: 'auto' | HttpUpstreamKind;
  /**
   * With `transport: 'auto'`: `auto` probes the era (once per endpoint when `eraCache` is given),
   * `modern` speaks 2026-07-28 without probing, `legacy` (the default, the behaviour from before
   * eras) speaks Streamable HTTP with the 2024-11-05 fallback. The configuration's default is `auto`.
   */
  readonly era?: 'auto' | UpstreamEra;
  /** Where probed eras are remembered across transports (e.g. the supervisor's, or the gateway's). */
  readonly eraCache?: EraCache;
  /** Longest wait for the era probe's answer (default 10000 ms). */
  readonly probeTimeoutMs?: number;
}

/** The `UpstreamTransport` of an HTTP upstream, whatever its protocol (see the file comment). */
export class HttpUpstreamTransport implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  onerror?: (error: Error) => void;

  readonly #o: HttpUpstreamTransportOptions;
  readonly #url: URL;
  readonly #pool: Pool | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #context: HttpTransportContext;
  readonly #out: UpstreamOutlet;
  #inner: EraTransport | undefined;
  /** Messages held while the fallback transport connects. */
  #held: { json: string; message: JsonRpcMessage }[] | undefined;
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  /** Aborted on close: a probe still asking gives up its `initialize` question. */
  readonly #closed = new AbortController();

  constructor(options: HttpUpstreamTransportOptions) {
    this.#o = options;
    this.#url = typeof options.url === 'string' ? new URL(options.url) : options.url;
    this.#pool = options.dispatcher ? undefined : createUpstreamPool(this.#url, options.maxConnections);
    this.#dispatcher = options.dispatcher ?? (this.#pool as Pool);
    this.#context = {
      kind: 'http',
      method: 'POST',
      path: this.#url.pathname + this.#url.search,
      headers: {},
    };
    this.#out = new UpstreamOutlet(this, {
      name: options.name,
      logger: options.logger,
      metrics: options.metrics,
      context: this.#context,
    });
  }

  /** The protocol in use: known after `start()`, and final once `initialize` was answered. */
  get kind(): HttpUpstreamKind | undefined {
    return this.#inner?.kind;
  }

  /** The upstream session id (Streamable HTTP), once the server set one. */
  get sessionId(): string | undefined {
    return this.#inner?.sessionId;
  }

  /** The negotiated protocol version (Streamable HTTP), once `initialize` was answered. */
  get protocolVersion(): string | undefined {
    return this.#inner?.protocolVersion;
  }

  /** Describes the link for the router. */
  get transportContext(): HttpTransportContext {
    return this.#context;
  }

  /**
   * Prepares the transport of the configured kind. Streamable HTTP connects on the first message;
   * HTTP+SSE opens its stream now and rejects when it cannot.
   */
  start(): Promise<void> {
    this.#starting ??= this.#begin(this.#o.transport ?? 'auto');
    return this.#starting;
  }

  send(json: string, message: JsonRpcMessage): Wire | undefined {
    if (this.#held) {
      // Written once the era is known, as that era's transport writes it.
      this.#held.push({ json, message });
      return undefined;
    }
    const inner = this.#inner;
    if (inner) return inner.send(json, message);
    this.#out.fail(isRequest(message) ? message.id : undefined, `upstream ${this.#o.name} is not started`);
    return undefined;
  }

  /**
   * As the era transport in use decides (a legacy one refuses a `requestState`). Before the era is
   * known nothing is refused: the request waits and goes as sent.
   */
  refuse(request: JsonRpcRequest): JsonRpcErrorObject | undefined {
    return this.#inner?.refuse?.(request);
  }

  /** As the era transport in use promises (a dual-era one, for a 2026-07-28 client's request). */
  asksNothingFor(request: JsonRpcRequest): boolean {
    return this.#inner?.asksNothingFor?.(request) ?? false;
  }

  /** Closes the era transport (DELETE of the session, streams aborted), then `onclose`. Idempotent. */
  close(): Promise<void> {
    this.#closed.abort();
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #begin(requested: 'auto' | HttpUpstreamKind): Promise<void> {
    let kind = requested;
    if (kind === 'auto') {
      const era = await this.#era();
      if (era === 'modern') kind = 'modern-http';
      else if (era === 'dual') kind = 'dual-http';
    }
    // Closed while the probe ran: nothing to connect any more.
    if (this.#out.closed) return;
    const inner =
      kind === 'auto'
        ? this.#create('streamable-http', { onInitializeRejected: (rejection) => this.#fallBack(rejection) })
        : this.#create(kind, this.#hooks(kind));
    await inner.start();
  }

  /**
   * What a connection built on a known era does when that era turns out wrong: a 2026-07-28 server
   * whose discover got no answer, or a dual-era server that refused the session's `initialize`
   * (it takes the 2025 handshake no longer): the era is forgotten, so the next connection probes
   * again, and, for the refused `initialize`, the connection attempt fails (the supervisor retries).
   */
  #hooks(kind: HttpUpstreamKind): Parameters<typeof createEraTransport>[2] {
    if (kind === 'modern-http') return { onDiscoverFailed: () => this.#doubtEra() };
    if (kind !== 'dual-http') return {};
    return {
      onInitializeRejected: (rejection) => {
        this.#doubtEra();
        const detail = rejection.detail ? ` (${rejection.detail})` : '';
        this.#out.fail(
          rejection.message.id,
          `upstream ${this.#o.name} was found to speak both eras, but refused the 2025 initialize with HTTP ${rejection.status}${detail}`,
          rejection.status,
        );
      },
    };
  }

  /** The era to speak: the configured one, else the cached one, else the probe's (then cached). */
  async #era(): Promise<UpstreamEra> {
    const o = this.#o;
    const wanted = o.era ?? 'legacy';
    if (wanted !== 'auto') return wanted;
    const cached = o.eraCache?.get(this.#url);
    if (cached) return cached;
    const verdict = await probeEra({
      name: o.name,
      url: this.#url,
      dispatcher: this.#dispatcher,
      ...(o.headers ? { headers: o.headers } : {}),
      ...(o.probeTimeoutMs === undefined ? {} : { timeoutMs: o.probeTimeoutMs }),
      signal: this.#closed.signal,
    });
    o.metrics.inc('upstream_era_probes_total', { upstream: o.name, era: verdict.era });
    o.logger.info({ upstream: o.name, era: verdict.era, reason: verdict.reason }, 'upstream era detected');
    o.eraCache?.set(this.#url, verdict.era);
    return verdict.era;
  }

  /** A connection built on the cached era failed early: the next one probes again. */
  #doubtEra(): void {
    if (this.#o.era === 'auto') this.#o.eraCache?.forget(this.#url);
  }

  #create(kind: HttpUpstreamKind, hooks: Parameters<typeof createEraTransport>[2] = {}): EraTransport {
    const inner = createEraTransport(
      kind,
      { ...this.#o, url: this.#url, dispatcher: this.#dispatcher },
      hooks,
    );
    inner.onmessage = (text, meta) => this.#out.deliver(text, meta);
    inner.onerror = (error) => {
      if (this.onerror) this.onerror(error);
      else this.#o.logger.warn({ upstream: this.#o.name, err: error.message }, 'upstream transport error');
    };
    inner.onclose = (close) => {
      if (inner !== this.#inner) return;
      this.#out.finish(close);
      void this.#pool?.destroy().catch(() => {});
    };
    this.#inner = inner;
    return inner;
  }

  /** The server refused Streamable HTTP's `initialize`: retry it over 2024-11-05 HTTP+SSE. */
  #fallBack(rejection: InitializeRejection): void {
    if (this.#out.closed) return;
    const o = this.#o;
    o.metrics.inc('upstream_http_fallbacks_total', { upstream: o.name });
    o.logger.info(
      { upstream: o.name, status: rejection.status },
      'initialize refused; falling back to the 2024-11-05 HTTP+SSE transport',
    );
    const previous = this.#inner;
    if (previous) {
      previous.onmessage = undefined;
      previous.onclose = undefined;
      previous.onerror = undefined;
      void previous.close();
    }
    // The refused initialize, what waited behind it in the refused transport, then (pushed by
    // `send` while the stream opens) what comes meanwhile: all in the order the router sent it.
    const held: { json: string; message: JsonRpcMessage }[] = [
      { json: rejection.json, message: rejection.message },
      ...rejection.following,
    ];
    this.#held = held;
    const sse = this.#create('sse');
    sse.start().then(
      () => {
        this.#held = undefined;
        if (this.#out.closed) return;
        for (const item of held) sse.send(item.json, item.message);
      },
      (error: unknown) => {
        this.#held = undefined;
        this.#doubtEra();
        const reason = error instanceof Error ? error.message : String(error);
        const detail = rejection.detail ? ` (${rejection.detail})` : '';
        for (const item of held) {
          this.#out.fail(
            isRequest(item.message) ? item.message.id : undefined,
            `upstream ${o.name} refused the Streamable HTTP initialize with HTTP ${rejection.status}${detail}, and the 2024-11-05 HTTP+SSE fallback failed: ${reason}`,
            rejection.status,
          );
        }
      },
    );
  }

  async #shutdown(): Promise<void> {
    const inner = this.#inner;
    if (inner) await inner.close();
    this.#out.finish({ reason: 'closed' });
    await this.#pool?.destroy().catch(() => {});
  }
}
