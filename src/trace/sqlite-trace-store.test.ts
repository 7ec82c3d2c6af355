import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { createIdGenerator } from '../meup/ids.js';
import { migrateTraceSchema, SqliteTraceStore, TRACE_SCHEMA_VERSION } from './sqlite-trace-store.js';
import { toolCallChain, traceRecord, traceStoreContract } from './trace-store.contract.js';
import type { TraceRecord } from './types.js';

const root = mkdtempSync(join(tmpdir(), 'sb-trace-'));
let files = 0;
const tempDb = (): string => join(root, `trace-${++files}.db`);
afterAll(() => rmSync(root, { recursive: true, force: true }));

traceStoreContract('SqliteTraceStore (:memory:)', (options) => new SqliteTraceStore(':memory:', options));
traceStoreContract('SqliteTraceStore (file)', (options) => new SqliteTraceStore(tempDb(), options));

describe('SqliteTraceStore on disk', () => {
  let path: string;
  const open: { close(): void }[] = [];
  beforeEach(() => {
    path = tempDb();
  });
  afterEach(() => {
    for (const c of open.splice(0)) c.close();
  });
  const track = <T extends { close(): void }>(c: T): T => {
    open.push(c);
    return c;
  };

  it('reads back, after reopening the file, everything that was written', () => {
    const writer = new SqliteTraceStore(path);
    const chain = toolCallChain(createIdGenerator());
    writer.upsertSession({
      key: 's1',
      mcpSessionId: 'mcp-1',
      transport: 'http',
      upstreams: ['a'],
      startedAt: 1,
    });
    writer.append(chain.records);
    writer.close();

    for (const reader of [
      track(new SqliteTraceStore(path)),
      track(new SqliteTraceStore(path, { readonly: true })),
    ]) {
      expect(reader.session('mcp-1').map((r) => r.envelope.id)).toEqual(
        chain.records.map((r) => r.envelope.id),
      );
      expect(reader.sessions()).toMatchObject([{ key: 's1', envelopes: 5 }]);
      expect(reader.follow(chain.R)?.answers.map((r) => r.envelope.id)).toEqual([chain.D, chain.UR, chain.U]);
      expect(reader.subtree(`s1/${chain.D}`)).toHaveLength(5);
    }
  });

  it('lets a read-only connection see what a live writer commits (WAL)', () => {
    const writer = track(new SqliteTraceStore(path));
    const reader = track(new SqliteTraceStore(path, { readonly: true }));
    const next = createIdGenerator();
    writer.append([traceRecord({ id: next() })]);
    expect(reader.session('s1')).toHaveLength(1);
    writer.append([traceRecord({ id: next() })]);
    expect(reader.session('s1')).toHaveLength(2);
  });

  it('configures WAL, synchronous=NORMAL, a busy timeout and the schema version', () => {
    track(new SqliteTraceStore(path, { busyTimeoutMs: 1234 }));
    const db = track(new Database(path, { readonly: true }));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('user_version', { simple: true })).toBe(TRACE_SCHEMA_VERSION);
    const probe = track(new SqliteTraceStore(path, { busyTimeoutMs: 1234 }));
    expect(probe).toBeInstanceOf(SqliteTraceStore);
  });

  it('refuses a read-only open of a missing file with a message naming the path', () => {
    const missing = join(root, 'nowhere', 'trace.db');
    expect(() => new SqliteTraceStore(missing, { readonly: true })).toThrow(
      `no trace database at ${missing}`,
    );
    try {
      new SqliteTraceStore(missing, { readonly: true });
    } catch (err) {
      expect(err).toBeInstanceOf(SwitchboardError);
      expect((err as SwitchboardError).code).toBe('SB_TRACE_STORE');
      expect((err as SwitchboardError).details).toMatchObject({ path: missing, missing: true });
    }
  });

  it('refuses to write through a read-only store', () => {
    new SqliteTraceStore(path).close();
    const reader = track(new SqliteTraceStore(path, { readonly: true }));
    expect(() => reader.append([traceRecord({ id: 'X' })])).toThrow(SwitchboardError);
  });

  it('refuses a file that is not a trace database, or one from a newer schema', () => {
    writeFileSync(path, 'not sqlite at all, just text that is long enough to be read as a header');
    expect(() => new SqliteTraceStore(path)).toThrow(/cannot open the trace database/);
    const empty = tempDb();
    new Database(empty).close();
    expect(() => new SqliteTraceStore(empty, { readonly: true })).toThrow(/not a switchboard trace database/);
    const newer = tempDb();
    const db = new Database(newer);
    db.pragma(`user_version = ${TRACE_SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => new SqliteTraceStore(newer)).toThrow(/newer than this switchboard understands/);
    expect(() => new SqliteTraceStore(newer, { readonly: true })).toThrow(/newer/);
  });

  it('migrates an empty database once, and migrating again is a no-op', () => {
    const db = track(new Database(':memory:'));
    migrateTraceSchema(db);
    migrateTraceSchema(db);
    expect(db.pragma('user_version', { simple: true })).toBe(TRACE_SCHEMA_VERSION);
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all();
    expect(tables).toEqual(['envelopes', 'named_by', 'sessions']);
  });

  it('stores payloadJson as given instead of stringifying again, with the method and id for display', () => {
    const store = track(new SqliteTraceStore(path));
    const record = traceRecord({
      id: 'R1',
      payload: { jsonrpc: '2.0', id: 'a', method: 'tools/call' },
      // Exactly what the gateway wrote on the wire; the store must not re-serialize the object.
      payloadJson: '{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"from":"wire"}}',
    });
    store.append([record]);
    expect(store.get('R1')?.envelope.payload).toEqual({
      jsonrpc: '2.0',
      id: 'a',
      method: 'tools/call',
      params: { from: 'wire' },
    });
    const db = track(new Database(path, { readonly: true }));
    expect(db.prepare('SELECT method, rpc_id FROM envelopes').get()).toEqual({
      method: 'tools/call',
      rpc_id: '"a"',
    });
  });

  it('answers subtree, session and correlation queries through indexes, never a table scan', () => {
    const store = track(new SqliteTraceStore(path));
    store.append([traceRecord({ id: 'A', context: 's1/A' })]);
    const db = track(new Database(path, { readonly: true }));
    const plan = (sql: string, ...params: unknown[]): string =>
      db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((row) => (row as { detail: string }).detail)
        .join('\n');
    const subtree = plan(
      "SELECT * FROM envelopes WHERE context = @c OR (context > @c || '/' AND context < @c || '0') ORDER BY seq",
      { c: 's1' },
    );
    expect(subtree).toContain('envelopes_context');
    expect(subtree).not.toMatch(/SCAN envelopes(?! USING)/);
    expect(plan('SELECT * FROM envelopes WHERE session = ? ORDER BY seq', 's1')).toContain(
      'envelopes_session',
    );
    const inward = plan(
      'SELECT source, target FROM named_by WHERE target IN (SELECT value FROM json_each(?))',
      '[]',
    );
    expect(inward).toMatch(/SEARCH named_by USING PRIMARY KEY \(target=\?\)/);
    const sameContext = plan(
      `SELECT e.id, j.value FROM envelopes e, json_each(e.correlation) j
       WHERE e.context IN (SELECT t.context FROM envelopes t
                           WHERE t.id IN (SELECT value FROM json_each(?)) AND instr(t.context, '/') > 0)
         AND e.correlation IS NOT NULL AND j.type = 'text' AND j.value IN (SELECT value FROM json_each(?))`,
      '[]',
      '[]',
    );
    expect(sameContext).toMatch(/SEARCH e USING INDEX envelopes_context \(context=\?\)/);
    expect(sameContext).toMatch(/SEARCH t USING INDEX sqlite_autoindex_envelopes_1 \(id=\?\)/);
    expect(sameContext).not.toMatch(/SCAN (e|t)(?! USING)/);
    const outward = plan(
      `SELECT DISTINCT e.id, j.value FROM envelopes e, json_each(e.correlation) j
       WHERE e.id IN (SELECT value FROM json_each(?)) AND e.correlation IS NOT NULL AND j.type = 'text'`,
      '[]',
    );
    expect(outward).toMatch(/SEARCH e USING INDEX sqlite_autoindex_envelopes_1 \(id=\?\)/);
    expect(outward).not.toMatch(/SCAN e(?! USING)/);
  });

  it('writes a named_by row only for a name the context index cannot find', () => {
    const store = track(new SqliteTraceStore(path));
    const chain = toolCallChain(createIdGenerator());
    store.append(chain.records);
    const db = track(new Database(path, { readonly: true }));
    const rows = db.prepare('SELECT target, source FROM named_by ORDER BY source, target');
    // Every name of a tool call stays within its sub-context.
    expect(rows.all()).toEqual([]);
    store.append([
      traceRecord({ id: 'X', context: 's1', correlationId: [chain.D] }),
      traceRecord({ id: 'Y', context: `s1/${chain.D}`, correlationId: ['X', chain.U, 'nowhere'] }),
      traceRecord({ id: 'Z', context: 's1', correlationId: ['X'] }),
      traceRecord({ id: 'W', correlationId: [chain.R] }),
    ]);
    expect(rows.all()).toEqual([
      { target: chain.R, source: 'W' },
      { target: chain.D, source: 'X' },
      { target: 'X', source: 'Y' },
      { target: 'nowhere', source: 'Y' },
      { target: 'X', source: 'Z' },
    ]);
    expect(store.follow(chain.U)?.answeredBy.map((r) => r.envelope.id)).toEqual([
      chain.UR,
      'Y',
      chain.R,
      'W',
    ]);
    expect(store.follow('X')?.answeredBy.map((r) => r.envelope.id)).toEqual(['Y', 'Z']);
  });

  it('reads a version 2 trace (a named_by row for every name) read-only, and migrates it', () => {
    const db = track(new Database(path));
    migrateTraceSchema(db);
    db.pragma('user_version = 2');
    // Version 2 had no OpenTelemetry ids (version 4 added them).
    db.exec(
      'ALTER TABLE envelopes DROP COLUMN otel_trace_id; ALTER TABLE envelopes DROP COLUMN otel_span_id;',
    );
    const chain = toolCallChain(createIdGenerator());
    // Write the rows as version 2 did: every name in named_by.
    const named = db.prepare('INSERT OR IGNORE INTO named_by (target, source) VALUES (?, ?)');
    insertOldRows(db, chain.records, (source, target) => named.run(target, source));
    db.close();
    const expected = [chain.U, chain.P, chain.R, chain.UR];
    const reader = track(new SqliteTraceStore(path, { readonly: true }));
    expect(reader.follow(chain.D)?.answeredBy.map((r) => r.envelope.id)).toEqual(expected);
    reader.close();
    const writer = track(new SqliteTraceStore(path));
    const more = toolCallChain(createIdGenerator());
    writer.append(more.records);
    expect(writer.follow(chain.D)?.answeredBy.map((r) => r.envelope.id)).toEqual(expected);
    expect(writer.follow(more.D)?.answeredBy.map((r) => r.envelope.id)).toEqual([
      more.U,
      more.P,
      more.R,
      more.UR,
    ]);
    const check = track(new Database(path, { readonly: true }));
    expect(check.pragma('user_version', { simple: true })).toBe(TRACE_SCHEMA_VERSION);
    expect(check.prepare('SELECT COUNT(*) FROM named_by').pluck().get()).toBe(5);
  });

  it('migrates a version 1 trace: its correlation edges become the reverse index, and follow still walks both ways', () => {
    const db = track(new Database(path));
    db.exec(`
      CREATE TABLE sessions (key TEXT PRIMARY KEY NOT NULL, mcp_session_id TEXT, principal TEXT, transport TEXT NOT NULL,
        upstreams TEXT NOT NULL DEFAULT '[]', started_at REAL NOT NULL, ended_at REAL, protocol_version TEXT, client_info TEXT);
      CREATE TABLE envelopes (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, session TEXT NOT NULL, protocol TEXT NOT NULL,
        ts TEXT NOT NULL, kind TEXT NOT NULL, from_participant TEXT NOT NULL, to_participants TEXT, correlation TEXT, context TEXT,
        method TEXT, rpc_id TEXT, direction TEXT NOT NULL, transport TEXT NOT NULL, upstream TEXT, received_at REAL NOT NULL,
        sent_at REAL, payload TEXT NOT NULL);
      CREATE INDEX envelopes_session ON envelopes (session, seq);
      CREATE INDEX envelopes_context ON envelopes (context);
      CREATE TABLE edges (source TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (source, target)) WITHOUT ROWID;
      CREATE INDEX edges_target ON edges (target, source);
      PRAGMA user_version = 1;
    `);
    const chain = toolCallChain(createIdGenerator());
    const edge = db.prepare('INSERT INTO edges (source, target) VALUES (?, ?)');
    insertOldRows(db, chain.records, (source, target) => edge.run(source, target));
    db.close();

    const store = track(new SqliteTraceStore(path));
    expect(store.follow(chain.R)?.answers.map((r) => r.envelope.id)).toEqual([chain.D, chain.UR, chain.U]);
    expect(store.follow(chain.D)?.answeredBy.map((r) => r.envelope.id)).toEqual([
      chain.U,
      chain.P,
      chain.R,
      chain.UR,
    ]);
    const check = track(new Database(path, { readonly: true }));
    expect(check.pragma('user_version', { simple: true })).toBe(TRACE_SCHEMA_VERSION);
    expect(check.prepare('SELECT COUNT(*) FROM named_by').pluck().get()).toBe(5);
  });
});

/**
 * Writes `records` as an older version of the store did (the columns every version has), calling
 * `index(source, target)` for each name so the caller writes that version's reverse index.
 */
function insertOldRows(
  db: Database.Database,
  records: readonly TraceRecord[],
  index: (source: string, target: string) => unknown,
): void {
  const insert = db.prepare(
    `INSERT INTO envelopes (id, session, protocol, ts, kind, from_participant, correlation, context, direction,
      transport, received_at, payload) VALUES (?, 's1', 'meup/v0.2', '2026-01-01T00:00:00.000Z', ?, 'x', ?, ?, ?, 'stdio', 1, '{}')`,
  );
  for (const r of records) {
    const e = r.envelope;
    insert.run(
      e.id,
      e.kind,
      e.correlationId ? JSON.stringify(e.correlationId) : null,
      e.context,
      r.direction,
    );
    for (const target of e.correlationId ?? []) index(e.id, target);
  }
}
