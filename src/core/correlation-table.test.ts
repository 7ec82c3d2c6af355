import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RequestId } from '../protocol/jsonrpc/types.js';
import type { ProgressToken } from '../protocol/mcp/progress.js';
import { CorrelationTable } from './correlation-table.js';

function open(
  table: CorrelationTable<string>,
  session: string,
  downstreamId: RequestId,
  extra: { link?: string; token?: string | number; now?: number } = {},
) {
  const result = table.openClientRequest({
    session,
    downstreamId,
    link: extra.link ?? 'L',
    method: 'tools/call',
    now: extra.now ?? 0,
    tag: `${session}:${String(downstreamId)}`,
    ...(extra.token === undefined ? {} : { progressToken: extra.token }),
  });
  if (!result.ok) throw new Error('duplicate');
  return result.entry;
}

describe('CorrelationTable', () => {
  it('maps colliding downstream ids of different sessions to distinct upstream ids and back', () => {
    const table = new CorrelationTable<string>();
    const a = open(table, 'A', 1);
    const b = open(table, 'B', 1);
    const c = open(table, 'C', '1');
    expect(new Set([a.upstreamId, b.upstreamId, c.upstreamId]).size).toBe(3);
    expect(table.takeServerResponse('L', b.upstreamId)?.session).toBe('B');
    expect(table.takeServerResponse('L', c.upstreamId)?.downstreamId).toBe('1');
    expect(table.takeServerResponse('L', a.upstreamId)?.downstreamId).toBe(1);
    expect(table.clientRequestCount).toBe(0);
  });

  it('treats the number 1 and the string "1" as different ids', () => {
    const table = new CorrelationTable<string>();
    open(table, 'A', 1);
    expect(() => open(table, 'A', '1')).not.toThrow();
    expect(() => open(table, 'A', 1)).toThrow('duplicate');
  });

  it('answers each upstream response once; a second one is an orphan', () => {
    const table = new CorrelationTable<string>();
    const a = open(table, 'A', 7);
    expect(table.takeServerResponse('L', a.upstreamId)).toBeDefined();
    expect(table.takeServerResponse('L', a.upstreamId)).toBeUndefined();
    expect(table.takeServerResponse('L', 'not-ours')).toBeUndefined();
    expect(table.takeServerResponse('other-link', a.upstreamId)).toBeUndefined();
  });

  it('routes progress by the upstream token and restores the client token', () => {
    const table = new CorrelationTable<string>();
    const a = open(table, 'A', 1, { token: 'tok' });
    const b = open(table, 'B', 1, { token: 'tok' });
    expect(a.upstreamProgressToken).not.toEqual(b.upstreamProgressToken);
    const routed = table.routeProgress('L', b.upstreamProgressToken!, 5);
    expect(routed?.session).toBe('B');
    expect(routed?.downstreamProgressToken).toBe('tok');
    table.takeServerResponse('L', b.upstreamId);
    expect(table.routeProgress('L', b.upstreamProgressToken!, 6)).toBeUndefined();
  });

  it('progress resets the timeout but never beyond the hard deadline', () => {
    const table = new CorrelationTable<string>({ requestTimeoutMs: 100, maxTotalTimeoutMs: 250 });
    const a = open(table, 'A', 1, { token: 1, now: 0 });
    table.routeProgress('L', a.upstreamProgressToken!, 90);
    expect(table.expire(150).timedOut).toHaveLength(0);
    table.routeProgress('L', a.upstreamProgressToken!, 180);
    expect(table.expire(249).timedOut).toHaveLength(0);
    expect(table.expire(250).timedOut.map((e) => e.downstreamId)).toEqual([1]);
  });

  it('cancellation is reported once, frees the downstream id, and keeps the entry for a late response', () => {
    const table = new CorrelationTable<string>({ cancelGraceMs: 50 });
    const a = open(table, 'A', 1, { token: 'p' });
    expect(table.cancelClientRequest('A', 1, 10)?.upstreamId).toBe(a.upstreamId);
    expect(table.cancelClientRequest('A', 1, 11)).toBeUndefined();
    expect(table.routeProgress('L', a.upstreamProgressToken!, 12)?.cancelled).toBe(true);
    const reused = open(table, 'A', 1);
    const late = table.takeServerResponse('L', a.upstreamId);
    expect(late?.cancelled).toBe(true);
    // The newer request with the same downstream id is untouched by the late response.
    expect(table.findClientRequest('A', 1)?.upstreamId).toBe(reused.upstreamId);
  });

  it('forgets a cancelled request after the grace period', () => {
    const table = new CorrelationTable<string>({ cancelGraceMs: 50 });
    open(table, 'A', 1);
    table.cancelClientRequest('A', 1, 10);
    expect(table.expire(59).forgotten).toHaveLength(0);
    expect(table.expire(60).forgotten).toHaveLength(1);
    expect(table.clientRequestCount).toBe(0);
  });

  it('ignores cancellation of unknown ids', () => {
    const table = new CorrelationTable<string>();
    expect(table.cancelClientRequest('A', 99, 0)).toBeUndefined();
  });

  it('gives server->client requests per-session ids and maps responses back', () => {
    const table = new CorrelationTable<string, string>();
    const s1 = table.openServerRequest({
      link: 'L1',
      upstreamId: 0,
      session: 'A',
      method: 'sampling/createMessage',
      now: 0,
      tag: 'x',
    });
    const s2 = table.openServerRequest({
      link: 'L2',
      upstreamId: 0,
      session: 'A',
      method: 'roots/list',
      now: 0,
      tag: 'y',
    });
    if (!s1.ok || !s2.ok) throw new Error('open failed');
    expect(s1.entry.downstreamId).not.toBe(s2.entry.downstreamId);
    expect(table.takeClientResponse('A', s2.entry.downstreamId)?.link).toBe('L2');
    expect(table.takeClientResponse('A', s2.entry.downstreamId)).toBeUndefined();
    expect(table.takeClientResponse('B', s1.entry.downstreamId)).toBeUndefined();
    expect(table.cancelServerRequest('L1', 0)?.session).toBe('A');
    expect(table.serverRequestCount).toBe(0);
  });

  it('refuses a server id still pending on the same link', () => {
    const table = new CorrelationTable<string, string>();
    table.openServerRequest({ link: 'L', upstreamId: 'x', session: 'A', method: 'm', now: 0, tag: '' });
    expect(
      table.openServerRequest({ link: 'L', upstreamId: 'x', session: 'B', method: 'm', now: 0, tag: '' }).ok,
    ).toBe(false);
  });

  it('closeLink releases everything on that link and nothing else', () => {
    const table = new CorrelationTable<string, string>();
    open(table, 'A', 1, { link: 'L1' });
    open(table, 'A', 2, { link: 'L2' });
    table.openServerRequest({ link: 'L1', upstreamId: 5, session: 'A', method: 'm', now: 0, tag: '' });
    const released = table.closeLink('L1');
    expect(released.clientRequests.map((e) => e.downstreamId)).toEqual([1]);
    expect(released.serverRequests).toHaveLength(1);
    expect(table.clientRequestCount).toBe(1);
  });

  it('closeSession releases everything of that session', () => {
    const table = new CorrelationTable<string, string>();
    open(table, 'A', 1);
    open(table, 'B', 1);
    table.openServerRequest({ link: 'L', upstreamId: 5, session: 'A', method: 'm', now: 0, tag: '' });
    const released = table.closeSession('A');
    expect(released.clientRequests).toHaveLength(1);
    expect(released.serverRequests).toHaveLength(1);
    expect(table.clientRequestCount).toBe(1);
    expect(table.sessionsWaitingOn('L')).toEqual(['B']);
  });

  it('indexes server progress tokens by session and link until the last request carrying one goes', () => {
    const table = new CorrelationTable<string, string>();
    const serve = (upstreamId: number, session = 'A', link = 'L') =>
      table.openServerRequest({
        link,
        upstreamId,
        session,
        method: 'm',
        progressToken: 'p',
        now: 0,
        tag: '',
      });
    serve(1);
    serve(2);
    serve(3, 'B');
    table.openServerRequest({ link: 'L', upstreamId: 4, session: 'A', method: 'm', now: 0, tag: '' });
    expect(table.hasServerProgressToken('A', 'L', 'p')).toBe(true);
    expect(table.hasServerProgressToken('A', 'L2', 'p')).toBe(false);
    expect(table.hasServerProgressToken('A', 'L', 1)).toBe(false);
    table.cancelServerRequest('L', 1);
    expect(table.hasServerProgressToken('A', 'L', 'p')).toBe(true);
    table.closeSession('A');
    expect(table.hasServerProgressToken('A', 'L', 'p')).toBe(false);
    expect(table.hasServerProgressToken('B', 'L', 'p')).toBe(true);
    table.closeLink('L');
    expect(table.hasServerProgressToken('B', 'L', 'p')).toBe(false);
  });

  it('computes the next deadline', () => {
    const table = new CorrelationTable<string>({ requestTimeoutMs: 100 });
    expect(table.nextDeadline()).toBe(Number.POSITIVE_INFINITY);
    open(table, 'A', 1, { now: 5 });
    open(table, 'A', 2, { now: 3 });
    expect(table.nextDeadline()).toBe(103);
  });
});

/**
 * Model-based property: N clients with colliding ids and tokens over shared links, with responses,
 * progress, cancellations, server->client requests, timeouts, link deaths and session closes in any
 * order. Every routed message must reach exactly the session (and id) it belongs to, and once all
 * work is drained nothing may be left in the table.
 */
type Op =
  | { t: 'request'; session: number; id: RequestId; link: number; token: boolean }
  | { t: 'reuse'; pick: number }
  | { t: 'respond'; pick: number }
  | { t: 'progress'; pick: number }
  | { t: 'cancel'; pick: number }
  | { t: 'cancelUnknown'; session: number; id: RequestId }
  | { t: 'serverRequest'; link: number; session: number; id: number; token: ProgressToken | null }
  | { t: 'clientRespond'; pick: number }
  | { t: 'tick'; ms: number }
  | { t: 'closeLink'; link: number }
  | { t: 'closeSession'; session: number };

const idArb = fc.oneof(fc.integer({ min: 0, max: 2 }), fc.constantFrom('1', ''));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('request' as const),
      session: fc.nat(2),
      id: idArb,
      link: fc.nat(1),
      token: fc.boolean(),
    }),
  },
  { weight: 5, arbitrary: fc.record({ t: fc.constant('respond' as const), pick: fc.nat(50) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('reuse' as const), pick: fc.nat(50) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('progress' as const), pick: fc.nat(50) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('cancel' as const), pick: fc.nat(50) }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('cancelUnknown' as const), session: fc.nat(3), id: idArb }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('serverRequest' as const),
      link: fc.nat(1),
      session: fc.nat(3),
      id: fc.nat(3),
      // Server tokens are the server's own and not rewritten: they may repeat, also across links.
      token: fc.option(fc.constantFrom<ProgressToken>('p', 1, '1')),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('clientRespond' as const), pick: fc.nat(50) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('tick' as const), ms: fc.nat(200) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('closeLink' as const), link: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('closeSession' as const), session: fc.nat(3) }) },
);

interface ModelRequest {
  session: string;
  id: RequestId;
  link: string;
  upstreamId: number;
  token?: string;
  upstreamToken?: string | number;
  cancelled: boolean;
}

describe('CorrelationTable under random interleavings (property)', () => {
  it('routes every message to its own session and id, and leaves nothing behind', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120 }), (ops) => {
        const table = new CorrelationTable<string, string>({
          requestTimeoutMs: 150,
          cancelGraceMs: 40,
          serverRequestTimeoutMs: 150,
        });
        let now = 0;
        // Upstream view: what each link has been sent and not yet answered.
        const inFlight: ModelRequest[] = [];
        // Server requests delivered to clients and not yet answered.
        const serverPending: {
          session: string;
          downstreamId: number;
          link: string;
          upstreamId: number;
          token?: ProgressToken;
        }[] = [];
        const key = (session: string, id: RequestId) => `${session}|${typeof id}|${String(id)}`;
        const clientPending = new Set<string>();
        // Every client request and server request ever opened, to check at the end that no index
        // (ids, progress tokens, server request ids either way) still routes anything to it.
        const opened: ModelRequest[] = [];
        const serverOpened: typeof serverPending = [];

        for (const rawOp of ops) {
          let op: Exclude<Op, { t: 'reuse' }>;
          if (rawOp.t === 'reuse') {
            // A client reusing the id of a request it cancelled (allowed once the cancel is sent).
            const cancelled = inFlight.filter((r) => r.cancelled);
            const target = cancelled[rawOp.pick % Math.max(cancelled.length, 1)];
            if (!target) continue;
            op = {
              t: 'request',
              session: Number(target.session.slice(1)),
              id: target.id,
              link: Number(target.link.slice(1)),
              token: true,
            };
          } else op = rawOp;
          switch (op.t) {
            case 'request': {
              const session = `S${op.session}`;
              const token = op.token ? `tok-${String(op.id)}` : undefined;
              const result = table.openClientRequest({
                session,
                downstreamId: op.id,
                link: `L${op.link}`,
                method: 'tools/call',
                now,
                tag: key(session, op.id),
                ...(token === undefined ? {} : { progressToken: token }),
              });
              const dup = clientPending.has(key(session, op.id));
              expect(result.ok).toBe(!dup);
              if (result.ok) {
                clientPending.add(key(session, op.id));
                const req: ModelRequest = {
                  session,
                  id: op.id,
                  link: `L${op.link}`,
                  upstreamId: result.entry.upstreamId,
                  cancelled: false,
                };
                if (token !== undefined) {
                  req.token = token;
                  req.upstreamToken = result.entry.upstreamProgressToken!;
                }
                expect(inFlight.some((r) => r.link === req.link && r.upstreamId === req.upstreamId)).toBe(
                  false,
                );
                inFlight.push(req);
                opened.push(req);
              }
              break;
            }
            case 'respond': {
              if (inFlight.length === 0) break;
              const req = inFlight.splice(op.pick % inFlight.length, 1)[0]!;
              const entry = table.takeServerResponse(req.link, req.upstreamId);
              if (entry) {
                expect(entry.session).toBe(req.session);
                expect(entry.downstreamId).toBe(req.id);
                expect(entry.cancelled).toBe(req.cancelled);
                if (!req.cancelled) clientPending.delete(key(req.session, req.id));
              }
              // A second delivery of the same response is always an orphan.
              expect(table.takeServerResponse(req.link, req.upstreamId)).toBeUndefined();
              break;
            }
            case 'progress': {
              const withToken = inFlight.filter((r) => r.upstreamToken !== undefined);
              if (withToken.length === 0) break;
              const req = withToken[op.pick % withToken.length]!;
              const entry = table.routeProgress(req.link, req.upstreamToken!, now);
              if (entry) {
                expect(entry.cancelled).toBe(req.cancelled);
                expect(entry.session).toBe(req.session);
                expect(entry.downstreamProgressToken).toBe(req.token);
              }
              break;
            }
            case 'cancel':
            case 'cancelUnknown': {
              const live = inFlight.filter((r) => !r.cancelled);
              const target = op.t === 'cancel' ? live[op.pick % Math.max(live.length, 1)] : undefined;
              const session = target ? target.session : `S${op.t === 'cancelUnknown' ? op.session : 0}`;
              const id = target ? target.id : op.t === 'cancelUnknown' ? op.id : 0;
              const entry = table.cancelClientRequest(session, id, now);
              const req = inFlight.find((r) => r.session === session && r.id === id && !r.cancelled);
              expect(entry !== undefined).toBe(req !== undefined);
              if (entry && req) {
                expect(entry.upstreamId).toBe(req.upstreamId);
                req.cancelled = true;
                clientPending.delete(key(session, id));
              }
              break;
            }
            case 'serverRequest': {
              const link = `L${op.link}`;
              const session = `S${op.session}`;
              const result = table.openServerRequest({
                link,
                upstreamId: op.id,
                session,
                method: 'sampling/createMessage',
                ...(op.token === null ? {} : { progressToken: op.token }),
                now,
                tag: '',
              });
              const dup = serverPending.some((s) => s.link === link && s.upstreamId === op.id);
              expect(result.ok).toBe(!dup);
              if (result.ok) {
                expect(
                  serverPending.some(
                    (s) => s.session === session && s.downstreamId === result.entry.downstreamId,
                  ),
                ).toBe(false);
                const entry = {
                  session,
                  downstreamId: result.entry.downstreamId,
                  link,
                  upstreamId: op.id,
                  ...(op.token === null ? {} : { token: op.token }),
                };
                serverPending.push(entry);
                serverOpened.push(entry);
              }
              break;
            }
            case 'clientRespond': {
              if (serverPending.length === 0) break;
              const s = serverPending.splice(op.pick % serverPending.length, 1)[0]!;
              const entry = table.takeClientResponse(s.session, s.downstreamId);
              expect(entry?.link).toBe(s.link);
              expect(entry?.upstreamId).toBe(s.upstreamId);
              break;
            }
            case 'tick': {
              now += op.ms;
              const expired = table.expire(now);
              for (const e of [...expired.timedOut, ...expired.forgotten]) {
                const i = inFlight.findIndex((r) => r.link === e.link && r.upstreamId === e.upstreamId);
                expect(i).toBeGreaterThanOrEqual(0);
                expect(e.cancelled).toBe(inFlight[i]!.cancelled);
                if (!e.cancelled) clientPending.delete(key(e.session, e.downstreamId));
                inFlight.splice(i, 1);
              }
              for (const e of expired.serverTimedOut) {
                const i = serverPending.findIndex(
                  (s) => s.session === e.session && s.downstreamId === e.downstreamId,
                );
                expect(i).toBeGreaterThanOrEqual(0);
                serverPending.splice(i, 1);
              }
              break;
            }
            case 'closeLink': {
              const link = `L${op.link}`;
              const released = table.closeLink(link);
              const mine = inFlight.filter((r) => r.link === link);
              expect(released.clientRequests.length).toBe(mine.length);
              for (const r of mine) if (!r.cancelled) clientPending.delete(key(r.session, r.id));
              inFlight.splice(0, inFlight.length, ...inFlight.filter((r) => r.link !== link));
              expect(released.serverRequests.length).toBe(
                serverPending.filter((s) => s.link === link).length,
              );
              serverPending.splice(0, serverPending.length, ...serverPending.filter((s) => s.link !== link));
              break;
            }
            case 'closeSession': {
              const session = `S${op.session}`;
              const released = table.closeSession(session);
              expect(released.clientRequests.length).toBe(
                inFlight.filter((r) => r.session === session).length,
              );
              for (const r of inFlight) if (r.session === session) clientPending.delete(key(r.session, r.id));
              inFlight.splice(0, inFlight.length, ...inFlight.filter((r) => r.session !== session));
              expect(released.serverRequests.length).toBe(
                serverPending.filter((s) => s.session === session).length,
              );
              serverPending.splice(
                0,
                serverPending.length,
                ...serverPending.filter((s) => s.session !== session),
              );
              break;
            }
          }
          expect(table.clientRequestCount).toBe(inFlight.length);
          expect(table.serverRequestCount).toBe(serverPending.length);
          // The server progress-token index says exactly which server requests carry which token.
          for (const session of ['S0', 'S1', 'S2', 'S3'])
            for (const link of ['L0', 'L1'])
              for (const token of ['p', 1, '1'] as const)
                expect(table.hasServerProgressToken(session, link, token)).toBe(
                  serverPending.some((s) => s.session === session && s.link === link && s.token === token),
                );
          for (const req of inFlight) {
            if (!req.cancelled)
              expect(table.findClientRequest(req.session, req.id)?.upstreamId).toBe(req.upstreamId);
          }
        }

        // Drain: answer everything still in flight; nothing may remain.
        for (const req of inFlight)
          expect(table.takeServerResponse(req.link, req.upstreamId)?.session).toBe(req.session);
        for (const s of serverPending)
          expect(table.takeClientResponse(s.session, s.downstreamId)).toBeDefined();
        expect(table.clientRequestCount).toBe(0);
        expect(table.serverRequestCount).toBe(0);
        for (const k of clientPending) {
          const [session, , id] = k.split('|');
          expect(table.findClientRequest(session!, id!)).toBeUndefined();
        }
        expect(table.nextDeadline()).toBe(Number.POSITIVE_INFINITY);
        // No index routes anything any more: not an id, a progress token or a server request.
        for (const req of opened) {
          expect(table.findByUpstreamId(req.link, req.upstreamId)).toBeUndefined();
          expect(table.findClientRequest(req.session, req.id)).toBeUndefined();
          if (req.upstreamToken !== undefined)
            expect(table.routeProgress(req.link, req.upstreamToken, now)).toBeUndefined();
        }
        for (const s of serverOpened) {
          if (s.token !== undefined)
            expect(table.hasServerProgressToken(s.session, s.link, s.token)).toBe(false);
          expect(table.cancelServerRequest(s.link, s.upstreamId)).toBeUndefined();
          expect(table.takeClientResponse(s.session, s.downstreamId)).toBeUndefined();
        }
        for (const link of ['L0', 'L1']) {
          expect(table.serverRequestsOn(link)).toEqual([]);
          expect(table.sessionsWaitingOn(link)).toEqual([]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
