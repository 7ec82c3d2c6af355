/**
 * The link registry: every link the router knows, its state, the traffic queued while it starts,
 * who waits for it to be ready, and the one way a message is written to it. A **link** is the
 * router's handle on one connection to an upstream; the **upstream** is the configured server
 * behind it, by name (one upstream may have several links: per session, per pooled child).
 *
 * A link is `starting` (queued traffic waits), `ready`, or `down` (for good). A restarted
 * connection is attached to the same link (same id): what clients sent during the backoff stays
 * queued for it. The registry knows nothing of calls: what becomes of a request that could
 * not be written is the router's (`LinkRegistryOptions.unsent`).
 */

import type { TransportContext } from '../envelope/message-context.js';
import { rejection } from '../errors/rpc-error.js';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { newEnvelopeId } from '../meup/ids.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import {
  isRequest,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcResponse,
  type RequestId,
} from '../protocol/jsonrpc/types.js';
import type { LinkId, SessionKey } from './correlation-table.js';
import { type HopSessionSource, toUpstreamHop } from './hops.js';
import type { AddLink, UpstreamClose, UpstreamTransport } from './ports.js';
import type { TraceContextWriter } from './router-types.js';
import { INTERNAL_SESSION } from './session-key.js';
import type { HopFields } from './taps.js';
import { errorText } from './thrown.js';
import { wallNow } from './trace-mapping.js';

/** Where a link is in its life. */
export type LinkState = 'ready' | 'starting' | 'down';

/** A link: the router's handle on one connection to an upstream, and that connection. */
export interface Link {
  /** The id the router knows the link by, stable across restarts of its connection. */
  readonly id: LinkId;
  /** The upstream's configured name (what logs, metrics and the trace call it). */
  readonly name: string;
  /** The connection messages are written to (replaced when a restarted one is attached). */
  readonly transport: UpstreamTransport;
  /** The connection's details (child pid, URL...), recorded on the link's hops. */
  readonly transportContext: TransportContext;
  /** `starting` (traffic queues), `ready`, or `down` for good. */
  state: LinkState;
  /** Why it last closed, for the errors of those who wanted it. */
  downReason?: string;
  /** What waits for the link to be ready, in order. */
  readonly queue: { json: string; message: JsonRpcMessage }[];
}

/** How a message written to a link is traced (its gateway->upstream hop). */
export interface ToLinkTrace {
  /** The hop's envelope id. */
  readonly id: string;
  /** The live session it is written for, if any. */
  readonly session: HopSessionSource | undefined;
  /** The session the table remembers, when it is no longer live (or the gateway's own). */
  readonly sessionKey?: SessionKey;
  /** The envelope ids the hop answers or follows (its `correlation_id`). */
  readonly correlation: readonly string[];
  /** The hop's MEUP context path. */
  readonly context: string;
  /** When the message that caused the write arrived (epoch milliseconds, `wallNow`). */
  readonly receivedAt: number;
}

/** What the link registry needs of the router. */
export interface LinkRegistryOptions {
  /** Where warnings (dropped, malformed or unroutable messages) are logged. */
  readonly logger: Logger;
  /** Where the counters of what happened are kept. */
  readonly metrics: Metrics;
  /** How many messages may wait for a starting link before more are refused. */
  readonly maxQueued: number;
  /** Hands a hop to the taps (the router's gate applies). */
  readonly hop: (fields: HopFields) => void;
  /**
   * A request the gateway accepted could not be written to `link` (its queue was full, or the
   * transport threw when the queue was flushed): the router fails the call it belongs to.
   */
  readonly unsent: (link: Link, id: RequestId, error: JsonRpcErrorObject) => void;
  /** Writes the gateway's trace context into each request sent (OpenTelemetry on), else undefined. */
  readonly traceContext?: TraceContextWriter | undefined;
}

/** A wait for a link to become ready (see `whenReady`). */
interface LinkWaiter {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: JsonRpcErrorObject): void;
}

/**
 * The router's links by id: attaches connections (first and restarted), queues what is written to
 * a starting link and flushes it when it is ready, and lets the gateway wait for a link.
 */
export class LinkRegistry {
  readonly #o: LinkRegistryOptions;
  readonly #links = new Map<LinkId, Link>();
  /** Who waits for a link to be ready: one wait per link while it is not. */
  readonly #waiters = new Map<LinkId, LinkWaiter>();
  #closed = false;

  /** An empty registry. */
  constructor(options: LinkRegistryOptions) {
    this.#o = options;
  }

  /** The link with this id, whatever its state, if it was ever attached. */
  get(id: LinkId): Link | undefined {
    return this.#links.get(id);
  }

  /** Every link ever attached (down ones too). */
  all(): IterableIterator<Link> {
    return this.#links.values();
  }

  /**
   * Attaches a connection as link `params.id`, replacing a dead one with that id. What clients sent
   * while the previous connection restarted stays queued for this one (it was queued after the old
   * connection's in-flight work was failed).
   */
  add(params: AddLink): Link {
    const previous = this.#links.get(params.id);
    const link: Link = {
      id: params.id,
      name: params.name,
      transport: params.transport,
      transportContext: params.transportContext,
      state: params.state ?? 'ready',
      queue: previous && previous.state !== 'down' ? previous.queue : [],
    };
    this.#links.set(params.id, link);
    return link;
  }

  /** The link finished its handshake: what was queued is written, in order, and waits settle. */
  setReady(id: LinkId): void {
    const link = this.#links.get(id);
    if (!link || link.state === 'down') return;
    link.state = 'ready';
    for (const item of link.queue.splice(0)) {
      try {
        link.transport.send(item.json, item.message);
      } catch (error) {
        this.#sendFailed(link, item.message, error);
      }
    }
    const waiter = this.#waiters.get(id);
    if (waiter) {
      this.#waiters.delete(id);
      waiter.resolve();
    }
  }

  /** See `Router.whenLinkReady`. */
  whenReady(id: LinkId): Promise<void> {
    const link = this.#links.get(id);
    if (link?.state === 'ready') return Promise.resolve();
    if (link?.state === 'down' || this.#closed) return Promise.reject(rejection(this.#gone(id, link)));
    let waiter = this.#waiters.get(id);
    if (!waiter) {
      let settle: Omit<LinkWaiter, 'promise'> = { resolve() {}, reject() {} };
      const promise = new Promise<void>((resolve, reject) => {
        settle = { resolve, reject: (error) => reject(rejection(error)) };
      });
      // Nobody may be waiting any more when it is rejected.
      promise.catch(() => undefined);
      waiter = { promise, ...settle };
      this.#waiters.set(id, waiter);
    }
    return waiter.promise;
  }

  /**
   * The link's connection closed: it is `starting` again (`restarting`) or `down` for good. Returns
   * the link, for the router to fail what was in flight on it before `discard`.
   */
  closed(id: LinkId, close: UpstreamClose, restarting: boolean): Link | undefined {
    const link = this.#links.get(id);
    if (!link) return undefined;
    link.state = restarting ? 'starting' : 'down';
    link.downReason = close.reason;
    return link;
  }

  /**
   * Drops what waited for a closed connection: its requests were just answered with an error, so
   * sending them to a new connection would run calls the client was told failed (under ids the new
   * connection hands out again); a link down for good also rejects its waits.
   */
  discard(link: Link): void {
    const dropped = link.queue.splice(0);
    if (dropped.length > 0)
      this.#o.metrics.inc('queued_dropped_total', { upstream: link.name }, dropped.length);
    const waiter = this.#waiters.get(link.id);
    if (waiter && link.state === 'down') {
      this.#waiters.delete(link.id);
      waiter.reject(this.#gone(link.id, link));
    }
  }

  /** The router closes: every wait is rejected, and new ones are refused. */
  close(): void {
    this.#closed = true;
    for (const [id, waiter] of this.#waiters) waiter.reject(this.#gone(id, this.#links.get(id)));
    this.#waiters.clear();
  }

  /** The error of a request for a link that is down (with its reason), or unknown. */
  unavailable(id: LinkId, link: Link | undefined): JsonRpcErrorObject {
    const name = link?.name ?? id;
    const why = link?.downReason ? `: ${link.downReason}` : '';
    return gatewayError(SbErrorCode.UpstreamUnavailable, `upstream ${name} is not available${why}`, {
      upstream: name,
    });
  }

  /** The error of a wait for a link that is down for good (or a router that closed). */
  #gone(id: LinkId, link: Link | undefined): JsonRpcErrorObject {
    if (!this.#closed || link?.state === 'down') return this.unavailable(id, link);
    const name = link?.name ?? id;
    return gatewayError(
      SbErrorCode.UpstreamUnavailable,
      `upstream ${name} is not available: the gateway is closing`,
      {
        upstream: name,
      },
    );
  }

  /**
   * Writes `message` to `link`, or queues it while the link starts (unless `bypassQueue`: the
   * link's own handshake), and traces what went on the wire. False when nothing went out and
   * nothing will: the caller fails what depended on it. A request refused because the queue is full
   * is failed here (true: the caller has nothing more to do).
   */
  send(link: Link, message: JsonRpcMessage, trace: ToLinkTrace, bypassQueue = false): boolean {
    if (this.#o.traceContext !== undefined && isRequest(message))
      message = this.#o.traceContext.toUpstream(message, {
        id: trace.id,
        context: trace.context,
        correlation: trace.correlation,
        upstream: link.name,
      });
    const json = this.#serialise(link, message);
    if (json === undefined) return false;
    let wire = json;
    let sent = message;
    if (link.state === 'starting' && !bypassQueue) this.#enqueue(link, json, message);
    else {
      const written = this.#write(link, json, message);
      if (written === false) return false;
      if (written) {
        wire = written.json;
        sent = written.message;
      }
    }
    this.#o.hop(
      toUpstreamHop(
        link,
        trace.session,
        trace.sessionKey,
        {
          id: trace.id,
          message: sent,
          context: trace.context,
          receivedAt: trace.receivedAt,
          raw: wire,
          correlation: trace.correlation,
        },
        wallNow(),
      ),
    );
    return true;
  }

  /** Answers a server's request `id` on `link` (the gateway answers it, for no session). */
  answer(
    link: Link,
    id: RequestId,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    context: string,
    receivedAt: number,
    requestTraceId: string,
  ): void {
    const message = { jsonrpc: '2.0', id, ...payload } as JsonRpcResponse;
    this.send(link, message, {
      id: newEnvelopeId(),
      session: undefined,
      sessionKey: INTERNAL_SESSION,
      correlation: [requestTraceId],
      context,
      receivedAt,
    });
  }

  /** The message's text, or undefined (counted, logged) when it cannot be serialised. */
  #serialise(link: Link, message: JsonRpcMessage): string | undefined {
    try {
      return JSON.stringify(message);
    } catch (error) {
      this.#o.metrics.inc('upstream_send_errors_total', { upstream: link.name });
      this.#o.logger.error(
        { upstream: link.name, err: errorText(error) },
        'a message for an upstream could not be serialised; not sent',
      );
      return undefined;
    }
  }

  /** Queues a message for a starting link; past the bound it is dropped, and a request failed. */
  #enqueue(link: Link, json: string, message: JsonRpcMessage): void {
    if (link.queue.length < this.#o.maxQueued) {
      link.queue.push({ json, message });
      return;
    }
    this.#o.metrics.inc('queued_dropped_total', { upstream: link.name });
    this.#o.logger.warn(
      { upstream: link.name },
      'too many messages waiting for a restarting upstream; dropped',
    );
    if (isRequest(message))
      this.#o.unsent(
        link,
        message.id,
        gatewayError(SbErrorCode.LimitExceeded, `upstream ${link.name} is restarting and its queue is full`),
      );
  }

  /**
   * Hands the message to the transport: what it wrote when it rewrote it (the trace keeps what went
   * on the wire: a transport for a legacy peer rewrites some messages), undefined when it wrote it
   * as given, false when it threw.
   */
  #write(link: Link, json: string, message: JsonRpcMessage): ReturnType<UpstreamTransport['send']> | false {
    try {
      return link.transport.send(json, message);
    } catch (error) {
      this.#o.metrics.inc('upstream_send_errors_total', { upstream: link.name });
      this.#o.logger.error(
        { upstream: link.name, err: errorText(error) },
        'an upstream transport failed to send; not sent',
      );
      return false;
    }
  }

  /** A queued message the transport refused when the link became ready: its request fails. */
  #sendFailed(link: Link, message: JsonRpcMessage, error: unknown): void {
    this.#o.metrics.inc('upstream_send_errors_total', { upstream: link.name });
    this.#o.logger.error(
      { upstream: link.name, err: errorText(error) },
      'an upstream transport failed to send a queued message; not sent',
    );
    if (!isRequest(message)) return;
    this.#o.unsent(
      link,
      message.id,
      gatewayError(SbErrorCode.Internal, `the gateway could not send this request to upstream ${link.name}`, {
        upstream: link.name,
      }),
    );
  }
}
