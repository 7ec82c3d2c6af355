/**
 * The trace: every message that passes the gateway, recorded as a MEUP envelope with the hop's
 * metadata. The core produces `TraceRecord`s; a `TraceStore` keeps and queries them.
 */
import type { Direction } from '../envelope/direction.js';
import type { TransportKind } from '../envelope/message-context.js';
import type { MeupEnvelope } from '../meup/types.js';
import type { TraceHop } from './trace-hop.js';

export interface TraceRecord {
  readonly envelope: MeupEnvelope;
  /** The internal session key; also the root segment of `envelope.context`. */
  readonly session: string;
  readonly direction: Direction;
  readonly transport: TransportKind;
  /** The upstream server involved in this hop, when there is one. */
  readonly upstream?: string;
  /** Epoch milliseconds (fractional) when the gateway read the message. */
  readonly receivedAt: number;
  /** Epoch milliseconds (fractional) when the gateway wrote it to the next hop. */
  readonly sentAt?: number;
  /**
   * `envelope.payload` already serialized as JSON, when the transport had it at hand (the gateway
   * serializes each message once for the wire; the store may reuse that text instead of
   * stringifying again). When present it is exactly `JSON.stringify(envelope.payload)`.
   */
  readonly payloadJson?: string;
  /**
   * The OpenTelemetry trace and span id of the call this envelope belongs to (its client request's
   * SERVER span), when the gateway exported traces; how one goes from a tracing UI to
   * `switchboard trace follow` and back (docs/observability.md, "Traces").
   */
  readonly otel?: OtelIds;
}

/** An OpenTelemetry span's ids, lower-case hex (32 and 16 digits). */
export interface OtelIds {
  readonly traceId: string;
  readonly spanId: string;
}

export interface TraceSessionInfo {
  /** Internal key, a valid context segment: the root of every context in the session. */
  readonly key: string;
  /** The client-facing `Mcp-Session-Id`, when the transport has one. */
  readonly mcpSessionId?: string;
  readonly principal?: string;
  readonly transport: TransportKind;
  /** Upstream server names this session talks to. */
  readonly upstreams: readonly string[];
  readonly startedAt: number;
  readonly endedAt?: number;
  readonly protocolVersion?: string;
  readonly clientInfo?: Readonly<Record<string, unknown>>;
}

export interface TraceSessionSummary extends TraceSessionInfo {
  readonly envelopes: number;
  /**
   * When the session's last envelope happened: its `sentAt` when the gateway wrote it, else its
   * `receivedAt` (the envelope's `ts`). Not `receivedAt` alone: the gateway's response to a client
   * carries its request's `receivedAt`, which would end an open session when its last call began.
   */
  readonly lastAt?: number;
}

/** The correlation graph around one envelope, both ways. */
export interface CorrelationGraph {
  readonly root: TraceRecord;
  /** What the root answers or derives from, transitively (its `correlation_id` targets and theirs). */
  readonly answers: readonly TraceRecord[];
  /** What answers or derives from the root, transitively (envelopes naming it). */
  readonly answeredBy: readonly TraceRecord[];
  /** Every edge among the records above: `from` names `to` in its `correlation_id`. */
  readonly edges: readonly { readonly from: string; readonly to: string }[];
}

/**
 * The storage port for the trace. Writes are batches (the recorder batches off the forwarding
 * path), synchronous unless the store is a {@link DeferredTraceStore}; reads are synchronous.
 * Implementations must be safe to call from one thread only.
 */
export interface TraceStore {
  append(records: readonly TraceRecord[]): void;
  upsertSession(info: TraceSessionInfo): void;
  sessions(options?: { readonly limit?: number }): TraceSessionSummary[];
  /** Every envelope of a session, in the order the gateway saw them. Accepts a session key or an Mcp-Session-Id. */
  session(keyOrMcpSessionId: string): TraceRecord[];
  /** The envelopes whose context is `context` or lies below it, in order. */
  subtree(context: string): TraceRecord[];
  /** One envelope by id. */
  get(id: string): TraceRecord | undefined;
  follow(id: string, options?: { readonly maxDepth?: number }): CorrelationGraph | undefined;
  close(): void;
}

/**
 * A store whose writes complete later, elsewhere (the SQLite store in its worker thread): `append`
 * and `appendHops` hand the records over and return without waiting; how each write went shows in
 * the counters, and failures are also told to `onWriteError` (for logging).
 */
export interface DeferredTraceStore extends TraceStore {
  /** Like `append`, for hops whose timestamp and payload text the store derives. */
  appendHops(hops: readonly TraceHop[]): void;
  /** Records handed over whose write has not settled yet. */
  readonly queued: number;
  /** Records written since the store opened. */
  readonly written: number;
  /** Records lost to failed writes since the store opened. */
  readonly failed: number;
  /** Failed writes (calls, not records) since the store opened. */
  readonly writeErrors: number;
  /** Told about each failed write with the number of records lost with it. */
  onWriteError: ((error: Error, lost: number) => void) | undefined;
}

/** Whether `store` writes asynchronously (see {@link DeferredTraceStore}). */
export function isDeferredTraceStore(store: TraceStore): store is DeferredTraceStore {
  return typeof (store as Partial<DeferredTraceStore>).appendHops === 'function';
}

/** Retention limits for `prune`; when both are given, an envelope goes if either says so. */
export interface TracePruneOptions {
  /** Delete envelopes the gateway received more than this many milliseconds before `now`. */
  readonly maxAgeMs?: number;
  /** Keep at most this many envelopes: the most recently recorded ones. */
  readonly maxEnvelopes?: number;
  /** The clock for `maxAgeMs`, epoch milliseconds; defaults to `Date.now()`. */
  readonly now?: number;
}

/**
 * What the built-in stores offer beyond the port: one session's summary (the CLI's header, and
 * telling an unknown session from an empty one) and retention.
 */
export interface ManagedTraceStore extends TraceStore {
  /** The summary of one session, by internal key or `Mcp-Session-Id`; `undefined` when unknown. */
  sessionInfo(keyOrMcpSessionId: string): TraceSessionSummary | undefined;
  /**
   * Deletes the oldest envelopes (by insertion order, or by `receivedAt` for `maxAgeMs`) with the
   * correlation edges they hold, and sessions left empty whose activity predates them. Returns
   * the number of envelopes deleted.
   */
  prune(options: TracePruneOptions): number;
}
