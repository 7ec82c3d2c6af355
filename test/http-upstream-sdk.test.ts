/**
 * The HTTP upstream client against the MCP SDK v1 `StreamableHTTPServerTransport` with an event
 * store, in process: a tool that closes its own answer stream mid-call (2025-11-25 polling, with
 * priming events and `retry`) is resumed with Last-Event-ID; a server->client request on a POST
 * stream carries the request it belongs to and its answer reaches the server; list_changed arrives on
 * the standalone GET stream; close() ends the session with DELETE.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CreateMessageResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/observe/logger.js';
import { Metrics } from '../src/observe/metrics.js';
import type { JsonRpcMessage } from '../src/protocol/jsonrpc/types.js';
import { HttpUpstreamTransport } from '../src/transports/http/upstream/http-upstream.js';
import { capture } from '../src/transports/http/upstream/test-support/capture.js';
import { eventually } from '../src/transports/http/upstream/test-support/scripted-server.js';

class MemoryEventStore implements EventStore {
  readonly #events: { id: string; stream: string; message: JSONRPCMessage }[] = [];
  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}_${randomUUID()}`;
    this.#events.push({ id, stream: streamId, message });
    return id;
  }
  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.find((e) => e.id === eventId)?.stream;
  }
  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (id: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const index = this.#events.findIndex((e) => e.id === lastEventId);
    const stream = this.#events[index]?.stream ?? '';
    for (const event of this.#events.slice(index + 1)) {
      if (event.stream === stream && Object.keys(event.message).length > 0)
        await send(event.id, event.message);
    }
    return stream;
  }
}

interface SdkPeer {
  readonly url: string;
  readonly sessions: Map<string, { transport: StreamableHTTPServerTransport; mcp: McpServer }>;
  readonly requests: { method: string; headers: Record<string, string | string[] | undefined> }[];
  readonly sampled: unknown[];
  close(): Promise<void>;
}

async function startSdkPeer(): Promise<SdkPeer> {
  const sessions: SdkPeer['sessions'] = new Map();
  const requests: SdkPeer['requests'] = [];
  const sampled: unknown[] = [];
  const build = (): { transport: StreamableHTTPServerTransport; mcp: McpServer } => {
    const mcp = new McpServer(
      { name: 'sdk-peer', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    mcp.registerTool(
      'poll',
      { description: 'sends progress, closes its stream, then finishes' },
      async (extra) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: 1 },
          });
        extra.closeSSEStream?.();
        await new Promise((resolve) => setTimeout(resolve, 250));
        if (token !== undefined)
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: 2 },
          });
        return { content: [{ type: 'text', text: 'polled' }] };
      },
    );
    mcp.registerTool('ask', { description: 'asks the client to sample' }, async (extra) => {
      const result = await extra.sendRequest(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 },
        },
        CreateMessageResultSchema,
      );
      sampled.push(result);
      return { content: [{ type: 'text', text: `sampled: ${JSON.stringify(result.content)}` }] };
    });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: new MemoryEventStore(),
      retryInterval: 100,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, mcp });
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    return { transport, mcp };
  };
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', headers: req.headers });
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const session = sessions.get(id);
      if (!session) {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
        return;
      }
      void session.transport.handleRequest(req, res);
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(400).end();
      return;
    }
    const peer = build();
    void peer.mcp.connect(peer.transport).then(() => peer.transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    sessions,
    requests,
    sampled,
    close: async () => {
      for (const { mcp } of sessions.values()) await mcp.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function message(value: Record<string, unknown>): [string, JsonRpcMessage] {
  const full = { jsonrpc: '2.0', ...value } as unknown as JsonRpcMessage;
  return [JSON.stringify(full), full];
}

describe('HTTP upstream client against the SDK v1 Streamable HTTP server', () => {
  let peer: SdkPeer;
  let metrics: Metrics;
  let transport: HttpUpstreamTransport;
  let seen: ReturnType<typeof capture>;

  beforeEach(async () => {
    peer = await startSdkPeer();
    metrics = new Metrics();
    transport = new HttpUpstreamTransport({
      name: 'sdk',
      url: peer.url,
      maxMessageBytes: 1024 * 1024,
      logger: silentLogger,
      metrics,
    });
    seen = capture(transport);
    await transport.start();
    transport.send(
      ...message({
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: { sampling: {} },
          clientInfo: { name: 'gw', version: '1' },
        },
      }),
    );
    await seen.response(1);
    transport.send(...message({ method: 'notifications/initialized' }));
    await eventually(() => peer.requests.some((r) => r.method === 'GET'), 3000, 'the GET stream');
  });

  afterEach(async () => {
    await transport.close();
    await peer.close();
  });

  it('resumes a stream the server closed mid-call (priming event, retry, Last-Event-ID)', async () => {
    transport.send(
      ...message({
        id: 2,
        method: 'tools/call',
        params: { name: 'poll', arguments: {}, _meta: { progressToken: 'p' } },
      }),
    );
    const answer = await seen.response(2, 5000);
    expect(answer.value.result).toMatchObject({ content: [{ type: 'text', text: 'polled' }] });
    expect(answer.meta.relatedUpstreamId).toBe(2);
    expect(answer.meta.transport).toMatchObject({
      kind: 'sse',
      retryMs: 100,
      lastEventId: expect.any(String),
    });
    const progress = seen.messages.filter(
      (m) => !Array.isArray(m.value) && m.value.method === 'notifications/progress',
    );
    expect(
      progress.map((m) => [
        (m.value as { params: { progress: number } }).params.progress,
        m.meta.relatedUpstreamId,
      ]),
    ).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(
      metrics.get('upstream_sse_resumptions_total', { upstream: 'sdk', stream: 'post' }),
    ).toBeGreaterThanOrEqual(1);
    const resumes = peer.requests.filter((r) => r.method === 'GET' && r.headers['last-event-id']);
    expect(resumes.length).toBeGreaterThanOrEqual(1);
    expect(
      seen.messages.some(
        (m) =>
          !Array.isArray(m.value) &&
          m.value.result === undefined &&
          m.value.method === undefined &&
          'error' in m.value,
      ),
    ).toBe(false);
  });

  it('delivers a server request with the request it belongs to, and its answer reaches the server', async () => {
    transport.send(...message({ id: 3, method: 'tools/call', params: { name: 'ask', arguments: {} } }));
    const sampling = await eventually(() =>
      seen.messages.find(
        (m) => !Array.isArray(m.value) && m.value.method === 'sampling/createMessage' && 'id' in m.value,
      ),
    );
    expect(sampling.meta.relatedUpstreamId).toBe(3);
    const samplingId = (sampling.value as { id: string | number }).id;
    transport.send(
      ...message({
        id: samplingId,
        result: { role: 'assistant', content: { type: 'text', text: 'yo' }, model: 'm' },
      }),
    );
    const answer = await seen.response(3, 5000);
    expect(JSON.stringify(answer.value.result)).toContain('yo');
    expect(peer.sampled).toHaveLength(1);
  });

  it('receives unrelated notifications on the standalone GET stream', async () => {
    const [session] = [...peer.sessions.values()];
    session?.mcp.registerTool('late', { description: 'added later' }, async () => ({ content: [] }));
    const note = await eventually(() =>
      seen.messages.find(
        (m) => !Array.isArray(m.value) && m.value.method === 'notifications/tools/list_changed',
      ),
    );
    expect(note.meta.relatedUpstreamId).toBeUndefined();
    expect(note.meta.transport).toMatchObject({ kind: 'sse', streamId: 'get' });
  });

  it('ends the session with DELETE on close', async () => {
    const id = transport.sessionId;
    expect(id).toBeDefined();
    expect(peer.sessions.has(id ?? '')).toBe(true);
    await transport.close();
    expect(peer.requests.filter((r) => r.method === 'DELETE')).toHaveLength(1);
    await eventually(() => !peer.sessions.has(id ?? ''), 3000, 'the session to end');
  });
});
