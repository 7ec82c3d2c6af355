/**
 * Issue 3, "no client token ever forwarded upstream", end to end through `switchboard serve`.
 *
 * The upstream is test/fixtures/modern-server.mjs (serving both eras) started with `--record`, so
 * it writes down every HTTP request it receives: method, path, every header exactly as sent
 * (duplicates kept) and the body. The gateway reaches it twice: as `modern` (era auto: probed and
 * found to speak both eras, so each client is spoken to in its own era; shared) and as `legacy` (the
 * session-based revisions, one connection per client session), each with an upstream credential taken from the gateway's environment.
 * Authentication is on. Clients of both eras call tools/list and tools/call carrying their bearer
 * token, a Cookie and an X-Api-Key; the upstream must see none of them, in no header and no body,
 * and must see the configured credential on every request. The same recordings show what of a
 * client's `_meta` goes on: a 2026-07-28 client's envelope never reaches the legacy connection, and
 * a client's own `switchboard.dev/` members reach no upstream. Each test makes the calls it checks.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeToken, tempDir } from './support/cli.js';
import { type StartedProcess, startHttpFixture } from './support/peers.js';
import { type RunningServe, startServe } from './support/serve.js';
import { initialize, messagesOf, post, send } from './support/sse-client.js';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const secret = (prefix: string): string => `${prefix}-${randomBytes(18).toString('base64url')}`;
/** The credential the gateway is configured to send upstream (through `${env:...}`). */
const UPSTREAM_TOKEN = secret('upstream');
/** What clients send beside their bearer token; none of it may reach the upstream. */
const COOKIE = secret('cookie');
const API_KEY = secret('apikey');

/** One line of the fixture's `--record` file. */
interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

function header(record: Recorded, name: string): string[] {
  return record.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
}

/** The JSON-RPC method of a recorded POST (a batch or a non-JSON body: undefined). */
function rpcMethod(record: Recorded): string | undefined {
  try {
    const body = JSON.parse(record.body) as { method?: unknown };
    return typeof body.method === 'string' ? body.method : undefined;
  } catch {
    return undefined;
  }
}

describe('serve never forwards client credentials upstream', () => {
  let fixture: StartedProcess & { url: string };
  let serve: RunningServe;
  let recordFile: string;
  let alice: string;
  let bob: string;

  const recorded = (): Recorded[] =>
    existsSync(recordFile)
      ? readFileSync(recordFile, 'utf8')
          .split('\n')
          .filter((line) => line.length > 0)
          .map((line) => JSON.parse(line) as Recorded)
      : [];

  /** Runs `body` and returns what the upstream received meanwhile. */
  async function recordedDuring(body: () => Promise<void>): Promise<Recorded[]> {
    const before = recorded().length;
    await body();
    return recorded().slice(before);
  }

  /** Every client credential is absent from every header (name and value) and body; the upstream's is present. */
  function expectClean(records: readonly Recorded[]): void {
    expect(records.length).toBeGreaterThan(0);
    const clientSecrets = [alice, bob, COOKIE, API_KEY];
    for (const record of records) {
      const where = `${record.method} ${record.path} ${rpcMethod(record) ?? ''}`;
      for (const [name, value] of record.headers) {
        for (const s of clientSecrets) expect(`${name}: ${value}`, where).not.toContain(s);
      }
      for (const s of clientSecrets) expect(record.body, where).not.toContain(s);
      expect(header(record, 'cookie'), where).toEqual([]);
      expect(header(record, 'x-api-key'), where).toEqual([]);
      // Exactly the configured credential: not replaced by the client's, and not sent beside it.
      expect(header(record, 'authorization'), where).toEqual([`Bearer ${UPSTREAM_TOKEN}`]);
      expect(header(record, 'x-upstream').length, where).toBe(1);
    }
  }

  /** The recorded tools/call requests that came through the upstream named `via`, as `[message, era]`. */
  function echoes(records: readonly Recorded[], via: string): [unknown, string | undefined][] {
    return records
      .filter((r) => header(r, 'x-upstream')[0] === via && rpcMethod(r) === 'tools/call')
      .map((r) => [
        (JSON.parse(r.body) as { params: { arguments: { message: unknown } } }).params.arguments.message,
        header(r, 'mcp-protocol-version')[0],
      ]);
  }

  beforeAll(async () => {
    recordFile = join(tempDir('switchboard-upstream-record-'), 'requests.jsonl');
    fixture = await startHttpFixture('modernServer', ['--legacy', 'stateless', '--record', recordFile]);
    const a = await makeToken('alice');
    const b = await makeToken('bob');
    alice = a.token;
    bob = b.token;
    const upstream = (name: string, era: string, sharing: string): string[] => [
      `  ${name}:`,
      `    url: ${JSON.stringify(fixture.url)}`,
      `    era: ${era}`,
      `    sharing: ${sharing}`,
      '    headers:',
      `      Authorization: "Bearer \${env:SB_TEST_UPSTREAM_TOKEN}"`,
      `      X-Upstream: ${name}`,
    ];
    serve = await startServe({
      env: { ...process.env, SB_TEST_UPSTREAM_TOKEN: UPSTREAM_TOKEN },
      configYaml: [
        'auth:',
        '  tokens:',
        a.yaml,
        b.yaml,
        'upstreams:',
        ...upstream('modern', 'auto', 'shared'),
        ...upstream('legacy', 'legacy', 'per-session'),
        '',
      ].join('\n'),
    });
  }, 120_000);

  afterAll(async () => {
    await serve?.stop();
    await fixture?.stop();
  });

  /** The headers every client sends beside its token. */
  const extras = { Cookie: `session=${COOKIE}`, 'X-Api-Key': API_KEY };

  /** A 2026-07-28 request (stateless: the version and method in headers and `_meta`). */
  function modernPost(
    token: string,
    id: number,
    method: string,
    params: Record<string, unknown> = {},
    meta: Record<string, unknown> = {},
  ) {
    const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
    const _meta = {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'credentials-test', version: '1' },
      ...meta,
    };
    return post(
      serve.url,
      { jsonrpc: '2.0', id, method, params: { ...params, _meta } },
      {
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': MODERN,
        'mcp-method': method,
        ...name,
        ...extras,
      },
    );
  }

  it('has authentication on: a wrong token gets 401 in both eras and reaches no upstream', async () => {
    const wrong = `sbt_${randomBytes(32).toString('base64url')}`;
    const during = await recordedDuring(async () => {
      await expect(
        initialize(serve.url, { headers: { authorization: `Bearer ${wrong}`, ...extras } }),
      ).rejects.toThrow(/initialize failed: 401/);
      const modern = await modernPost(wrong, 1, 'tools/call', {
        name: 'modern__echo',
        arguments: { message: 'refused' },
      });
      expect(modern.status, modern.text).toBe(401);
    });
    expect(during.filter((r) => r.body.includes(wrong) || r.body.includes('refused'))).toEqual([]);
  });

  it('2025-11-25 session client (SDK v1): calls succeed, the upstream sees none of its credentials', async () => {
    const during = await recordedDuring(async () => {
      const transport = new StreamableHTTPClientTransport(new URL(serve.url), {
        requestInit: { headers: { Authorization: `Bearer ${alice}`, ...extras } },
      });
      const client = new Client({ name: 'credentials-test', version: '1' });
      await client.connect(transport);
      try {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['modern__echo', 'legacy__echo']));
        for (const via of ['modern', 'legacy']) {
          const result = await client.callTool({
            name: `${via}__echo`,
            arguments: { message: `v1 to ${via}` },
          });
          expect(result.content).toEqual([{ type: 'text', text: `v1 to ${via}` }]);
          // The legacy shape whatever the upstream's era: no 2026-07-28 vocabulary (resultType, the
          // server's io.modelcontextprotocol/serverInfo) in a 2025-11-25 client's result.
          expect(JSON.stringify(result)).not.toMatch(/resultType|io\.modelcontextprotocol\//);
        }
      } finally {
        await transport.terminateSession().catch(() => undefined);
        await client.close();
      }
    });
    expectClean(during);
    // The calls did reach the upstream. The `modern` connection's server speaks both eras (issue 19),
    // so a 2025-11-25 client's call goes to it as 2025 (a 2026-07-28 client's goes as 2026-07-28).
    expect(echoes(during, 'modern')).toEqual([['v1 to modern', LEGACY]]);
    expect(echoes(during, 'legacy')).toEqual([['v1 to legacy', LEGACY]]);
  });

  /** A 2026-07-28 tools/call of `<via>__echo`, answered 200; the JSON-RPC answer. */
  async function modernEcho(
    id: number,
    via: string,
    message: string,
    meta: Record<string, unknown> = {},
  ): Promise<Record<string, unknown>> {
    const called = await modernPost(
      bob,
      id,
      'tools/call',
      { name: `${via}__echo`, arguments: { message } },
      meta,
    );
    expect(called.status, called.text).toBe(200);
    const answer = messagesOf(called).at(-1);
    expect(answer, called.text).toMatchObject({ id });
    return answer!;
  }

  it('2026-07-28 stateless client (raw HTTP): calls succeed, the upstream sees none of its credentials', async () => {
    const during = await recordedDuring(async () => {
      const listed = await modernPost(bob, 1, 'tools/list');
      expect(listed.status, listed.text).toBe(200);
      const result = messagesOf(listed).at(-1)?.result as { tools?: { name: string }[] } | undefined;
      expect(
        (result?.tools ?? []).map((t) => t.name),
        listed.text,
      ).toEqual(expect.arrayContaining(['modern__echo', 'legacy__echo']));
      const answer = await modernEcho(2, 'modern', 'raw to modern');
      expect(answer.result).toEqual(
        expect.objectContaining({ content: [{ type: 'text', text: 'raw to modern' }] }),
      );
      const bridged = await modernEcho(3, 'legacy', 'raw to legacy');
      expect(bridged.result).toEqual(
        expect.objectContaining({ content: [{ type: 'text', text: 'raw to legacy' }] }),
      );
    });
    expectClean(during);
    expect(echoes(during, 'modern')).toEqual([['raw to modern', MODERN]]);
    expect(echoes(during, 'legacy')).toEqual([['raw to legacy', LEGACY]]);
  });

  // A 2026-07-28 client's call through a legacy-era HTTP connection used to keep the client's own
  // `_meta` envelope, claiming 2026-07-28 in the body while the header said 2025-11-25: a dual-era
  // server (the SDK v2 `createMcpHandler`, as here) refused the mismatch with 400, and the client got
  // -32000 SB_UPSTREAM_UNAVAILABLE. The legacy connection now sends what a 2025 client would.
  it('2026-07-28 client through the legacy-era connection to a dual-era server: the call succeeds, sent as 2025', async () => {
    const during = await recordedDuring(async () => {
      const answer = await modernEcho(4, 'legacy', 'raw to legacy, again', { progressToken: 'p-4' });
      expect(answer.result).toEqual(
        expect.objectContaining({ content: [{ type: 'text', text: 'raw to legacy, again' }] }),
      );
    });
    const calls = during.filter(
      (r) => header(r, 'x-upstream')[0] === 'legacy' && rpcMethod(r) === 'tools/call',
    );
    expect(calls).toHaveLength(1);
    const sent = JSON.parse(calls[0]!.body) as { params: { _meta?: Record<string, unknown> } };
    expect(header(calls[0]!, 'mcp-protocol-version')).toEqual([LEGACY]);
    // No 2026-07-28 envelope member is left; the progress token is kept (renumbered by the gateway).
    expect(Object.keys(sent.params._meta ?? {})).toEqual(['progressToken']);
  });

  it("a client's own switchboard.dev/ _meta members: requests refused with -32602, notifications cleaned; nothing reaches an upstream", async () => {
    // The gateway's `forwardHeaders` member is how its modern endpoint hands Mcp-Param-* headers to
    // a modern upstream; set by a client, it would have set upstream headers unchecked.
    const forgedHeader = 'mcp-param-injected';
    const marker = secret('forged');
    const forged = { 'switchboard.dev/forwardHeaders': { [forgedHeader]: marker } };
    const during = await recordedDuring(async () => {
      for (const [id, via] of [
        [5, 'modern'],
        [6, 'legacy'],
      ] as const) {
        const refused = await modernPost(
          bob,
          id,
          'tools/call',
          { name: `${via}__echo`, arguments: { message: `forged to ${via}` } },
          forged,
        );
        expect(refused.status, refused.text).toBe(400);
        expect(messagesOf(refused)[0]).toMatchObject({
          id,
          error: { code: -32602, message: expect.stringContaining('"switchboard.dev/forwardHeaders"') },
        });
      }
      // A 2025-11-25 session: the same for its request; its notification goes on without the member.
      const session = await initialize(serve.url, {
        headers: { authorization: `Bearer ${alice}`, ...extras },
      });
      const headers = { authorization: `Bearer ${alice}`, ...extras, ...session.headers };
      const call = (id: number, message: string, meta?: Record<string, unknown>) =>
        post(
          serve.url,
          {
            jsonrpc: '2.0',
            id,
            method: 'tools/call',
            params: { name: 'legacy__echo', arguments: { message }, ...(meta ? { _meta: meta } : {}) },
          },
          headers,
        );
      const refused = await call(2, 'forged, legacy session', forged);
      expect(refused.status, refused.text).toBe(400);
      expect(messagesOf(refused)[0]).toMatchObject({ id: 2, error: { code: -32602 } });
      const listChanged = () =>
        recorded().filter((r) => rpcMethod(r) === 'notifications/roots/list_changed').length;
      const notesBefore = listChanged();
      const note = await post(
        serve.url,
        { jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { _meta: forged } },
        headers,
      );
      expect(note.status, note.text).toBe(202);
      // The 202 does not wait for the upstream: it gets the notification a moment later.
      await vi.waitFor(() => expect(listChanged()).toBe(notesBefore + 1), { timeout: 5000 });
      // The session goes on: a clean call is served.
      const served = messagesOf(await call(3, 'clean, legacy session')).at(-1);
      expect(served).toMatchObject({
        id: 3,
        result: { content: [{ type: 'text', text: 'clean, legacy session' }] },
      });
      await send(serve.url, 'DELETE', headers);
    });
    expectClean(during);
    for (const record of during) {
      const where = `${record.method} ${record.path} ${rpcMethod(record) ?? ''}`;
      expect(header(record, forgedHeader), where).toEqual([]);
      expect(record.body, where).not.toContain(marker);
      expect(record.body, where).not.toContain('switchboard.dev');
    }
    // No refused call was sent anywhere; the clean one was.
    expect(echoes(during, 'modern')).toEqual([]);
    expect(echoes(during, 'legacy')).toEqual([['clean, legacy session', LEGACY]]);
    // The notification did reach the session's legacy connection, without the member.
    const notes = during.filter((r) => rpcMethod(r) === 'notifications/roots/list_changed');
    expect(notes.map((r) => [header(r, 'x-upstream')[0], JSON.parse(r.body)])).toEqual([
      ['legacy', { jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: {} }],
    ]);
  });

  // Last, over everything the tests above caused (and what the gateway sent on its own). It makes
  // calls through both upstream connections itself, so that it holds when run alone too.
  it('nothing the upstream received in the whole run (probe and streams too) carries a client credential', async () => {
    for (const [id, via] of [
      [7, 'modern'],
      [8, 'legacy'],
    ] as const) {
      const answer = await modernEcho(id, via, `last, to ${via}`);
      expect(answer.result).toEqual(
        expect.objectContaining({ content: [{ type: 'text', text: `last, to ${via}` }] }),
      );
    }
    const all = recorded();
    expectClean(all);
    // Both upstream connections were used, and the modern one was probed first.
    expect(new Set(all.map((r) => header(r, 'x-upstream')[0]))).toEqual(new Set(['modern', 'legacy']));
    expect(all.some((r) => rpcMethod(r) === 'server/discover')).toBe(true);
  });
});
