/**
 * A request the client cancels gets no response (MCP), so nothing may wait for one: a 2025-03-26
 * batch holding it is answered with the rest, a JSON POST holding only it ends (202, no body), the
 * same id is free again at once, and over `switchboard stdio` a batch holding it is answered
 * without it. Found in review of issue 18: the batch and the POST used to wait forever, and the
 * id stayed "in flight".
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { initialize, messagesOf, post } from './support/sse-client.js';
import { StdioAnswers } from './support/stdio-answers.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The `slow` calls the misbehaving server has in progress, from its `stats` tool's answer. */
function slowOf(answer: Record<string, unknown> | undefined): unknown[] {
  const text = (answer?.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text;
  return (JSON.parse(text ?? '{}') as { slow?: unknown[] }).slow ?? [];
}

const slow = (id: unknown) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'slow', arguments: { ms: 60_000 } },
});
const echo = (id: unknown, message: string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: { message } },
});
const cancel = (requestId: unknown) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId, reason: 'the user gave up' },
});

describe('switchboard serve: a cancelled request holds nothing up', () => {
  let gw: RunningServe;

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig({ m: { script: MISBEHAVING } }, 'server:\n  responseMode: json\n'),
    });
  });

  afterAll(async () => {
    await gw?.stop();
  });

  /**
   * Waits until the slow call has reached the server: a cancellation sent before the gateway has
   * the call names an id it does not know (a pause of 500 ms used to stand for this).
   */
  async function slowReached(headers: Record<string, string>): Promise<void> {
    for (let poll = 0; ; poll++) {
      const stats = { jsonrpc: '2.0', id: `stats-${poll}`, method: 'tools/call', params: { name: 'stats' } };
      if (slowOf(messagesOf(await post(gw.url, stats, headers))[0]).length > 0) return;
      await sleep(20);
    }
  }

  it('a batch is answered with its other requests once one of them is cancelled', async () => {
    const session = await initialize(gw.url, { version: '2025-03-26' });
    const batch = post(gw.url, [slow(1), echo(2, 'still answered')], session.headers);
    await slowReached(session.headers);
    const accepted = await post(gw.url, cancel(1), session.headers);
    expect(accepted.status).toBe(202);
    const answer = await batch;
    expect(answer.status, answer.text).toBe(200);
    const messages = messagesOf(answer);
    expect(messages.map((m) => m.id)).toEqual([2]);
    expect(JSON.stringify(messages[0]?.result)).toContain('still answered');
    // The cancelled id is free again at once.
    const again = await post(gw.url, echo(1, 'reused'), session.headers);
    expect(JSON.stringify(messagesOf(again)[0])).toContain('reused');
  });

  it('a POST holding only the cancelled request ends with 202 and no body', async () => {
    const session = await initialize(gw.url, { version: '2025-11-25' });
    const lone = post(gw.url, slow('alone'), session.headers);
    await slowReached(session.headers);
    await post(gw.url, cancel('alone'), session.headers);
    const answer = await lone;
    expect(answer.status).toBe(202);
    expect(answer.text).toBe('');
  });
});

describe('switchboard stdio: a cancelled request holds no batch up', () => {
  let gw: StdioAnswers;

  beforeAll(async () => {
    gw = new StdioAnswers([process.execPath, MISBEHAVING], { args: ['--name', 'm'] });
    const init = await gw.request(0, 'initialize', {
      protocolVersion: '2025-03-26',
      capabilities: {},
      clientInfo: { name: 'cancel-test', version: '1' },
    });
    expect(init.result).toBeDefined();
    gw.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it('answers the batch without the cancelled request', async () => {
    gw.write(JSON.stringify([slow(1), echo(2, 'batched')]));
    // The slow call reached the server (asked of its `stats`), then only the batch answer counts.
    for (
      let poll = 1000;
      slowOf(await gw.request(poll, 'tools/call', { name: 'stats' })).length === 0;
      poll++
    )
      await sleep(20);
    const from = gw.lines.length;
    gw.write(JSON.stringify(cancel(1)));
    await gw.waitFor(() => gw.answersSince(from).length > 0, 20_000, 'the batch answer');
    const answers = gw.answersSince(from);
    expect(answers.map((a) => a.key)).toEqual(['2']);
    expect(answers[0]?.raw.startsWith('[')).toBe(true);
  });
});
