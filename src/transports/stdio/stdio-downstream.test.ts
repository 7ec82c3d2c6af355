import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import {
  idKey,
  type JsonRpcMessage,
  type JsonRpcResponse,
  type RequestId,
} from '../../protocol/jsonrpc/types.js';
import { batchText, expectOneAnswerPerRequest, hostileBatch } from '../../test-support/hostile-batches.js';
import { StdioDownstream } from './stdio-downstream.js';

function harness(
  options: { revision?: string; maxMessageBytes?: number; inFlight?: (id: RequestId) => boolean } = {},
) {
  const input = new PassThrough();
  const output = new PassThrough();
  const written: string[] = [];
  let pending = '';
  output.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    written.push(...lines);
  });
  const received: { message: JsonRpcMessage; raw: string | undefined }[] = [];
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  let ended = 0;
  let revision = options.revision ?? '2025-11-25';
  const downstream = new StdioDownstream({
    input,
    output,
    maxMessageBytes: options.maxMessageBytes ?? 64 * 1024,
    logger,
    metrics,
    revision: () => revision,
    ...(options.inFlight ? { inFlight: options.inFlight } : {}),
    onmessage: (message, raw) => received.push({ message, raw }),
    onend: () => {
      ended++;
    },
  });
  downstream.start();
  /** Writes lines to the gateway's stdin and lets the stream deliver them. */
  const write = async (...lines: string[]) => {
    input.write(lines.map((l) => `${l}\n`).join(''));
    await new Promise((resolve) => setImmediate(resolve));
  };
  const answer = (id: RequestId, result: unknown) => {
    const message: JsonRpcResponse = { jsonrpc: '2.0', id, result };
    downstream.send(JSON.stringify(message), message, { kind: 'response', request: id });
  };
  const flush = () => new Promise((resolve) => setImmediate(resolve));
  return {
    input,
    output,
    written,
    parsed: () => written.map((l) => JSON.parse(l) as unknown),
    received,
    logger,
    metrics,
    downstream,
    write,
    answer,
    flush,
    ended: () => ended,
    setRevision: (r: string) => {
      revision = r;
    },
  };
}

const malformed = (h: ReturnType<typeof harness>) =>
  h.metrics.get('malformed_messages_total', { side: 'client', transport: 'stdio' });

describe('StdioDownstream', () => {
  describe("_meta members of the gateway's namespace from the client", () => {
    it('refuses a request carrying one with -32602, and never hands it on', async () => {
      const h = harness();
      await h.write(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 4,
          method: 'tools/call',
          params: {
            name: 'echo',
            _meta: { progressToken: 1, 'switchboard.dev/forwardHeaders': { 'mcp-param-a': '1' } },
          },
        }),
      );
      expect(h.received).toEqual([]);
      expect(h.parsed()).toEqual([
        {
          jsonrpc: '2.0',
          id: 4,
          error: {
            code: -32602,
            message: expect.stringContaining('"switchboard.dev/forwardHeaders"'),
          },
        },
      ]);
      expect(h.metrics.get('client_reserved_meta_total', { action: 'refused', transport: 'stdio' })).toBe(1);
    });

    it('answers a refused request inside its batch (2025-03-26), and serves the others', async () => {
      const h = harness({ revision: '2025-03-26' });
      await h.write(
        JSON.stringify([
          { jsonrpc: '2.0', id: 1, method: 'ping' },
          { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { 'switchboard.dev/x': 1 } } },
        ]),
      );
      expect(h.received.map((r) => r.message)).toEqual([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
      h.answer(1, {});
      await h.flush();
      expect(h.parsed()).toEqual([
        [
          { jsonrpc: '2.0', id: 2, error: { code: -32602, message: expect.any(String) } },
          { jsonrpc: '2.0', id: 1, result: {} },
        ],
      ]);
    });

    it('takes them out of notifications and responses, which cannot be refused', async () => {
      const h = harness();
      const note = JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 1, progress: 1, _meta: { 'switchboard.dev/forwardHeaders': {} } },
      });
      const reply = JSON.stringify({
        jsonrpc: '2.0',
        id: 'srv-1',
        result: { roots: [], _meta: { 'switchboard.dev/x': 1, kept: true } },
      });
      await h.write(note, reply);
      expect(h.received.map((r) => r.message)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
        { jsonrpc: '2.0', id: 'srv-1', result: { roots: [], _meta: { kept: true } } },
      ]);
      // The raw text stays what the client sent (the trace records what arrived).
      expect(h.received.map((r) => r.raw)).toEqual([note, reply]);
      expect(h.written).toEqual([]);
      expect(h.metrics.get('client_reserved_meta_total', { action: 'removed', transport: 'stdio' })).toBe(2);
    });
  });

  it('hands valid messages to onmessage with their raw text', async () => {
    const h = harness();
    const line = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    await h.write(line, '{"jsonrpc":"2.0","method":"notifications/initialized"}');
    expect(h.received.map((r) => r.message)).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
    expect(h.received[0]?.raw).toBe(line);
    expect(h.written).toEqual([]);
  });

  it('drops malformed JSON, counts and logs it, and goes on', async () => {
    const h = harness();
    await h.write('{"jsonrpc":"2.0","id":1,', 'not json', '{"jsonrpc":"2.0","id":2,"method":"ping"}');
    expect(malformed(h)).toBe(2);
    expect(
      h.logger.entries.filter((e) => e.level === 'warn' && /unusable input/.test(e.message)),
    ).toHaveLength(2);
    expect(h.written).toEqual([]);
    expect(h.received.map((r) => r.message)).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
  });

  it('answers an invalid request whose id is readable with -32600 for that id', async () => {
    const h = harness();
    await h.write(
      '{"jsonrpc":"2.0","id":"x-1","method":42}',
      '{"jsonrpc":"2.0","id":9,"method":"tools/list","params":"oops"}',
    );
    const out = h.parsed() as { id: unknown; error: { code: number; message: string } }[];
    expect(out.map((o) => [o.id, o.error.code])).toEqual([
      ['x-1', -32600],
      [9, -32600],
    ]);
    expect(out[0]?.error.message).toMatch(/"method" must be a string/);
    expect(out[1]?.error.message).toMatch(/"params" must be an object/);
    expect(h.received).toEqual([]);
    expect(malformed(h)).toBe(2);
  });

  it('drops an invalid message without a readable id (id null), counted and logged', async () => {
    const h = harness();
    await h.write(
      '{"jsonrpc":"2.0","id":null,"method":"ping"}',
      '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    );
    expect(h.written).toEqual([]);
    expect(h.received).toEqual([]);
    expect(malformed(h)).toBe(2);
    expect(h.logger.entries.some((e) => /without a readable id/.test(e.message))).toBe(true);
  });

  it('forwards a broken response with a readable id as an error, so the server is not left waiting', async () => {
    const h = harness();
    await h.write('{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"both"}}');
    expect(h.written).toEqual([]);
    expect(h.received).toHaveLength(1);
    const forwarded = h.received[0]?.message as { id: unknown; error: { code: number; message: string } };
    expect(forwarded.id).toBe(3);
    expect(forwarded.error.code).toBe(-32603);
    expect(forwarded.error.message).toMatch(/invalid response from the peer/);
    expect(malformed(h)).toBe(1);
  });

  it('refuses a batch unless the revision is 2025-03-26: nothing is forwarded, each request is answered with the refusal', async () => {
    const h = harness({ revision: '2025-06-18' });
    await h.write(
      '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"two","method":"ping"}]',
    );
    expect(h.received).toEqual([]);
    expect(malformed(h)).toBe(1);
    expect(h.logger.entries.find((e) => /unusable batch/.test(e.message))?.fields.error).toMatch(
      /batches are not allowed in MCP revision 2025-06-18/,
    );
    // One answer per request (the notification needs none), so the client waits for nothing.
    const [answers] = h.parsed() as { id: unknown; error: { code: number; message: string } }[][];
    expect(answers?.map((a) => a.id)).toEqual([1, 'two']);
    expect(answers?.every((a) => a.error.code === -32600 && /not allowed/.test(a.error.message))).toBe(true);
    // Before negotiation the session's revision is the default (2025-11-25): refused as well.
    h.setRevision('2025-11-25');
    await h.write('[{"jsonrpc":"2.0","id":3,"method":"ping"}]');
    expect(h.received).toEqual([]);
    expect(malformed(h)).toBe(2);
    expect((h.parsed()[1] as { id: unknown }[]).map((a) => a.id)).toEqual([3]);
  });

  it('answers each request of a batch that mixes requests and responses; a batch without requests gets nothing', async () => {
    const h = harness({ revision: '2025-03-26' });
    await h.write(
      '[{"jsonrpc":"2.0","id":12,"result":{}},{"jsonrpc":"2.0","id":12,"method":"tools/list"},{"jsonrpc":"2.0","id":14,"method":"ping"}]',
      '[]',
      '[{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":5,"result":{}},{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}]',
    );
    expect(h.received).toEqual([]);
    const lines = h.parsed() as { id: unknown; error: { message: string } }[][];
    expect(lines).toHaveLength(2);
    expect(lines[0]?.map((a) => a.id)).toEqual([12, 14]);
    expect(lines[0]?.[0]?.error.message).toMatch(/either requests and notifications or responses/);
    // The request with an id that cannot be echoed is refused under null, as on its own.
    expect(lines[1]?.map((a) => a.id)).toEqual([null]);
    expect(malformed(h)).toBe(3);
  });

  it('with 2025-03-26, answers a batch with one batch of responses once every request is answered', async () => {
    const h = harness({ revision: '2025-03-26' });
    await h.write(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
        { jsonrpc: '2.0', id: 'b', method: 42 },
        { jsonrpc: '2.0', id: 2, method: 'ping' },
      ]),
    );
    expect(h.received.map((r) => r.message)).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
      { jsonrpc: '2.0', id: 2, method: 'ping' },
    ]);
    // The invalid item's error waits for the rest of the batch.
    expect(h.written).toEqual([]);
    h.answer(2, { pong: true });
    await h.flush();
    expect(h.written).toEqual([]);
    // Something unrelated to the batch goes out at once.
    h.downstream.send(
      '{"jsonrpc":"2.0","method":"notifications/message"}',
      { jsonrpc: '2.0', method: 'notifications/message' },
      { kind: 'unrelated' },
    );
    h.answer(1, { tools: [] });
    await h.flush();
    expect(h.written).toHaveLength(2);
    expect(JSON.parse(h.written[0]!)).toEqual({ jsonrpc: '2.0', method: 'notifications/message' });
    const batch = JSON.parse(h.written[1]!) as { id: unknown; result?: unknown; error?: { code: number } }[];
    expect(Array.isArray(batch)).toBe(true);
    expect(batch.map((r) => r.id).sort()).toEqual([1, 2, 'b'].sort());
    expect(batch.find((r) => r.id === 'b')?.error?.code).toBe(-32600);
    expect(batch.find((r) => r.id === 1)?.result).toEqual({ tools: [] });
    // Later responses to the same ids are written on their own.
    h.answer(1, { again: true });
    await h.flush();
    expect(JSON.parse(h.written[2]!)).toEqual({ jsonrpc: '2.0', id: 1, result: { again: true } });
  });

  it('a batch stops waiting for a request the client cancelled: answered without it, or not at all', async () => {
    const h = harness({ revision: '2025-03-26' });
    await h.write(
      '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call"}]',
    );
    h.answer(1, {});
    h.downstream.dropped(2);
    await h.flush();
    expect((h.parsed() as { id: unknown }[][]).map((batch) => batch.map((a) => a.id))).toEqual([[1]]);
    await h.write('[{"jsonrpc":"2.0","id":3,"method":"tools/call"}]');
    h.downstream.dropped(3);
    h.downstream.dropped(3);
    await h.flush();
    expect(h.parsed()).toHaveLength(1);
  });

  it('a batch of notifications only gets no answer', async () => {
    const h = harness({ revision: '2025-03-26' });
    await h.write('[{"jsonrpc":"2.0","method":"notifications/initialized"}]');
    expect(h.received).toHaveLength(1);
    expect(h.written).toEqual([]);
  });

  it('answers every request of a batch that repeats an id: each repeat refused, none handed on (issue 18)', async () => {
    const h = harness({ revision: '2025-03-26' });
    const call = (message: string) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'echo', arguments: { message } },
    });
    await h.write(JSON.stringify([call('a'), call('b'), { jsonrpc: '2.0', id: 2, method: 'ping' }]));
    expect(h.received.map((r) => r.message)).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
    expect(h.written).toEqual([]);
    h.answer(2, {});
    await h.flush();
    expect(h.parsed()).toEqual([
      [
        expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32600 }) }),
        expect.objectContaining({ id: 1, error: expect.objectContaining({ code: -32600 }) }),
        { jsonrpc: '2.0', id: 2, result: {} },
      ],
    ]);
    expect(h.metrics.get('duplicate_request_ids_total', { transport: 'stdio' })).toBe(2);
  });

  it('refuses a request whose id is in flight without taking the slot of the one in flight', async () => {
    const busy = new Set<string>();
    const h = harness({ revision: '2025-03-26', inFlight: (id) => busy.has(idKey(id)) });
    await h.write('[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]');
    // 5 waits in the batch: a second request under 5 is refused at once, on its own line.
    await h.write('{"jsonrpc":"2.0","id":5,"method":"tools/list"}');
    expect(h.parsed()).toEqual([
      expect.objectContaining({ id: 5, error: expect.objectContaining({ code: -32600 }) }),
    ]);
    // An id the router still holds (the session's earlier call) is refused the same way.
    busy.add(idKey(7));
    await h.write('[{"jsonrpc":"2.0","id":7,"method":"ping"}]');
    expect(h.parsed()[1]).toEqual([
      expect.objectContaining({ id: 7, error: expect.objectContaining({ code: -32600 }) }),
    ]);
    h.answer(5, { five: true });
    h.answer(6, { six: true });
    await h.flush();
    expect(h.parsed()[2]).toEqual([
      { jsonrpc: '2.0', id: 5, result: { five: true } },
      { jsonrpc: '2.0', id: 6, result: { six: true } },
    ]);
    expect(h.received.map((r) => (r.message as { id?: unknown }).id)).toEqual([5, 6]);
  });

  it('with the router answering what it is handed, every request of any batch gets exactly one answer', async () => {
    await fc.assert(
      fc.asyncProperty(hostileBatch({ deepLevels: 200 }), async (elements) => {
        const h = harness({ revision: '2025-03-26' });
        await h.write(batchText(elements));
        for (const { message } of h.received)
          if ('method' in message && 'id' in message) h.answer(message.id, { ok: true });
        await h.flush();
        const written = h.parsed();
        expect(written.length).toBeLessThanOrEqual(1);
        expectOneAnswerPerRequest(elements, written[0] as { id?: unknown }[] | undefined);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a message nested past the depth limit with its id, and an id it cannot echo with id null', async () => {
    const h = harness();
    const deep = `${'['.repeat(4500)}${']'.repeat(4500)}`;
    await h.write(
      `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"x","arguments":${deep}}}`,
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}',
    );
    expect(h.received).toEqual([]);
    expect(h.parsed()).toEqual([
      {
        jsonrpc: '2.0',
        id: 'deep',
        error: {
          code: -32600,
          message:
            'Invalid Request: the message nests 4502 levels of objects and arrays; the gateway accepts at most 128 (maxJsonDepth)',
        },
      },
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32600 }) },
    ]);
    expect((h.parsed()[1] as { error: { message: string } }).error.message).toContain('id 9007199254740993');
  });

  it('answers an oversized request with -32006 for its id; the next message goes through', async () => {
    const h = harness({ maxMessageBytes: 200 });
    await h.write(
      `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":"${'a'.repeat(500)}"}}`,
      '{"jsonrpc":"2.0","id":2,"method":"ping"}',
    );
    const out = h.parsed() as {
      id: unknown;
      error: { code: number; data: { bytes: number; limit: number } };
    }[];
    expect(out).toHaveLength(1);
    expect(out[0]?.id).toBe('big');
    expect(out[0]?.error.code).toBe(-32006);
    expect(out[0]?.error.data.limit).toBe(200);
    expect(h.received.map((r) => r.message)).toEqual([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
    expect(h.metrics.get('oversized_messages_total', { side: 'client', transport: 'stdio' })).toBe(1);
  });

  it('turns an oversized response into an error forwarded for its id', async () => {
    const h = harness({ maxMessageBytes: 200 });
    await h.write(`{"jsonrpc":"2.0","id":5,"result":{"x":"${'a'.repeat(500)}"}}`);
    expect(h.written).toEqual([]);
    expect(h.received).toHaveLength(1);
    expect(h.received[0]?.message).toMatchObject({ id: 5, error: { code: -32006 } });
  });

  it('calls onend once when stdin ends, flushing a last line without newline', async () => {
    const h = harness();
    h.input.end('{"jsonrpc":"2.0","id":1,"method":"ping"}');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(h.received).toHaveLength(1);
    expect(h.ended()).toBe(1);
  });

  it('does not throw when stdout is gone; it counts what could not be delivered', async () => {
    const h = harness();
    h.output.end();
    await h.flush();
    expect(() => h.answer(1, {})).not.toThrow();
    expect(h.metrics.get('delivery_errors_total', { transport: 'stdio' })).toBe(1);
  });
});
