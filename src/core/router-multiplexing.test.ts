/**
 * Many clients over one shared upstream, through the real router (property test): N simulated
 * clients send requests with colliding ids and progress tokens (numbers and strings), cancel some,
 * and answer the server's requests; a simulated upstream answers in random order, sends progress,
 * and sends server->client requests on the stream of the request that caused them (as an HTTP
 * upstream does). Every message carries an origin marker the router never touches, so each client
 * can check that what it received is its own, with its own ids.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcMessage, RequestId } from '../protocol/jsonrpc/types.js';
import type { LinkId, SessionKey } from './correlation-table.js';
import type { Delivery, DownstreamPort, InboundMeta, UpstreamClose, UpstreamTransport } from './ports.js';
import { type RequestResolver, type Resolution, Router } from './router.js';

const LINK: LinkId = 'shared';

class FakeUpstream implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  readonly received: JsonRpcMessage[] = [];
  async start(): Promise<void> {}
  send(_json: string, message: JsonRpcMessage): undefined {
    this.received.push(message);
  }
  async close(): Promise<void> {}
  deliver(message: JsonRpcMessage, relatedUpstreamId?: RequestId): void {
    this.onmessage?.(JSON.stringify(message), {
      transport: { kind: 'memory' },
      ...(relatedUpstreamId === undefined ? {} : { relatedUpstreamId }),
    });
  }
}

class FakeClient implements DownstreamPort {
  readonly received: { message: JsonRpcMessage; delivery: Delivery }[] = [];
  send(_json: string, message: JsonRpcMessage, delivery: Delivery): void {
    this.received.push({ message, delivery });
  }
}

function sharedResolver(sessions: () => SessionKey[]): RequestResolver {
  return {
    resolve: (): Resolution => ({ kind: 'forward', link: LINK }),
    notificationLinks: () => [LINK],
    sessionsFor: () => sessions(),
    notificationTargets: () => sessions(),
  };
}

type Op =
  | { t: 'request'; client: number; id: RequestId; token: boolean }
  | { t: 'respond'; pick: number }
  | { t: 'progress'; pick: number }
  | { t: 'serverRequest'; pick: number }
  | { t: 'answerServer'; client: number; pick: number }
  | { t: 'cancel'; client: number; pick: number };

const CLIENTS = 4;
const idArb = fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constantFrom('1', 'a'));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('request' as const),
      client: fc.nat(CLIENTS - 1),
      id: idArb,
      token: fc.boolean(),
    }),
  },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('respond' as const), pick: fc.nat(40) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('progress' as const), pick: fc.nat(40) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('serverRequest' as const), pick: fc.nat(40) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('answerServer' as const),
      client: fc.nat(CLIENTS - 1),
      pick: fc.nat(40),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('cancel' as const),
      client: fc.nat(CLIENTS - 1),
      pick: fc.nat(40),
    }),
  },
);

describe('router: N clients over one shared upstream (property)', () => {
  it('gives each client exactly its own responses, progress and server requests, with its own ids', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 80 }), (ops) => {
        const keys = Array.from({ length: CLIENTS }, (_, i) => `c${i}`);
        const upstream = new FakeUpstream();
        const metrics = new Metrics();
        const router = new Router({
          resolver: sharedResolver(() => keys),
          logger: new MemoryLogger(),
          metrics,
        });
        router.addLink({ id: LINK, name: 'srv', transport: upstream, transportContext: { kind: 'memory' } });
        const clients = keys.map((key) => {
          const port = new FakeClient();
          router.openSession({ key, port, transport: 'memory', transportContext: { kind: 'memory' } });
          return port;
        });
        // The client's own view: requests it sent and has not seen answered or cancelled.
        const pending = keys.map(
          () => new Map<string, { id: RequestId; token?: string | number; marker: string }>(),
        );
        const idKeyOf = (id: RequestId) => `${typeof id}:${String(id)}`;
        let markers = 0;
        // Upstream view: requests still unanswered upstream (the router's rewritten ids).
        // A cancelled one stays: the server may still answer late, and that answer must reach nobody.
        const upstreamPending: {
          id: RequestId;
          token?: string | number;
          marker: string;
          cancelled?: boolean;
        }[] = [];
        // Server requests delivered to clients and not answered yet: client -> their downstream ids.
        const serverPending = keys.map(() => [] as { id: RequestId; marker: string }[]);
        let seenUpstream = 0;
        let seenClient = keys.map(() => 0);

        const pumpUpstream = () => {
          for (; seenUpstream < upstream.received.length; seenUpstream++) {
            const m = upstream.received[seenUpstream]!;
            if ('method' in m && 'id' in m) {
              const params = m.params as JsonObject;
              const meta = isObject(params._meta) ? params._meta : {};
              const token = meta.progressToken as string | number | undefined;
              upstreamPending.push({
                id: m.id,
                marker: String(params.marker),
                ...(token === undefined ? {} : { token }),
              });
            } else if ('method' in m && m.method === 'notifications/cancelled') {
              const requestId = (m.params as JsonObject).requestId;
              const p = upstreamPending.find((q) => q.id === requestId);
              // The router only cancels what the upstream has: the id must be one it sent.
              expect(p).toBeDefined();
              p!.cancelled = true;
            }
          }
        };

        const checkClients = () => {
          clients.forEach((client, c) => {
            for (; seenClient[c]! < client.received.length; seenClient[c]!++) {
              const { message: m } = client.received[seenClient[c]!]!;
              if (!('method' in m)) {
                // A response: to one of this client's own pending requests, with its own id.
                const own = pending[c]!.get(idKeyOf(m.id as RequestId));
                expect(own, `client ${c} got a response to an id it is not waiting for`).toBeDefined();
                if ('result' in m) expect((m.result as JsonObject).marker).toBe(own!.marker);
                pending[c]!.delete(idKeyOf(m.id as RequestId));
              } else if (m.method === 'notifications/progress') {
                const params = m.params as JsonObject;
                const owner = [...pending[c]!.values()].find((p) => p.marker === params.marker);
                expect(owner, `client ${c} got progress for a request not its own`).toBeDefined();
                expect(params.progressToken).toBe(owner!.token);
              } else if ('id' in m) {
                // A server request: caused by one of this client's own requests.
                const params = m.params as JsonObject;
                expect(String(params.marker).startsWith(`${keys[c]}:`)).toBe(true);
                serverPending[c]!.push({ id: m.id, marker: String(params.marker) });
              }
            }
          });
        };

        for (const op of ops) {
          switch (op.t) {
            case 'request': {
              const c = op.client;
              if (pending[c]!.has(idKeyOf(op.id))) break; // a well-behaved client never reuses a pending id
              const marker = `${keys[c]}:${markers++}`;
              const token = op.token ? (typeof op.id === 'number' ? `t${op.id}` : 7) : undefined;
              pending[c]!.set(idKeyOf(op.id), {
                id: op.id,
                marker,
                ...(token === undefined ? {} : { token }),
              });
              const params: JsonObject = {
                marker,
                ...(token === undefined ? {} : { _meta: { progressToken: token } }),
              };
              router.handleClientMessage(
                keys[c]!,
                { jsonrpc: '2.0', id: op.id, method: 'tools/call', params },
                { kind: 'memory' },
              );
              break;
            }
            case 'respond': {
              if (upstreamPending.length === 0) break;
              const p = upstreamPending.splice(op.pick % upstreamPending.length, 1)[0]!;
              upstream.deliver({ jsonrpc: '2.0', id: p.id, result: { marker: p.marker } });
              break;
            }
            case 'progress': {
              // Progress for a cancelled request is sent too (a racing server); it must reach nobody.
              const withToken = upstreamPending.filter((p) => p.token !== undefined);
              if (withToken.length === 0) break;
              const p = withToken[op.pick % withToken.length]!;
              upstream.deliver({
                jsonrpc: '2.0',
                method: 'notifications/progress',
                params: { progressToken: p.token!, progress: 1, marker: p.marker },
              });
              break;
            }
            case 'serverRequest': {
              if (upstreamPending.length === 0) break;
              const p = upstreamPending[op.pick % upstreamPending.length]!;
              upstream.deliver(
                {
                  jsonrpc: '2.0',
                  id: `s${markers++}`,
                  method: 'sampling/createMessage',
                  params: { marker: p.marker },
                },
                p.id,
              );
              break;
            }
            case 'answerServer': {
              const list = serverPending[op.client]!;
              if (list.length === 0) break;
              const s = list.splice(op.pick % list.length, 1)[0]!;
              const before = upstream.received.length;
              router.handleClientMessage(
                keys[op.client]!,
                { jsonrpc: '2.0', id: s.id, result: { marker: s.marker } },
                { kind: 'memory' },
              );
              // The answer reaches the upstream once, under the server's own id.
              const sent = upstream.received.slice(before);
              expect(sent).toHaveLength(1);
              expect((sent[0] as { result: JsonObject }).result.marker).toBe(s.marker);
              break;
            }
            case 'cancel': {
              const mine = [...pending[op.client]!.values()];
              if (mine.length === 0) break;
              const p = mine[op.pick % mine.length]!;
              pending[op.client]!.delete(idKeyOf(p.id));
              router.handleClientMessage(
                keys[op.client]!,
                { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: p.id } },
                { kind: 'memory' },
              );
              break;
            }
          }
          pumpUpstream();
          checkClients();
        }
        // Drain: the upstream answers everything left; every client gets exactly its own answers.
        while (upstreamPending.length > 0) {
          const p = upstreamPending.shift()!;
          upstream.deliver({ jsonrpc: '2.0', id: p.id, result: { marker: p.marker } });
          checkClients();
        }
        for (const [c, map] of pending.entries()) expect(map.size, `client ${c} still waits`).toBe(0);
        expect(router.pendingRequests).toBe(0);
        expect(metrics.total('orphan_responses_total')).toBe(0);
        seenClient = [];
        router.close();
      }),
      { numRuns: 300 },
    );
  });
});
