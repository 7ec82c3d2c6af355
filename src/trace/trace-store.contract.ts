/**
 * The contract every `TraceStore` keeps, written once and run against each implementation (the
 * way Hono runs one router suite against every router): `traceStoreContract('memory', make)`.
 * The fixtures mirror how the gateway fills the trace: a session key as the root context, a
 * sub-context per downstream request, and correlation from copies and answers to what they answer.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { createIdGenerator } from '../meup/ids.js';
import { MEUP_PROTOCOL, type MeupEnvelope } from '../meup/types.js';
import type { TracePayloadMode, TracePayloadOptions } from './payload-guard.js';
import type { ManagedTraceStore, TraceRecord, TraceSessionInfo } from './types.js';

/** Options a contract test may ask of the store under test. */
export interface ContractStoreOptions {
  readonly maxPayloadBytes?: number;
  /** The suite asks for `full` except where it tests the default (`redacted`). */
  readonly payloads?: TracePayloadMode;
  readonly redact?: TracePayloadOptions['redact'];
}

/** Builds a fresh, empty store; the suite closes it after each test. */
export type MakeTraceStore = (options?: ContractStoreOptions) => ManagedTraceStore;

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5);

/** Ids shaped like the gateway's (time-sortable ULIDs), from a fixed clock. */
function idSource(): () => string {
  let now = T0;
  const next = createIdGenerator(() => now);
  return () => {
    now += 1;
    return next();
  };
}

interface RecordSpec {
  readonly id: string;
  readonly session?: string;
  readonly context?: string;
  readonly kind?: 'mcp/request' | 'mcp/response' | 'mcp/notification';
  readonly from?: string;
  readonly to?: readonly string[];
  readonly correlationId?: readonly string[];
  readonly payload?: Readonly<Record<string, unknown>>;
  readonly payloadJson?: string;
  readonly direction?: TraceRecord['direction'];
  readonly upstream?: string;
  readonly receivedAt?: number;
  readonly sentAt?: number;
}

/** A trace record with sensible defaults: a `ping` request in session `s1`. */
export function traceRecord(spec: RecordSpec): TraceRecord {
  const envelope: { -readonly [K in keyof MeupEnvelope]: MeupEnvelope[K] } = {
    protocol: MEUP_PROTOCOL,
    id: spec.id,
    ts: new Date(spec.receivedAt ?? T0).toISOString(),
    from: spec.from ?? 'client-s1',
    kind: spec.kind ?? 'mcp/request',
    payload: spec.payload ?? { jsonrpc: '2.0', id: 1, method: 'ping' },
  };
  if (spec.to !== undefined) envelope.to = spec.to;
  if (spec.correlationId !== undefined) envelope.correlationId = spec.correlationId;
  if (spec.context !== undefined) envelope.context = spec.context;
  const record: { -readonly [K in keyof TraceRecord]: TraceRecord[K] } = {
    envelope,
    session: spec.session ?? 's1',
    direction: spec.direction ?? 'client->server',
    transport: 'stdio',
    receivedAt: spec.receivedAt ?? T0,
  };
  if (spec.upstream !== undefined) record.upstream = spec.upstream;
  if (spec.sentAt !== undefined) record.sentAt = spec.sentAt;
  if (spec.payloadJson !== undefined) record.payloadJson = spec.payloadJson;
  return record;
}

/** What a store gives back for `record`: everything but the transport's `payloadJson`. */
function stored(record: TraceRecord): TraceRecord {
  const { payloadJson: _unused, ...rest } = record;
  return rest;
}

function ids(records: readonly TraceRecord[] | undefined): string[] {
  return (records ?? []).map((r) => r.envelope.id);
}

/**
 * One `tools/call` through the gateway, as the core records it: the downstream request `D`, its
 * upstream copy `U`, progress `P` naming `D`, the upstream response `UR` and the downstream
 * response `R` built from it. Everything lives in context `s1/D`.
 */
export function toolCallChain(next: () => string, session = 's1') {
  const D = next();
  const U = next();
  const P = next();
  const UR = next();
  const R = next();
  const ctx = `${session}/${D}`;
  const call = {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'hi' } },
  };
  const records = [
    traceRecord({ id: D, session, context: ctx, from: `client-${session}`, to: ['gateway'], payload: call }),
    traceRecord({
      id: U,
      session,
      context: ctx,
      from: 'gateway',
      to: ['server-a'],
      correlationId: [D],
      upstream: 'a',
      payload: { ...call, id: 1 },
      receivedAt: T0 + 1,
      sentAt: T0 + 1.5,
    }),
    traceRecord({
      id: P,
      session,
      context: ctx,
      kind: 'mcp/notification',
      from: 'server-a',
      correlationId: [D],
      direction: 'server->client',
      payload: {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 't', progress: 1 },
      },
      receivedAt: T0 + 5,
    }),
    traceRecord({
      id: UR,
      session,
      context: ctx,
      kind: 'mcp/response',
      from: 'server-a',
      to: ['gateway'],
      correlationId: [U],
      direction: 'server->client',
      upstream: 'a',
      payload: { jsonrpc: '2.0', id: 1, result: { content: [] } },
      receivedAt: T0 + 10,
    }),
    traceRecord({
      id: R,
      session,
      context: ctx,
      kind: 'mcp/response',
      from: 'gateway',
      to: [`client-${session}`],
      correlationId: [D, UR],
      direction: 'server->client',
      payload: { jsonrpc: '2.0', id: 7, result: { content: [] } },
      receivedAt: T0 + 11,
    }),
  ];
  return { D, U, P, UR, R, records };
}

/**
 * A `tools/list` fanned out to three upstreams and merged: `DL` downstream, copies `U1..U3`
 * naming it, responses `R1..R3` naming their copy, and the aggregate `A` naming `DL` and all three
 * responses (fan-in).
 */
function fanInChain(next: () => string) {
  const DL = next();
  const ctx = `s1/${DL}`;
  const us = [next(), next(), next()] as const;
  const rs = [next(), next(), next()] as const;
  const A = next();
  const records = [
    traceRecord({ id: DL, context: ctx, payload: { jsonrpc: '2.0', id: 2, method: 'tools/list' } }),
    ...us.map((u, i) =>
      traceRecord({ id: u, context: ctx, from: 'gateway', correlationId: [DL], upstream: `u${i}` }),
    ),
    ...rs.map((r, i) =>
      traceRecord({
        id: r,
        context: ctx,
        kind: 'mcp/response',
        correlationId: [us[i] ?? ''],
        upstream: `u${i}`,
      }),
    ),
    traceRecord({ id: A, context: ctx, kind: 'mcp/response', correlationId: [DL, ...rs] }),
  ];
  return { DL, us, rs, A, records };
}

function sessionInfo(key: string, extra: Partial<TraceSessionInfo> = {}): TraceSessionInfo {
  return { key, transport: 'http', upstreams: ['a'], startedAt: T0, ...extra };
}

/** Registers the shared suite for one implementation. */
export function traceStoreContract(name: string, makeStore: MakeTraceStore): void {
  describe(`TraceStore contract: ${name}`, () => {
    const open: ManagedTraceStore[] = [];
    /** A store keeping payloads as they passed, unless the test asks otherwise. */
    const make = (options?: ContractStoreOptions): ManagedTraceStore => {
      const store = makeStore({ payloads: 'full', ...options });
      open.push(store);
      return store;
    };
    afterEach(() => {
      for (const store of open.splice(0)) store.close();
    });

    describe('append and get', () => {
      it('returns a fully populated record as it was appended, without payloadJson', () => {
        const store = make();
        const next = idSource();
        const chain = toolCallChain(next);
        const withJson = traceRecord({
          id: next(),
          payload: { jsonrpc: '2.0', id: 'x', method: 'ping' },
          payloadJson: '{"jsonrpc":"2.0","id":"x","method":"ping"}',
        });
        store.append([...chain.records, withJson]);
        for (const record of [...chain.records, withJson]) {
          expect(store.get(record.envelope.id)).toEqual(stored(record));
        }
      });

      it('keeps optional fields absent rather than null', () => {
        const store = make();
        const id = idSource()();
        store.append([traceRecord({ id })]);
        const got = store.get(id);
        expect(got).toBeDefined();
        expect(Object.keys(got?.envelope ?? {}).sort()).toEqual([
          'from',
          'id',
          'kind',
          'payload',
          'protocol',
          'ts',
        ]);
        expect(Object.keys(got ?? {}).sort()).toEqual([
          'direction',
          'envelope',
          'receivedAt',
          'session',
          'transport',
        ]);
      });

      it("keeps the OpenTelemetry ids of an envelope's call, and none for an envelope without", () => {
        const store = make();
        const next = idSource();
        const otel = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
        const a = { ...traceRecord({ id: next(), context: 's1/A' }), otel };
        const b = { ...traceRecord({ id: next(), context: 's1/A' }), otel };
        const c = traceRecord({ id: next() });
        store.append([a, b, c]);
        expect(store.get(a.envelope.id)?.otel).toEqual(otel);
        expect(store.session('s1').map((r) => r.otel)).toEqual([otel, otel, undefined]);
        expect(store.get(c.envelope.id)).not.toHaveProperty('otel');
      });

      it('returns undefined for an unknown id, and accepts an empty batch', () => {
        const store = make();
        store.append([]);
        expect(store.get('01JUNKNOWN0000000000000000')).toBeUndefined();
      });

      it('ignores a duplicate id, in one batch or across batches: the first wins', () => {
        const store = make();
        const id = idSource()();
        const first = traceRecord({ id, payload: { jsonrpc: '2.0', id: 1, method: 'first' } });
        const second = traceRecord({ id, payload: { jsonrpc: '2.0', id: 1, method: 'second' } });
        store.append([first, second]);
        store.append([second]);
        expect(store.session('s1')).toEqual([stored(first)]);
      });

      it('keeps the rest of a batch when one payload cannot be serialized', () => {
        const store = make();
        const next = idSource();
        const bad = traceRecord({ id: next(), payload: { jsonrpc: '2.0', method: 'x', params: { n: 10n } } });
        const good = traceRecord({ id: next() });
        store.append([bad, good]);
        expect(store.get(good.envelope.id)).toEqual(good);
        expect(store.get(bad.envelope.id)?.envelope.payload).toMatchObject({ _unserializable: true });
      });
    });

    describe('sessions', () => {
      it("returns a session's envelopes in insertion order, not by id or time", () => {
        const store = make();
        const next = idSource();
        const a = [next(), next(), next()];
        // Insertion order wins over ids and receivedAt.
        store.append([traceRecord({ id: a[2] ?? '', receivedAt: T0 + 9 }), traceRecord({ id: a[0] ?? '' })]);
        store.append([traceRecord({ id: a[1] ?? '', receivedAt: T0 - 5 })]);
        store.append([traceRecord({ id: next(), session: 's2' })]);
        expect(ids(store.session('s1'))).toEqual([a[2], a[0], a[1]]);
      });

      it('summarizes sessions newest first with envelope counts and the last receivedAt', () => {
        const store = make();
        const next = idSource();
        store.upsertSession(sessionInfo('old', { startedAt: T0 }));
        store.upsertSession(sessionInfo('new', { startedAt: T0 + 1000, mcpSessionId: 'mcp-new' }));
        store.upsertSession(sessionInfo('empty', { startedAt: T0 + 500 }));
        store.append([
          traceRecord({ id: next(), session: 'old', receivedAt: T0 + 1 }),
          traceRecord({ id: next(), session: 'new', receivedAt: T0 + 1001 }),
          traceRecord({ id: next(), session: 'old', receivedAt: T0 + 2 }),
        ]);
        const all = store.sessions();
        expect(all.map((s) => [s.key, s.envelopes, s.lastAt])).toEqual([
          ['new', 1, T0 + 1001],
          ['empty', 0, undefined],
          ['old', 2, T0 + 2],
        ]);
        expect(store.sessions({ limit: 2 }).map((s) => s.key)).toEqual(['new', 'empty']);
        expect(store.sessions({ limit: 0 })).toEqual([]);
      });

      it("ends a session's lastAt at its last hop's time: sentAt when the gateway wrote it (issue 22)", () => {
        const store = make();
        const next = idSource();
        store.upsertSession(sessionInfo('s', { startedAt: T0 }));
        // The gateway's response to the client: its request's receivedAt, written 600 ms later.
        store.append([
          traceRecord({ id: next(), session: 's', receivedAt: T0 }),
          traceRecord({ id: next(), session: 's', receivedAt: T0, sentAt: T0 + 600 }),
        ]);
        expect(store.sessions()[0]?.lastAt).toBe(T0 + 600);
      });

      it('round-trips every session field', () => {
        const store = make();
        const full: TraceSessionInfo = {
          key: 'k1',
          mcpSessionId: 'mcp-1',
          principal: 'alice',
          transport: 'http',
          upstreams: ['a', 'b'],
          startedAt: T0,
          endedAt: T0 + 60_000,
          protocolVersion: '2025-11-25',
          clientInfo: { name: 'inspector', version: '1.0.0' },
        };
        store.upsertSession(full);
        expect(store.sessions()).toEqual([{ ...full, envelopes: 0 }]);
        expect(store.sessionInfo('k1')).toEqual({ ...full, envelopes: 0 });
      });

      it('lets a later report fill in what it knows, never blanking a known field (issue 18)', () => {
        const store = make();
        // Opened: the transport's facts; initialized: the client's; ended: only the key and the time.
        store.upsertSession({
          key: 'k1',
          mcpSessionId: 'client-chosen',
          principal: 'alice',
          transport: 'http',
          upstreams: ['a'],
          startedAt: T0,
          protocolVersion: '2025-03-26',
        });
        store.upsertSession({
          key: 'k1',
          transport: 'http',
          upstreams: ['a', 'b'],
          startedAt: T0 + 5,
          protocolVersion: '2025-11-25',
          clientInfo: { name: 'inspector', version: '1.0.0' },
        });
        store.upsertSession({
          key: 'k1',
          transport: 'http',
          upstreams: [],
          startedAt: T0 + 60_000,
          endedAt: T0 + 60_000,
        });
        const expected = {
          key: 'k1',
          mcpSessionId: 'client-chosen',
          principal: 'alice',
          transport: 'http',
          upstreams: ['a', 'b'],
          startedAt: T0,
          endedAt: T0 + 60_000,
          protocolVersion: '2025-11-25',
          clientInfo: { name: 'inspector', version: '1.0.0' },
          envelopes: 0,
        };
        expect(store.sessions()).toEqual([expected]);
        // Still found by the id its client knows it by.
        expect(store.sessionInfo('client-chosen')).toEqual(expected);
      });

      it('merges any sequence of reports field by field, as a model of the rule says', () => {
        const store = make();
        const optional = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined });
        const report = fc.record({
          mcpSessionId: optional(fc.constantFrom('m1', 'm2', 'm3')),
          principal: optional(fc.constantFrom('alice', 'bob')),
          transport: fc.constantFrom('http' as const, 'stdio' as const),
          upstreams: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 2 }),
          startedAt: fc.integer({ min: T0, max: T0 + 1000 }),
          endedAt: optional(fc.integer({ min: T0, max: T0 + 2000 })),
          protocolVersion: optional(fc.constantFrom('2025-03-26', '2025-11-25')),
          clientInfo: optional(
            fc.record({ name: fc.constantFrom('x', 'y'), version: fc.constantFrom('1', '2') }),
          ),
        });
        let run = 0;
        fc.assert(
          fc.property(fc.array(report, { minLength: 1, maxLength: 6 }), (reports) => {
            const key = `p${run++}`;
            // The model: per field, the last report that has a value (upstreams: a non-empty list);
            // the earliest start; the last transport.
            const model: Record<string, unknown> = { key, upstreams: [], envelopes: 0 };
            for (const r of reports) {
              const info = Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined));
              store.upsertSession({ ...(info as typeof r), key });
              for (const [field, value] of Object.entries(info)) {
                if (field === 'upstreams' && (value as string[]).length === 0) continue;
                if (field === 'startedAt' && typeof model.startedAt === 'number')
                  model.startedAt = Math.min(model.startedAt, value as number);
                else model[field] = value;
              }
            }
            expect(store.sessionInfo(key)).toEqual(model);
          }),
          { numRuns: 100 },
        );
      });

      it('lists a session that has envelopes but no recorded info, until its info arrives', () => {
        const store = make();
        const id = idSource()();
        store.append([traceRecord({ id, session: 'orphan', receivedAt: T0 + 3 })]);
        expect(store.sessions()).toEqual([
          {
            key: 'orphan',
            transport: 'stdio',
            upstreams: [],
            startedAt: T0 + 3,
            envelopes: 1,
            lastAt: T0 + 3,
          },
        ]);
        store.upsertSession(sessionInfo('orphan', { mcpSessionId: 'm' }));
        expect(store.sessionInfo('m')).toMatchObject({ key: 'orphan', transport: 'http', envelopes: 1 });
      });

      it('finds a session by its Mcp-Session-Id as well as by its key; the key wins', () => {
        const store = make();
        const next = idSource();
        store.upsertSession(sessionInfo('k1', { mcpSessionId: 'c5e0b4f2-mcp' }));
        store.upsertSession(sessionInfo('c5e0b4f2-mcp', { mcpSessionId: 'other', startedAt: T0 - 1 }));
        store.upsertSession(sessionInfo('k2', { mcpSessionId: 'shared' }));
        const r1 = traceRecord({ id: next(), session: 'k1' });
        const r2 = traceRecord({ id: next(), session: 'c5e0b4f2-mcp' });
        const r3 = traceRecord({ id: next(), session: 'k2' });
        store.append([r1, r2, r3]);
        expect(ids(store.session('k1'))).toEqual([r1.envelope.id]);
        expect(ids(store.session('c5e0b4f2-mcp'))).toEqual([r2.envelope.id]);
        expect(ids(store.session('shared'))).toEqual([r3.envelope.id]);
        expect(store.sessionInfo('shared')?.key).toBe('k2');
        expect(store.sessionInfo('other')?.key).toBe('c5e0b4f2-mcp');
      });

      it('answers an unknown session with nothing', () => {
        const store = make();
        store.append([traceRecord({ id: idSource()() })]);
        expect(store.session('nope')).toEqual([]);
        expect(store.sessionInfo('nope')).toBeUndefined();
      });
    });

    describe('subtree', () => {
      it('includes the root context itself and everything below it, in insertion order', () => {
        const store = make();
        const next = idSource();
        const contexts = ['a', 'a/b', 'ab/c', 'a-b', 'a0', 'b/a', 'a/b/c', 'a/b2', 'ab', 'A/b'];
        const records = contexts.map((context) => traceRecord({ id: next(), context }));
        records.push(traceRecord({ id: next() }));
        store.append(records);
        const contextsOf = (c: string) => store.subtree(c).map((r) => r.envelope.context);
        expect(contextsOf('a')).toEqual(['a', 'a/b', 'a/b/c', 'a/b2']);
        expect(contextsOf('a/b')).toEqual(['a/b', 'a/b/c']);
        expect(contextsOf('ab')).toEqual(['ab/c', 'ab']);
        expect(contextsOf('b')).toEqual(['b/a']);
        expect(contextsOf('a/b/c')).toEqual(['a/b/c']);
        expect(contextsOf('c')).toEqual([]);
      });

      it('walks deep nesting, and a request subtree holds everything the request caused', () => {
        const store = make();
        const next = idSource();
        const chain = toolCallChain(next);
        const nested = next();
        const nestedCtx = `s1/${chain.D}/${nested}`;
        const deep: string[] = [];
        for (const segment of ['x1', 'x2', 'x3', 'x4', 'x5', 'x6', 'x7']) {
          deep.push(`${deep[deep.length - 1] ?? nestedCtx}/${segment}`);
        }
        const notification = traceRecord({ id: next(), context: 's1', kind: 'mcp/notification' });
        const other = toolCallChain(next);
        store.append([
          notification,
          ...chain.records.slice(0, 3),
          traceRecord({ id: nested, context: nestedCtx, from: 'server-a', direction: 'server->client' }),
          ...deep.map((context) => traceRecord({ id: next(), context })),
          ...chain.records.slice(3),
          ...other.records,
        ]);
        const sub = store.subtree(`s1/${chain.D}`);
        expect(sub).toHaveLength(5 + 1 + deep.length);
        expect(ids(sub.filter((r) => r.envelope.context === `s1/${chain.D}`))).toEqual(ids(chain.records));
        expect(sub.map((r) => r.envelope.context)).toContain(deep[deep.length - 1]);
        expect(store.subtree(deep[3] ?? '')).toHaveLength(4);
        expect(store.subtree('s1')).toHaveLength(1 + 5 + 1 + deep.length + 5);
      });
    });

    describe('follow', () => {
      it('walks a request chain from the downstream response back to the request', () => {
        const store = make();
        const { D, U, P, UR, R, records } = toolCallChain(idSource());
        store.append(records);
        const graph = store.follow(R);
        expect(graph?.root.envelope.id).toBe(R);
        // Distance 1 (in insertion order), then distance 2.
        expect(ids(graph?.answers)).toEqual([D, UR, U]);
        expect(graph?.answeredBy).toEqual([]);
        expect(graph?.edges).toEqual(
          sortEdges([
            { from: U, to: D },
            { from: UR, to: U },
            { from: R, to: D },
            { from: R, to: UR },
          ]),
        );
        expect(ids(graph?.answers).includes(P)).toBe(false);
      });

      it('walks from the downstream request to everything that answers it', () => {
        const store = make();
        const { D, U, P, UR, R, records } = toolCallChain(idSource());
        store.append(records);
        const graph = store.follow(D);
        expect(graph?.answers).toEqual([]);
        expect(ids(graph?.answeredBy)).toEqual([U, P, R, UR]);
        expect(graph?.edges).toHaveLength(5);
        const middle = store.follow(U);
        expect(ids(middle?.answers)).toEqual([D]);
        expect(ids(middle?.answeredBy)).toEqual([UR, R]);
        expect(ids(store.follow(P)?.answers)).toEqual([D]);
      });

      it('follows a fan-in response to all the upstream responses it merged', () => {
        const store = make();
        const { DL, us, rs, A, records } = fanInChain(idSource());
        store.append(records);
        const graph = store.follow(A);
        expect(ids(graph?.answers)).toEqual([DL, ...rs, ...us]);
        expect(graph?.edges).toHaveLength(4 + 3 + 3);
        expect(ids(store.follow(A, { maxDepth: 1 })?.answers)).toEqual([DL, ...rs]);
        const zero = store.follow(A, { maxDepth: 0 });
        expect(zero?.answers).toEqual([]);
        expect(zero?.edges).toEqual([]);
        const one = store.follow(rs[1]);
        expect(ids(one?.answeredBy)).toEqual([A]);
        expect(ids(one?.answers)).toEqual([us[1], DL]);
        // The copies and the aggregate name DL directly; the upstream responses are one hop further.
        expect(ids(store.follow(DL)?.answeredBy)).toEqual([...us, A, ...rs]);
      });

      it('terminates on cycles and self-references', () => {
        const store = make();
        const next = idSource();
        const ring = [next(), next(), next(), next(), next()];
        const self = next();
        store.append([
          ...ring.map((id, i) => traceRecord({ id, correlationId: [ring[(i + 1) % ring.length] ?? ''] })),
          traceRecord({ id: self, correlationId: [self] }),
        ]);
        const graph = store.follow(ring[0] ?? '');
        expect(ids(graph?.answers)).toEqual(ring.slice(1));
        expect(ids(graph?.answeredBy)).toEqual([ring[4], ring[3], ring[2], ring[1]]);
        expect(graph?.edges).toHaveLength(5);
        const selfGraph = store.follow(self);
        expect(selfGraph?.answers).toEqual([]);
        expect(selfGraph?.answeredBy).toEqual([]);
        expect(selfGraph?.edges).toEqual([{ from: self, to: self }]);
        expect(ids(store.follow(ring[0] ?? '', { maxDepth: 2 })?.answers)).toEqual(ring.slice(1, 3));
      });

      it('returns undefined for an unknown root and leaves out ids that were never recorded', () => {
        const store = make();
        const next = idSource();
        const missing = next();
        const known = next();
        const root = next();
        store.append([
          traceRecord({ id: known }),
          traceRecord({ id: root, correlationId: [missing, known] }),
        ]);
        expect(store.follow(missing)).toBeUndefined();
        const graph = store.follow(root);
        expect(ids(graph?.answers)).toEqual([known]);
        expect(graph?.edges).toEqual([{ from: root, to: known }]);
        expect(graph?.root.envelope.correlationId).toEqual([missing, known]);
      });

      it('finds what names an envelope within its sub-context, across contexts, and without one', () => {
        const store = make();
        const next = idSource();
        const [a, b, c, d, e, f, g] = [next(), next(), next(), next(), next(), next(), next()];
        store.append([
          traceRecord({ id: a, context: `s1/${a}` }),
          // Same sub-context; another sub-context; the session context; no context at all.
          traceRecord({ id: b, context: `s1/${a}`, correlationId: [a] }),
          traceRecord({ id: c, context: `s1/${c}`, correlationId: [a, b] }),
          traceRecord({ id: d, context: 's1', correlationId: [b] }),
          traceRecord({ id: e, correlationId: [a] }),
          // Names within a context without a `/`, and within one named twice.
          traceRecord({ id: f, context: 's1', correlationId: [d, d] }),
          traceRecord({ id: g, context: `s1/${a}`, correlationId: [b, a, b] }),
        ]);
        expect(ids(store.follow(a)?.answeredBy)).toEqual([b, c, e, g, d, f]);
        expect(ids(store.follow(b)?.answeredBy)).toEqual([c, d, g, f]);
        expect(ids(store.follow(d)?.answeredBy)).toEqual([f]);
        expect(ids(store.follow(g)?.answers)).toEqual([a, b]);
        expect(store.follow(a)?.edges).toEqual(
          sortEdges([
            { from: b, to: a },
            { from: c, to: a },
            { from: c, to: b },
            { from: d, to: b },
            { from: e, to: a },
            { from: f, to: d },
            { from: g, to: a },
            { from: g, to: b },
          ]),
        );
      });
    });

    describe('payload truncation', () => {
      it('stores a payload over maxPayloadBytes as a marker with its size and SHA-256', () => {
        const store = make({ maxPayloadBytes: 64 });
        const next = idSource();
        const small = traceRecord({ id: next(), payload: { jsonrpc: '2.0', id: 1, method: 'ping' } });
        const bigPayload = { jsonrpc: '2.0', id: 2, result: { text: 'é'.repeat(40) } };
        const big = traceRecord({ id: next(), kind: 'mcp/response', payload: bigPayload });
        const json = JSON.stringify(bigPayload);
        store.append([small, big]);
        expect(store.get(small.envelope.id)).toEqual(small);
        expect(store.get(big.envelope.id)?.envelope.payload).toEqual({
          _truncated: true,
          bytes: Buffer.byteLength(json),
          sha256: createHash('sha256').update(json).digest('hex'),
        });
        expect(store.get(big.envelope.id)?.envelope.kind).toBe('mcp/response');
      });

      it('measures payloadJson when the transport supplied it, and keeps a payload exactly at the limit', () => {
        const payload = { jsonrpc: '2.0', id: 3, method: 'x' };
        const json = JSON.stringify(payload);
        const store = make({ maxPayloadBytes: json.length });
        const next = idSource();
        const exact = traceRecord({ id: next(), payload, payloadJson: json });
        const over = traceRecord({ id: next(), payload: { ...payload, id: 30 } });
        store.append([exact, over]);
        expect(store.get(exact.envelope.id)?.envelope.payload).toEqual(payload);
        expect(store.get(over.envelope.id)?.envelope.payload).toMatchObject({
          _truncated: true,
          bytes: json.length + 1,
        });
      });
    });

    describe('payloads (trace.payloads)', () => {
      /** A store with the default payload mode. */
      const makeDefault = (options: ContractStoreOptions = {}): ManagedTraceStore => {
        const store = makeStore(options);
        open.push(store);
        return store;
      };
      const SENTINEL = 'S3NT1NEL-c0ffee';

      it('by default keeps output bodies as their size and SHA-256, on both hops of the answer', () => {
        const store = makeDefault();
        const next = idSource();
        const chain = toolCallChain(next);
        const result = { content: [{ type: 'text', text: `the body holds ${SENTINEL}` }], isError: true };
        const records = chain.records.map((record) =>
          record.envelope.kind === 'mcp/response'
            ? { ...record, envelope: { ...record.envelope, payload: { ...record.envelope.payload, result } } }
            : record,
        );
        store.append(records);
        const body = JSON.stringify(result);
        const omitted = {
          _omitted: 'output',
          bytes: Buffer.byteLength(body),
          sha256: createHash('sha256').update(body).digest('hex'),
          isError: true,
        };
        expect(store.get(chain.UR)?.envelope.payload).toEqual({ jsonrpc: '2.0', id: 1, result: omitted });
        expect(store.get(chain.R)?.envelope.payload).toEqual({ jsonrpc: '2.0', id: 7, result: omitted });
        // The request, the copy and the progress are kept (nothing secret in them).
        for (const id of [chain.D, chain.U, chain.P]) {
          const record = records.find((r) => r.envelope.id === id);
          expect(store.get(id)?.envelope.payload).toEqual(record?.envelope.payload);
        }
        expect(JSON.stringify(store.session('s1'))).not.toContain(SENTINEL);
      });

      it('by default redacts secret names and shapes, with the operator rules, and keeps progressToken', () => {
        const store = makeDefault({ redact: { keys: ['internal_ref'], patterns: ['CASE-[0-9]{6}'] } });
        const next = idSource();
        const request = {
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: {
            name: 'login',
            arguments: {
              password: SENTINEL,
              internalRef: SENTINEL,
              note: `see CASE-123456 and Bearer ${SENTINEL}`,
              dsn: `postgres://admin:${SENTINEL}@db/prod`,
            },
            _meta: { progressToken: 'tok-1' },
          },
        };
        const record = traceRecord({ id: next(), context: 's1/x', payload: request });
        // JSON text as a peer may write it: escapes hide the names from a plain text scan.
        const escaped = traceRecord({
          id: next(),
          kind: 'mcp/notification',
          payload: {
            jsonrpc: '2.0',
            method: 'notifications/message',
            params: { data: { password: SENTINEL, token: SENTINEL } },
          },
          payloadJson: `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":{"pass\\u0077ord":"${SENTINEL}","\\u0074oken":"${SENTINEL}"}}}`,
        });
        store.append([record, escaped]);
        expect(store.get(record.envelope.id)?.envelope.payload).toEqual({
          ...request,
          params: {
            ...request.params,
            arguments: {
              password: '[REDACTED]',
              internalRef: '[REDACTED]',
              note: 'see [REDACTED] and Bearer [REDACTED]',
              dsn: 'postgres://admin:[REDACTED]@db/prod',
            },
          },
        });
        expect(JSON.stringify(store.session('s1'))).not.toContain(SENTINEL);
        expect(JSON.stringify(store.get(escaped.envelope.id))).not.toContain(SENTINEL);
      });

      it('by default redacts the clientInfo kept with a session', () => {
        const store = makeDefault();
        store.upsertSession(sessionInfo('s9', { clientInfo: { name: 'c', apiKey: SENTINEL } }));
        expect(store.sessionInfo('s9')?.clientInfo).toEqual({ name: 'c', apiKey: '[REDACTED]' });
      });

      it('keeps everything as it passed with payloads: full', () => {
        const store = make({ payloads: 'full' });
        const next = idSource();
        const chain = toolCallChain(next);
        const withSecret = traceRecord({
          id: next(),
          payload: { jsonrpc: '2.0', id: 9, method: 'x', params: { password: SENTINEL } },
        });
        store.append([...chain.records, withSecret]);
        expect(store.get(chain.R)).toEqual(stored(chain.records[4] as TraceRecord));
        expect(store.get(withSecret.envelope.id)).toEqual(stored(withSecret));
      });
    });

    describe('prune', () => {
      it('keeps the newest maxEnvelopes, drops the edges of what it deletes and emptied sessions', () => {
        const store = make();
        const next = idSource();
        store.upsertSession(sessionInfo('gone', { startedAt: T0 - 10 }));
        store.upsertSession(sessionInfo('fresh', { startedAt: T0 + 100 }));
        const early = [
          traceRecord({ id: next(), session: 'gone' }),
          traceRecord({ id: next(), session: 'gone' }),
        ];
        const chain = toolCallChain(next);
        store.append([...early, ...chain.records]);
        expect(store.prune({ maxEnvelopes: 3 })).toBe(4);
        expect(ids(store.session('s1'))).toEqual([chain.P, chain.UR, chain.R]);
        expect(store.get(chain.D)).toBeUndefined();
        const graph = store.follow(chain.R);
        expect(ids(graph?.answers)).toEqual([chain.UR]);
        expect(graph?.edges).toEqual([{ from: chain.R, to: chain.UR }]);
        expect(store.follow(chain.UR)?.answeredBy.map((r) => r.envelope.id)).toEqual([chain.R]);
        expect(store.sessions().map((s) => s.key)).toEqual(['fresh', 's1']);
        expect(store.prune({ maxEnvelopes: 10 })).toBe(0);
        expect(store.prune({ maxEnvelopes: 2.7 })).toBe(1);
        expect(store.prune({ maxEnvelopes: 0 })).toBe(2);
        expect(store.session('s1')).toEqual([]);
      });

      it('deletes envelopes older than maxAgeMs relative to now', () => {
        const store = make();
        const next = idSource();
        const old = traceRecord({ id: next(), receivedAt: T0 });
        const recent = traceRecord({ id: next(), receivedAt: T0 + 60_000, correlationId: [old.envelope.id] });
        store.append([old, recent]);
        expect(store.prune({ maxAgeMs: 30_000, now: T0 + 70_000 })).toBe(1);
        expect(ids(store.session('s1'))).toEqual([recent.envelope.id]);
        expect(store.follow(recent.envelope.id)?.answers).toEqual([]);
        expect(store.prune({ maxAgeMs: 30_000, now: T0 + 70_000 })).toBe(0);
        expect(store.prune({ maxAgeMs: 1, maxEnvelopes: 5, now: T0 + 60_000.5 })).toBe(0);
        expect(store.prune({})).toBe(0);
      });
    });

    describe('close', () => {
      it('is idempotent, and a closed store refuses work with SB_TRACE_STORE', () => {
        const store = make();
        store.close();
        store.close();
        const attempt = (): unknown => store.get('x');
        expect(attempt).toThrow(SwitchboardError);
        try {
          store.append([traceRecord({ id: 'x' })]);
          expect.unreachable();
        } catch (err) {
          expect((err as SwitchboardError).code).toBe('SB_TRACE_STORE');
        }
      });
    });
  });
}

function sortEdges(edges: { from: string; to: string }[]): { from: string; to: string }[] {
  return [...edges].sort((a, b) => (a.from === b.from ? (a.to < b.to ? -1 : 1) : a.from < b.from ? -1 : 1));
}
