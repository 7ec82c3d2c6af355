import type { ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import { type ModernAnswer, readModernAnswer } from './modern-answer.js';
import { eventually, json, ScriptedServer, sseEvent, startSse } from './test-support/scripted-server.js';

describe('readModernAnswer', () => {
  let server: ScriptedServer;
  let pool: Pool;
  let metrics: Metrics;

  beforeEach(async () => {
    server = await ScriptedServer.start();
    pool = new Pool(new URL(server.url()).origin);
    metrics = new Metrics();
  });

  afterEach(async () => {
    await pool.destroy();
    await server.close();
  });

  async function read(handler: (res: ServerResponse) => void, maxMessageBytes = 1024, maxJsonDepth?: number) {
    server.handler = (_r, res) => handler(res);
    const response = await pool.request({
      origin: new URL(server.url()).origin,
      path: '/mcp',
      method: 'POST',
      body: '{}',
    });
    const notes: JsonObject[] = [];
    const answer: ModernAnswer = await readModernAnswer(
      {
        upstream: 'up',
        maxMessageBytes,
        ...(maxJsonDepth === undefined ? {} : { maxJsonDepth }),
        path: '/mcp',
        logger: silentLogger,
        metrics,
      },
      response,
      7,
      'post-1',
      (_text, message) => notes.push(message),
    );
    return { answer, notes };
  }

  it('reads a JSON response', async () => {
    const { answer } = await read((res) => json(res, { jsonrpc: '2.0', id: 7, result: { ok: true } }));
    expect(answer).toMatchObject({
      kind: 'response',
      response: { id: 7, result: { ok: true } },
      transport: { kind: 'http', method: 'POST', path: '/mcp', status: 200 },
    });
  });

  it('takes an error without id as the answer, and refuses JSON that answers something else', async () => {
    const { answer } = await read((res) =>
      json(res, { jsonrpc: '2.0', id: null, error: { code: -1, message: 'no' } }),
    );
    // It gets the request's id, so that it finds its way back to the request.
    expect(answer).toMatchObject({
      kind: 'response',
      response: { id: 7 },
      text: expect.stringContaining('"id":7'),
    });
    const other = await read((res) => json(res, { jsonrpc: '2.0', id: 8, result: {} }));
    expect(other.answer).toEqual({
      kind: 'failed',
      reason:
        'upstream up answered HTTP 200 with a response to another request (id 8) where the response to id 7 was due',
      status: 200,
      malformed: true,
    });
  });

  it('hands over the notifications of a stream in order, then the response', async () => {
    const { answer, notes } = await read((res) => {
      startSse(res);
      res.write(
        sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } } }),
      );
      res.write(
        sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info' } } }),
      );
      res.end(sseEvent({ id: 'e9', data: { jsonrpc: '2.0', id: 7, result: {} } }));
    });
    expect(notes.map((n) => n.method)).toEqual(['notifications/progress', 'notifications/message']);
    expect(answer).toMatchObject({
      kind: 'response',
      transport: { kind: 'sse', streamId: 'post-1', eventId: 'e9' },
    });
  });

  it('answers at once, and lets go of a stream the server keeps open after the response', async () => {
    let closed = false;
    const { answer } = await read((res) => {
      startSse(res);
      res.on('close', () => {
        closed = true;
      });
      res.write(sseEvent({ data: { jsonrpc: '2.0', id: 7, result: {} } }));
    });
    expect(answer.kind).toBe('response');
    expect(closed).toBe(false);
    await eventually(() => closed, 3000, 'the stream to be dropped');
  });

  it('reports a stream that ends or breaks before the response', async () => {
    const ended = await read((res) => {
      startSse(res);
      res.end(': nothing\n\n');
    });
    expect(ended.answer).toEqual({
      kind: 'failed',
      reason:
        'the answer stream of upstream up ended before the response (2026-07-28 streams cannot be resumed)',
    });
    const broken = await read((res) => {
      startSse(res);
      res.write(sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/progress' } }));
      setTimeout(() => res.destroy(), 20);
    });
    expect(broken.answer).toMatchObject({
      kind: 'failed',
      broken: true,
      reason: expect.stringContaining('broke off'),
    });
    expect(broken.notes).toHaveLength(1);
  });

  it('keeps memory bounded: a large response is oversized, a large notification dropped', async () => {
    const big = 'x'.repeat(2000);
    const json1 = await read((res) => json(res, { jsonrpc: '2.0', id: 7, result: { big } }));
    expect(json1.answer).toMatchObject({ kind: 'oversized' });
    const stream = await read((res) => {
      startSse(res);
      res.write(sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/message', params: { big } } }));
      res.end(sseEvent({ data: { jsonrpc: '2.0', id: 7, result: { big } } }));
    });
    expect(stream.answer).toMatchObject({ kind: 'oversized' });
    expect(stream.notes).toEqual([]);
    expect(metrics.get('oversized_messages_total', { side: 'upstream', upstream: 'up' })).toBe(2);
  });

  it('fails the request on a response nested past the depth limit, and drops such a notification', async () => {
    const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    const body = `{"jsonrpc":"2.0","id":7,"result":{"content":${deep(4500)}}}`;
    const limit = 'nests 4502 levels of objects and arrays; the gateway accepts at most 64 (maxJsonDepth)';
    const reason = `upstream up answered with a message too deep: its message ${limit}`;
    const whole = await read(
      (res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      },
      64 * 1024,
      64,
    );
    expect(whole.answer).toEqual({
      kind: 'failed',
      reason: `upstream up answered HTTP 200 with a response too deep: it ${limit}`,
      status: 200,
      malformed: true,
    });
    const stream = await read(
      (res) => {
        startSse(res);
        res.write(
          `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":${deep(100)}}}\n\n`,
        );
        res.write(
          sseEvent({ data: { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } } }),
        );
        res.end(`data: ${body}\n\n`);
      },
      64 * 1024,
      64,
    );
    expect(stream.answer).toEqual({ kind: 'failed', reason, malformed: true });
    expect(stream.notes.map((n) => n.method)).toEqual(['notifications/progress']);
    expect(metrics.get('upstream_malformed_total', { upstream: 'up' })).toBe(3);
  });

  it('reads the JSON-RPC error of an HTTP error, or a few words of it', async () => {
    const rpc = await read((res) =>
      json(res, { jsonrpc: '2.0', id: 7, error: { code: -32020, message: 'Header mismatch' } }, 400),
    );
    expect(rpc.answer).toMatchObject({
      kind: 'refused',
      status: 400,
      error: { code: -32020, message: 'Header mismatch' },
    });
    const text = await read((res) => res.writeHead(503).end(' busy '));
    expect(text.answer).toMatchObject({ kind: 'refused', status: 503, detail: 'busy' });
    expect(metrics.get('upstream_http_errors_total', { upstream: 'up', status: '503' })).toBe(1);
  });

  it('refuses answers that carry no response', async () => {
    const accepted = await read((res) => res.writeHead(202).end());
    expect(accepted.answer).toMatchObject({
      kind: 'failed',
      reason: 'upstream up answered a request with HTTP 202 without a response',
    });
    const html = await read((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>'));
    expect(html.answer).toMatchObject({
      kind: 'failed',
      reason: expect.stringContaining('content type text/html'),
    });
  });

  describe('a JSON body holding several messages (issue 19)', () => {
    const raw = (body: string) => (res: ServerResponse) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    };
    const progress = JSON.stringify({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: 't', progress: 1 },
    });
    const response = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete' } });

    it('hands over the notifications in order, then the response, written one per line', async () => {
      // As the conformance suite's reference server answers a streaming elicitation call.
      const { answer, notes } = await read(raw(`${progress}\n${response}\n`));
      expect(notes.map((n) => n.method)).toEqual(['notifications/progress']);
      expect(answer).toMatchObject({
        kind: 'response',
        response: { id: 7 },
        text: response,
        transport: { kind: 'http', status: 200 },
      });
    });

    it('drops a server request (2026-07-28 has none) and a notification too deep, counted', async () => {
      const ask = JSON.stringify({ jsonrpc: '2.0', id: 's1', method: 'elicitation/create', params: {} });
      const deep = `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":${'['.repeat(70)}${']'.repeat(70)}}}`;
      const { answer, notes } = await read(raw(`${ask}\n${deep}\n${progress}\n${response}`), 1024, 64);
      expect(answer.kind).toBe('response');
      expect(notes.map((n) => n.method)).toEqual(['notifications/progress']);
      expect(metrics.get('upstream_protocol_violations_total', { upstream: 'up' })).toBe(1);
      expect(metrics.get('upstream_malformed_total', { upstream: 'up' })).toBe(1);
    });

    it('names what is wrong with a body it cannot use', async () => {
      const cases: [string, string][] = [
        ['', 'an empty body'],
        [
          `${progress}\n{"jsonrpc":"2.0","id":7,"result":}`,
          `a body that is not JSON in the value at line 2, column 1 (offset ${progress.length + 1}): Unexpected token '}', ...","result":}" is not valid JSON`,
        ],
        [
          `${progress}\n[1]`,
          'a JSON-RPC batch (value 2 of 2, line 2, column 1), which MCP 2026-07-28 does not allow',
        ],
        [`[${response}]`, 'a JSON-RPC batch, which MCP 2026-07-28 does not allow'],
        [
          `${progress}\n{"jsonrpc":"2.0","id":7}`,
          'JSON that is not a JSON-RPC message (value 2 of 2, line 2, column 1): a message needs "method" (request or notification) or "result"/"error" (response)',
        ],
        [progress, '1 message and no response to the request (id 7)'],
      ];
      for (const [body, fault] of cases) {
        const { answer } = await read(raw(body));
        expect(answer).toEqual({
          kind: 'failed',
          reason: `upstream up answered HTTP 200 with ${fault}`,
          status: 200,
          malformed: true,
        });
      }
    });

    it('holds the whole body to the message limit', async () => {
      const { answer, notes } = await read(raw(`${progress}\n`.repeat(20) + response), 1024);
      expect(answer).toMatchObject({ kind: 'oversized' });
      expect(notes).toEqual([]);
    });
  });
});
