/**
 * Issue 18, item 5: on a 2025-03-26 session, `[{"id":1,…},{"id":1,…}]` answered only the refusal of
 * the second while the first call ran and its result was dropped. Against the built gateway, over
 * HTTP and `switchboard stdio`: that batch gets an answer for each of its requests and runs none
 * of them (nothing in the ledger), and fast-check batches mixing repeated ids, notifications,
 * invalid elements with and without ids, ids that cannot be echoed and elements nested too deep
 * get exactly one answer per request, while the gateway stays healthy.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BatchElement,
  batchText,
  expectOneAnswerPerRequest,
  hostileBatch,
} from '../src/test-support/hostile-batches.js';
import { ECHO_SERVER, tempDir } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { initialize, messagesOf, post, send } from './support/sse-client.js';
import { StdioLines } from './support/stdio-lines.js';

const DEEP_LEVELS = 200;

function ledgerRequestIds(dir: string): unknown[] {
  return readdirSync(dir)
    .filter((f) => /^ledger-\d+\.jsonl$/.test(f))
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => (JSON.parse(l) as { request_id?: unknown }).request_id),
    );
}

const call = (id: unknown, message: string, tool: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: tool, arguments: { message } },
});

describe('switchboard serve, 2025-03-26 sessions', () => {
  let gw: RunningServe;

  beforeAll(async () => {
    gw = await startServe({ configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }) });
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it('the issue\'s batch: both requests under id "dup" are answered, and neither runs', async () => {
    const session = await initialize(gw.url, { version: '2025-03-26' });
    const response = await post(
      gw.url,
      [call('dup', 'first', 'echo'), call('dup', 'second', 'echo')],
      session.headers,
    );
    expect(response.status, response.text).toBe(200);
    const answers = messagesOf(response);
    expect(answers).toHaveLength(2);
    for (const answer of answers)
      expect(answer).toMatchObject({
        id: 'dup',
        error: { code: -32600, message: expect.stringContaining('appears more than once in this batch') },
      });
    // The id is free: alone, it runs.
    const alone = await post(gw.url, call('dup', 'alone', 'echo'), session.headers);
    expect(JSON.stringify(messagesOf(alone))).toContain('"text":"alone"');
  });

  it('a batch of invalid requests gets one error per request, in one array', async () => {
    const session = await initialize(gw.url, { version: '2025-03-26' });
    const response = await post(
      gw.url,
      '[{"jsonrpc":"1.0","id":"x","method":"ping"},42,{"jsonrpc":"2.0","id":"y","method":7}]',
      session.headers,
    );
    expect(response.status, response.text).toBe(200);
    expect(messagesOf(response).map((m) => m.id)).toEqual(['x', null, 'y']);
  });

  it('every request of any batch gets exactly one answer of its own (fast-check, live gateway)', async () => {
    const url = `${gw.base}/servers/echo/mcp`;
    // One session throughout: every request of a batch is answered before its POST completes, so
    // nothing is left in flight between batches.
    const session = await initialize(url, { version: '2025-03-26' });
    await fc.assert(
      fc.asyncProperty(hostileBatch({ deepLevels: DEEP_LEVELS }), async (elements: BatchElement[]) => {
        const response = await post(url, batchText(elements), session.headers);
        const expectsAnswers = elements.some((e) => e.answeredAs !== undefined);
        if (!expectsAnswers) {
          expect(response.status, response.text).toBe(202);
          return;
        }
        expect(response.status, response.text).toBe(200);
        expectOneAnswerPerRequest(
          elements,
          messagesOf(response).filter((m) => !('method' in m)),
        );
        const health = await send(`${gw.base}/health`, 'GET', {});
        expect(health.status).toBe(200);
      }),
      { numRuns: 60 },
    );
  });

  it('the ledger has no record of the refused requests', async () => {
    await gw.stop();
    const ids = ledgerRequestIds(join(gw.dataDir, 'audit'));
    expect(ids.filter((id) => id === 'dup')).toHaveLength(1);
  });
});

describe('switchboard stdio, a 2025-03-26 session', () => {
  it('answers every request of any batch exactly once, the issue’s batch included; runs no repeated id', async () => {
    const dataDir = tempDir('switchboard-issue18-batches-');
    const gw = new StdioLines(['--data-dir', dataDir, '--name', 'echo', '--', process.execPath, ECHO_SERVER]);
    let sync = 0;
    /**
     * Writes a batch; when it holds a request, waits for the array that answers it; then a ping,
     * whose answer marks the end of what the batch caused. Returns everything in between.
     */
    const exchange = async (text: string, answered: boolean): Promise<unknown[]> => {
      const from = gw.out.length;
      gw.writeLine(text);
      if (answered) await gw.next('the answer of the batch', Array.isArray, from);
      const id = `sync-${++sync}`;
      gw.writeLine(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
      await gw.response(id, from);
      return gw.out.slice(from).filter((line) => (line as { id?: unknown }).id !== id);
    };
    try {
      await gw.initialize('2025-03-26');
      const issue = await exchange(
        JSON.stringify([call('dup', 'first', 'echo'), call('dup', 'second', 'echo')]),
        true,
      );
      expect(issue).toEqual([
        [
          expect.objectContaining({ id: 'dup', error: expect.objectContaining({ code: -32600 }) }),
          expect.objectContaining({ id: 'dup', error: expect.objectContaining({ code: -32600 }) }),
        ],
      ]);
      await fc.assert(
        fc.asyncProperty(hostileBatch({ deepLevels: DEEP_LEVELS }), async (elements) => {
          const answered = elements.some((e) => e.answeredAs !== undefined);
          const written = await exchange(batchText(elements), answered);
          expect(written.length).toBe(answered ? 1 : 0);
          expectOneAnswerPerRequest(elements, written[0] as { id?: unknown }[] | undefined);
        }),
        { numRuns: 60 },
      );
      expect(gw.alive).toBe(true);
    } finally {
      expect(await gw.close()).toBe(0);
    }
    expect(ledgerRequestIds(join(dataDir, 'audit', 'stdio', 'echo'))).not.toContain('dup');
  });
});
