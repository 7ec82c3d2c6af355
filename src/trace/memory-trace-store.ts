/**
 * A `TraceStore` held in memory: for tests, and for deployments that want a queryable trace
 * without a file on disk (bounded by `capacity`). It keeps exactly what `SqliteTraceStore` keeps
 * (same truncation, same duplicate and session rules); the shared contract suite checks that.
 */
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import {
  buildCorrelationGraph,
  type CorrelationEdge,
  type CorrelationSource,
  DEFAULT_FOLLOW_DEPTH,
} from './correlation-walk.js';
import {
  type PayloadGuard,
  payloadGuardOf,
  type TracePayloadMode,
  type TracePayloadOptions,
} from './payload-guard.js';
import { mergeSessionInfo } from './session-info-merge.js';
import { rpcSummary } from './stored-payload.js';
import type {
  CorrelationGraph,
  ManagedTraceStore,
  TracePruneOptions,
  TraceRecord,
  TraceSessionInfo,
  TraceSessionSummary,
} from './types.js';

/** Options of {@link MemoryTraceStore}. */
export interface MemoryTraceStoreOptions {
  /** Payloads above this many UTF-8 bytes are kept as a truncation marker. Default 1 MiB. */
  readonly maxPayloadBytes?: number;
  /** What is kept of each payload (`payload-guard.ts`), as the SQLite store does. Default `redacted`. */
  readonly payloads?: TracePayloadMode;
  /** The operator's extra redaction rules (`audit.redact`), for `redacted` payloads. */
  readonly redact?: TracePayloadOptions['redact'];
  /**
   * Keep at most about this many envelopes: once 10% more are held, the oldest are pruned down to
   * `capacity` (amortized O(1) per append). Unbounded when absent.
   */
  readonly capacity?: number;
}

interface Entry {
  readonly seq: number;
  readonly record: TraceRecord;
}

/**
 * The in-memory store. Not thread-safe (nothing in Node is shared between threads here); every
 * method throws `SB_TRACE_STORE` after `close()`.
 */
export class MemoryTraceStore implements ManagedTraceStore {
  readonly #payloads: PayloadGuard;
  readonly #capacity: number | undefined;
  #entries: Entry[] = [];
  #byId = new Map<string, Entry>();
  #bySession = new Map<string, Entry[]>();
  /** source -> targets it names; target -> sources naming it. */
  #out = new Map<string, Set<string>>();
  #in = new Map<string, Set<string>>();
  readonly #sessions = new Map<string, TraceSessionInfo>();
  #seq = 0;
  #closed = false;

  constructor(options: MemoryTraceStoreOptions = {}) {
    this.#payloads = payloadGuardOf(options);
    this.#capacity = options.capacity;
  }

  append(records: readonly TraceRecord[]): void {
    this.#open();
    for (const record of records) {
      if (this.#byId.has(record.envelope.id)) continue;
      const entry: Entry = { seq: ++this.#seq, record: this.#normalize(record) };
      this.#index(entry);
      if (!this.#sessions.has(record.session)) {
        this.#sessions.set(record.session, {
          key: record.session,
          transport: record.transport,
          upstreams: [],
          startedAt: record.receivedAt,
        });
      }
    }
    const capacity = this.#capacity;
    if (capacity !== undefined && this.#entries.length > capacity + Math.max(1, Math.floor(capacity / 10))) {
      this.prune({ maxEnvelopes: capacity });
    }
  }

  upsertSession(info: TraceSessionInfo): void {
    this.#open();
    const kept: TraceSessionInfo = { ...info, upstreams: [...info.upstreams] };
    if (info.clientInfo !== undefined) {
      (kept as { clientInfo?: unknown }).clientInfo = this.#payloads.value(info.clientInfo);
    }
    // A later report fills in what it knows and never blanks a known field (session-info-merge.ts).
    this.#sessions.set(info.key, mergeSessionInfo(this.#sessions.get(info.key), kept));
  }

  sessions(options: { readonly limit?: number } = {}): TraceSessionSummary[] {
    this.#open();
    const all = [...this.#sessions.values()].sort(newestFirst);
    const limited = options.limit === undefined ? all : all.slice(0, Math.max(0, options.limit));
    return limited.map((info) => this.#summary(info));
  }

  sessionInfo(keyOrMcpSessionId: string): TraceSessionSummary | undefined {
    this.#open();
    const info = this.#resolve(keyOrMcpSessionId);
    return info === undefined ? undefined : this.#summary(info);
  }

  session(keyOrMcpSessionId: string): TraceRecord[] {
    this.#open();
    const key = this.#resolve(keyOrMcpSessionId)?.key ?? keyOrMcpSessionId;
    return (this.#bySession.get(key) ?? []).map((e) => e.record);
  }

  subtree(context: string): TraceRecord[] {
    this.#open();
    const prefix = `${context}/`;
    const out: TraceRecord[] = [];
    for (const { record } of this.#entries) {
      const c = record.envelope.context;
      if (c !== undefined && (c === context || c.startsWith(prefix))) out.push(record);
    }
    return out;
  }

  get(id: string): TraceRecord | undefined {
    this.#open();
    return this.#byId.get(id)?.record;
  }

  follow(id: string, options: { readonly maxDepth?: number } = {}): CorrelationGraph | undefined {
    this.#open();
    const source: CorrelationSource = {
      edges: (ids, direction) => {
        const out: CorrelationEdge[] = [];
        const map = direction === 'out' ? this.#out : this.#in;
        for (const from of ids) {
          for (const other of map.get(from) ?? []) {
            out.push(direction === 'out' ? { from, to: other } : { from: other, to: from });
          }
        }
        return out;
      },
      records: (ids) =>
        ids
          .map((i) => this.#byId.get(i))
          .filter((e): e is Entry => e !== undefined)
          .sort((a, b) => a.seq - b.seq)
          .map((e) => e.record),
    };
    return buildCorrelationGraph(id, options.maxDepth ?? DEFAULT_FOLLOW_DEPTH, source);
  }

  prune(options: TracePruneOptions): number {
    this.#open();
    const cutoff =
      options.maxAgeMs === undefined ? undefined : (options.now ?? Date.now()) - options.maxAgeMs;
    const firstKept =
      options.maxEnvelopes === undefined
        ? 0
        : Math.max(0, this.#entries.length - Math.max(0, Math.floor(options.maxEnvelopes)));
    const kept: Entry[] = [];
    let horizon = cutoff ?? Number.NEGATIVE_INFINITY;
    this.#entries.forEach((entry, index) => {
      if (index < firstKept || (cutoff !== undefined && entry.record.receivedAt < cutoff)) {
        horizon = Math.max(horizon, entry.record.receivedAt);
      } else {
        kept.push(entry);
      }
    });
    const deleted = this.#entries.length - kept.length;
    if (deleted > 0) {
      this.#entries = [];
      this.#byId = new Map();
      this.#bySession = new Map();
      this.#out = new Map();
      this.#in = new Map();
      for (const entry of kept) this.#index(entry);
    }
    for (const [key, info] of this.#sessions) {
      if (!this.#bySession.has(key) && (info.endedAt ?? info.startedAt) <= horizon)
        this.#sessions.delete(key);
    }
    return deleted;
  }

  close(): void {
    this.#closed = true;
  }

  #open(): void {
    if (this.#closed) throw new SwitchboardError(SbErrorCode.TraceStore, 'the trace store is closed');
  }

  /** What the store keeps: no `payloadJson`, and the payload as the SQLite store would write it. */
  #normalize(record: TraceRecord): TraceRecord {
    const { payloadJson, ...rest } = record;
    const e = record.envelope;
    const { text, changed } = this.#payloads.stored({
      payload: e.payload,
      json: payloadJson,
      kind: e.kind,
      method: rpcSummary(e.payload).method ?? null,
      context: e.context ?? null,
      to: e.to,
    });
    if (!changed) return rest;
    return { ...rest, envelope: { ...e, payload: JSON.parse(text) as Record<string, unknown> } };
  }

  #index(entry: Entry): void {
    const { envelope, session } = entry.record;
    this.#entries.push(entry);
    this.#byId.set(envelope.id, entry);
    const list = this.#bySession.get(session);
    if (list) list.push(entry);
    else this.#bySession.set(session, [entry]);
    for (const target of envelope.correlationId ?? []) {
      addTo(this.#out, envelope.id, target);
      addTo(this.#in, target, envelope.id);
    }
  }

  #resolve(keyOrMcpSessionId: string): TraceSessionInfo | undefined {
    const byKey = this.#sessions.get(keyOrMcpSessionId);
    if (byKey) return byKey;
    let best: TraceSessionInfo | undefined;
    for (const info of this.#sessions.values()) {
      if (info.mcpSessionId === keyOrMcpSessionId && (best === undefined || newestFirst(info, best) < 0))
        best = info;
    }
    return best;
  }

  #summary(info: TraceSessionInfo): TraceSessionSummary {
    const entries = this.#bySession.get(info.key) ?? [];
    const last = entries[entries.length - 1];
    return last === undefined
      ? { ...info, envelopes: 0 }
      : { ...info, envelopes: entries.length, lastAt: last.record.sentAt ?? last.record.receivedAt };
  }
}

function addTo(map: Map<string, Set<string>>, key: string, value: string): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

/** Newest `startedAt` first; ties by key, descending (the SQLite store's `ORDER BY`). */
function newestFirst(a: TraceSessionInfo, b: TraceSessionInfo): number {
  if (a.startedAt !== b.startedAt) return b.startedAt - a.startedAt;
  return a.key < b.key ? 1 : a.key > b.key ? -1 : 0;
}
