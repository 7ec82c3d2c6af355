/**
 * The HTTP upstream client against a real server: `@modelcontextprotocol/server-everything` (SDK v1,
 * with an event store) over Streamable HTTP, and over the 2024-11-05 HTTP+SSE transport reached
 * through the fallback. Initialize, tools/list, and a tool call with progress.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/observe/logger.js';
import { Metrics } from '../src/observe/metrics.js';
import type { JsonRpcMessage } from '../src/protocol/jsonrpc/types.js';
import { HttpUpstreamTransport } from '../src/transports/http/upstream/http-upstream.js';
import { capture } from '../src/transports/http/upstream/test-support/capture.js';
import { eventually } from '../src/transports/http/upstream/test-support/scripted-server.js';
import { PEERS, type StartedProcess, startProcess } from './support/peers.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function startEverything(
  mode: 'streamableHttp' | 'sse',
): Promise<{ server: StartedProcess; port: number }> {
  const port = await freePort();
  const server = await startProcess(process.execPath, [PEERS.serverEverything, mode], {
    env: { ...process.env, PORT: String(port) },
    readyStream: 'stderr',
    readyPattern: /listening on port|running on port/i,
  });
  return { server, port };
}

function message(value: Record<string, unknown>): [string, JsonRpcMessage] {
  const full = { jsonrpc: '2.0', ...value } as unknown as JsonRpcMessage;
  return [JSON.stringify(full), full];
}

const INITIALIZE = message({
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'switchboard-test', version: '0' },
  },
});
const LONG_CALL = message({
  id: 3,
  method: 'tools/call',
  params: {
    name: 'trigger-long-running-operation',
    arguments: { duration: 1, steps: 2 },
    _meta: { progressToken: 'tok' },
  },
});

function progressOf(seen: ReturnType<typeof capture>) {
  return seen.messages.filter((m) => !Array.isArray(m.value) && m.value.method === 'notifications/progress');
}

describe.each([
  { mode: 'streamableHttp' as const, path: '/mcp', kind: 'streamable-http', related: true },
  { mode: 'sse' as const, path: '/sse', kind: 'sse', related: false },
])('server-everything over $mode', ({ mode, path, kind, related }) => {
  let server: StartedProcess;
  let url: string;

  beforeAll(async () => {
    const started = await startEverything(mode);
    server = started.server;
    url = `http://127.0.0.1:${started.port}${path}`;
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('initializes, lists tools, and calls a tool whose progress arrives with the request', async () => {
    const metrics = new Metrics();
    const transport = new HttpUpstreamTransport({
      name: 'everything',
      url,
      maxMessageBytes: 4 * 1024 * 1024,
      logger: silentLogger,
      metrics,
    });
    const seen = capture(transport);
    await transport.start();
    try {
      transport.send(...INITIALIZE);
      const init = await seen.response(1, 10_000);
      expect(init.value.result).toMatchObject({
        protocolVersion: '2025-11-25',
        serverInfo: expect.any(Object),
      });
      expect(transport.kind).toBe(kind);
      if (kind === 'streamable-http') {
        expect(transport.sessionId).toMatch(/^[\x21-\x7e]+$/);
        expect(transport.protocolVersion).toBe('2025-11-25');
      } else {
        expect(metrics.get('upstream_http_fallbacks_total', { upstream: 'everything' })).toBe(1);
      }
      transport.send(...message({ method: 'notifications/initialized' }));

      transport.send(...message({ id: 2, method: 'tools/list' }));
      const tools = await seen.response(2, 10_000);
      const names = ((tools.value.result as { tools: { name: string }[] }).tools ?? []).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['echo', 'get-sum', 'trigger-long-running-operation']));

      transport.send(...LONG_CALL);
      const result = await seen.response(3, 15_000);
      expect(result.value.result).toMatchObject({ content: expect.any(Array) });
      const progress = progressOf(seen);
      expect(progress.map((p) => (p.value as { params: { progress: number } }).params.progress)).toEqual([
        1, 2,
      ]);
      for (const p of progress) {
        expect((p.value as { params: { progressToken: unknown } }).params.progressToken).toBe('tok');
        expect(p.meta.relatedUpstreamId).toBe(related ? 3 : undefined);
        expect(p.meta.transport.kind).toBe('sse');
      }
      expect(result.meta.relatedUpstreamId).toBe(related ? 3 : undefined);

      transport.send(
        ...message({ id: 4, method: 'tools/call', params: { name: 'get-sum', arguments: { a: 2, b: 3 } } }),
      );
      const sum = await seen.response(4, 10_000);
      expect(JSON.stringify(sum.value.result)).toContain('5');
    } finally {
      await transport.close();
    }
    expect(seen.closes).toEqual([{ reason: 'closed' }]);
  });

  it('serves many requests in flight at once on keep-alive connections', async () => {
    const transport = new HttpUpstreamTransport({
      name: 'everything',
      url,
      maxMessageBytes: 4 * 1024 * 1024,
      logger: silentLogger,
      metrics: new Metrics(),
    });
    const seen = capture(transport);
    await transport.start();
    try {
      transport.send(...INITIALIZE);
      await seen.response(1, 10_000);
      transport.send(...message({ method: 'notifications/initialized' }));
      const ids = Array.from({ length: 50 }, (_, i) => 100 + i);
      for (const id of ids)
        transport.send(
          ...message({
            id,
            method: 'tools/call',
            params: { name: 'echo', arguments: { message: `m${id}` } },
          }),
        );
      await eventually(
        () => ids.every((id) => seen.messages.some((m) => !Array.isArray(m.value) && m.value.id === id)),
        15_000,
        'all echoes',
      );
      for (const id of ids) {
        const answer = await seen.response(id);
        expect(JSON.stringify(answer.value.result)).toContain(`m${id}`);
      }
    } finally {
      await transport.close();
    }
  });
});
