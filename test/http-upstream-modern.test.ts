/**
 * The 2026-07-28 upstream client against real servers, through a real Router and the supervisor,
 * with a fake legacy client session in front: `modern-server.mjs` (2026-07-28 only, v2 SDK) and the
 * dual-era `conformance-server.mjs http` with `era: modern` forced (the bridge against a real
 * server; with `era: auto` the probe finds that one speaks both eras, and the gateway speaks 2025
 * to a 2025 client there). The probe picks modern for the first and legacy for server-everything's
 * Streamable HTTP. The client sees a legacy server: initialize, tools, progress,
 * cancellation that reaches the server, sampling and elicitation asked through server->client
 * requests (bridged from input_required), resource subscriptions fed by subscriptions/listen,
 * x-mcp-header mirroring and the -32002 mapping.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PassthroughResolver } from '../src/core/passthrough-resolver.js';
import type { Delivery } from '../src/core/ports.js';
import { Router } from '../src/core/router.js';
import { silentLogger } from '../src/observe/logger.js';
import { Metrics } from '../src/observe/metrics.js';
import type { JsonObject, JsonRpcMessage, RequestId } from '../src/protocol/jsonrpc/types.js';
import { EraCache } from '../src/transports/http/upstream/era-cache.js';
import { SupervisedHttpUpstream } from '../src/transports/http/upstream/supervised-http-upstream.js';
import { eventually } from '../src/transports/http/upstream/test-support/scripted-server.js';
import { PEERS, type StartedProcess, startHttpFixture, startProcess } from './support/peers.js';

const LINK = 'up';
const SESSION = 'client';

interface Delivered {
  readonly message: JsonRpcMessage & Record<string, unknown>;
  readonly delivery: Delivery;
}

/** A router, one legacy client session, and the upstream at `url` under supervision with `era: auto`. */
async function gateway(url: string, cache = new EraCache(), era: 'auto' | 'modern' = 'auto') {
  const metrics = new Metrics();
  const router = new Router({
    resolver: new PassthroughResolver(LINK, SESSION),
    logger: silentLogger,
    metrics,
  });
  const delivered: Delivered[] = [];
  router.openSession({
    key: SESSION,
    port: {
      send: (_json, message, delivery) =>
        delivered.push({ message: message as Delivered['message'], delivery }),
    },
    transport: 'memory',
    transportContext: { kind: 'memory' },
  });
  let initialize: JsonObject | undefined;
  const supervisor = new SupervisedHttpUpstream({
    router,
    link: LINK,
    http: { name: 'up', url, maxMessageBytes: 4 * 1024 * 1024, era, eraCache: cache },
    logger: silentLogger,
    metrics,
    restart: false,
    initialize: async () => {
      const reply = await router.requestUpstream(
        LINK,
        'initialize',
        {
          protocolVersion: '2025-11-25',
          capabilities: { sampling: {}, elicitation: {}, roots: {} },
          clientInfo: { name: 'integration-client', version: '1' },
        },
        { bypassQueue: true },
      );
      if ('error' in reply.response) throw new Error(reply.response.error.message);
      initialize = reply.response.result as JsonObject;
      router.notifyUpstream(LINK, 'notifications/initialized', undefined, { bypassQueue: true });
    },
    onstop: () => {},
  });
  await supervisor.start();
  let next = 100;
  const send = (message: Record<string, unknown>) =>
    router.handleClientMessage(SESSION, { jsonrpc: '2.0', ...message } as JsonRpcMessage, { kind: 'memory' });
  const request = (method: string, params?: JsonObject): RequestId => {
    const id = next++;
    send(params === undefined ? { id, method } : { id, method, params });
    return id;
  };
  const responseTo = (id: RequestId, timeoutMs = 15_000) =>
    eventually(
      () => delivered.find((d) => d.message.id === id && !('method' in d.message))?.message,
      timeoutMs,
      `the response to ${String(id)}`,
    );
  const serverRequest = (method: string, index = 0) =>
    eventually(
      () => delivered.filter((d) => d.message.method === method && 'id' in d.message)[index],
      15_000,
      `a ${method} request`,
    );
  const close = async () => {
    await supervisor.close();
    router.close();
  };
  return {
    router,
    supervisor,
    metrics,
    delivered,
    cache,
    initialize: () => initialize,
    send,
    request,
    responseTo,
    serverRequest,
    close,
  };
}

function textOf(message: Record<string, unknown>): string {
  const result = message.result as { content?: { text?: string }[] } | undefined;
  return result?.content?.[0]?.text ?? '';
}

describe('modern-server.mjs (2026-07-28 only)', () => {
  let server: StartedProcess & { url: string };
  let gw: Awaited<ReturnType<typeof gateway>>;

  beforeAll(async () => {
    server = await startHttpFixture('modernServer');
    gw = await gateway(server.url);
  });

  afterAll(async () => {
    await gw?.close();
    await server?.stop();
  });

  it('is found modern and initialized from server/discover', () => {
    expect(gw.supervisor.kind).toBe('modern-http');
    expect(gw.cache.get(new URL(server.url))).toBe('modern');
    expect(gw.metrics.get('upstream_era_probes_total', { upstream: 'up', era: 'modern' })).toBe(1);
    expect(gw.initialize()).toMatchObject({
      protocolVersion: '2025-11-25',
      serverInfo: { name: 'switchboard-modern-fixture' },
      capabilities: { tools: expect.any(Object) },
    });
  });

  it('lists and calls tools', async () => {
    const list = await gw.responseTo(gw.request('tools/list'));
    const names = ((list.result as { tools: { name: string }[] }).tools ?? []).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'add', 'slow-progress', 'cancellations']));
    const sum = await gw.responseTo(gw.request('tools/call', { name: 'add', arguments: { a: 2, b: 3 } }));
    expect(textOf(sum)).toBe('5');
  });

  it('delivers progress with the call it belongs to', async () => {
    const id = gw.request('tools/call', {
      name: 'slow-progress',
      arguments: { durationMs: 300, steps: 3 },
      _meta: { progressToken: 'p-1' },
    });
    const answer = await gw.responseTo(id);
    expect(textOf(answer)).toMatch(/^completed 3 steps/);
    const progress = gw.delivered.filter(
      (d) =>
        d.message.method === 'notifications/progress' &&
        (d.message.params as JsonObject).progressToken === 'p-1',
    );
    expect(progress.map((d) => (d.message.params as JsonObject).progress)).toEqual([1, 2, 3]);
    expect(progress.every((d) => d.delivery.kind === 'related' && d.delivery.request === id)).toBe(true);
  });

  it('cancels a call by closing its stream, which the server sees', async () => {
    const id = gw.request('tools/call', {
      name: 'slow-progress',
      arguments: { durationMs: 10_000, steps: 100 },
      _meta: { progressToken: 'p-cancel' },
    });
    await eventually(
      () =>
        gw.delivered.some(
          (d) =>
            d.message.method === 'notifications/progress' &&
            (d.message.params as JsonObject).progressToken === 'p-cancel',
        ),
      10_000,
      'the first progress',
    );
    gw.send({ method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } });
    let recorded: { completedSteps: number; steps: number }[] = [];
    for (let attempt = 0; attempt < 50 && recorded.length === 0; attempt++) {
      const answer = await gw.responseTo(gw.request('tools/call', { name: 'cancellations', arguments: {} }));
      recorded = JSON.parse(textOf(answer)) as typeof recorded;
      if (recorded.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const [first] = recorded;
    expect(first?.steps).toBe(100);
    expect(first?.completedSteps).toBeLessThan(100);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(gw.delivered.some((d) => d.message.id === id && !('method' in d.message))).toBe(false);
  });
});

describe('conformance-server.mjs http (dual-era), spoken to in 2026-07-28 (era: modern)', () => {
  let server: StartedProcess & { url: string };
  let gw: Awaited<ReturnType<typeof gateway>>;

  beforeAll(async () => {
    server = await startHttpFixture('conformanceServer');
    gw = await gateway(server.url, new EraCache(), 'modern');
  });

  afterAll(async () => {
    await gw?.close();
    await server?.stop();
  });

  it('speaks 2026-07-28 to it', () => {
    expect(gw.supervisor.kind).toBe('modern-http');
    expect(gw.initialize()).toMatchObject({ serverInfo: { name: 'switchboard-conformance-fixture' } });
  });

  it('is found to speak both eras with era: auto, and then holds a 2025 session for a 2025 client', async () => {
    const auto = await gateway(server.url);
    try {
      expect(auto.supervisor.kind).toBe('dual-http');
      expect(auto.supervisor.era).toBe('dual');
      expect(auto.initialize()).toMatchObject({ protocolVersion: '2025-11-25' });
      expect(auto.supervisor.transport?.sessionId).toEqual(expect.any(String));
    } finally {
      await auto.close();
    }
  });

  it('asks the client for sampling through a server->client request', async () => {
    const id = gw.request('tools/call', { name: 'test_input_required_result_sampling', arguments: {} });
    const asked = await gw.serverRequest('sampling/createMessage');
    expect(asked.delivery).toEqual({ kind: 'related', request: id });
    expect(JSON.stringify(asked.message.params)).toContain('capital of France');
    gw.send({
      id: asked.message.id,
      result: {
        role: 'assistant',
        content: { type: 'text', text: 'Paris' },
        model: 'test-model',
        stopReason: 'endTurn',
      },
    });
    expect(textOf(await gw.responseTo(id))).toBe('The model answered: Paris');
  });

  it('bridges two rounds of elicitation', async () => {
    const id = gw.request('tools/call', { name: 'test_input_required_result_multi_round', arguments: {} });
    const first = await gw.serverRequest('elicitation/create', 0);
    gw.send({ id: first.message.id, result: { action: 'accept', content: { name: 'Ada' } } });
    const second = await gw.serverRequest('elicitation/create', 1);
    expect(JSON.stringify(second.message.params)).toContain('favorite color');
    gw.send({ id: second.message.id, result: { action: 'accept', content: { color: 'blue' } } });
    expect(textOf(await gw.responseTo(id))).toBe("Ada's favorite color is blue");
  });

  it('mirrors x-mcp-header parameters into Mcp-Param headers', async () => {
    const answer = await gw.responseTo(
      gw.request('tools/call', { name: 'test_custom_header_param', arguments: { region: 'eu-west' } }),
    );
    expect(answer.error).toBeUndefined();
    expect(textOf(answer)).toContain('eu-west');
    // Right the first time: no -32020 had to be recovered from.
    expect(gw.metrics.get('upstream_header_retries_total', { upstream: 'up' })).toBe(0);
  });

  it('feeds resource subscriptions from subscriptions/listen', async () => {
    const subscribed = await gw.responseTo(
      gw.request('resources/subscribe', { uri: 'test://watched-resource' }),
    );
    expect(subscribed.result).toEqual({});
    // The listen stream is re-opened with the URI in the background: update until it is heard.
    const find = () => gw.delivered.find((d) => d.message.method === 'notifications/resources/updated');
    for (let attempt = 0; attempt < 50 && !find(); attempt++) {
      await gw.responseTo(gw.request('tools/call', { name: 'test_update_watched_resource', arguments: {} }));
      await eventually(find, 200).catch(() => undefined);
    }
    const updated = await eventually(find, 1000, 'the resource update');
    expect(updated.message.params).toEqual({ uri: 'test://watched-resource' });
    expect(updated.delivery).toEqual({ kind: 'unrelated' });
  });

  it('gives a legacy client -32002 for a resource that does not exist', async () => {
    const answer = await gw.responseTo(gw.request('resources/read', { uri: 'test://no-such-resource' }));
    expect(answer.error).toMatchObject({ code: -32002, data: { uri: 'test://no-such-resource' } });
  });
});

describe('server-everything streamableHttp (legacy)', () => {
  let server: StartedProcess;
  let gw: Awaited<ReturnType<typeof gateway>>;

  beforeAll(async () => {
    const port = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    server = await startProcess(process.execPath, [PEERS.serverEverything, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      readyStream: 'stderr',
      readyPattern: /listening on port|running on port/i,
    });
    gw = await gateway(`http://127.0.0.1:${port}/mcp`);
  });

  afterAll(async () => {
    await gw?.close();
    await server?.stop();
  });

  it('is found legacy and spoken to with sessions', async () => {
    expect(gw.supervisor.kind).toBe('streamable-http');
    expect(gw.metrics.get('upstream_era_probes_total', { upstream: 'up', era: 'legacy' })).toBe(1);
    const list = await gw.responseTo(gw.request('tools/list'));
    expect(JSON.stringify(list.result)).toContain('get-sum');
  });
});
