/**
 * Issue 21, health and readiness, against the built `switchboard serve`: `GET /ready` follows what
 * the gateway can serve. Two upstreams of the misbehaving fixture (`crash` exits; restarted after
 * a backoff): one `required`, one not. A crash of the one not required leaves the gateway ready but
 * `degraded` while it restarts; a crash of the required one makes it 503, naming the upstream, its
 * state, era, since when and why, and 200 again once the new child is initialized. An audit ledger
 * that fails closed (`audit.minFreeBytes` above the real free space) makes it 503; so does a drain,
 * and a trace store whose writes fail (its data directory on a small tmpfs that fills up; mounting
 * needs root, which CI has: skipped elsewhere), until a write succeeds again.
 * `/health` stays 200 through the upstream failures (liveness only). `/ready` passes the Host guard
 * like every path.
 */
import { rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from './support/cli.js';
import { type RunningServe, startServe } from './support/serve.js';
import { headerOf, initialize, jsonOf, messagesOf, post, send, waitUntil } from './support/sse-client.js';
import { canMountTmpfs, fillFileSystem, mountTmpfs, unmountTmpfs } from './support/tmpfs.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');
const MiB = 1024 * 1024;

interface ReadyBody {
  status: string;
  problems: { check: string; upstream?: string; message: string }[];
  degraded: {
    name: string;
    state: string;
    required: boolean;
    era?: string;
    since?: string;
    lastError?: string;
    restarts: number;
  }[];
  upstreams: { serving: number; total: number };
  ledger: string;
  trace: string;
}

/** Two misbehaving upstreams: `core` (required) and `extra`, each restarted after `delay`. */
function config(delay: string, extra = ''): string {
  const upstream = (name: string, required: boolean) => [
    `  ${name}:`,
    '    transport: stdio',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${JSON.stringify(MISBEHAVING)}]`,
    `    required: ${required}`,
    '    restart:',
    `      initialDelay: ${delay}`,
  ];
  return ['upstreams:', ...upstream('core', true), ...upstream('extra', false), extra].join('\n');
}

async function ready(base: string, headers: Record<string, string> = {}) {
  const response = await send(`${base}/ready`, 'GET', headers);
  return { status: response.status, headers: response.headers, body: jsonOf<ReadyBody>(response) };
}

function call(id: number, name: string) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } };
}

let serve: RunningServe | undefined;
afterEach(async () => {
  await serve?.stop();
  serve = undefined;
});

describe('GET /ready on switchboard serve', () => {
  it('follows an upstream that dies and restarts: degraded for one not required, 503 for a required one, then ready', async () => {
    serve = await startServe({ configYaml: config('2s') });
    const first = await ready(serve.base);
    expect(first.status).toBe(200);
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.body).toMatchObject({
      status: 'ready',
      problems: [],
      degraded: [],
      upstreams: { serving: 2, total: 2 },
      ledger: 'ok',
      trace: 'ok',
    });

    const session = await initialize(serve.url);
    await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, session.headers);
    // The upstream that is not required: still ready (core serves), degraded, extra listed.
    const crashedExtra = Date.now();
    messagesOf(await post(serve.url, call(2, 'extra__crash'), session.headers));
    const degraded = await ready(serve.base);
    expect(degraded.status).toBe(200);
    expect(degraded.body.status).toBe('degraded');
    expect(degraded.body.degraded).toEqual([
      {
        name: 'extra',
        state: 'restarting',
        required: false,
        era: 'legacy',
        since: expect.any(String),
        lastError: expect.stringMatching(/3/),
        restarts: 0,
      },
    ]);
    expect(Date.parse(degraded.body.degraded[0]!.since!)).toBeGreaterThanOrEqual(crashedExtra - 1_000);
    await waitUntil(
      async () => (await ready(serve!.base)).body.status === 'ready',
      20_000,
      'extra to be back',
    );

    // The required upstream: 503 naming it, while /health (liveness) stays 200.
    messagesOf(await post(serve.url, call(3, 'core__crash'), session.headers));
    const down = await ready(serve.base);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe('not_ready');
    expect(down.body.problems).toEqual([
      {
        check: 'upstream',
        upstream: 'core',
        message: expect.stringMatching(/^required upstream core is restarting: /),
      },
    ]);
    expect(down.body.degraded).toMatchObject([
      { name: 'core', state: 'restarting', required: true, era: 'legacy' },
    ]);
    expect((await send(`${serve.base}/health`, 'GET', {})).status).toBe(200);
    await waitUntil(async () => (await ready(serve!.base)).status === 200, 20_000, 'core to be back');
    const back = await ready(serve.base);
    expect(back.body).toMatchObject({ status: 'ready', degraded: [] });
    // And it serves again.
    const echoed = messagesOf(
      await post(
        serve.url,
        {
          jsonrpc: '2.0',
          id: 4,
          method: 'tools/call',
          params: { name: 'core__echo', arguments: { message: 'hi' } },
        },
        session.headers,
      ),
    );
    expect(echoed[0]).toMatchObject({ id: 4, result: { content: [{ text: 'hi' }] } });
  });

  it('follows upstreams with metrics off: the link record does not depend on /metrics', async () => {
    serve = await startServe({ configYaml: config('30s', 'observe:\n  metrics:\n    enabled: false\n') });
    expect((await send(`${serve.base}/metrics`, 'GET', {})).status).toBe(404);
    expect((await ready(serve.base)).body).toMatchObject({ status: 'ready', upstreams: { serving: 2 } });
    const session = await initialize(serve.url);
    await post(serve.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, session.headers);
    messagesOf(await post(serve.url, call(2, 'extra__crash'), session.headers));
    const degraded = await ready(serve.base);
    expect(degraded.status).toBe(200);
    expect(degraded.body.status).toBe('degraded');
    expect(degraded.body.degraded).toMatchObject([
      { name: 'extra', state: 'restarting', required: false, lastError: expect.stringMatching(/3/) },
    ]);
    messagesOf(await post(serve.url, call(3, 'core__crash'), session.headers));
    const down = await ready(serve.base);
    expect(down.status).toBe(503);
    expect(down.body.problems).toMatchObject([
      { check: 'upstreams' },
      { check: 'upstream', upstream: 'core' },
    ]);
  });

  it('is 503 while the audit ledger fails closed (its file system below audit.minFreeBytes)', async () => {
    const dataDir = tempDir('switchboard-ready-ledger-');
    const stats = statfsSync(dataDir);
    const above = stats.bavail * stats.bsize * 2 + 1024 * MiB;
    serve = await startServe({ dataDir, configYaml: config('250ms', `audit:\n  minFreeBytes: ${above}\n`) });
    const answer = await ready(serve.base);
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({
      status: 'not_ready',
      ledger: 'failing_closed',
      degraded: [],
      problems: [{ check: 'ledger', message: expect.stringContaining('(low-space)') }],
    });
    expect((await send(`${serve.base}/health`, 'GET', {})).status).toBe(200);
  });

  it('is 503 while the gateway drains, with Retry-After', async () => {
    serve = await startServe({ configYaml: config('250ms', 'server:\n  drainTimeout: 10s\n') });
    const session = await initialize(serve.url);
    // A slow call in flight keeps the drain going for as long as the test looks.
    const slow = post(
      serve.url,
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'core__slow', arguments: { ms: 3_000 } },
      },
      session.headers,
    );
    await waitUntil(
      async () => {
        const stats = messagesOf(await post(serve!.url, call(9, 'core__stats'), session.headers))[0] as {
          result?: { content?: { text?: string }[] };
        };
        return (
          (JSON.parse(stats.result?.content?.[0]?.text ?? '{}') as { slow?: unknown[] }).slow?.length === 1
        );
      },
      20_000,
      'the slow call to reach the upstream',
    );
    serve.process.child.kill('SIGTERM');
    await waitUntil(async () => (await ready(serve!.base)).status === 503, 10_000, 'the drain to begin');
    const draining = await ready(serve.base);
    expect(draining.body.problems[0]).toMatchObject({ check: 'draining' });
    expect(headerOf(draining, 'retry-after')).toBe('5');
    await slow;
  });

  const canMount = canMountTmpfs();
  it.runIf(canMount)(
    'is 503 while the trace store cannot write (a full file system), and ready again once it can',
    async () => {
      const disk = mountTmpfs('16m') as string;
      try {
        serve = await startServe({
          dataDir: disk,
          configYaml: config('250ms', 'audit:\n  enabled: false\n'),
        });
        expect((await ready(serve.base)).body).toMatchObject({ status: 'ready', trace: 'ok', ledger: 'off' });
        const session = await initialize(serve.url);
        const big = 'x'.repeat(256 * 1024);
        const echo = (id: number) =>
          post(
            serve!.url,
            {
              jsonrpc: '2.0',
              id,
              method: 'tools/call',
              params: { name: 'core__echo', arguments: { message: big } },
            },
            session.headers,
          );
        const filler = fillFileSystem(disk, 0);
        let id = 10;
        // Calls go on being answered (the trace is an observer); their records cannot be written.
        await waitUntil(
          async () => {
            expect((await echo(id++)).status).toBe(200);
            return (await ready(serve!.base)).body.trace === 'failing';
          },
          30_000,
          'the trace store to fail',
          100,
        );
        const failing = await ready(serve.base);
        expect(failing.status).toBe(503);
        expect(failing.body.problems).toEqual([
          { check: 'trace', message: 'the trace store is failing: its last write failed' },
        ]);
        rmSync(filler);
        await waitUntil(
          async () => {
            await echo(id++);
            return (await ready(serve!.base)).status === 200;
          },
          30_000,
          'the trace store to write again',
          200,
        );
        expect((await ready(serve.base)).body).toMatchObject({ status: 'ready', trace: 'ok' });
      } finally {
        await serve?.stop();
        serve = undefined;
        unmountTmpfs(disk);
      }
    },
  );

  it('passes the Host guard like every path: a foreign Host is refused', async () => {
    serve = await startServe({ configYaml: config('250ms') });
    const refused = await send(`${serve.base}/ready`, 'GET', { host: 'evil.example' });
    expect(refused.status).toBe(403);
  });
});
