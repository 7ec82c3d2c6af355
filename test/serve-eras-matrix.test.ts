/**
 * Progress and cancellation through `switchboard serve` in the four combinations of protocol eras
 * (issue 6, "Done means"): an SDK v2 client negotiating 2026-07-28 and an SDK v1 client on
 * 2025-11-25, each in front of
 *
 * - `modern`: test/fixtures/modern-server.mjs over HTTP, a v2 `createMcpHandler` server that speaks
 *   2026-07-28 only (it refuses legacy requests, so every call that succeeds proves the gateway's
 *   probe found it modern and spoke 2026-07-28 to it); it records every cancellation it sees;
 * - `everything`: server-everything over stdio (legacy); its long-running tool ignores
 *   cancellation, so the gateway must drop what it still sends.
 *
 * What the client saw is read from its transport (see support/era-clients.ts), what the gateway
 * did from its trace (`switchboard trace show --json`), and what the modern upstream saw from its
 * own `cancellations` tool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './support/cli.js';
import {
  connectLegacyClient,
  connectModernClient,
  type EraClient,
  type ProgressUpdate,
  type ToolResult,
  type WireMessage,
} from './support/era-clients.js';
import { type StartedProcess, startHttpFixture } from './support/peers.js';
import { type RunningServe, startServe } from './support/serve.js';
import { post, waitUntil } from './support/sse-client.js';
import { type TraceEnvelope, tracedCall, traceSessions, traceShow } from './support/trace.js';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

interface UpstreamCase {
  readonly name: 'modern' | 'everything';
  readonly title: string;
  readonly slowTool: string;
  /** A call that sends `steps` progress notifications a quarter of a second apart, then answers. */
  progressArgs(steps: number): Record<string, unknown>;
  /** What that call answers. */
  completed(steps: number): RegExp;
  /** A call that runs for far longer than the test waits; cancelled after its first progress. */
  readonly cancelArgs: Record<string, unknown>;
  readonly cancelSteps: number;
  echoed(message: string): string;
}

const UPSTREAMS: readonly UpstreamCase[] = [
  {
    name: 'modern',
    title: 'modern-server.mjs over HTTP (2026-07-28 only, era auto)',
    slowTool: 'slow-progress',
    progressArgs: (steps) => ({ durationMs: steps * 250, steps }),
    completed: (steps) => new RegExp(`^completed ${steps} steps`),
    cancelArgs: { durationMs: 60_000, steps: 240 },
    cancelSteps: 240,
    echoed: (message) => message,
  },
  {
    name: 'everything',
    title: 'server-everything over stdio (legacy)',
    slowTool: 'trigger-long-running-operation',
    progressArgs: (steps) => ({ duration: steps * 0.25, steps }),
    completed: (steps) => new RegExp(`Steps: ${steps}\\.`),
    // It does not stop when cancelled: it goes on for 2 s, and its progress must go nowhere.
    cancelArgs: { duration: 2, steps: 8 },
    cancelSteps: 8,
    echoed: (message) => `Echo: ${message}`,
  },
];

interface ClientCase {
  readonly era: 'modern' | 'legacy';
  readonly title: string;
  readonly version: string;
  connect(url: string): Promise<EraClient>;
}

const CLIENTS: readonly ClientCase[] = [
  {
    era: 'modern',
    title: 'an SDK v2 client negotiating 2026-07-28',
    version: MODERN,
    connect: (url) => connectModernClient(url),
  },
  {
    era: 'legacy',
    title: 'an SDK v1 client on 2025-11-25 (Streamable HTTP)',
    version: LEGACY,
    connect: (url) => connectLegacyClient(url),
  },
];

let fixture: StartedProcess & { url: string };
let serve: RunningServe;

beforeAll(async () => {
  fixture = await startHttpFixture('modernServer');
  serve = await startServe({
    configYaml: [
      'upstreams:',
      '  modern:',
      `    url: ${JSON.stringify(fixture.url)}`,
      '  everything:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: ${JSON.stringify([EVERYTHING, 'stdio'])}`,
      '',
    ].join('\n'),
  });
});

afterAll(async () => {
  await serve?.stop();
  await fixture?.stop();
});

function textOf(result: ToolResult): string {
  return (result.content ?? []).map((c) => c.text ?? '').join('\n');
}

const isResponse = (m: WireMessage): boolean => !('method' in m) && 'id' in m;
const progressParams = (m: WireMessage) =>
  (m.params ?? {}) as { progressToken?: unknown; progress?: number; total?: number };

/** The last `tools/call` of `tool` the client sent since `from`, and the progress token it asked for. */
function sentCall(client: EraClient, from: number, tool: string): { id: string | number; token: unknown } {
  const request = client.sent
    .slice(from)
    .findLast((m) => m.method === 'tools/call' && 'id' in m && m.params?.name === tool);
  if (request?.id === undefined) throw new Error(`the client sent no tools/call of ${tool}`);
  const meta = request.params?._meta as { progressToken?: unknown } | undefined;
  return { id: request.id, token: meta?.progressToken };
}

/** A client->gateway envelope of the client request `id` (a modern client's is `<id>#<n>` there). */
const isClientsRequest =
  (id: string | number) =>
  (e: TraceEnvelope): boolean =>
    e.payload.id === id || String(e.payload.id).startsWith(`${String(id)}#`);

const fromGatewayToClient = (e: TraceEnvelope): boolean =>
  e.from === 'gateway' && (e.to ?? []).some((to) => to.startsWith('client-'));

/** Rejects with `what` when `promise` has not settled after `ms` (a stuck test fails, not hangs). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

it('fronts a modern upstream that refuses legacy requests (so it is only reachable in 2026-07-28)', async () => {
  const legacyInitialize = await post(fixture.url, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'probe', version: '1' } },
  });
  expect(legacyInitialize.status).toBe(400);
});

describe.each(CLIENTS)('$title', (clientCase) => {
  describe.each(UPSTREAMS)('to $title', (upstream) => {
    let client: EraClient;

    let modernKey: string | undefined;

    /** The client's session in the trace: its Mcp-Session-Id, or the principal's modern session. */
    async function sessionKey(): Promise<string> {
      const own = client.sessionId();
      if (own !== undefined) return own;
      if (modernKey !== undefined) return modernKey;
      let key: string | undefined;
      await waitUntil(
        async () => {
          key = (await traceSessions(serve.dataDir)).find(
            (s) =>
              s.protocolVersion === MODERN && s.upstreams.length === 1 && s.upstreams[0] === upstream.name,
          )?.key;
          return key !== undefined;
        },
        10_000,
        `the 2026-07-28 session on /servers/${upstream.name}/mcp in the trace`,
      );
      modernKey = key!;
      return modernKey;
    }

    /** Polls the trace until `ready` holds for the client's envelopes; returns them. */
    async function traceWhen(
      ready: (envelopes: readonly TraceEnvelope[]) => boolean,
      what: string,
    ): Promise<TraceEnvelope[]> {
      const key = await sessionKey();
      let envelopes: TraceEnvelope[] = [];
      await waitUntil(
        async () => {
          envelopes = await traceShow(key, serve.dataDir);
          return ready(envelopes);
        },
        15_000,
        what,
        100,
      );
      return envelopes;
    }

    beforeAll(async () => {
      client = await clientCase.connect(`${serve.base}/servers/${upstream.name}/mcp`);
    });

    afterAll(async () => {
      await client?.close();
    });

    it(`speaks ${clientCase.version} to the gateway`, async () => {
      const sentFrom = client.sent.length;
      expect(textOf(await client.callTool('echo', { message: 'hello' }))).toBe(upstream.echoed('hello'));
      expect(client.protocolVersion()).toBe(clientCase.version);
      // The trace shows each hop as it went on the wire: a 2026-07-28 client's envelope members
      // reach the gateway; the upstream gets the envelope exactly when it speaks 2026-07-28 (the
      // gateway's own for a 2025 client), and a legacy upstream never.
      const { id } = sentCall(client, sentFrom, 'echo');
      const traced = tracedCall(
        await traceWhen(
          (envelopes) =>
            tracedCall(envelopes, upstream.name, isClientsRequest(id))?.upstreamRequest !== undefined,
          'the echo call sent upstream in the trace',
        ),
        upstream.name,
        isClientsRequest(id),
      )!;
      const envelopeKeys = (e: TraceEnvelope | undefined): string[] =>
        Object.keys((e?.payload.params?._meta ?? {}) as Record<string, unknown>).filter((k) =>
          k.startsWith('io.modelcontextprotocol/'),
        );
      expect(envelopeKeys(traced.request).length > 0).toBe(clientCase.era === 'modern');
      expect(envelopeKeys(traced.upstreamRequest).length > 0).toBe(upstream.name === 'modern');
      const key = await sessionKey();
      const session = (await traceSessions(serve.dataDir)).find((s) => s.key === key);
      expect(session).toMatchObject({ protocolVersion: clientCase.version, upstreams: [upstream.name] });
      // A 2026-07-28 client is stateless: no session id; a 2025-11-25 one has its own.
      expect(client.sessionId() === undefined).toBe(clientCase.era === 'modern');
    });

    it("delivers every progress notification, in order, with the client's own token, before the result", async () => {
      const steps = 4;
      const sentFrom = client.sent.length;
      const receivedFrom = client.received.length;
      const handed: ProgressUpdate[] = [];
      const result = await client.callTool(upstream.slowTool, upstream.progressArgs(steps), {
        onprogress: (p) => handed.push(p),
      });
      const inbound = client.received.slice(receivedFrom);
      expect(textOf(result)).toMatch(upstream.completed(steps));

      const { id, token } = sentCall(client, sentFrom, upstream.slowTool);
      expect(token).toBeDefined();
      const responseAt = inbound.findIndex((m) => isResponse(m) && m.id === id);
      expect(responseAt).toBeGreaterThanOrEqual(0);
      // Everything that reached the client up to its result, and nothing else was in flight: every
      // progress notification is this call's, under the client's token (not the upstream's).
      const progress = inbound.slice(0, responseAt).filter((m) => m.method === 'notifications/progress');
      expect(progress.map((m) => progressParams(m).progressToken)).toEqual(Array(steps).fill(token));
      expect(progress.map((m) => [progressParams(m).progress, progressParams(m).total])).toEqual(
        Array.from({ length: steps }, (_, i) => [i + 1, steps]),
      );
      // None came after the result.
      expect(inbound.slice(responseAt + 1).filter((m) => m.method === 'notifications/progress')).toEqual([]);
      // And the SDK handed each one to the caller before callTool resolved.
      expect(handed.map((p) => p.progress)).toEqual(Array.from({ length: steps }, (_, i) => i + 1));
      expect(client.errors).toEqual([]);
    });

    it('cancels a call: the upstream is told, the client gets nothing more for it, and goes on', async () => {
      const sentFrom = client.sent.length;
      const receivedFrom = client.received.length;
      const abort = new AbortController();
      let progressed: () => void = () => {};
      const running = new Promise<void>((resolve) => {
        progressed = resolve;
      });
      const call = client.callTool(upstream.slowTool, upstream.cancelArgs, {
        signal: abort.signal,
        onprogress: () => progressed(),
      });
      call.catch(() => undefined);
      // The first progress proves the call is running upstream.
      await within(running, 15_000, 'the first progress of the slow call');
      abort.abort('the user changed their mind');
      await expect(call).rejects.toThrow();

      const { id, token } = sentCall(client, sentFrom, upstream.slowTool);
      const cancellations = client.sent.slice(sentFrom).filter((m) => m.method === 'notifications/cancelled');
      if (clientCase.era === 'legacy') {
        expect(cancellations.map((m) => m.params?.requestId)).toEqual([id]);
      } else {
        // 2026-07-28 over HTTP: the client closes the response stream instead.
        expect(cancellations).toEqual([]);
      }

      // The gateway told the upstream, naming the upstream's id of this very call.
      const told = await traceWhen((envelopes) => {
        const traced = tracedCall(envelopes, upstream.name, isClientsRequest(id));
        return (
          traced?.hops.some((e) => e.from === 'gateway' && e.payload.method === 'notifications/cancelled') ===
          true
        );
      }, 'the cancellation sent upstream in the trace');
      const traced = tracedCall(told, upstream.name, isClientsRequest(id))!;
      const upstreamId = traced.upstreamRequest?.payload.id;
      expect(upstreamId).toBeDefined();
      const cancelUpstream = traced.hops.filter(
        (e) => e.from === 'gateway' && e.payload.method === 'notifications/cancelled',
      );
      expect(cancelUpstream.map((e) => [e.to, e.payload.params?.requestId])).toEqual([
        [[`server-${upstream.name}`], upstreamId],
      ]);

      if (upstream.name === 'modern') {
        // The server saw its response stream close: it recorded the cancellation of that request
        // and stopped early. (Asked through the same client, which also shows it goes on working.)
        let recorded: { requestId: unknown; completedSteps: number; steps: number } | undefined;
        await waitUntil(
          async () => {
            const listed = JSON.parse(textOf(await client.callTool('cancellations', {}))) as NonNullable<
              typeof recorded
            >[];
            recorded = listed.find((r) => r.requestId === upstreamId);
            return recorded !== undefined;
          },
          15_000,
          `modern-server.mjs to record the cancellation of request ${String(upstreamId)}`,
          100,
        );
        expect(recorded).toMatchObject({ steps: upstream.cancelSteps });
        expect(recorded!.completedSteps).toBeLessThan(upstream.cancelSteps);
      } else {
        // server-everything does not stop: wait until it has sent its last progress for the call.
        await traceWhen((envelopes) => {
          const hops = tracedCall(envelopes, upstream.name, isClientsRequest(id))?.hops ?? [];
          return hops.some(
            (e) =>
              e.from === 'server-everything' &&
              e.payload.method === 'notifications/progress' &&
              e.payload.params?.progress === upstream.cancelSteps,
          );
        }, 'the last progress of the cancelled call from server-everything');
      }

      // The client goes on: a new call is answered.
      expect(textOf(await client.callTool('echo', { message: 'after' }))).toBe(upstream.echoed('after'));
      const echo = sentCall(client, sentFrom, 'echo');
      const settled = await traceWhen(
        (envelopes) =>
          tracedCall(envelopes, upstream.name, isClientsRequest(echo.id))?.hops.some(
            (e) => fromGatewayToClient(e) && e.kind === 'mcp/response',
          ) === true,
        'the answer to the call after the cancellation in the trace',
      );

      // Nothing more for the cancelled call: the gateway sent the client nothing after it learned of
      // the cancellation (while, for server-everything, the upstream's progress kept coming) ...
      const hops = tracedCall(settled, upstream.name, isClientsRequest(id))!.hops;
      const cancelledAt = hops.findIndex(
        (e) => e.from.startsWith('client-') && e.payload.method === 'notifications/cancelled',
      );
      expect(cancelledAt).toBeGreaterThan(0);
      expect(hops.slice(cancelledAt + 1).filter(fromGatewayToClient)).toEqual([]);
      if (upstream.name === 'everything') {
        const afterwards = hops
          .slice(cancelledAt + 1)
          .filter((e) => e.from === 'server-everything' && e.payload.method === 'notifications/progress');
        expect(afterwards.length).toBeGreaterThan(0);
      }
      // ... and the client received no answer for it, only progress the gateway had sent before.
      const sentBefore = hops
        .slice(0, cancelledAt)
        .filter((e) => fromGatewayToClient(e) && e.payload.method === 'notifications/progress')
        .map((e) => e.payload.params?.progress);
      const forCall = client.received
        .slice(receivedFrom)
        .filter((m) => (isResponse(m) && m.id === id) || progressParams(m).progressToken === token);
      expect(forCall.length).toBeGreaterThan(0);
      expect(forCall.every((m) => m.method === 'notifications/progress')).toBe(true);
      expect(forCall.map((m) => progressParams(m).progress)).toEqual(sentBefore.slice(0, forCall.length));
      expect(client.errors).toEqual([]);
    });
  });
});
