/**
 * The trace on disk: `<data-dir>/trace.db`, one SQLite file written by the gateway (from its trace
 * worker thread, see `worker-trace-store.ts`) and read by `switchboard trace` at the same time
 * (WAL: readers never block the writer, nor the reverse).
 *
 * Envelopes are rows in insertion order (`seq`, the rowid). `correlation_id` is the envelope's own
 * JSON array (`correlation`), which is also where the walk finds what an envelope names. The other
 * direction (which envelopes name a given id) comes from two places: a name within one
 * sub-context (both envelopes have the same context, and it contains a `/`: the hops of one call)
 * is found through the context index, by reading that context's correlation arrays; any other name
 * has a row in `named_by`. The writer knows the contexts of the envelopes it wrote last, so it can
 * tell the two apart without a read; a gateway's names are almost all of the first kind, so most
 * envelopes cost no reverse-index row and no second statement. Contexts are matched by range on an
 * index, never with `LIKE`: the subtree of `a` is `a` itself plus every context in `('a/', 'a0')`,
 * because `0` is the character after `/` and context segments never contain `/`.
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Direction } from '../envelope/direction.js';
import type { TransportKind } from '../envelope/message-context.js';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import type { MeupEnvelope, MeupProtocol } from '../meup/types.js';
import { buildCorrelationGraph, type CorrelationEdge, DEFAULT_FOLLOW_DEPTH } from './correlation-walk.js';
import {
  type PayloadGuard,
  payloadGuardOf,
  type TracePayloadMode,
  type TracePayloadOptions,
} from './payload-guard.js';
import { rpcSummary } from './stored-payload.js';
import type {
  CorrelationGraph,
  ManagedTraceStore,
  TracePruneOptions,
  TraceRecord,
  TraceSessionInfo,
  TraceSessionSummary,
} from './types.js';

/** How many envelope ids the writer remembers the sub-context of (a few seconds of a busy gateway). */
const RECENT_CONTEXTS = 16_384;

/** The schema version this code writes, kept in `PRAGMA user_version`. */
export const TRACE_SCHEMA_VERSION = 4;

/**
 * The oldest schema a read-only connection accepts: version 2 keeps a `named_by` row for every
 * name, a superset of what version 3's reads need.
 */
const OLDEST_READABLE_VERSION = 2;

/**
 * Migrations by target version: `MIGRATIONS[n - 1]` takes a database from version `n - 1` to `n`.
 * Append only; never edit a released step.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    key              TEXT PRIMARY KEY NOT NULL,
    mcp_session_id   TEXT,
    principal        TEXT,
    transport        TEXT NOT NULL,
    upstreams        TEXT NOT NULL DEFAULT '[]',
    started_at       REAL NOT NULL,
    ended_at         REAL,
    protocol_version TEXT,
    client_info      TEXT
  );
  CREATE INDEX sessions_mcp_session_id ON sessions (mcp_session_id);
  CREATE INDEX sessions_started_at ON sessions (started_at);

  CREATE TABLE envelopes (
    seq              INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    session          TEXT NOT NULL,
    protocol         TEXT NOT NULL,
    ts               TEXT NOT NULL,
    kind             TEXT NOT NULL,
    from_participant TEXT NOT NULL,
    to_participants  TEXT,
    correlation      TEXT,
    context          TEXT,
    method           TEXT,
    rpc_id           TEXT,
    direction        TEXT NOT NULL,
    transport        TEXT NOT NULL,
    upstream         TEXT,
    received_at      REAL NOT NULL,
    sent_at          REAL,
    payload          TEXT NOT NULL
  );
  CREATE INDEX envelopes_session ON envelopes (session, seq);
  CREATE INDEX envelopes_context ON envelopes (context);

  CREATE TABLE edges (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
  ) WITHOUT ROWID;
  CREATE INDEX edges_target ON edges (target, source);
  `,
  // 2: `edges` kept every correlation twice (and the forward direction is the `correlation` column
  // itself): only the reverse index stays, as `named_by`, one B-tree instead of two.
  `
  CREATE TABLE named_by (
    target TEXT NOT NULL,
    source TEXT NOT NULL,
    PRIMARY KEY (target, source)
  ) WITHOUT ROWID;
  INSERT OR IGNORE INTO named_by (target, source) SELECT target, source FROM edges;
  DROP TABLE edges;
  `,
  // 3: `named_by` rows only for names the context index cannot find (see the top of this file):
  // three B-tree rows and statements fewer per tool call. Nothing to change in the data: the rows a
  // version 2 writer left stay, and reads take the union. The version keeps older readers, which
  // would miss the names without a row, away.
  `
  SELECT 1;
  `,
  // 4: the OpenTelemetry trace and span id of each envelope's call, when the gateway exported
  // traces (NULL otherwise, and in every row written before).
  `
  ALTER TABLE envelopes ADD COLUMN otel_trace_id TEXT;
  ALTER TABLE envelopes ADD COLUMN otel_span_id TEXT;
  `,
];

/**
 * Brings `db` to {@link TRACE_SCHEMA_VERSION}, one transaction per step, and refuses a database
 * written by a newer version (its rows may mean something this code does not know).
 */
export function migrateTraceSchema(db: Database.Database): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > TRACE_SCHEMA_VERSION) {
    throw new SwitchboardError(
      SbErrorCode.TraceStore,
      `${db.name} has trace schema version ${current}, newer than this switchboard understands (${TRACE_SCHEMA_VERSION})`,
    );
  }
  for (let version = current + 1; version <= TRACE_SCHEMA_VERSION; version++) {
    const step = MIGRATIONS[version - 1] ?? '';
    db.transaction(() => {
      db.exec(step);
      db.pragma(`user_version = ${version}`);
    }).immediate();
  }
}

/** Options of {@link SqliteTraceStore}. */
export interface SqliteTraceStoreOptions {
  /**
   * Open an existing trace for reading only (the CLI): no migration, no writes, and a
   * `SB_TRACE_STORE` error naming the path when the file does not exist.
   */
  readonly readonly?: boolean;
  /** Payloads above this many UTF-8 bytes are stored as a truncation marker. Default 1 MiB. */
  readonly maxPayloadBytes?: number;
  /** What is written of each payload (`payload-guard.ts`). Default `redacted`. */
  readonly payloads?: TracePayloadMode;
  /** The operator's extra redaction rules (`audit.redact`), for `redacted` payloads. */
  readonly redact?: TracePayloadOptions['redact'];
  /** How long to wait for a lock held by another connection, in ms. Default 5000. */
  readonly busyTimeoutMs?: number;
}

interface EnvelopeRow {
  seq: number;
  id: string;
  session: string;
  protocol: string;
  ts: string;
  kind: string;
  from_participant: string;
  to_participants: string | null;
  correlation: string | null;
  context: string | null;
  direction: string;
  transport: string;
  upstream: string | null;
  received_at: number;
  sent_at: number | null;
  payload: string;
  otel_trace_id: string | null;
  otel_span_id: string | null;
}

interface SessionRow {
  key: string;
  mcp_session_id: string | null;
  principal: string | null;
  transport: string;
  upstreams: string;
  started_at: number;
  ended_at: number | null;
  protocol_version: string | null;
  client_info: string | null;
  envelope_count: number;
  last_at: number | null;
}

/** The column values of one `envelopes` row, in the order of the insert statement. */
export type EnvelopeParams = [
  id: string,
  session: string,
  protocol: string,
  ts: string,
  kind: string,
  from: string,
  to: string | null,
  correlation: string | null,
  context: string | null,
  method: string | null,
  rpcId: string | null,
  direction: string,
  transport: string,
  upstream: string | null,
  receivedAt: number,
  sentAt: number | null,
  payload: string,
  otelTraceId: string | null,
  otelSpanId: string | null,
];

const ENVELOPE_COLUMNS =
  'seq, id, session, protocol, ts, kind, from_participant, to_participants, correlation, context, ' +
  'direction, transport, upstream, received_at, sent_at, payload, otel_trace_id, otel_span_id';

/** The envelope columns of a file older than version 4, read as it is (no OpenTelemetry ids). */
const ENVELOPE_COLUMNS_V3 = ENVELOPE_COLUMNS.replace(
  'otel_trace_id, otel_span_id',
  'NULL AS otel_trace_id, NULL AS otel_span_id',
);

const SESSION_SUMMARY = `SELECT s.*,
  (SELECT COUNT(*) FROM envelopes e WHERE e.session = s.key) AS envelope_count,
  (SELECT COALESCE(e.sent_at, e.received_at) FROM envelopes e WHERE e.session = s.key ORDER BY e.seq DESC LIMIT 1) AS last_at
  FROM sessions s`;

/** The condition `prune` deletes by: `@boundary` is the newest seq to go, `@cutoff` a receivedAt. */
const PRUNED =
  '((@boundary IS NOT NULL AND seq <= @boundary) OR (@cutoff IS NOT NULL AND received_at < @cutoff))';

/**
 * `TraceStore` on better-sqlite3. Synchronous, like the port: `append` writes a whole batch in
 * one transaction with prepared statements, and is meant to be called off the forwarding path
 * (by `TraceRecorder`). Errors are `SB_TRACE_STORE` with the SQLite error as `cause`.
 */
export class SqliteTraceStore implements ManagedTraceStore {
  readonly path: string;
  readonly #db: Database.Database;
  readonly #payloads: PayloadGuard;
  readonly #appendBatch: (rows: readonly StoredEnvelope[]) => void;
  readonly #stmt: Statements;
  /**
   * The sub-context of each envelope this store wrote last (by id), so that a name within one
   * needs no `named_by` row. Forgetting is safe: the row is then written, as for any other name.
   */
  readonly #contexts = new Map<string, string>();
  #closed = false;

  /**
   * Opens (creating and migrating, unless `readonly`) the trace database at `path`; `:memory:`
   * gives a private in-memory database.
   */
  constructor(path: string, options: SqliteTraceStoreOptions = {}) {
    this.path = path;
    this.#payloads = payloadGuardOf(options);
    const readonly = options.readonly === true;
    const requested = options.busyTimeoutMs ?? 5000;
    const busyTimeout = Number.isFinite(requested) ? Math.max(0, Math.floor(requested)) : 5000;
    if (readonly && path !== ':memory:' && !existsSync(path)) {
      throw new SwitchboardError(SbErrorCode.TraceStore, `no trace database at ${path}`, {
        details: { path, missing: true },
      });
    }
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { readonly, fileMustExist: readonly, timeout: busyTimeout });
      db.pragma(`busy_timeout = ${busyTimeout}`);
      if (readonly) {
        checkReadableVersion(db);
      } else {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        // Appends touch one leaf per session in the context and session indexes; keep them cached.
        db.pragma('cache_size = -16384');
        migrateTraceSchema(db);
      }
    } catch (cause) {
      db?.close();
      if (cause instanceof SwitchboardError) throw cause;
      throw new SwitchboardError(
        SbErrorCode.TraceStore,
        `cannot open the trace database ${path}: ${messageOf(cause)}`,
        {
          cause,
          details: { path },
        },
      );
    }
    this.#db = db;
    this.#stmt = prepareStatements(db);
    const stmt = this.#stmt;
    const contexts = this.#contexts;
    const append = db.transaction((rows: readonly StoredEnvelope[]) => {
      let sessions: Set<string> | undefined;
      for (const { params, targets } of rows) {
        // Spread, not one array argument: better-sqlite3 reads an array's elements one property
        // lookup at a time, which was about 8% of the trace worker's time.
        if (stmt.insertEnvelope.run(...params).changes === 0) continue;
        const id = params[0];
        // The row's sub-context, if its context is one.
        const sub = params[8]?.includes('/') === true ? params[8] : undefined;
        if (targets !== undefined) {
          for (const target of targets) {
            // A name within this sub-context is found through the context index (`edgesIn`).
            if (sub === undefined || contexts.get(target) !== sub) stmt.insertNamedBy.run(target, id);
          }
        }
        if (sub !== undefined) {
          if (contexts.size >= RECENT_CONTEXTS) contexts.clear();
          contexts.set(id, sub);
        }
        const session = params[1];
        if (sessions === undefined) sessions = new Set();
        if (!sessions.has(session)) {
          sessions.add(session);
          stmt.ensureSession.run(session, params[12], params[14]);
        }
      }
    });
    this.#appendBatch = (rows) => {
      try {
        append.immediate(rows);
      } catch (err) {
        // Rolled back: what the map says was written may not be.
        contexts.clear();
        throw err;
      }
    };
  }

  append(records: readonly TraceRecord[]): void {
    this.#open();
    if (records.length === 0) return;
    const rows = records.map((record) => storedRecord(record, this.#payloads));
    this.#guard('append to', () => this.#appendBatch(rows));
  }

  /**
   * Appends envelopes already in column form (the trace worker builds them from the hops it gets),
   * in one transaction. Duplicate ids are ignored: the first wins.
   */
  appendStored(rows: readonly StoredEnvelope[]): void {
    this.#open();
    if (rows.length === 0) return;
    this.#guard('append to', () => this.#appendBatch(rows));
  }

  /** The payload size limit this store was opened with. */
  get maxPayloadBytes(): number {
    return this.#payloads.maxPayloadBytes;
  }

  /**
   * What decides this store's stored payloads; `appendStored` rows must have been built with it
   * (the trace worker decodes its batches with it), in order.
   */
  get payloads(): PayloadGuard {
    return this.#payloads;
  }

  /**
   * Copies what the WAL holds into the database file, if no reader is in the way (`PASSIVE`:
   * never waits). The writer calls it when it is idle, so that the WAL stays small.
   */
  checkpoint(): void {
    this.#open();
    this.#guard('checkpoint', () => this.#db.pragma('wal_checkpoint(PASSIVE)'));
  }

  /** Records what `info` knows of a session, over what was known (the rule of `session-info-merge.ts`). */
  upsertSession(info: TraceSessionInfo): void {
    this.#open();
    this.#guard('record a session in', () =>
      this.#stmt.upsertSession.run({
        key: info.key,
        mcp_session_id: info.mcpSessionId ?? null,
        principal: info.principal ?? null,
        transport: info.transport,
        upstreams: JSON.stringify(info.upstreams),
        started_at: info.startedAt,
        ended_at: info.endedAt ?? null,
        protocol_version: info.protocolVersion ?? null,
        client_info:
          info.clientInfo === undefined ? null : JSON.stringify(this.#payloads.value(info.clientInfo)),
      }),
    );
  }

  sessions(options: { readonly limit?: number } = {}): TraceSessionSummary[] {
    this.#open();
    const limit = options.limit === undefined ? -1 : Math.max(0, Math.floor(options.limit));
    return this.#guard('read', () => this.#stmt.sessions.all(limit)).map(toSummary);
  }

  sessionInfo(keyOrMcpSessionId: string): TraceSessionSummary | undefined {
    this.#open();
    const row = this.#guard('read', () => this.#resolve(keyOrMcpSessionId));
    return row === undefined ? undefined : toSummary(row);
  }

  session(keyOrMcpSessionId: string): TraceRecord[] {
    this.#open();
    return this.#guard('read', () => {
      const key = this.#resolve(keyOrMcpSessionId)?.key ?? keyOrMcpSessionId;
      return this.#stmt.bySession.all(key).map(toRecord);
    });
  }

  subtree(context: string): TraceRecord[] {
    this.#open();
    return this.#guard('read', () => this.#stmt.subtree.all({ context }).map(toRecord));
  }

  get(id: string): TraceRecord | undefined {
    this.#open();
    const row = this.#guard('read', () => this.#stmt.byId.get(id));
    return row === undefined ? undefined : toRecord(row);
  }

  follow(id: string, options: { readonly maxDepth?: number } = {}): CorrelationGraph | undefined {
    this.#open();
    const stmt = this.#stmt;
    return this.#guard('read', () =>
      buildCorrelationGraph(id, options.maxDepth ?? DEFAULT_FOLLOW_DEPTH, {
        edges: (ids, direction) =>
          direction === 'out'
            ? stmt.edgesOut.all(JSON.stringify(ids))
            : stmt.edgesIn.all({ ids: JSON.stringify(ids) }),
        records: (ids) => stmt.byIds.all(JSON.stringify(ids)).map(toRecord),
      }),
    );
  }

  prune(options: TracePruneOptions): number {
    this.#open();
    const cutoff = options.maxAgeMs === undefined ? null : (options.now ?? Date.now()) - options.maxAgeMs;
    const stmt = this.#stmt;
    // A pruned id written again must not be taken for the envelope it was.
    this.#contexts.clear();
    const run = this.#db.transaction((): number => {
      const boundary =
        options.maxEnvelopes === undefined
          ? null
          : (stmt.pruneBoundary.get(Math.max(0, Math.floor(options.maxEnvelopes))) ?? null);
      if (boundary === null && cutoff === null) return 0;
      const params = { boundary, cutoff };
      const newestDeleted = stmt.pruneHorizon.get(params) ?? null;
      stmt.pruneNamedBy.run(params);
      const deleted = stmt.pruneEnvelopes.run(params).changes;
      const horizon = Math.max(cutoff ?? Number.NEGATIVE_INFINITY, newestDeleted ?? Number.NEGATIVE_INFINITY);
      if (Number.isFinite(horizon)) stmt.pruneSessions.run(horizon);
      return deleted;
    });
    return this.#guard('prune', () => run.immediate());
  }

  /** Closes the database (checkpointing the WAL). Idempotent; later calls throw `SB_TRACE_STORE`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  #open(): void {
    if (this.#closed)
      throw new SwitchboardError(SbErrorCode.TraceStore, `the trace store ${this.path} is closed`);
  }

  #guard<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (cause) {
      if (cause instanceof SwitchboardError) throw cause;
      throw new SwitchboardError(
        SbErrorCode.TraceStore,
        `cannot ${what} the trace ${this.path}: ${messageOf(cause)}`,
        {
          cause,
          details: { path: this.path },
        },
      );
    }
  }

  #resolve(keyOrMcpSessionId: string): SessionRow | undefined {
    return this.#stmt.sessionByKey.get(keyOrMcpSessionId) ?? this.#stmt.sessionByMcpId.get(keyOrMcpSessionId);
  }
}

/** One envelope as this store writes it: its column values, and the ids its correlation names. */
export interface StoredEnvelope {
  readonly params: EnvelopeParams;
  readonly targets: readonly string[] | undefined;
}

/** The row of a complete record. */
function storedRecord(record: TraceRecord, payloads: PayloadGuard): StoredEnvelope {
  const e = record.envelope;
  const rpc = rpcSummary(e.payload);
  return {
    params: [
      e.id,
      record.session,
      e.protocol,
      e.ts,
      e.kind,
      e.from,
      e.to === undefined ? null : JSON.stringify(e.to),
      e.correlationId === undefined ? null : JSON.stringify(e.correlationId),
      e.context ?? null,
      rpc.method ?? null,
      rpc.rpcId ?? null,
      record.direction,
      record.transport,
      record.upstream ?? null,
      record.receivedAt,
      record.sentAt ?? null,
      payloads.text({
        payload: e.payload,
        json: record.payloadJson,
        kind: e.kind,
        method: rpc.method ?? null,
        context: e.context ?? null,
        to: e.to,
      }),
      record.otel?.traceId ?? null,
      record.otel?.spanId ?? null,
    ],
    targets: e.correlationId,
  };
}

type Statements = ReturnType<typeof prepareStatements>;

function prepareStatements(db: Database.Database) {
  // A read-only reader opens older files as they are: it reads NULL ids and never inserts (the
  // insert names the version-4 columns, so it is prepared only for a file that has them).
  const current = (db.pragma('user_version', { simple: true }) as number) >= 4;
  const ENVELOPE_COLUMNS_HERE = current ? ENVELOPE_COLUMNS : ENVELOPE_COLUMNS_V3;
  return {
    insertEnvelope: db.prepare<EnvelopeParams>(
      current
        ? `INSERT OR IGNORE INTO envelopes (id, session, protocol, ts, kind, from_participant, to_participants,
        correlation, context, method, rpc_id, direction, transport, upstream, received_at, sent_at, payload,
        otel_trace_id, otel_span_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
        : `SELECT ${new Array(19).fill('?').join(', ')}`,
    ),
    insertNamedBy: db.prepare<[string, string]>(
      'INSERT OR IGNORE INTO named_by (target, source) VALUES (?, ?)',
    ),
    ensureSession: db.prepare<[string, string, number]>(
      'INSERT OR IGNORE INTO sessions (key, transport, started_at) VALUES (?, ?, ?)',
    ),
    upsertSession: db.prepare<Record<string, string | number | null>>(
      `INSERT INTO sessions (key, mcp_session_id, principal, transport, upstreams, started_at, ended_at,
        protocol_version, client_info)
       VALUES (@key, @mcp_session_id, @principal, @transport, @upstreams, @started_at, @ended_at,
        @protocol_version, @client_info)
       ON CONFLICT (key) DO UPDATE SET
        mcp_session_id = COALESCE(excluded.mcp_session_id, sessions.mcp_session_id),
        principal = COALESCE(excluded.principal, sessions.principal),
        transport = excluded.transport,
        upstreams = CASE WHEN excluded.upstreams = '[]' THEN sessions.upstreams ELSE excluded.upstreams END,
        started_at = MIN(excluded.started_at, sessions.started_at),
        ended_at = COALESCE(excluded.ended_at, sessions.ended_at),
        protocol_version = COALESCE(excluded.protocol_version, sessions.protocol_version),
        client_info = COALESCE(excluded.client_info, sessions.client_info)`,
    ),
    sessions: db.prepare<[number], SessionRow>(
      `${SESSION_SUMMARY} ORDER BY s.started_at DESC, s.key DESC LIMIT ?`,
    ),
    sessionByKey: db.prepare<[string], SessionRow>(`${SESSION_SUMMARY} WHERE s.key = ?`),
    sessionByMcpId: db.prepare<[string], SessionRow>(
      `${SESSION_SUMMARY} WHERE s.mcp_session_id = ? ORDER BY s.started_at DESC, s.key DESC LIMIT 1`,
    ),
    bySession: db.prepare<[string], EnvelopeRow>(
      `SELECT ${ENVELOPE_COLUMNS_HERE} FROM envelopes WHERE session = ? ORDER BY seq`,
    ),
    subtree: db.prepare<{ context: string }, EnvelopeRow>(
      `SELECT ${ENVELOPE_COLUMNS_HERE} FROM envelopes
       WHERE context = @context OR (context > @context || '/' AND context < @context || '0')
       ORDER BY seq`,
    ),
    byId: db.prepare<[string], EnvelopeRow>(`SELECT ${ENVELOPE_COLUMNS_HERE} FROM envelopes WHERE id = ?`),
    byIds: db.prepare<[string], EnvelopeRow>(
      `SELECT ${ENVELOPE_COLUMNS_HERE} FROM envelopes WHERE id IN (SELECT value FROM json_each(?)) ORDER BY seq`,
    ),
    // What the ids name: their own correlation arrays (a name given twice is one edge).
    edgesOut: db.prepare<[string], CorrelationEdge>(
      `SELECT DISTINCT e.id AS "from", j.value AS "to" FROM envelopes e, json_each(e.correlation) j
       WHERE e.id IN (SELECT value FROM json_each(?)) AND e.correlation IS NOT NULL AND j.type = 'text'`,
    ),
    // What names the ids: `named_by`, and the correlation arrays of the sub-contexts the ids are in
    // (names within one sub-context have no `named_by` row; a name found both ways is one edge).
    edgesIn: db.prepare<{ ids: string }, CorrelationEdge>(
      `SELECT source AS "from", target AS "to" FROM named_by WHERE target IN (SELECT value FROM json_each(@ids))
       UNION
       SELECT e.id AS "from", j.value AS "to" FROM envelopes e, json_each(e.correlation) j
       WHERE e.context IN (SELECT t.context FROM envelopes t
                           WHERE t.id IN (SELECT value FROM json_each(@ids)) AND instr(t.context, '/') > 0)
         AND e.correlation IS NOT NULL AND j.type = 'text' AND j.value IN (SELECT value FROM json_each(@ids))`,
    ),
    pruneBoundary: db
      .prepare<[number], number>('SELECT seq FROM envelopes ORDER BY seq DESC LIMIT 1 OFFSET ?')
      .pluck(),
    pruneHorizon: db
      .prepare<PruneParams, number | null>(`SELECT MAX(received_at) FROM envelopes WHERE ${PRUNED}`)
      .pluck(),
    pruneNamedBy: db.prepare<PruneParams>(
      `DELETE FROM named_by WHERE (target, source) IN
        (SELECT j.value, e.id FROM envelopes e, json_each(e.correlation) j
         WHERE e.correlation IS NOT NULL AND ${PRUNED.replaceAll('seq', 'e.seq').replaceAll('received_at', 'e.received_at')})`,
    ),
    pruneEnvelopes: db.prepare<PruneParams>(`DELETE FROM envelopes WHERE ${PRUNED}`),
    pruneSessions: db.prepare<[number]>(
      `DELETE FROM sessions WHERE COALESCE(ended_at, started_at) <= ?
       AND NOT EXISTS (SELECT 1 FROM envelopes e WHERE e.session = sessions.key)`,
    ),
  };
}

interface PruneParams {
  boundary: number | null;
  cutoff: number | null;
}

/**
 * A read-only connection cannot migrate: it accepts the current schema, and older ones whose
 * tables the current reads understand.
 */
function checkReadableVersion(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version >= OLDEST_READABLE_VERSION && version <= TRACE_SCHEMA_VERSION) return;
  const why =
    version === 0
      ? 'is not a switchboard trace database'
      : version > TRACE_SCHEMA_VERSION
        ? `has trace schema version ${version}, newer than this switchboard understands (${TRACE_SCHEMA_VERSION})`
        : `has trace schema version ${version}; run the gateway once to migrate it to ${TRACE_SCHEMA_VERSION}`;
  throw new SwitchboardError(SbErrorCode.TraceStore, `${db.name} ${why}`, {
    details: { path: db.name, version },
  });
}

function toRecord(row: EnvelopeRow): TraceRecord {
  const envelope: {
    -readonly [K in keyof MeupEnvelope]: MeupEnvelope[K];
  } = {
    protocol: row.protocol as MeupProtocol,
    id: row.id,
    ts: row.ts,
    from: row.from_participant,
    kind: row.kind,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
  };
  if (row.to_participants !== null) envelope.to = JSON.parse(row.to_participants) as string[];
  if (row.correlation !== null) envelope.correlationId = JSON.parse(row.correlation) as string[];
  if (row.context !== null) envelope.context = row.context;
  const record: { -readonly [K in keyof TraceRecord]: TraceRecord[K] } = {
    envelope,
    session: row.session,
    direction: row.direction as Direction,
    transport: row.transport as TransportKind,
    receivedAt: row.received_at,
  };
  if (row.upstream !== null) record.upstream = row.upstream;
  if (row.sent_at !== null) record.sentAt = row.sent_at;
  if (row.otel_trace_id !== null && row.otel_span_id !== null)
    record.otel = { traceId: row.otel_trace_id, spanId: row.otel_span_id };
  return record;
}

function toSummary(row: SessionRow): TraceSessionSummary {
  const summary: { -readonly [K in keyof TraceSessionSummary]: TraceSessionSummary[K] } = {
    key: row.key,
    transport: row.transport as TransportKind,
    upstreams: JSON.parse(row.upstreams) as string[],
    startedAt: row.started_at,
    envelopes: row.envelope_count,
  };
  if (row.mcp_session_id !== null) summary.mcpSessionId = row.mcp_session_id;
  if (row.principal !== null) summary.principal = row.principal;
  if (row.ended_at !== null) summary.endedAt = row.ended_at;
  if (row.protocol_version !== null) summary.protocolVersion = row.protocol_version;
  if (row.client_info !== null) summary.clientInfo = JSON.parse(row.client_info) as Record<string, unknown>;
  if (row.last_at !== null) summary.lastAt = row.last_at;
  return summary;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
