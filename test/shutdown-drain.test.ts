/**
 * Issue 18, item 8, against the built CLI: a graceful shutdown drains. With a slow tool call in
 * flight (test/fixtures/misbehaving-server.mjs, `slow`), SIGTERM (or, for `switchboard stdio`,
 * stdin closed) lets the call finish and be answered normally when it does so within the drain
 * timeout, and otherwise answers it with -32010 (`SB_SHUTTING_DOWN`) under its own id and cancels
 * it upstream; new sessions are refused with 503 and new requests with -32010 meanwhile; the
 * process exits 0 within the drain timeout and a few seconds; the ledger records what happened. A
 * second signal exits at once. Before the fix, `serve` cut the client off with nothing and
 * `stdio` failed the call at once.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, ROOT, tempDir } from './support/cli.js';
import { type RunningServe, startServe } from './support/serve.js';
import { headerOf, initialize, jsonOf, messagesOf, post, send, waitUntil } from './support/sse-client.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');

type Json = Record<string, unknown>;

/** The records of a ledger directory (every `ledger-*.jsonl`, in order). */
function ledger(dir: string): Json[] {
  return readdirSync(dir)
    .filter((f) => /^ledger-\d+\.jsonl$/.test(f))
    .sort()
    .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n'))
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Json);
}

function call(id: number | string, name: string, args: Json = {}) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

/** The text of a tools/call result. */
function textOf(message: Json | undefined): string {
  const content = (message?.result as { content?: { text?: string }[] } | undefined)?.content;
  return content?.[0]?.text ?? '';
}

/** Resolves with the exit code and how long after `since` the process ended, or rejects after `ms`. */
function exitOf(
  child: { exitCode: number | null; once(event: 'exit', listener: (code: number | null) => void): unknown },
  since: number,
  ms: number,
): Promise<{ code: number | null; afterMs: number }> {
  if (child.exitCode !== null)
    return Promise.resolve({ code: child.exitCode, afterMs: performance.now() - since });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the process did not exit within ${ms} ms`)), ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, afterMs: performance.now() - since });
    });
  });
}

// ------------------------------------------------------------------ serve

describe('switchboard serve: drain on SIGTERM', () => {
  let serve: RunningServe | undefined;
  afterEach(async () => {
    await serve?.stop();
    serve = undefined;
  });

  async function start(drainTimeout: string): Promise<RunningServe> {
    serve = await startServe({
      configYaml: [
        'server:',
        `  drainTimeout: ${drainTimeout}`,
        'upstreams:',
        '  mis:',
        '    transport: stdio',
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: [${JSON.stringify(MISBEHAVING)}]`,
        '',
      ].join('\n'),
      args: ['--log-level', 'info'],
    });
    return serve;
  }

  /** Waits until the upstream has the slow call in progress (so it is in flight at the signal). */
  async function slowInProgress(url: string, headers: Record<string, string>): Promise<void> {
    let n = 100;
    await waitUntil(
      async () => {
        const stats = JSON.parse(textOf(messagesOf(await post(url, call(n++, 'stats'), headers))[0])) as {
          slow: unknown[];
        };
        return stats.slow.length === 1;
      },
      20_000,
      'the slow call to reach the upstream',
    );
  }

  it('a call that finishes within the drain timeout gets its real answer; new work is refused; exit 0', async () => {
    const gw = await start('6s');
    const session = await initialize(gw.url);
    const slow = post(gw.url, call(2, 'slow', { ms: 2_000, tag: 'finished in time' }), session.headers);
    await slowInProgress(gw.url, session.headers);
    const signalled = performance.now();
    gw.process.child.kill('SIGTERM');
    await waitUntil(() => /"msg":"shutting down"/.test(gw.stderr()), 10_000, 'the shutdown to begin');

    // While draining: /health says so, a new session is refused with 503, a new request gets -32010.
    const health = await send(`${gw.base}/health`, 'GET', {});
    expect(health.status).toBe(503);
    expect(jsonOf(health)).toMatchObject({ status: 'draining' });
    const fresh = await post(gw.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'late', version: '1' } },
    });
    expect(fresh.status, fresh.text).toBe(503);
    expect(headerOf(fresh, 'retry-after')).toBe('5');
    expect(jsonOf(fresh)).toMatchObject({ error: { code: -32010, data: { code: 'SB_SHUTTING_DOWN' } } });
    const late = messagesOf(await post(gw.url, call(3, 'echo', { message: 'too late' }), session.headers));
    expect(late[0]).toMatchObject({ id: 3, error: { code: -32010, data: { code: 'SB_SHUTTING_DOWN' } } });

    const answer = messagesOf(await slow).find((m) => m.id === 2);
    expect(textOf(answer)).toBe('finished in time');
    const { code, afterMs } = await exitOf(gw.process.child, signalled, 30_000);
    expect(code).toBe(0);
    expect(afterMs).toBeLessThan(6_000 + 10_000);
    const records = ledger(join(gw.dataDir, 'audit'));
    expect(records.find((r) => r.target === 'slow')).toMatchObject({ decision: 'allowed' });
    expect(records.find((r) => r.target === 'echo')).toMatchObject({ decision: 'error' });
  });

  it('a call still running at the drain timeout is answered with -32010 and cancelled upstream; exit 0', async () => {
    const gw = await start('1s');
    const session = await initialize(gw.url);
    const slow = post(gw.url, call(2, 'slow', { ms: 120_000 }), session.headers);
    await slowInProgress(gw.url, session.headers);
    const signalled = performance.now();
    gw.process.child.kill('SIGTERM');
    const answer = messagesOf(await slow).find((m) => m.id === 2);
    expect(answer).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32010, data: { code: 'SB_SHUTTING_DOWN' } },
    });
    const { code, afterMs } = await exitOf(gw.process.child, signalled, 30_000);
    expect(code).toBe(0);
    expect(afterMs).toBeLessThan(1_000 + 10_000);
    // The upstream was told (the fixture logs each cancellation on its stderr, which the gateway logs).
    expect(gw.stderr()).toMatch(/cancelled \d+/);
    const record = ledger(join(gw.dataDir, 'audit')).find((r) => r.target === 'slow');
    expect(record).toMatchObject({ decision: 'error' });
    expect(JSON.stringify(record)).toContain('shut down');
  });

  it('a second signal exits at once', async () => {
    const gw = await start('60s');
    const session = await initialize(gw.url);
    void post(gw.url, call(2, 'slow', { ms: 120_000 }), session.headers).catch(() => undefined);
    await slowInProgress(gw.url, session.headers);
    gw.process.child.kill('SIGTERM');
    await waitUntil(() => /"msg":"shutting down"/.test(gw.stderr()), 10_000, 'the shutdown to begin');
    const again = performance.now();
    gw.process.child.kill('SIGTERM');
    const { code, afterMs } = await exitOf(gw.process.child, again, 30_000);
    expect(code).toBe(128 + 15);
    expect(afterMs).toBeLessThan(10_000);
  });
});

// ------------------------------------------------------------------ stdio

/** `switchboard stdio -- node misbehaving-server.mjs`, driven line by line. */
class StdioGateway {
  readonly dataDir = tempDir('switchboard-drain-');
  readonly child: ChildProcessWithoutNullStreams;
  readonly out: Json[] = [];
  stderr = '';
  #pending = '';

  constructor(drainTimeoutMs: number) {
    this.child = spawn(
      process.execPath,
      [
        CLI,
        'stdio',
        '--data-dir',
        this.dataDir,
        '--name',
        'misbehaving',
        '--drain-timeout',
        String(drainTimeoutMs),
        '--',
        process.execPath,
        MISBEHAVING,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.#pending += chunk;
      const lines = this.#pending.split('\n');
      this.#pending = lines.pop() ?? '';
      for (const line of lines) if (line.trim().length > 0) this.out.push(JSON.parse(line) as Json);
    });
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.child.stdin.on('error', () => {});
  }

  send(message: unknown): void {
    this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  async answer(id: unknown, timeoutMs = 30_000): Promise<Json> {
    let found: Json | undefined;
    await waitUntil(
      () => {
        found = this.out.find((m) => m.id === id && !('method' in m));
        return found !== undefined;
      },
      timeoutMs,
      `the answer to ${JSON.stringify(id)}`,
    );
    return found!;
  }

  async initialize(): Promise<void> {
    this.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'drain', version: '1' },
      },
    });
    await this.answer('init');
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** Waits until the upstream has the slow call in progress. */
  async slowInProgress(): Promise<void> {
    let n = 0;
    await waitUntil(
      async () => {
        const id = `stats-${n++}`;
        this.send(call(id, 'stats'));
        const stats = JSON.parse(textOf(await this.answer(id))) as { slow: unknown[] };
        return stats.slow.length === 1;
      },
      20_000,
      'the slow call to reach the upstream',
    );
  }

  ledger(): Json[] {
    return ledger(join(this.dataDir, 'audit', 'stdio', 'misbehaving'));
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await new Promise((resolve) => this.child.once('exit', resolve));
  }
}

describe('switchboard stdio: drain on SIGTERM and stdin EOF', () => {
  let gw: StdioGateway | undefined;
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });

  it('SIGTERM: the call in flight finishes and is answered; a new request gets -32010; exit 0', async () => {
    gw = new StdioGateway(6_000);
    await gw.initialize();
    gw.send(call('slow', 'slow', { ms: 2_000, tag: 'finished in time' }));
    await gw.slowInProgress();
    const signalled = performance.now();
    gw.child.kill('SIGTERM');
    await waitUntil(() => /"msg":"shutting down"/.test(gw!.stderr), 10_000, 'the shutdown to begin');
    gw.send({ jsonrpc: '2.0', id: 'late', method: 'ping' });
    expect(await gw.answer('late')).toMatchObject({
      error: { code: -32010, data: { code: 'SB_SHUTTING_DOWN' } },
    });
    expect(textOf(await gw.answer('slow'))).toBe('finished in time');
    const { code, afterMs } = await exitOf(gw.child, signalled, 30_000);
    expect(code).toBe(0);
    expect(afterMs).toBeLessThan(6_000 + 10_000);
    expect(gw.ledger().find((r) => r.target === 'slow')).toMatchObject({ decision: 'allowed' });
  });

  it('SIGTERM: a call still running at the drain timeout gets -32010 with its id; exit 0', async () => {
    gw = new StdioGateway(1_000);
    await gw.initialize();
    gw.send(call('slow', 'slow', { ms: 120_000 }));
    await gw.slowInProgress();
    const signalled = performance.now();
    gw.child.kill('SIGTERM');
    expect(await gw.answer('slow')).toMatchObject({
      jsonrpc: '2.0',
      id: 'slow',
      error: { code: -32010, data: { code: 'SB_SHUTTING_DOWN' } },
    });
    const { code, afterMs } = await exitOf(gw.child, signalled, 30_000);
    expect(code).toBe(0);
    expect(afterMs).toBeLessThan(1_000 + 10_000);
    expect(gw.stderr).toMatch(/cancelled \d+/);
    expect(gw.ledger().find((r) => r.target === 'slow')).toMatchObject({ decision: 'error' });
  });

  it('stdin EOF: the call in flight finishes and is answered before the gateway exits 0', async () => {
    gw = new StdioGateway(6_000);
    await gw.initialize();
    gw.send(call('slow', 'slow', { ms: 2_000, tag: 'finished in time' }));
    await gw.slowInProgress();
    const closed = performance.now();
    gw.child.stdin.end();
    expect(textOf(await gw.answer('slow'))).toBe('finished in time');
    const { code, afterMs } = await exitOf(gw.child, closed, 30_000);
    expect(code).toBe(0);
    expect(afterMs).toBeLessThan(6_000 + 10_000);
  });

  it('a second signal exits at once', async () => {
    gw = new StdioGateway(60_000);
    await gw.initialize();
    gw.send(call('slow', 'slow', { ms: 120_000 }));
    await gw.slowInProgress();
    gw.child.kill('SIGINT');
    await waitUntil(() => /"msg":"shutting down"/.test(gw!.stderr), 10_000, 'the shutdown to begin');
    const again = performance.now();
    gw.child.kill('SIGINT');
    const { code, afterMs } = await exitOf(gw.child, again, 30_000);
    expect(code).toBe(128 + 2);
    expect(afterMs).toBeLessThan(10_000);
  });
});
