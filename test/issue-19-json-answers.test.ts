/**
 * Issue 19, "an upstream's JSON answer with several messages", end to end through the built
 * `switchboard serve`.
 *
 * The upstreams are a fixture HTTP server of this test's own, serving two endpoints: `/legacy`
 * (a 2025-11-25 server with sessions) and `/modern` (a 2026-07-28 server). Each answers a
 * `tools/call` of `ask` as the conformance suite's reference server answers a streaming
 * elicitation call: one `application/json` body holding a progress notification and then the
 * response, one per line. `broken` gets a body that is not JSON, `stray` a response to another id.
 * A 2025 client calls each through the gateway's per-upstream endpoint and must get the progress
 * (under its own token) and then the result; the broken answers must fail the call at once with
 * -32603 `SB_UPSTREAM_PROTOCOL` naming what is wrong, never `SB_UPSTREAM_UNAVAILABLE`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServe, startServe } from './support/serve.js';
import { initialize, messagesOf, post } from './support/sse-client.js';

type Json = Record<string, unknown>;

const TOOLS = ['ask', 'broken', 'stray'].map((name) => ({ name, inputSchema: { type: 'object' } }));

/** What both endpoints answer a `tools/call` with: a body of several JSON texts, or not JSON. */
function callAnswer(call: Json, modern: boolean): string {
  const params = (call.params ?? {}) as { name?: string; _meta?: { progressToken?: unknown } };
  const result = modern ? { resultType: 'complete', content: [] } : { content: [] };
  const text = { type: 'text', text: `asked over ${modern ? '2026-07-28' : '2025-11-25'}` };
  const progress = JSON.stringify({
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: { progressToken: params._meta?.progressToken ?? 'none', progress: 1, total: 2 },
  });
  switch (params.name) {
    case 'ask':
      return `${progress}\n${JSON.stringify({ jsonrpc: '2.0', id: call.id, result: { ...result, content: [text] } })}\n`;
    case 'broken':
      return `${progress}\n{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":{]}\n`;
    default:
      return `${progress}\n${JSON.stringify({ jsonrpc: '2.0', id: 'someone-else', result })}\n`;
  }
}

function answerJson(res: ServerResponse, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

/** The 2025-11-25 endpoint: a session, JSON answers, no GET stream. */
function legacy(req: IncomingMessage, res: ServerResponse, message: Json): unknown {
  if (req.method === 'DELETE') return void res.writeHead(200).end();
  if (req.method !== 'POST') return void res.writeHead(405).end();
  if (!('id' in message)) return void res.writeHead(202).end();
  const reply = (result: Json) => answerJson(res, JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
  if (message.method === 'initialize')
    return answerJson(
      res,
      JSON.stringify({
        jsonrpc: '2.0',
        id: message.id,
        result: {
          protocolVersion: '2025-11-25',
          capabilities: { tools: {} },
          serverInfo: { name: 'json-lines-legacy', version: '1' },
        },
      }),
      { 'mcp-session-id': 'issue-19-session' },
    );
  if (message.method === 'tools/list') return reply({ tools: TOOLS });
  if (message.method === 'tools/call') return answerJson(res, callAnswer(message, false));
  return reply({});
}

/** The 2026-07-28 endpoint: no session, `server/discover`, JSON answers. */
function modern(req: IncomingMessage, res: ServerResponse, message: Json): unknown {
  if (req.method !== 'POST') return void res.writeHead(405).end();
  const reply = (result: Json) =>
    answerJson(
      res,
      JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { resultType: 'complete', ...result } }),
    );
  if (message.method === 'server/discover')
    return reply({
      supportedVersions: ['2026-07-28'],
      capabilities: { tools: {} },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'json-lines-modern', version: '1' } },
    });
  if (message.method === 'tools/list') return reply({ tools: TOOLS });
  if (message.method === 'tools/call') return answerJson(res, callAnswer(message, true));
  res.writeHead(404, { 'content-type': 'application/json' });
  return res.end(
    JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }),
  );
}

async function startFixture(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const message = (text ? JSON.parse(text) : {}) as Json;
      if (req.url === '/legacy') legacy(req, res, message);
      else modern(req, res, message);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('serve reads an upstream JSON answer holding several messages (issue 19)', () => {
  let fixture: { server: Server; url: string };
  let serve: RunningServe;

  beforeAll(async () => {
    fixture = await startFixture();
    serve = await startServe({
      configYaml: [
        'timeouts:',
        // Before the fix the legacy call waited for this; the test must not wait ten minutes.
        '  request: 8s',
        'upstreams:',
        '  legacy:',
        `    url: ${fixture.url}/legacy`,
        '    era: legacy',
        '  modern:',
        `    url: ${fixture.url}/modern`,
        '    era: modern',
        '',
      ].join('\n'),
    });
  }, 120_000);

  afterAll(async () => {
    await serve?.stop();
    await new Promise((resolve) => fixture?.server.close(resolve));
  });

  /** A 2025 client's `tools/call` of `name` on the upstream's endpoint: every message of the answer. */
  async function call(upstream: string, name: string): Promise<Json[]> {
    const url = `${serve.base}/servers/${upstream}/mcp`;
    const session = await initialize(url);
    const response = await post(
      url,
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name, arguments: {}, _meta: { progressToken: 'mine' } },
      },
      session.headers,
    );
    expect(response.status, response.text).toBe(200);
    return messagesOf(response);
  }

  describe.each(['legacy', 'modern'])('through the %s client', (upstream) => {
    const era = upstream === 'legacy' ? '2025-11-25' : '2026-07-28';

    it('delivers the progress notification, then the response', async () => {
      const messages = await call(upstream, 'ask');
      expect(messages).toEqual([
        {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: 'mine', progress: 1, total: 2 },
        },
        { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: `asked over ${era}` }] } },
      ]);
    });

    it('fails a call whose answer is not JSON with SB_UPSTREAM_PROTOCOL, naming where', async () => {
      const messages = await call(upstream, 'broken');
      const answer = messages.find((m) => m.id === 7);
      expect(answer?.error).toMatchObject({
        code: -32603,
        message: expect.stringMatching(
          new RegExp(
            `^upstream ${upstream} answered HTTP 200 with a body that is not JSON at line 2, column \\d+ \\(offset \\d+\\): Expected property name or '}'$`,
          ),
        ),
        data: { code: 'SB_UPSTREAM_PROTOCOL', upstream, status: 200 },
      });
    });

    it('fails a call answered with a response to another id, and names both ids', async () => {
      const messages = await call(upstream, 'stray');
      const answer = messages.find((m) => m.id === 7);
      expect(answer?.error).toMatchObject({
        code: -32603,
        message: expect.stringContaining(
          'with a response to another request (id "someone-else"; value 2 of 2, line 2, column 1)',
        ),
        data: { code: 'SB_UPSTREAM_PROTOCOL' },
      });
      // The progress that came before it was read well, and was delivered first.
      expect(messages.map((m) => m.method ?? 'response')).toEqual(['notifications/progress', 'response']);
    });
  });
});
