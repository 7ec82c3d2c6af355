/**
 * What every HTTP upstream transport is configured with, whatever the protocol era. Headers arrive
 * already resolved (secrets read from the environment by the configuration layer): client
 * credentials never reach these classes, so they can never be passed through upstream.
 */
import type { Dispatcher } from 'undici';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import type { BackoffOptions } from '../../backoff.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS } from './handshake-deadline.js';

/** The configuration of one HTTP upstream, shared by every era's transport. */
export interface HttpUpstreamOptions {
  /** Names the upstream in logs, metrics and error messages. */
  readonly name: string;
  /** The MCP endpoint; for a 2024-11-05 server, the URL of its SSE stream. */
  readonly url: string | URL;
  /** Sent on every request to this upstream (e.g. its API key). Protocol headers win on conflict. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The largest message accepted from the upstream; larger ones are never buffered whole. */
  readonly maxMessageBytes: number;
  /**
   * Deepest nesting accepted in a message the transport reads itself (a 2026-07-28 answer or
   * notification; what it hands the router as text is bounded there); default
   * `DEFAULT_MAX_JSON_DEPTH`.
   */
  readonly maxJsonDepth?: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * Keep-alive connections to use (an undici `Pool` for the URL's origin, or an `Agent`). When
   * absent the transport opens a `Pool` of its own and destroys it on close.
   */
  readonly dispatcher?: Dispatcher;
  /**
   * Most keep-alive connections a pool opened here keeps to the upstream (default: no limit). Each
   * SSE answer in progress and the GET stream hold one, so a low limit queues requests behind long
   * tool calls.
   */
  readonly maxConnections?: number;
  /**
   * How many times in a row an interrupted POST answer is resumed without receiving a message
   * before its request is failed (default 5).
   */
  readonly maxResumeAttempts?: number;
  /** Wait before reconnecting when the server sent no `retry` (default 1000 ms, as EventSource). */
  readonly defaultRetryMs?: number;
  /** Backoff between failed reconnections of the standalone GET stream. */
  readonly reconnectBackoff?: BackoffOptions;
  /** Opens the standalone GET stream once the session is initialized (default true). */
  readonly standaloneStream?: boolean;
  /**
   * Longest silence on a response body or SSE stream before it counts as broken (then resumed when
   * it can be, else its request fails). Default 0: never. A long tool call may legitimately be
   * silent; request deadlines belong to the router, and dead connections are caught by TCP
   * keep-alive and by servers' keep-alive comments.
   */
  readonly streamIdleTimeoutMs?: number;
  /** Longest wait for the `endpoint` event of a 2024-11-05 server (default 10000 ms). */
  readonly endpointTimeoutMs?: number;
  /** Longest wait for the DELETE that ends the session on close (default 2000 ms). */
  readonly closeTimeoutMs?: number;
  /**
   * Longest wait for each handshake step: the answer to `initialize`, and on Streamable HTTP the
   * status of the first `notifications/initialized` POST (default 30000 ms; 0: no bound of its own).
   * When it passes, what waits behind the handshake fails with `SB_UPSTREAM_UNAVAILABLE` and the
   * transport closes, so the link is reconnected with backoff like any dead upstream
   * (`handshake-deadline.ts`).
   */
  readonly handshakeTimeoutMs?: number;
}

/** The options with every default filled in, as the transports use them. */
export interface ResolvedHttpUpstreamOptions extends HttpUpstreamOptions {
  readonly url: URL;
  readonly maxResumeAttempts: number;
  readonly defaultRetryMs: number;
  readonly reconnectBackoff: BackoffOptions;
  readonly standaloneStream: boolean;
  readonly streamIdleTimeoutMs: number;
  readonly endpointTimeoutMs: number;
  readonly closeTimeoutMs: number;
  readonly handshakeTimeoutMs: number;
}

/** Reconnection backoff of the GET stream: quick first retries, capped at 30 s. */
export const DEFAULT_RECONNECT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, stableMs: 30_000 };

/** Fills in the defaults and parses the URL once. */
export function resolveHttpUpstreamOptions(options: HttpUpstreamOptions): ResolvedHttpUpstreamOptions {
  return {
    ...options,
    url: typeof options.url === 'string' ? new URL(options.url) : options.url,
    maxResumeAttempts: options.maxResumeAttempts ?? 5,
    defaultRetryMs: options.defaultRetryMs ?? 1000,
    reconnectBackoff: options.reconnectBackoff ?? DEFAULT_RECONNECT_BACKOFF,
    standaloneStream: options.standaloneStream ?? true,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? 0,
    endpointTimeoutMs: options.endpointTimeoutMs ?? 10_000,
    closeTimeoutMs: options.closeTimeoutMs ?? 2000,
    handshakeTimeoutMs: options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
  };
}
