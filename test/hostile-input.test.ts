/**
 * The hostile-input suite (issue 18): fast-check throws generated bodies and headers at a live
 * `switchboard serve` (every endpoint, both eras, with and without a session, and the 2024-11-05
 * HTTP+SSE `/messages` endpoints, whose answers come down a session's stream) and at a live
 * `switchboard stdio`: nesting from 2 to 20,000 levels, bodies above the size limit, every JSON
 * type as an id, integers above 2^53, duplicate ids within batches, responses and notifications
 * mixed into batches, unicode and lone surrogates, hostile Host and Origin values. Throughout:
 *
 * - the process lives;
 * - `/health` answers within a second (a probe on a connection of its own, every 100 ms);
 * - every request with a readable id gets exactly one answer with that id (or, when the whole
 *   payload is refused, one HTTP error for it), and nothing else is answered;
 * - a numeric id JSON cannot carry exactly (above 2^53, `1.0`, `-0`, `1e400`) is refused under id
 *   null, never echoed changed;
 * - no answer is a 500 (an internal error is a defect: every refusal has its precise status).
 *
 * The suite is bounded in time (a fixed number of runs) and uses loopback only.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_SERVER, ROOT } from './support/cli.js';
import {
  Failures,
  headersFor,
  hostileHosts,
  MODERN,
  problemsWith,
  STATUSES,
  send,
  targetsOn,
  withModernMeta,
} from './support/hostile-http.js';
import { answeredIds, idKey, PayloadRenderer, payloads } from './support/hostile-messages.js';
import { HealthWatch, isAlive, rssBytes } from './support/liveness.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { ACCEPT_BOTH, initialize, messagesOf, openSse, type SseStream } from './support/sse-client.js';
import { StdioAnswers } from './support/stdio-answers.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');
const MAX_BODY = 256 * 1024;
const RUNS = 1000;

/** The MCP endpoints, whose every request is owed a JSON-RPC answer. */
const MCP_ENDPOINTS = ['/mcp', '/servers/echo/mcp', '/servers/odd/mcp'] as const;
/** The other paths a body can be POSTed to: a clear refusal each, never a 500. */
const OTHER_ENDPOINTS = [
  '/messages',
  '/servers/echo/messages',
  '/sse',
  '/approvals',
  '/approvals/01HX',
  '/health',
  '/ready',
  '/metrics',
  '/meup',
  '/servers/nope/mcp',
  '/x',
] as const;
const isMcpEndpoint = (path: string): boolean => (MCP_ENDPOINTS as readonly string[]).includes(path);
const targets = targetsOn(MCP_ENDPOINTS, OTHER_ENDPOINTS);

describe('hostile input: switchboard serve', () => {
  let gw: RunningServe;
  let health: HealthWatch;
  /** Session headers per endpoint and era. */
  const sessions = new Map<string, Record<string, string>>();
  const renderer = new PayloadRenderer();

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER }, odd: { script: MISBEHAVING } },
        `server:\n  maxBodyBytes: ${MAX_BODY}\npolicy:\n  rules:\n    - { upstream: odd, tool: oversized, tier: T2 }\n`,
      ),
    });
    for (const endpoint of ['/mcp', '/servers/echo/mcp', '/servers/odd/mcp'])
      for (const version of ['2025-03-26', '2025-11-25']) {
        const session = await initialize(`${gw.base}${endpoint}`, { version });
        sessions.set(`${endpoint} ${version}`, session.headers);
      }
    health = new HealthWatch(gw.base);
  });

  afterAll(async () => {
    await health?.stop();
    await gw?.stop();
  });

  it('answers every generated body on every endpoint exactly once, never with a 500, and stays responsive', async () => {
    const failures = new Failures();
    await fc.assert(
      fc.asyncProperty(payloads, targets, async (shape, target) => {
        if (failures.full) return;
        const payload = renderer.render(shape);
        const body = target.era === MODERN && !payload.batch ? withModernMeta(payload.text) : payload.text;
        const response = await send(
          `${gw.base}${target.endpoint}`,
          headersFor(target, payload, sessions),
          body,
        );
        const problems = isMcpEndpoint(target.endpoint)
          ? problemsWith(payload, response)
          : STATUSES.has(response.status) && response.status !== 200 && response.status !== 202
            ? []
            : [`status ${response.status} on ${target.endpoint}`];
        for (const problem of problems)
          failures.add(
            problem,
            `${target.endpoint} ${target.era} ${body.slice(0, 200)} -> ${response.status} ${response.text.slice(0, 200)}`,
          );
        expect(isAlive(gw.process.child.pid!)).toBe(true);
      }),
      { numRuns: RUNS },
    );
    expect(failures.report()).toBe('');
  }, 600_000);

  /** A 2024-11-05 session: its stream, and the URL its `endpoint` event named, initialized. */
  async function legacySseSession(path: string): Promise<{ stream: SseStream; postUrl: string }> {
    const stream = await openSse(`${gw.base}${path}`, 'GET', {});
    const endpoint = await stream.waitFor((e) => e.type === 'endpoint');
    const postUrl = new URL(endpoint.data, `${gw.base}${path}`).href;
    const headers = { 'content-type': 'application/json' };
    await send(
      postUrl,
      headers,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'h', version: '1' } },
      }),
    );
    await stream.waitFor((_e, m) => m?.id === 'init');
    await send(postUrl, headers, '{"jsonrpc":"2.0","method":"notifications/initialized"}');
    return { stream, postUrl };
  }

  it('answers every generated body on the 2024-11-05 /messages endpoints exactly once, down the stream, never with a 500', async () => {
    const failures = new Failures();
    const sse = new Map<string, { stream: SseStream; postUrl: string }>();
    try {
      await fc.assert(
        fc.asyncProperty(payloads, fc.constantFrom('/sse', '/servers/odd/sse'), async (shape, path) => {
          if (failures.full) return;
          let session = sse.get(path);
          if (session === undefined || session.stream.ended) {
            session = await legacySseSession(path);
            sse.set(path, session);
          }
          const payload = renderer.render(shape);
          const before = session.stream.messages().length;
          const response = await send(session.postUrl, { 'content-type': 'application/json' }, payload.text);
          let problems: string[];
          if (response.status !== 202) problems = problemsWith(payload, response);
          else {
            // Each request owed an answer gets it on the stream, once; nothing else is answered.
            const owed = new Map<string, number>();
            for (const id of payload.expected) owed.set(idKey(id), (owed.get(idKey(id)) ?? 0) + 1);
            const counts = (): Map<string, number> => {
              const got = new Map<string, number>();
              for (const key of answeredIds(session!.stream.messages().slice(before)))
                got.set(key, (got.get(key) ?? 0) + 1);
              return got;
            };
            const complete = (): boolean =>
              [...owed].every(([key, n]) => (counts().get(key) ?? 0) >= n) || session!.stream.ended;
            const deadline = Date.now() + 15_000;
            while (!complete() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
            problems = [];
            const got = counts();
            for (const [key, n] of owed) {
              const answered = got.get(key) ?? 0;
              if (key === 'null' ? answered < n : answered !== n)
                problems.push(
                  `id ${key.slice(0, 60)}: ${answered} answer(s) on the stream for ${n} request(s)`,
                );
            }
            for (const [key, n] of got)
              if (key !== 'null' && !owed.has(key) && key !== '"init"')
                problems.push(`${n} answer(s) for id ${key.slice(0, 60)} nobody asked`);
          }
          for (const problem of problems)
            failures.add(
              problem,
              `${path} ${payload.text.slice(0, 200)} -> ${response.status} ${response.text.slice(0, 200)}`,
            );
          expect(isAlive(gw.process.child.pid!)).toBe(true);
        }),
        { numRuns: RUNS / 4 },
      );
    } finally {
      for (const session of sse.values()) session.stream.abort();
    }
    expect(failures.report()).toBe('');
  }, 600_000);

  it('keeps answering requests well-formed after the barrage, with the ids it was given', async () => {
    const url = `${gw.base}/mcp`;
    const headers = {
      'content-type': 'application/json',
      accept: ACCEPT_BOTH,
      ...sessions.get('/mcp 2025-11-25'),
    };
    const response = await send(
      url,
      headers,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'after',
        method: 'tools/call',
        params: { name: 'echo__echo', arguments: { message: 'still here' } },
      }),
    );
    expect(response.status, response.text).toBe(200);
    const [answer] = messagesOf(response);
    expect(answer?.id).toBe('after');
    expect(JSON.stringify(answer?.result)).toContain('still here');
  });

  it('refuses every hostile Host and Origin on every endpoint, and admits the loopback ones', async () => {
    const hostile = hostileHosts;
    const endpoints = [
      '/mcp',
      '/servers/echo/mcp',
      '/sse',
      '/messages',
      '/servers/echo/sse',
      '/approvals',
      '/approvals/abc',
      '/meup',
      '/health',
      '/ready',
      '/metrics',
      '/nowhere',
    ];
    await fc.assert(
      fc.asyncProperty(
        hostile,
        fc.constantFrom(...endpoints),
        fc.boolean(),
        async (host, endpoint, asOrigin) => {
          const port = new URL(gw.base).port;
          const headers: Record<string, string> = asOrigin
            ? { origin: `http://${host}:${port}` }
            : { host: `${host}:${port}` };
          const response = await request(`${gw.base}${endpoint}`, {
            method:
              endpoint.startsWith('/mcp') || endpoint.endsWith('/mcp') || endpoint === '/messages'
                ? 'POST'
                : 'GET',
            headers: { 'content-type': 'application/json', accept: ACCEPT_BOTH, ...headers },
            ...(endpoint.startsWith('/mcp') || endpoint.startsWith('/servers')
              ? { body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }
              : {}),
            headersTimeout: 30_000,
          });
          await response.body.text();
          // /health is public, but not to a rebinding page: every path is behind the Host guard.
          expect(response.statusCode, `${host} on ${endpoint}`).toBe(403);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('stayed alive, responsive and bounded in memory throughout', async () => {
    const report = await health.stop();
    health = new HealthWatch(gw.base);
    expect(report.samples).toBeGreaterThan(0);
    expect(report.failures).toEqual([]);
    expect(isAlive(gw.process.child.pid!)).toBe(true);
    expect(rssBytes(gw.process.child.pid!)).toBeLessThan(600 * 1024 * 1024);
  });
});

describe('hostile input: switchboard stdio', () => {
  let gw: StdioAnswers;
  const renderer = new PayloadRenderer();

  beforeAll(async () => {
    gw = new StdioAnswers([process.execPath, MISBEHAVING], { args: ['--name', 'odd'] });
    // 2025-03-26, the revision with batches, so that duplicate ids within a batch reach the router.
    const init = await gw.request(0, 'initialize', {
      protocolVersion: '2025-03-26',
      capabilities: {},
      clientInfo: { name: 'hostile', version: '1' },
    });
    expect(init.result).toBeDefined();
    gw.write('{"jsonrpc":"2.0","method":"notifications/initialized"}');
  });

  afterAll(async () => {
    await gw?.stop();
  });

  it('answers every generated line exactly once and never writes anything but JSON', async () => {
    let sentinel = 1_000_000_000;
    let stuck = false;
    const failures = new Failures();
    await fc.assert(
      fc.asyncProperty(payloads, async (shape) => {
        // A gateway that stopped answering fails once, not once per remaining run.
        if (failures.full || gw.exit !== undefined || stuck) return;
        // One line per payload: a line break inside would make two payloads of one.
        const payload = renderer.render(shape);
        const text = payload.text.replace(/[\r\n]/g, ' ');
        const from = gw.lines.length;
        gw.write(text);
        // A ping after it: stdio answers in order of completion, so wait for both the owed answers
        // and the ping, then check that nothing more than owed came for those ids.
        const ping = sentinel++;
        gw.write(`{"jsonrpc":"2.0","id":${ping},"method":"ping"}`);
        const owed = new Map<string, number>();
        for (const id of payload.expected) owed.set(idKey(id), (owed.get(idKey(id)) ?? 0) + 1);
        const answeredAll = () => {
          const answers = gw.answersSince(from);
          if (!answers.some((a) => a.key === String(ping))) return false;
          for (const [key, n] of owed) if (answers.filter((a) => a.key === key).length < n) return false;
          return true;
        };
        try {
          await gw.waitFor(
            answeredAll,
            20_000,
            `answers to ${text.slice(0, 100)} (owed ${[...owed.keys()].join(' ')})`,
          );
        } catch (error) {
          failures.add(String(error).slice(0, 300), text.slice(0, 200));
          stuck = true;
          return;
        }
        const answers = gw.answersSince(from).filter((a) => a.key !== String(ping));
        for (const [key, n] of owed) {
          const got = answers.filter((a) => a.key === key).length;
          if (key === 'null' ? got < n : got !== n)
            failures.add(`id ${key.slice(0, 60)}: ${got} answer(s) for ${n} request(s)`, text.slice(0, 200));
        }
        for (const a of answers)
          if (a.key !== 'null' && !owed.has(a.key))
            failures.add(`an answer for id ${a.key.slice(0, 60)} nobody asked`, text.slice(0, 200));
        for (const line of gw.lines.slice(from))
          if (line.value === undefined)
            failures.add(
              `stdout carried a line that is not JSON: ${line.raw.slice(0, 100)}`,
              text.slice(0, 200),
            );
      }),
      { numRuns: RUNS },
    );
    expect(failures.report()).toBe('');
    expect(gw.exit).toBeUndefined();
    expect(rssBytes(gw.pid)).toBeLessThan(600 * 1024 * 1024);
  }, 600_000);
});
