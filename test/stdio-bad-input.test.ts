/**
 * `switchboard stdio` (the built CLI) against bad input from both sides. The client is this test,
 * writing raw JSON lines to the gateway's stdin (no SDK, so every byte is ours); the server is
 * test/fixtures/misbehaving-server.mjs, which misbehaves on request. Each case checks that the
 * client gets a clear error or the right answer and that the gateway stays up (or, for a crash,
 * exits as documented), and the shutdown cases check that the trace on disk is complete.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteTraceStore } from '../src/trace/sqlite-trace-store.js';
import type { TraceRecord } from '../src/trace/types.js';
import { CLI, ROOT, tempDir } from './support/cli.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');

type Json = Record<string, unknown>;
interface RpcError {
  code: number;
  message: string;
  data?: Json;
}
interface Response {
  jsonrpc: string;
  id: unknown;
  result?: Json;
  error?: RpcError;
}
interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** One `switchboard stdio` process, driven line by line. */
class Gateway {
  readonly dataDir = tempDir('switchboard-bad-input-');
  readonly child: ChildProcessWithoutNullStreams;
  /** Every stdout line, parsed (a line that is not JSON fails the test that reads it). */
  readonly out: unknown[] = [];
  readonly rawOut: string[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #pending = '';
  #waiters: (() => void)[] = [];

  constructor(options: readonly string[] = []) {
    this.child = spawn(
      process.execPath,
      [
        CLI,
        'stdio',
        '--data-dir',
        this.dataDir,
        '--name',
        'misbehaving',
        ...options,
        '--',
        process.execPath,
        MISBEHAVING,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    // Decode as a stream: a multi-byte character may be split across chunks.
    this.child.stdout.setEncoding('utf8');
    this.child.stderr.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.#pending += chunk;
      const lines = this.#pending.split('\n');
      this.#pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim().length === 0) continue;
        this.rawOut.push(line);
        this.out.push(JSON.parse(line));
      }
      this.#wake();
    });
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
      this.#wake();
    });
    // A gateway that is gone must not turn a write into an unhandled EPIPE.
    this.child.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.#wake();
        resolve({ code, signal });
      });
    });
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /**
   * Resolves when `check` returns something other than undefined (woken by every output of the
   * gateway); rejects after `timeoutMs`. The timeout is only a safety net, so it is generous: on a
   * loaded machine (CI runs two integration files at once on two cores) a gateway and its server
   * have taken more than 10 s just to start.
   */
  async until<T>(what: string, check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = check();
      if (value !== undefined) return value;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}\nstderr:\n${this.stderr.slice(-4000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  writeLine(text: string): void {
    this.child.stdin.write(`${text}\n`);
  }

  send(message: unknown): void {
    this.writeLine(JSON.stringify(message));
  }

  /** The responses (not requests) with exactly this id: `1` and `"1"` differ. */
  responsesTo(id: unknown): Response[] {
    return this.out.filter((m): m is Response => isObject(m) && !('method' in m) && Object.is(m.id, id));
  }

  response(id: unknown, timeoutMs?: number): Promise<Response> {
    return this.until(
      `the response to ${JSON.stringify(id).slice(0, 40)}`,
      () => this.responsesTo(id)[0],
      timeoutMs,
    );
  }

  request(id: unknown, method: string, params?: Json, timeoutMs?: number): Promise<Response> {
    this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    return this.response(id, timeoutMs);
  }

  callTool(id: unknown, name: string, args: Json = {}, timeoutMs?: number): Promise<Response> {
    return this.request(id, 'tools/call', { name, arguments: args }, timeoutMs);
  }

  async initialize(protocolVersion = '2025-06-18'): Promise<Response> {
    const answer = await this.request('init', 'initialize', {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: 'raw-client', version: '0.0.1' },
    });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return answer;
  }

  /** The gateway's own log lines (pino JSON on stderr). */
  logs(): LogLine[] {
    return this.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  }

  log(what: string, match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine> {
    return this.until(`a log line: ${what}`, () => this.logs().find(match), timeoutMs);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }

  /** The trace this gateway wrote: its one session and the records in order. */
  trace(): { key: string; endedAt: number | undefined; records: TraceRecord[] } {
    const store = new SqliteTraceStore(join(this.dataDir, 'trace.db'), { readonly: true });
    try {
      const sessions = store.sessions();
      expect(sessions).toHaveLength(1);
      const session = sessions[0]!;
      return { key: session.key, endedAt: session.endedAt, records: store.session(session.key) };
    } finally {
      store.close();
    }
  }
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of a tools/call result. */
function textOf(response: Response): string {
  const content = response.result?.content as { type: string; text: string }[] | undefined;
  return content?.[0]?.text ?? '';
}

const stats = async (gw: Gateway, id: string) =>
  JSON.parse(textOf(await gw.callTool(id, 'stats'))) as {
    pid: number;
    initializes: number;
    initialized: number;
    clientInfo: Json | null;
    protocolVersion: string | null;
    cancelled: unknown[];
    slow: unknown[];
  };

/**
 * Resolves once the server holds a `slow` call in progress, i.e. the request went through the
 * gateway: a test that then cancels it, crashes the server or shuts the gateway down needs it there.
 * (A pause of 100 ms used to stand for this, which a loaded machine does not keep.)
 */
async function slowInProgress(gw: Gateway): Promise<void> {
  for (let poll = 0; ; poll++) {
    if ((await stats(gw, `slow-in-progress-${poll}`)).slow.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function alive(gw: Gateway, id: string): Promise<void> {
  expect(await gw.request(id, 'ping')).toEqual({ jsonrpc: '2.0', id, result: {} });
}

describe('switchboard stdio: bad input from the client', () => {
  let gw: Gateway;

  beforeAll(async () => {
    gw = new Gateway();
    const init = await gw.initialize();
    expect(init.result?.serverInfo).toEqual({ name: 'misbehaving-server', version: '1.0.0' });
  });

  afterAll(async () => {
    await gw.stop();
  });

  it('drops malformed JSON, logs it, and stays up', async () => {
    const before = gw.out.length;
    gw.writeLine('{"jsonrpc":"2.0","id":1,');
    gw.writeLine('not json at all');
    gw.writeLine('\u0000\u0001 binary junk \u00ff');
    await gw.until('three warnings', () =>
      gw.logs().filter((l) => l.msg === 'unusable input from the client; dropped').length >= 3
        ? true
        : undefined,
    );
    await alive(gw, 'after-malformed');
    // Nothing was answered for the unreadable lines.
    expect(gw.out.slice(before).filter((m) => !(isObject(m) && m.id === 'after-malformed'))).toEqual([]);
    expect(gw.logs().filter((l) => l.msg === 'unusable input from the client; dropped')[0]?.level).toBe(40);
  });

  it('answers an invalid request whose id is readable with -32600 for that id', async () => {
    gw.writeLine('{"jsonrpc":"1.0","id":"v1","method":"ping"}');
    const answer = await gw.response('v1');
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 'v1',
      error: { code: -32600, message: 'Invalid Request: "jsonrpc" must be "2.0", got "1.0"' },
    });
    await alive(gw, 'after-invalid');
  });

  it('answers wrong types: method a number, params a string, (with -32600), and survives id null', async () => {
    gw.writeLine('{"jsonrpc":"2.0","id":21,"method":42}');
    gw.writeLine('{"jsonrpc":"2.0","id":22,"method":"tools/list","params":"a string"}');
    gw.writeLine('{"jsonrpc":"2.0","id":23,"method":""}');
    expect((await gw.response(21)).error).toEqual({
      code: -32600,
      message: 'Invalid Request: "method" must be a string, got a number',
    });
    expect((await gw.response(22)).error).toEqual({
      code: -32600,
      message: 'Invalid Request: "params" must be an object or an array, got a string',
    });
    expect((await gw.response(23)).error?.code).toBe(-32600);
    // An id that is not an id cannot be echoed: logged and dropped, and the gateway goes on.
    gw.writeLine('{"jsonrpc":"2.0","id":null,"method":"ping"}');
    gw.writeLine('{"jsonrpc":"2.0","id":{"nested":true},"method":"ping"}');
    await gw.log(
      'the dropped messages',
      (l) =>
        /without a readable id/.test(l.msg) &&
        /"id" must be a string or a number, got an object/.test(String(l.error)),
    );
    await alive(gw, 'after-types');
  });

  it('echoes a 100 KB string id exactly', async () => {
    const id = `id-${'é😀x'.repeat(25_000)}`;
    const answer = await gw.request(id, 'ping');
    expect(answer.id).toBe(id);
    expect(answer.result).toEqual({});
  });

  it('keeps 1 and "1" apart while both are in flight, and echoes odd ids as they were', async () => {
    gw.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 600, tag: 'the number' } },
    });
    gw.send({
      jsonrpc: '2.0',
      id: '1',
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 100, tag: 'the string' } },
    });
    const [number, string] = await Promise.all([gw.response(1), gw.response('1')]);
    expect(textOf(number)).toBe('the number');
    expect(textOf(string)).toBe('the string');
    expect(gw.responsesTo(1)).toHaveLength(1);
    expect(gw.responsesTo('1')).toHaveLength(1);
    for (const odd of [-7, 1.5, 1e300, 0, '', 'line\nbreak', '__proto__', '\u2028']) {
      const answer = await gw.request(odd, 'ping');
      expect(answer.result).toEqual({});
    }
  });

  it('refuses a second request with an id already in flight', async () => {
    gw.send({
      jsonrpc: '2.0',
      id: 'dup',
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 400, tag: 'first' } },
    });
    gw.send({ jsonrpc: '2.0', id: 'dup', method: 'ping' });
    const first = await gw.response('dup');
    expect(first.error?.code).toBe(-32600);
    await gw.until('the real answer', () => (gw.responsesTo('dup').length === 2 ? true : undefined));
    expect(textOf(gw.responsesTo('dup')[1]!)).toBe('first');
  });

  it('logs a client response to an id nobody asked, and stays up', async () => {
    gw.send({ jsonrpc: '2.0', id: 424_242, result: { nobody: 'asked' } });
    gw.send({ jsonrpc: '2.0', id: 'x', error: { code: 1, message: 'unsolicited' } });
    await gw.until('two orphan warnings', () =>
      gw.logs().filter((l) => l.msg === 'a client response matches no server request in flight; dropped')
        .length === 2
        ? true
        : undefined,
    );
    await alive(gw, 'after-orphan');
  });

  it('refuses a batch (the negotiated revision is 2025-06-18) and stays up', async () => {
    gw.writeLine('[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"ping"}]');
    const warning = await gw.log('the refused batch', (l) => /batches are not allowed/.test(String(l.error)));
    expect(warning.error).toMatch(/in MCP revision 2025-06-18/);
    await alive(gw, 'after-batch');
    // The requests inside were not forwarded.
    expect(gw.responsesTo('b1').filter((r) => r.result !== undefined)).toEqual([]);
  });
});

describe('switchboard stdio: a misbehaving server', () => {
  let gw: Gateway;

  beforeAll(async () => {
    gw = new Gateway();
    await gw.initialize();
  });

  afterAll(async () => {
    await gw.stop();
  });

  it('lists its tools through the gateway', async () => {
    const answer = await gw.request('list', 'tools/list');
    expect((answer.result!.tools as { name: string }[]).map((t) => t.name)).toContain('invalid-response');
  });

  it('garbage: the non-JSON line is logged and dropped; the answer that follows gets through', async () => {
    const answer = await gw.callTool('g', 'garbage');
    expect(textOf(answer)).toBe('after garbage');
    const warning = await gw.log(
      'the unreadable line',
      (l) => l.msg === 'unreadable message from upstream; dropped',
    );
    expect(warning.upstream).toBe('misbehaving');
  });

  it('invalid-response: the client gets a clear -32603 for its id', async () => {
    const answer = await gw.callTool('inv', 'invalid-response');
    expect(answer.id).toBe('inv');
    expect(answer.result).toBeUndefined();
    expect(answer.error).toMatchObject({
      code: -32603,
      data: { code: 'SB_UPSTREAM_PROTOCOL', upstream: 'misbehaving' },
    });
    expect(answer.error?.message).toMatch(/upstream misbehaving sent an invalid response/);
    await alive(gw, 'after-invalid-response');
  });

  it('orphan: the response to an id nobody asked is logged and dropped; the real answer gets through', async () => {
    const answer = await gw.callTool('orph', 'orphan', { orphanId: 555_555 });
    expect(textOf(answer)).toBe('after orphan');
    const warning = await gw.log(
      'the orphan',
      (l) => l.msg === 'an upstream response matches no request in flight; dropped',
    );
    expect(warning.id).toBe(555_555);
    // The client never saw it.
    expect(gw.responsesTo(555_555)).toEqual([]);
  });

  it("stderr: the server's lines go to the gateway's log as info, and the answer gets through", async () => {
    const answer = await gw.callTool('err', 'stderr', {
      lines: ['warning: disk almost full', 'ERROR: not really an error'],
    });
    expect(textOf(answer)).toBe('after stderr');
    const first = await gw.log('the first stderr line', (l) => l.msg === 'warning: disk almost full');
    const second = await gw.log('the second stderr line', (l) => l.msg === 'ERROR: not really an error');
    for (const line of [first, second]) {
      expect(line).toMatchObject({ level: 30, upstream: 'misbehaving', stream: 'stderr' });
    }
  });

  it('slow: the answer comes when the server sends it', async () => {
    const started = Date.now();
    const answer = await gw.callTool('slow-1', 'slow', { ms: 300, tag: 'done' });
    expect(textOf(answer)).toBe('done');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('slow, cancelled: the cancellation reaches the server, which stops; the client gets nothing more', async () => {
    gw.send({
      jsonrpc: '2.0',
      id: 'to-cancel',
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 1500, tag: 'too late' } },
    });
    await slowInProgress(gw);
    gw.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'to-cancel', reason: 'changed my mind' },
    });
    const line = await gw.log(
      'the server reporting the cancellation',
      (l) => l.stream === 'stderr' && l.msg.startsWith('cancelled '),
    );
    // The server was told the id it knows the request by (the gateway's upstream id), a number.
    expect(Number.isInteger(JSON.parse(line.msg.slice('cancelled '.length)))).toBe(true);
    const after = await stats(gw, 'stats-after-cancel');
    expect(after.cancelled).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1700));
    expect(gw.responsesTo('to-cancel')).toEqual([]);
  });
});

describe('switchboard stdio: size limits', () => {
  let gw: Gateway;

  beforeAll(async () => {
    gw = new Gateway(['--max-message-bytes', '4096']);
    await gw.initialize();
  });

  afterAll(async () => {
    await gw.stop();
  });

  it('answers an oversized client request with -32006 for its id; the next message works', async () => {
    const answer = await gw.callTool('big', 'echo', { message: 'x'.repeat(10_000) });
    expect(answer.error).toMatchObject({ code: -32006, data: { code: 'SB_MESSAGE_TOO_LARGE', limit: 4096 } });
    expect(answer.error?.data?.bytes).toBeGreaterThan(10_000);
    expect(textOf(await gw.callTool('small', 'echo', { message: 'fits' }))).toBe('fits');
  });

  it('turns an oversized server response into -32006 for the request it answers', async () => {
    const answer = await gw.callTool('huge', 'oversized', { bytes: 20_000 });
    expect(answer.error).toMatchObject({ code: -32006, data: { code: 'SB_MESSAGE_TOO_LARGE', limit: 4096 } });
    await alive(gw, 'after-oversized');
  });
});

describe('switchboard stdio: batches', () => {
  it('refuses a batch before negotiation; after negotiating 2025-03-26 answers one as a batch', async () => {
    const gw = new Gateway();
    try {
      gw.writeLine('[{"jsonrpc":"2.0","id":"early","method":"ping"}]');
      await gw.log('the refused batch', (l) =>
        /batches are not allowed in MCP revision 2025-11-25/.test(String(l.error)),
      );
      // Its request is answered with the refusal, in a batch of one (stdio has no status to say it).
      const refused = await gw.until('the refusal of the early batch', () =>
        gw.out.find((m): m is Response[] => Array.isArray(m)),
      );
      expect(refused.map((r) => [r.id, r.error?.code])).toEqual([['early', -32600]]);
      const init = await gw.initialize('2025-03-26');
      expect(init.result?.protocolVersion).toBe('2025-03-26');
      gw.writeLine(
        JSON.stringify([
          { jsonrpc: '2.0', id: 'p', method: 'ping' },
          {
            jsonrpc: '2.0',
            id: 'e',
            method: 'tools/call',
            params: { name: 'echo', arguments: { message: 'in a batch' } },
          },
          { jsonrpc: '2.0', id: 'bad', method: 7 },
        ]),
      );
      const batch = await gw.until('a batch of responses', () =>
        gw.out.find((m): m is Response[] => Array.isArray(m) && m !== refused),
      );
      expect(batch.map((r) => r.id).sort()).toEqual(['bad', 'e', 'p']);
      expect(batch.find((r) => r.id === 'p')?.result).toEqual({});
      expect(textOf(batch.find((r) => r.id === 'e')!)).toBe('in a batch');
      expect(batch.find((r) => r.id === 'bad')?.error?.code).toBe(-32600);
      // No response was written on its own.
      expect(gw.responsesTo('p')).toEqual([]);
    } finally {
      await gw.stop();
    }
  });
});

describe('switchboard stdio: the server crashes', () => {
  it("answers every request in flight with -32000 at once and exits with the server's code", async () => {
    const gw = new Gateway();
    try {
      await gw.initialize();
      gw.send({
        jsonrpc: '2.0',
        id: 'in-flight',
        method: 'tools/call',
        params: { name: 'slow', arguments: { ms: 600_000 } },
      });
      await slowInProgress(gw);
      gw.send({
        jsonrpc: '2.0',
        id: 'crash',
        method: 'tools/call',
        params: { name: 'crash', arguments: { code: 3 } },
      });
      // "At once": the call in flight would take ten minutes, so only the crash can answer it.
      const [inFlight, crash] = await Promise.all([gw.response('in-flight'), gw.response('crash')]);
      for (const answer of [inFlight, crash]) {
        expect(answer.error).toMatchObject({
          code: -32000,
          message: 'upstream misbehaving closed: exited with code 3',
          data: { code: 'SB_UPSTREAM_EXITED', upstream: 'misbehaving', exitCode: 3 },
        });
      }
      const { code } = await gw.exited;
      expect(code).toBe(3);
    } finally {
      await gw.stop();
    }
  });

  it("with --restart, restarts the server and replays the client's initialize on the new child", async () => {
    const gw = new Gateway(['--restart']);
    try {
      await gw.initialize('2025-06-18');
      const before = await stats(gw, 'stats-1');
      expect(before).toMatchObject({ initializes: 1, initialized: 1, clientInfo: { name: 'raw-client' } });
      const crash = await gw.callTool('crash', 'crash', { code: 3 });
      expect(crash.error?.code).toBe(-32000);
      await gw.log(
        'the re-initialization',
        (l) => l.msg === 'upstream re-initialized with the client’s initialize',
      );
      const after = await stats(gw, 'stats-2');
      expect(after.pid).not.toBe(before.pid);
      // The new child saw exactly one initialize, the client's own, and the initialized notification.
      expect(after).toMatchObject({
        initializes: 1,
        initialized: 1,
        clientInfo: { name: 'raw-client', version: '0.0.1' },
        protocolVersion: '2025-06-18',
      });
      // The client never saw the replayed initialize's answer.
      expect(gw.responsesTo('init')).toHaveLength(1);
      expect(
        gw.out.filter((m) => isObject(m) && isObject(m.result) && 'serverInfo' in m.result),
      ).toHaveLength(1);
      expect(gw.child.exitCode).toBeNull();
    } finally {
      await gw.stop();
    }
  });

  it('with --restart, a request sent during the restart backoff is answered by the new child', async () => {
    const gw = new Gateway(['--restart', '--request-timeout', '3000']);
    try {
      await gw.initialize();
      const crash = await gw.callTool('crash', 'crash');
      expect(crash.error?.code).toBe(-32000);
      const answer = await gw.callTool('during-backoff', 'echo', { message: 'queued' });
      expect(answer).toMatchObject({ result: { content: [{ type: 'text', text: 'queued' }] } });
    } finally {
      await gw.stop();
    }
  });
});

describe('switchboard stdio: clean shutdown', () => {
  async function exercise(gw: Gateway): Promise<void> {
    await gw.initialize();
    expect(textOf(await gw.callTool('last-call', 'echo', { message: 'the last words' }))).toBe(
      'the last words',
    );
    gw.send({
      jsonrpc: '2.0',
      id: 'in-flight',
      method: 'tools/call',
      params: { name: 'slow', arguments: { ms: 30_000 } },
    });
    await slowInProgress(gw);
  }

  function checkTrace(gw: Gateway): void {
    const { key, endedAt, records } = gw.trace();
    expect(endedAt).toBeDefined();
    const payload = (r: TraceRecord) =>
      r.envelope.payload as { id?: unknown; method?: string; params?: Json; result?: Json };
    // The last call's four hops are all there, in order, in one context.
    const down = records.find((r) => r.envelope.from === `client-${key}` && payload(r).id === 'last-call');
    expect(down).toBeDefined();
    const context = down!.envelope.context;
    expect(context).toBe(`${key}/${down!.envelope.id}`);
    const hops = records.filter((r) => r.envelope.context === context);
    expect(hops.map((r) => [r.envelope.from, r.envelope.kind])).toEqual([
      [`client-${key}`, 'mcp/request'],
      ['gateway', 'mcp/request'],
      ['server-misbehaving', 'mcp/response'],
      ['gateway', 'mcp/response'],
    ]);
    // Its output is kept as the size and SHA-256 of what the client got (trace.payloads: redacted).
    const answered = JSON.stringify(gw.responsesTo('last-call')[0]?.result);
    expect(answered).toContain('the last words');
    expect(hops.at(-1)!.envelope.payload).toEqual({
      jsonrpc: '2.0',
      id: 'last-call',
      result: {
        _omitted: 'output',
        bytes: Buffer.byteLength(answered),
        sha256: createHash('sha256').update(answered).digest('hex'),
      },
    });
    // So is the request that was in flight at shutdown, and the error the client got for it when
    // the drain timeout ended it (the gateway's answer; the upstream's request and cancellation too).
    const inFlight = records.filter((r) => payload(r).id === 'in-flight');
    expect(inFlight.map((r) => r.envelope.kind)).toEqual(['mcp/request', 'mcp/response']);
    expect(inFlight[1]!.envelope.payload).toMatchObject({ error: { code: -32010 } });
    // And the session's opening.
    expect(records.filter((r) => payload(r).method === 'initialize')).toHaveLength(2);
    expect(records.filter((r) => payload(r).method === 'notifications/initialized')).toHaveLength(2);
  }

  // The call in flight outlasts the drain timeout (500 ms): it is answered with -32010.
  const DRAIN = ['--drain-timeout', '500'];

  it('on SIGTERM: answers what is in flight, exits 0, and the trace is complete', async () => {
    const gw = new Gateway(DRAIN);
    try {
      await exercise(gw);
      gw.child.kill('SIGTERM');
      const { code, signal } = await gw.exited;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(gw.responsesTo('in-flight')[0]?.error?.code).toBe(-32010);
      await gw.log('the shutdown', (l) => l.msg === 'shutting down' && l.reason === 'received SIGTERM');
      checkTrace(gw);
    } finally {
      await gw.stop();
    }
  });

  it('on SIGINT: exits 0 with the trace complete', async () => {
    const gw = new Gateway(DRAIN);
    try {
      await exercise(gw);
      gw.child.kill('SIGINT');
      const { code } = await gw.exited;
      expect(code).toBe(0);
      checkTrace(gw);
    } finally {
      await gw.stop();
    }
  });

  it('when the client closes stdin: exits 0 with the trace complete', async () => {
    const gw = new Gateway(DRAIN);
    try {
      await exercise(gw);
      gw.child.stdin.end();
      const { code } = await gw.exited;
      expect(code).toBe(0);
      expect(gw.responsesTo('in-flight')[0]?.error?.code).toBe(-32010);
      await gw.log(
        'the shutdown',
        (l) => l.msg === 'shutting down' && l.reason === 'the client closed stdin',
      );
      checkTrace(gw);
    } finally {
      await gw.stop();
    }
  });
});
