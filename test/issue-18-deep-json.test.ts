/**
 * Issue 18, item 1: a `tools/call` whose `arguments` nest 4,500 levels (a 10 KB body) overflowed
 * the stack: on `/servers/<name>/mcp`, a single-upstream configuration and `switchboard stdio` the
 * process exited; on `/mcp` the request stayed in flight for ten minutes and the ledger recorded an
 * upstream timeout for a call never sent. Against the built gateway, on every endpoint: the
 * process lives, the client gets -32600 naming the limit under its own id, `/health` answers, the
 * same id works again at once, and the ledger records no call for the refused request. Also: a
 * message exactly at the largest limit a configuration allows goes through, traced and recorded;
 * an upstream answer nested too deep fails the call it answers; ids that cannot be echoed exactly
 * are refused on every transport, and leave nothing in the trace or the ledger.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_SERVER, ROOT, tempDir } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { initialize, jsonOf, messagesOf, post, type RawResponse, send } from './support/sse-client.js';
import { StdioLines } from './support/stdio-lines.js';
import { traceSessions, traceShow } from './support/trace.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');
const LEVELS = 4500;

/** A tools/call of `tool` whose arguments hold `levels` nested arrays, as text (too deep to stringify). */
function deepCall(id: string, tool: string, levels = LEVELS): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(tool)},"arguments":{"message":"deep","nest":${'['.repeat(levels)}${']'.repeat(levels)}}}}`;
}

function echoCall(id: string | number, tool: string, message = 'again'): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { message } } };
}

/** The depth of `deepCall(.., levels)`: the message, params, arguments, then the arrays. */
const depthOf = (levels: number) => levels + 3;

function expectDeepRefusal(response: RawResponse, id: string, limit = 128): void {
  expect(response.status, response.text).toBe(400);
  expect(jsonOf(response)).toEqual({
    jsonrpc: '2.0',
    id,
    error: {
      code: -32600,
      message: `Invalid Request: the message nests ${depthOf(LEVELS)} levels of objects and arrays; the gateway accepts at most ${limit} (maxJsonDepth)`,
    },
  });
}

async function expectHealthy(base: string): Promise<void> {
  const health = await send(`${base}/health`, 'GET', {});
  expect(health.status).toBe(200);
}

function resultText(message: Record<string, unknown> | undefined): string | undefined {
  const result = message?.result as { content?: { text?: string }[] } | undefined;
  return result?.content?.[0]?.text;
}

/** Every record of the ledger in `dir` (read once the gateway has stopped and flushed it). */
function ledgerRecords(dir: string): Record<string, unknown>[] {
  return readdirSync(dir)
    .filter((f) => /^ledger-\d+\.jsonl$/.test(f))
    .sort()
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    );
}

describe('switchboard serve with two upstreams: /mcp and /servers/<name>/mcp', () => {
  let gw: RunningServe;

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER }, odd: { script: MISBEHAVING } }),
    });
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it.each([
    ['/mcp', 'echo__echo', 'deep-aggregate'],
    ['/servers/echo/mcp', 'echo', 'deep-one-server'],
  ])(
    '%s: refuses the 4,500-level call with -32600 under its id; the id works again at once',
    async (path, tool, id) => {
      const url = `${gw.base}${path}`;
      const session = await initialize(url);
      const refused = await post(url, deepCall(id, tool), session.headers);
      expectDeepRefusal(refused, id);
      expect(gw.process.child.exitCode).toBeNull();
      await expectHealthy(gw.base);
      const again = await post(url, echoCall(id, tool), session.headers);
      expect(again.status, again.text).toBe(200);
      const [answer] = messagesOf(again);
      expect(answer?.id).toBe(id);
      expect(resultText(answer)).toBe('again');
    },
  );

  it('2026-07-28 endpoint: the same refusal, under the id', async () => {
    const body = deepCall('deep-modern', 'echo__echo').replace(
      '"params":{',
      '"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},',
    );
    const refused = await post(gw.url, body, {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'echo__echo',
    });
    expectDeepRefusal(refused, 'deep-modern');
    await expectHealthy(gw.base);
  });

  it('an upstream answer nested 4,500 levels fails the call it answers, precisely; the gateway goes on', async () => {
    const session = await initialize(gw.url);
    const answer = await post(
      gw.url,
      {
        jsonrpc: '2.0',
        id: 'deep-answer',
        method: 'tools/call',
        params: { name: 'odd__deep', arguments: {} },
      },
      session.headers,
    );
    expect(answer.status, answer.text).toBe(200);
    const [message] = messagesOf(answer);
    expect(message).toMatchObject({
      id: 'deep-answer',
      error: {
        code: -32603,
        message: `upstream odd sent an invalid response: Invalid Request: the message nests ${LEVELS + 2} levels of objects and arrays; the gateway accepts at most 128 (maxJsonDepth)`,
        data: { code: 'SB_UPSTREAM_PROTOCOL' },
      },
    });
    await expectHealthy(gw.base);
    const after = await post(gw.url, echoCall('after-deep', 'odd__echo', 'fine'), session.headers);
    expect(resultText(messagesOf(after)[0])).toBe('fine');
  });

  it('ids JSON numbers cannot keep exactly are refused with id null, naming them', async () => {
    const session = await initialize(gw.url);
    for (const token of ['9007199254740993', '1.0', '-0', '1e3']) {
      const refused = await post(gw.url, `{"jsonrpc":"2.0","id":${token},"method":"ping"}`, session.headers);
      expect(refused.status, refused.text).toBe(400);
      expect(jsonOf(refused)).toMatchObject({ id: null, error: { code: -32600 } });
      expect(jsonOf<{ error: { message: string } }>(refused).error.message).toContain(
        `id ${token} cannot be echoed exactly`,
      );
    }
    // Ids it can keep come back exactly as sent.
    for (const token of ['9007199254740991', '-9007199254740991', '0.5', '"9007199254740993"']) {
      const ok = await post(gw.url, `{"jsonrpc":"2.0","id":${token},"method":"ping"}`, session.headers);
      expect(ok.status, ok.text).toBe(200);
      expect(ok.text).toBe(`{"jsonrpc":"2.0","id":${token},"result":{}}`);
    }
  });

  it('after all of it, the ledger has no record of the refused calls, only of those that ran', async () => {
    await gw.stop();
    const records = ledgerRecords(join(gw.dataDir, 'audit'));
    const ids = records.map((r) => r.request_id);
    expect(ids.filter((i) => i === 'deep-aggregate')).toHaveLength(1);
    expect(ids.filter((i) => i === 'deep-one-server')).toHaveLength(1);
    expect(ids).not.toContain('deep-modern');
    for (const record of records.filter(
      (r) => String(r.request_id).startsWith('deep-') && r.request_id !== 'deep-answer',
    ))
      expect(record.error).toBeUndefined();
  });
});

describe('switchboard serve with a single upstream, at the largest depth limit', () => {
  let gw: RunningServe;
  const LIMIT = 1000;

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        `server:\n  maxJsonDepth: ${LIMIT}\n`,
      ),
    });
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it('refuses the 4,500-level call on /mcp under its id, and lives', async () => {
    const session = await initialize(gw.url);
    const refused = await post(gw.url, deepCall('deep-single', 'echo'), session.headers);
    expectDeepRefusal(refused, 'deep-single', LIMIT);
    await expectHealthy(gw.base);
    const again = await post(gw.url, echoCall('deep-single', 'echo'), session.headers);
    expect(resultText(messagesOf(again)[0])).toBe('again');
  });

  it('serves a call nested exactly at the limit end to end (traced and recorded), and refuses one more level', async () => {
    const session = await initialize(gw.url);
    const at = await post(gw.url, deepCall('at-limit', 'echo', LIMIT - 3), session.headers);
    expect(at.status, at.text).toBe(200);
    expect(resultText(messagesOf(at)[0])).toBe('deep');
    const over = await post(gw.url, deepCall('over-limit', 'echo', LIMIT - 2), session.headers);
    expect(over.status).toBe(400);
    await expectHealthy(gw.base);
    await gw.stop();
    const records = ledgerRecords(join(gw.dataDir, 'audit'));
    expect(records.find((r) => r.request_id === 'at-limit')).toMatchObject({ method: 'tools/call' });
    expect(records.find((r) => r.request_id === 'over-limit')).toBeUndefined();
    const traced = await traceShow(session.id, gw.dataDir);
    expect(traced.some((e) => e.payload.id === 'at-limit' && e.from.startsWith('client-'))).toBe(true);
    expect(traced.some((e) => e.payload.id === 'over-limit')).toBe(false);
  });
});

describe('switchboard stdio', () => {
  it('refuses the 4,500-level call under its id, lives, takes the id again, records no call for it', async () => {
    const dataDir = tempDir('switchboard-issue18-stdio-');
    const gw = new StdioLines(['--data-dir', dataDir, '--name', 'echo', '--', process.execPath, ECHO_SERVER]);
    try {
      await gw.initialize('2025-06-18');
      gw.writeLine(deepCall('deep-stdio', 'echo'));
      const refused = await gw.response('deep-stdio');
      expect(refused).toEqual({
        jsonrpc: '2.0',
        id: 'deep-stdio',
        error: {
          code: -32600,
          message: `Invalid Request: the message nests ${depthOf(LEVELS)} levels of objects and arrays; the gateway accepts at most 128 (maxJsonDepth)`,
        },
      });
      const from = gw.out.length;
      gw.writeLine(JSON.stringify(echoCall('deep-stdio', 'echo')));
      expect(resultText(await gw.response('deep-stdio', from))).toBe('again');
      gw.writeLine('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
      const inexact = await gw.response(null);
      expect(inexact).toMatchObject({ error: { code: -32600 } });
      expect(gw.alive).toBe(true);
    } finally {
      expect(await gw.close()).toBe(0);
    }
    const records = ledgerRecords(join(dataDir, 'audit', 'stdio', 'echo'));
    expect(records.filter((r) => r.request_id === 'deep-stdio')).toHaveLength(1);
    expect(records.find((r) => r.request_id === 'deep-stdio')?.error).toBeUndefined();
    const [session] = await traceSessions(dataDir);
    const traced = await traceShow(session?.key ?? '', dataDir);
    expect(traced.filter((e) => e.payload.id === 'deep-stdio' && e.from.startsWith('client-'))).toHaveLength(
      1,
    );
  });
});
