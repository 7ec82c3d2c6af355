/**
 * The `DownstreamPort` contract run against both HTTP sessions, each with a real HTTP client over
 * loopback (`test-support/contract-client.ts`): `HttpSession` (session-based revisions: POSTs held
 * until their first message, batches answered as JSON, a GET stream for the rest) and
 * `ModernSession` (2026-07-28: one POST per call, JSON or SSE) and `SseSession` (2024-11-05
 * HTTP+SSE: one event stream, each POST answered 202 and its answer sent down the stream).
 */
import type { ServerResponse } from 'node:http';
import { downstreamPortContract } from '../../../core/test-support/downstream-port.contract.js';
import { MemoryLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import { idKey, type JsonRpcRequest, type RequestId } from '../../../protocol/jsonrpc/types.js';
import { MemoryEventStore } from '../events/memory-event-store.js';
import { HttpSession } from './http-session.js';
import { ModernSession } from './modern/modern-session.js';
import { RequestStateCodec } from './modern/request-state.js';
import { SseSession } from './sse-session.js';
import { ContractHttpClient } from './test-support/contract-client.js';

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 5000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const request = (id: number): JsonRpcRequest => ({ jsonrpc: '2.0', id, method: 'contract/call', params: {} });

downstreamPortContract('HttpSession', async () => {
  const session = new HttpSession({
    key: 'K',
    mcpSessionId: 'mcp-1',
    principal: 'local',
    endpoint: '*',
    ephemeral: false,
    store: new MemoryEventStore(),
    metrics: new Metrics(),
    revision: () => '2025-03-26',
    retryMs: 1000,
    now: () => Date.now(),
    holdMs: 50,
    maxBufferedBytes: 256 * 1024,
  });
  const handed = new Set<string>();
  let getStreams = 0;
  const client = await ContractHttpClient.start((method, body, res: ServerResponse) => {
    if (method === 'GET') {
      session.openGetStream(res, {});
      getStreams++;
      return;
    }
    const value = JSON.parse(body) as JsonRpcRequest | JsonRpcRequest[];
    const batch = Array.isArray(value);
    const ids: RequestId[] = (batch ? value : [value]).map((m) => m.id);
    // As the legacy endpoint does: a call that may stream is held, a batch answered as JSON.
    session.openExchange(res, ids, batch ? 'json' : 'hold', batch, { 'mcp-session-id': 'mcp-1' });
    for (const id of ids) handed.add(idKey(id));
  });
  client.send('GET', undefined, []);
  await until(() => getStreams === 1, 'the GET stream');
  const post = async (ids: readonly number[], batch: boolean) => {
    client.send('POST', JSON.stringify(batch ? ids.map(request) : request(ids[0] ?? 0)), ids);
    await until(() => ids.every((id) => handed.has(idKey(id))), `requests ${ids.join(', ')}`);
  };
  return {
    port: session,
    call: (id) => post([id], false),
    batch: (ids) => post(ids, true),
    routerId: (id) => id,
    received: () => client.received,
    settled: (id) => client.settled(id),
    stopReading: () => client.stopReading(),
    kill: async () => client.kill(),
    end: async () => session.close(),
    dispose: async () => {
      session.close();
      await client.close();
    },
  };
});

downstreamPortContract('ModernSession', async () => {
  const toRouter: unknown[] = [];
  const session = new ModernSession({
    key: 'modern:local',
    principal: 'local',
    metrics: new Metrics(),
    states: new RequestStateCodec(),
    serverInfo: { name: 'switchboard', version: '0' },
    parkMs: 1000,
    toRouter: (message) => toRouter.push(message),
    maxBufferedBytes: 256 * 1024,
  });
  const routerIds = new Map<number, string>();
  const client = await ContractHttpClient.start((_method, body, res: ServerResponse) => {
    const call = JSON.parse(body) as JsonRpcRequest;
    const downstreamId = session.nextId(call.id);
    // As the modern endpoint does: a stream when the call may send something before its answer.
    const mode = Number(call.id) % 2 === 1 ? 'sse' : 'json';
    if (mode === 'sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
    }
    session.track({
      downstreamId,
      request: call,
      res,
      mode,
      capabilities: {},
      inputs: new Map(),
      done: false,
    });
    routerIds.set(Number(call.id), downstreamId);
  });
  return {
    port: session,
    call: async (id) => {
      client.send('POST', JSON.stringify(request(id)), [id]);
      await until(() => routerIds.has(id), `request ${id}`);
    },
    routerId: (id) => routerIds.get(id) ?? `unknown-${id}`,
    received: () => client.received,
    settled: (id) => client.settled(id),
    stopReading: () => client.stopReading(),
    kill: async () => client.kill(),
    end: async () => session.close(),
    dispose: async () => {
      session.close();
      await client.close();
    },
  };
});

downstreamPortContract('SseSession', async () => {
  const session = new SseSession({
    key: 'sse:1',
    mcpSessionId: 'sse-1',
    principal: 'local',
    endpoint: '*',
    metrics: new Metrics(),
    logger: new MemoryLogger(),
    maxBufferedBytes: 256 * 1024,
    now: () => Date.now(),
  });
  const handed = new Set<string>();
  let streams = 0;
  const client = await ContractHttpClient.start((method, body, res: ServerResponse) => {
    if (method === 'GET') {
      session.open(res, '/messages?sessionId=sse-1');
      streams++;
      return;
    }
    // As the /sse endpoint does: the POST is accepted at once, its answer goes down the stream.
    const call = JSON.parse(body) as JsonRpcRequest;
    session.await([call.id]);
    res.writeHead(202).end();
    handed.add(idKey(call.id));
  });
  client.send('GET', undefined, []);
  await until(() => streams === 1, 'the event stream');
  return {
    port: session,
    call: async (id) => {
      client.send('POST', JSON.stringify(request(id)), [id]);
      await until(() => handed.has(idKey(id)), `request ${id}`);
    },
    routerId: (id) => id,
    received: () => client.received,
    // No `settled`: a POST is answered 202 at once; nothing waits on it for `dropped` to settle.
    stopReading: () => client.stopReading(),
    kill: async () => client.kill(),
    end: async () => session.close(),
    dispose: async () => {
      session.close();
      await client.close();
    },
  };
});
