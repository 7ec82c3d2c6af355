/**
 * Observations: what the router tells metrics and tracing about the work it does, at the moments
 * it knows them, without a hop being built. Three kinds, each a start and an end:
 *
 * - a client request (`callStarted` when the router takes it, `callEnded` once, however it ends:
 *   answered, refused by an interceptor, failed, cancelled, cut off by its session's end);
 * - a request the gateway sends upstream (`upstreamStarted` when it is entered in the correlation
 *   table, `upstreamEnded` once: its response, a failure, a timeout, a cancellation). A client
 *   call forwarded is one; each request of an aggregated list's fan-out is one, per upstream;
 * - a client session (`sessionOpened`, `sessionClosed`);
 * - an upstream connection (a link) changing state (`linkChanged`): attached while starting, ready
 *   once its handshake is done, restarting or down when it closes; a link that leaves `ready` says
 *   how long it was ready (the gateway's session with that upstream).
 *
 * Like taps, observers observe and never steer: they are called synchronously, their return is
 * ignored, and one that throws is logged (once per observer) and counted
 * (`observer_errors_total{observer}`), never allowed to break forwarding. Unlike taps they see
 * facts, not messages: nothing is serialised or enveloped for them. With no observer of calls,
 * upstream requests or sessions registered the router pays one boolean read per request and
 * nothing else (`Observations.active`). Link changes are rare (a start, a restart, a close) and
 * gated apart (`Observations.watchesLinks`): an observer that only hears `linkChanged` (the
 * readiness record, `gateways/serve/link-states.ts`) leaves the per-request path off.
 *
 * Why not the existing hooks: an interceptor's `delivered` sees each client call end, but not its
 * error code, not whether an interceptor refused it, and neither the requests a call causes
 * upstream (a fan-out) nor sessions and links; the tap bus sees every hop, but only by building
 * each hop (the gate that keeps `--no-trace` free would open for every message) and leaves calls
 * to be reassembled from their hops by correlation. Observers get the facts where the router
 * already holds them.
 */
import type { TransportKind } from '../envelope/message-context.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import type { JsonRpcErrorObject, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc/types.js';
import type { ProtocolVersion } from '../protocol/mcp/revisions.js';
import type { LinkId, SessionKey } from './correlation-table.js';
import type { SessionView } from './ports.js';

/**
 * How a request ended: `ok`; `tool_error` (a result with `isError: true`, the tool's own failure);
 * `error` (a JSON-RPC error: `errorCode`); `refused` (an interceptor's `admit` said no: policy, an
 * approval denied; `errorCode` is the refusal's); `cancelled` (no answer was sent: the client
 * cancelled, its session ended, or for an upstream request, the gateway gave up on it).
 */
export type ObservedOutcome = 'ok' | 'tool_error' | 'error' | 'refused' | 'cancelled';

/** What a request names, as the conventions see it: a tool, a prompt, or a resource. */
export interface ObservedTarget {
  /** Which: `tools/call` names a tool, `prompts/get` a prompt, the resource methods a resource. */
  readonly kind: 'tool' | 'prompt' | 'resource';
  /** The tool's or prompt's name, or the resource's URI, as the message carries it. */
  readonly name: string;
}

/** A client request, from when the router takes it (see `callStarted`). */
export interface ObservedCall {
  /** The client's session, read live (its protocol version is the negotiated one once known). */
  readonly session: SessionView;
  /** The request as the client sent it (the client's id, its names before any rewriting). */
  readonly request: JsonRpcRequest;
  /** The MEUP envelope id of the client's request (`switchboard trace follow <id>`). */
  readonly traceId: string;
  /** Epoch milliseconds (fractional, on the monotonic clock's base) the request arrived. */
  readonly receivedAt: number;
}

/** How a client request ended (see `callEnded`). */
export interface CallEnd {
  /** How it ended (`ObservedOutcome`). */
  readonly outcome: ObservedOutcome;
  /** The JSON-RPC error code, for `error` and `refused`. */
  readonly errorCode?: number;
  /** The upstream it was forwarded to; undefined for an answer of the gateway's own (a merged list). */
  readonly upstream?: string;
  /** The request as forwarded (a namespaced name restored to the upstream's own), when forwarded. */
  readonly routed?: JsonRpcRequest;
  /** The response the client got; undefined when none was sent (`cancelled`). */
  readonly response?: JsonRpcResponse;
  /** From arrival to the answer written (or given up), in milliseconds. */
  readonly durationMs: number;
}

/** A request the gateway sent to an upstream (see `upstreamStarted`). */
export interface ObservedUpstreamRequest {
  /** The upstream's configured name. */
  readonly upstream: string;
  /** The connection it went out on. */
  readonly link: LinkId;
  /** The request's method. */
  readonly method: string;
  /** The request as sent, before its id was rewritten for the upstream. */
  readonly request: JsonRpcRequest | undefined;
  /** The client call it serves (a forward, or a fan-out of the gateway's answer); absent for the gateway's own. */
  readonly call?: ObservedCall;
  /** The session whose trace it belongs to (the gateway's own internal key for its own requests). */
  readonly traceSession: SessionKey;
  /** The MEUP envelope id of the gateway→upstream hop. */
  readonly traceId: string;
  /** `performance.now()` when it was entered in the correlation table. */
  readonly startedAt: number;
}

/** How an upstream request ended (see `upstreamEnded`). */
export interface UpstreamEnd {
  /** How it ended: never `refused` (interceptors see client calls, not these). */
  readonly outcome: ObservedOutcome;
  /** The error code, for `error`: the upstream's, or the gateway's (a timeout, a failed send). */
  readonly errorCode?: number;
  /** The upstream's response, when it answered. */
  readonly response?: JsonRpcResponse;
  /** From its entry in the correlation table to its end, in milliseconds. */
  readonly durationMs: number;
}

/** A client session as opened (see `sessionOpened`). */
export interface ObservedSession {
  /** The session's key in the router. */
  readonly key: SessionKey;
  /** The transport the client came on. */
  readonly transport: TransportKind;
  /** The protocol version known when it opened (the default until `initialize` says otherwise). */
  readonly protocolVersion: ProtocolVersion;
  /** Who the client is, as authentication established it; absent without authentication. */
  readonly principal?: string;
}

/** How a session ended (see `sessionClosed`). */
export interface SessionEnd {
  /** The protocol version it ended with (the negotiated one). */
  readonly protocolVersion: ProtocolVersion;
  /** Why it closed, as the transport that closed it said (free text, for logs). */
  readonly reason: string;
  /** Since `sessionOpened`; undefined when it opened before any observer was registered. */
  readonly durationMs: number | undefined;
}

/** An upstream connection (a router link). */
export interface ObservedLink {
  /** The link's id in the router, the same across its restarts. */
  readonly link: LinkId;
  /** The upstream's configured name. */
  readonly upstream: string;
  /** The transport it speaks (stdio to a child, HTTP, …). */
  readonly transport: TransportKind;
}

/** Where a link is: `restarting` when it closed and its supervisor starts it again, `down` for good. */
export type LinkPhase = 'starting' | 'ready' | 'restarting' | 'down';

/** A link's new state (see `linkChanged`). */
export interface LinkChange {
  /** Its state now; `ready` is reported once per stay in it. */
  readonly phase: LinkPhase;
  /** Why it closed (`restarting`, `down`). */
  readonly reason?: string;
  /** For a link leaving `ready`: how long it was ready, in milliseconds (an upstream session's duration). */
  readonly readyMs?: number;
}

/**
 * What an observer may want to hear of; every member optional. Each is called synchronously, in
 * the router's turn, and must be quick: it runs on the forwarding path.
 */
export interface CallObserver {
  /** Names the observer in logs and in `observer_errors_total{observer}` when it throws. */
  readonly name: string;
  /** A client request was taken by the router. */
  callStarted?(call: ObservedCall): void;
  /** A client request ended, once, however it ended (`call` is the object `callStarted` got). */
  callEnded?(call: ObservedCall, end: CallEnd): void;
  /** The gateway entered a request to an upstream in the correlation table. */
  upstreamStarted?(request: ObservedUpstreamRequest): void;
  /** That request ended, once (`request` is the object `upstreamStarted` got). */
  upstreamEnded?(request: ObservedUpstreamRequest, end: UpstreamEnd): void;
  /** A client session opened. */
  sessionOpened?(session: ObservedSession): void;
  /** A client session closed. */
  sessionClosed?(session: ObservedSession, end: SessionEnd): void;
  /** An upstream link changed state. */
  linkChanged?(link: ObservedLink, change: LinkChange): void;
}

/** A tool result that says `isError: true` (the tool's own failure, not a JSON-RPC error). */
export function isToolError(result: unknown): boolean {
  return typeof result === 'object' && result !== null && (result as { isError?: unknown }).isError === true;
}

/** What a request names: `tools/call` and `prompts/get` their `name`, the resource methods their `uri`. */
export function requestTarget(request: JsonRpcRequest | undefined): ObservedTarget | undefined {
  const params = request?.params as Record<string, unknown> | undefined;
  if (params === undefined || params === null || typeof params !== 'object') return undefined;
  switch (request?.method) {
    case 'tools/call':
      return typeof params.name === 'string' ? { kind: 'tool', name: params.name } : undefined;
    case 'prompts/get':
      return typeof params.name === 'string' ? { kind: 'prompt', name: params.name } : undefined;
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return typeof params.uri === 'string' ? { kind: 'resource', name: params.uri } : undefined;
    default:
      return undefined;
  }
}

/**
 * An upstream request being observed: ends once, whichever end the router reports first. A class,
 * every field set in its constructor: one shape for every request's handle, however it was started.
 */
class OpenUpstream implements ObservedUpstreamRequest {
  readonly method: string;
  readonly startedAt = performance.now();
  ended = false;

  constructor(
    readonly upstream: string,
    readonly link: LinkId,
    readonly request: JsonRpcRequest,
    readonly call: ObservedCall | undefined,
    readonly traceSession: SessionKey,
    readonly traceId: string,
  ) {
    this.method = request.method;
  }
}

type Hook = Exclude<keyof CallObserver, 'name'>;

/** The hooks that turn on the per-request path: everything but `linkChanged`. */
const TRAFFIC_HOOKS: readonly Hook[] = [
  'callStarted',
  'callEnded',
  'upstreamStarted',
  'upstreamEnded',
  'sessionOpened',
  'sessionClosed',
];

/** Whether `observer` hears calls, upstream requests or sessions (not only links). */
function hearsTraffic(observer: CallObserver): boolean {
  return TRAFFIC_HOOKS.some((hook) => observer[hook] !== undefined);
}

/**
 * The router's observers, and the one place that calls them. `active` is false while no observer
 * of traffic (calls, upstream requests, sessions) is registered: the router then builds nothing
 * for them on any request. `watchesLinks` is the same for link changes, apart, so that an observer
 * of links alone costs requests nothing. Registering is allowed at any time; a request that
 * started before its observer was added may end without having started for it.
 */
export class Observations {
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  #observers: readonly CallObserver[] = [];
  readonly #failedOnce = new Set<string>();
  /** When each open session opened (`performance.now()`), for its duration; only while `active`. */
  readonly #opened = new Map<SessionKey, number>();
  /** Since when each ready link has been ready (`performance.now()`); only while `watchesLinks`. */
  readonly #readySince = new Map<LinkId, number>();
  /**
   * False while no registered observer hears calls, upstream requests or sessions: the router
   * skips all of those then (one boolean read per request).
   */
  active = false;
  /** False while no registered observer hears link changes: the router skips those then. */
  watchesLinks = false;

  /** The router's observers, starting with `observers`; failures go to `logger` and `metrics`. */
  constructor(logger: Logger, metrics: Metrics, observers: readonly CallObserver[] = []) {
    this.#logger = logger;
    this.#metrics = metrics;
    for (const observer of observers) this.add(observer);
  }

  /** Registers `observer` (after the others: it is called last) and sets `active`. */
  add(observer: CallObserver): void {
    this.#observers = [...this.#observers, observer];
    this.#gate();
  }

  /**
   * Unregisters `observer`. When none is left, `active` turns false and the open sessions' and
   * ready links' start times are forgotten (their later ends carry no duration).
   */
  remove(observer: CallObserver): void {
    this.#observers = this.#observers.filter((o) => o !== observer);
    this.#gate();
    if (!this.active) this.#opened.clear();
    if (!this.watchesLinks) this.#readySince.clear();
  }

  /** Sets `active` and `watchesLinks` from the hooks the observers have. */
  #gate(): void {
    this.active = this.#observers.some(hearsTraffic);
    this.watchesLinks = this.#observers.some((o) => o.linkChanged !== undefined);
  }

  /** Reports a client request taken to every observer. */
  callStarted(call: ObservedCall): void {
    for (const o of this.#observers) {
      if (o.callStarted === undefined) continue;
      try {
        o.callStarted(call);
      } catch (error) {
        this.#failed(o, 'callStarted', error);
      }
    }
  }

  /** Reports a client request's end to every observer; the router calls it once per call. */
  callEnded(call: ObservedCall, end: CallEnd): void {
    for (const o of this.#observers) {
      if (o.callEnded === undefined) continue;
      try {
        o.callEnded(call, end);
      } catch (error) {
        this.#failed(o, 'callEnded', error);
      }
    }
  }

  /**
   * Reports an upstream request's start: `request` as sent (before its id was rewritten) toward
   * `upstream` on `link`, serving `call` if any. The returned handle is what `upstreamEnded` takes.
   */
  upstreamStarted(
    upstream: string,
    link: LinkId,
    request: JsonRpcRequest,
    call: ObservedCall | undefined,
    traceSession: SessionKey,
    traceId: string,
  ): ObservedUpstreamRequest {
    const open = new OpenUpstream(upstream, link, request, call, traceSession, traceId);
    for (const o of this.#observers) {
      if (o.upstreamStarted === undefined) continue;
      try {
        o.upstreamStarted(open);
      } catch (error) {
        this.#failed(o, 'upstreamStarted', error);
      }
    }
    return open;
  }

  /**
   * Reports an upstream request's end: with its response, or with the error or cancellation that
   * ended it. Only the first end of a request counts (a timeout is also a cancellation upstream).
   * The end has one shape, every field present (`undefined` when absent).
   */
  upstreamEnded(
    request: ObservedUpstreamRequest,
    how: { readonly response: JsonRpcResponse } | { readonly error: JsonRpcErrorObject } | 'cancelled',
  ): void {
    const open = request as OpenUpstream;
    if (open.ended) return;
    open.ended = true;
    const durationMs = performance.now() - open.startedAt;
    let outcome: ObservedOutcome;
    let errorCode: number | undefined;
    let response: JsonRpcResponse | undefined;
    if (how === 'cancelled') outcome = 'cancelled';
    else if ('response' in how) {
      response = how.response;
      if ('error' in response) {
        outcome = 'error';
        errorCode = (response.error as JsonRpcErrorObject).code;
      } else outcome = isToolError(response.result) ? 'tool_error' : 'ok';
    } else {
      outcome = 'error';
      errorCode = how.error.code;
    }
    const end: UpstreamEnd = { outcome, errorCode, response, durationMs };
    for (const o of this.#observers) {
      if (o.upstreamEnded === undefined) continue;
      try {
        o.upstreamEnded(open, end);
      } catch (error) {
        this.#failed(o, 'upstreamEnded', error);
      }
    }
  }

  /** Reports a session opened, and notes when, for its duration at `sessionClosed`. */
  sessionOpened(session: ObservedSession): void {
    this.#opened.set(session.key, performance.now());
    for (const o of this.#observers) {
      if (o.sessionOpened === undefined) continue;
      try {
        o.sessionOpened(session);
      } catch (error) {
        this.#failed(o, 'sessionOpened', error);
      }
    }
  }

  /** Reports a session closed, with the version it ended with, `reason`, and its duration if known. */
  sessionClosed(session: ObservedSession, protocolVersion: ProtocolVersion, reason: string): void {
    const openedAt = this.#opened.get(session.key);
    this.#opened.delete(session.key);
    const end: SessionEnd = {
      protocolVersion,
      reason,
      durationMs: openedAt === undefined ? undefined : performance.now() - openedAt,
    };
    for (const o of this.#observers) {
      if (o.sessionClosed === undefined) continue;
      try {
        o.sessionClosed(session, end);
      } catch (error) {
        this.#failed(o, 'sessionClosed', error);
      }
    }
  }

  /** Reports a link's new state; one leaving `ready` carries how long it was ready. */
  linkChanged(link: ObservedLink, phase: LinkPhase, reason?: string): void {
    const since = this.#readySince.get(link.link);
    if (phase === 'ready') {
      if (since !== undefined) return;
      this.#readySince.set(link.link, performance.now());
    } else if (since !== undefined) this.#readySince.delete(link.link);
    const change: LinkChange = {
      phase,
      ...(reason === undefined ? {} : { reason }),
      ...(since === undefined || phase === 'ready' ? {} : { readyMs: performance.now() - since }),
    };
    for (const o of this.#observers) {
      if (o.linkChanged === undefined) continue;
      try {
        o.linkChanged(link, change);
      } catch (error) {
        this.#failed(o, 'linkChanged', error);
      }
    }
  }

  /** An observer that threw: counted, logged the first time, and the gateway goes on. */
  #failed(observer: CallObserver, hook: Hook, error: unknown): void {
    this.#metrics.inc('observer_errors_total', { observer: observer.name });
    if (this.#failedOnce.has(observer.name)) return;
    this.#failedOnce.add(observer.name);
    this.#logger.error(
      { observer: observer.name, hook, err: String(error) },
      'an observer failed; the gateway went on',
    );
  }
}
