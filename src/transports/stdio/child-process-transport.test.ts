/**
 * The child-process transport against real, short-lived `node -e` children: framing both ways,
 * stderr to the log, oversized messages, the shutdown sequence and exit reporting.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InboundMeta, UpstreamClose } from '../../core/ports.js';
import { SwitchboardError } from '../../errors/switchboard-error.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { childEnvironment } from './child-env.js';
import { ChildProcessTransport } from './child-process-transport.js';

/** Echoes each request back as `{ result: { echo: params } }`; exits when stdin closes. */
const ECHO = `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'say-big') {
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { big: 'x'.repeat(m.params.size) } }) + '\\n');
  } else if (m.method === 'ask-big') {
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: { big: 'x'.repeat(m.params.size) } }) + '\\n');
  } else if (m.method === 'crash') {
    process.exit(m.params.code);
  } else {
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id ?? null, result: { echo: m } }) + '\\n');
  }
});
rl.on('close', () => process.exit(0));
`;

/** Answers each request with the very line it read: `{ result: { line } }`. */
const LINE_ECHO = `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id !== undefined) process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { line } }) + '\\n');
});
rl.on('close', () => process.exit(0));
`;

const READY = `process.stdout.write('{"jsonrpc":"2.0","method":"ready"}\\n');`;

/** Ignores stdin EOF and SIGTERM: only SIGKILL ends it. */
const STUBBORN = `
process.on('SIGTERM', () => {});
process.stdin.resume();
setInterval(() => {}, 1000);
${READY}
`;

/** Ignores stdin EOF but dies on SIGTERM, after starting a grandchild in its process group. */
const WITH_GRANDCHILD = `
const { spawn } = require('node:child_process');
const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
process.stdin.resume();
setInterval(() => {}, 1000);
process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'ready', params: { grandchild: grandchild.pid } }) + '\\n');
`;

interface Harness {
  readonly transport: ChildProcessTransport;
  readonly logger: MemoryLogger;
  readonly metrics: Metrics;
  readonly texts: string[];
  readonly closes: UpstreamClose[];
  readonly errors: Error[];
  readonly metas: InboundMeta[];
}

const started: ChildProcessTransport[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.close()));
});

function make(
  script: string,
  options: { maxMessageBytes?: number; shutdownGraceMs?: number; command?: string } = {},
): Harness {
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const transport = new ChildProcessTransport({
    name: 'fixture',
    command: options.command ?? process.execPath,
    args: ['-e', script],
    env: childEnvironment({}),
    maxMessageBytes: options.maxMessageBytes ?? 64 * 1024,
    logger,
    metrics,
    shutdownGraceMs: options.shutdownGraceMs ?? 2000,
  });
  const h: Harness = { transport, logger, metrics, texts: [], closes: [], errors: [], metas: [] };
  transport.onmessage = (text, meta) => {
    h.texts.push(text);
    h.metas.push(meta);
  };
  transport.onclose = (close) => h.closes.push(close);
  transport.onerror = (error) => h.errors.push(error);
  started.push(transport);
  return h;
}

function send(h: Harness, message: JsonRpcMessage): void {
  h.transport.send(JSON.stringify(message), message);
}

const parsed = (h: Harness) => h.texts.map((t) => JSON.parse(t) as Record<string, unknown>);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A zombie waiting for a reaper is dead for our purposes.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

describe('ChildProcessTransport', () => {
  it("carries messages both ways, one per line, and knows the child's pid", async () => {
    const h = make(ECHO);
    await h.transport.start();
    expect(h.transport.pid).toBeGreaterThan(0);
    expect(h.transport.transportContext).toEqual({ kind: 'stdio', pid: h.transport.pid });
    send(h, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    send(h, { jsonrpc: '2.0', id: 'two', method: 'ping', params: { text: 'é\u2028😀' } });
    await vi.waitFor(() => expect(h.texts).toHaveLength(2));
    expect(parsed(h)).toEqual([
      { jsonrpc: '2.0', id: 1, result: { echo: { jsonrpc: '2.0', id: 1, method: 'tools/list' } } },
      {
        jsonrpc: '2.0',
        id: 'two',
        result: { echo: { jsonrpc: '2.0', id: 'two', method: 'ping', params: { text: 'é\u2028😀' } } },
      },
    ]);
    expect(h.metas[0]?.transport).toEqual({ kind: 'stdio', pid: h.transport.pid });
  });

  describe('_meta members a child must not see', () => {
    const MODERN_META = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'modern-client', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/logLevel': 'info',
    };
    const lines = (h: Harness) => parsed(h).map((m) => (m.result as { line: string }).line);

    it("an initialized (legacy) child gets a 2026-07-28 client's call as a 2025 client sends it", async () => {
      const h = make(LINE_ECHO);
      await h.transport.start();
      send(h, {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'gw', version: '1' } },
      });
      const call: JsonRpcMessage = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { message: 'hi' },
          _meta: {
            ...MODERN_META,
            progressToken: 9,
            'switchboard.dev/forwardHeaders': { 'mcp-param-a': '1' },
          },
        },
      };
      // What it wrote is returned (the router's trace records that, not what it was handed).
      const written = h.transport.send(JSON.stringify(call), call);
      send(h, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: MODERN_META } });
      await vi.waitFor(() => expect(h.texts).toHaveLength(3));
      const [, calledWith, listedWith] = lines(h);
      expect(written?.json).toBe(calledWith);
      expect(written?.message).toEqual(JSON.parse(calledWith!));
      expect(JSON.parse(calledWith!)).toEqual({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'hi' }, _meta: { progressToken: 9 } },
      });
      expect(JSON.parse(listedWith!)).toEqual({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
    });

    it('a legacy child is refused requestState retries (a modern one is not); inputResponses go on', async () => {
      const retry = (params: Record<string, unknown>): JsonRpcRequest => ({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'echo', arguments: {}, _meta: MODERN_META, ...params },
      });
      const h = make(LINE_ECHO);
      await h.transport.start();
      // Not initialized: a 2026-07-28 child behind the pass-through, whose own state this may be.
      expect(h.transport.refuse(retry({ requestState: 's' }))).toBeUndefined();
      send(h, {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'gw', version: '1' } },
      });
      expect(h.transport.refuse(retry({ requestState: 's' }))).toMatchObject({
        code: -32602,
        data: { upstream: 'fixture' },
      });
      expect(h.transport.refuse(retry({ inputResponses: { a: {} } }))).toBeUndefined();
      const answered = retry({ inputResponses: { a: {} } });
      h.transport.send(JSON.stringify(answered), answered);
      await vi.waitFor(() => expect(h.texts).toHaveLength(2));
      expect(JSON.parse(lines(h)[1]!)).toEqual({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'echo', arguments: {}, inputResponses: { a: {} } },
      });
    });

    it('a child never initialized (2026-07-28 behind the pass-through) keeps the envelope, not gateway members', async () => {
      const h = make(LINE_ECHO);
      await h.transport.start();
      send(h, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { ...MODERN_META, 'switchboard.dev/x': true } },
      });
      const untouched =
        '{"jsonrpc":"2.0", "id":2,"method":"tools/list","params":{"_meta":{"progressToken":1}}}';
      // Nothing rewritten, nothing returned.
      expect(h.transport.send(untouched, JSON.parse(untouched) as JsonRpcMessage)).toBeUndefined();
      await vi.waitFor(() => expect(h.texts).toHaveLength(2));
      const [first, second] = lines(h);
      expect(JSON.parse(first!)).toEqual({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: MODERN_META },
      });
      // Nothing to remove: the very text goes out.
      expect(second).toBe(untouched);
    });
  });

  it('sends stderr lines to the log, never as errors', async () => {
    const h = make(
      `process.stderr.write('starting up\\nwarning: something\\npartial'); setTimeout(() => process.exit(0), 50);`,
    );
    await h.transport.start();
    await vi.waitFor(() => expect(h.closes).toHaveLength(1));
    const stderr = h.logger.entries.filter((e) => e.fields.stream === 'stderr');
    expect(stderr.map((e) => [e.level, e.message, e.fields.upstream])).toEqual([
      ['info', 'starting up', 'fixture'],
      ['info', 'warning: something', 'fixture'],
      ['info', 'partial', 'fixture'],
    ]);
    expect(h.errors).toEqual([]);
    expect(h.logger.entries.filter((e) => e.level === 'error' || e.level === 'warn')).toEqual([]);
    expect(h.texts).toEqual([]);
    expect(h.closes[0]).toEqual({ reason: 'exited with code 0', code: 0, signal: null });
  });

  it('turns an oversized response into an error response for its id, and the connection survives', async () => {
    const h = make(ECHO, { maxMessageBytes: 1000 });
    await h.transport.start();
    send(h, { jsonrpc: '2.0', id: 7, method: 'say-big', params: { size: 5000 } });
    send(h, { jsonrpc: '2.0', id: 8, method: 'ping' });
    await vi.waitFor(() => expect(h.texts).toHaveLength(2));
    const [first, second] = parsed(h);
    expect(first).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32006, data: { code: 'SB_MESSAGE_TOO_LARGE', limit: 1000 } },
    });
    expect((first!.error as { data: { bytes: number } }).data.bytes).toBeGreaterThan(5000);
    expect(second).toMatchObject({ id: 8, result: {} });
    expect(h.metrics.get('oversized_messages_total', { side: 'upstream', upstream: 'fixture' })).toBe(1);
    expect(h.logger.entries.some((e) => e.level === 'warn' && /too large/.test(e.message))).toBe(true);
  });

  it('answers an oversized server->client request to the child itself, with -32006', async () => {
    const h = make(ECHO, { maxMessageBytes: 1000 });
    await h.transport.start();
    send(h, { jsonrpc: '2.0', id: 1, method: 'ask-big', params: { size: 5000 } });
    // The echo child answers the gateway's error response by echoing it back to us.
    await vi.waitFor(() => expect(h.texts).toHaveLength(1));
    const echoed = parsed(h)[0]?.result as { echo: Record<string, unknown> };
    expect(echoed.echo).toMatchObject({ jsonrpc: '2.0', id: 'srv-1', error: { code: -32006 } });
  });

  it('reports the exit code once, when the child exits by itself', async () => {
    const h = make(ECHO);
    await h.transport.start();
    send(h, { jsonrpc: '2.0', id: 1, method: 'crash', params: { code: 3 } });
    await vi.waitFor(() => expect(h.closes).toHaveLength(1));
    expect(h.closes[0]).toEqual({ reason: 'exited with code 3', code: 3, signal: null });
    await h.transport.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(h.closes).toHaveLength(1);
    // Writing to a dead child is counted, never thrown.
    expect(() => send(h, { jsonrpc: '2.0', id: 2, method: 'ping' })).not.toThrow();
    expect(h.metrics.get('upstream_write_errors_total', { upstream: 'fixture' })).toBeGreaterThanOrEqual(1);
  });

  it('close(): a child that exits on stdin EOF is not signalled', async () => {
    const h = make(ECHO, { shutdownGraceMs: 5000 });
    await h.transport.start();
    const before = performance.now();
    await h.transport.close();
    expect(performance.now() - before).toBeLessThan(4000);
    await vi.waitFor(() => expect(h.closes).toHaveLength(1));
    expect(h.closes[0]).toEqual({ reason: 'exited with code 0', code: 0, signal: null });
  });

  it('close(): a child that ignores stdin EOF gets SIGTERM, and its process group with it', async () => {
    const h = make(WITH_GRANDCHILD, { shutdownGraceMs: 300 });
    await h.transport.start();
    await vi.waitFor(() => expect(h.texts).toHaveLength(1));
    const grandchild = (parsed(h)[0]!.params as { grandchild: number }).grandchild;
    expect(alive(grandchild)).toBe(true);
    await h.transport.close();
    await vi.waitFor(() => expect(h.closes).toHaveLength(1));
    expect(h.closes[0]).toEqual({ reason: 'exited on SIGTERM', code: null, signal: 'SIGTERM' });
    await vi.waitFor(() => expect(alive(grandchild)).toBe(false));
  });

  it('close(): a child that ignores stdin EOF and SIGTERM is SIGKILLed; onclose fires exactly once', async () => {
    const h = make(STUBBORN, { shutdownGraceMs: 300 });
    await h.transport.start();
    await vi.waitFor(() => expect(h.texts).toHaveLength(1));
    const pid = h.transport.pid!;
    const first = h.transport.close();
    // Idempotent: a second call shares the same sequence.
    const second = h.transport.close();
    expect(second).toBe(first);
    await first;
    expect(alive(pid)).toBe(false);
    await vi.waitFor(() => expect(h.closes).toHaveLength(1));
    expect(h.closes[0]).toEqual({ reason: 'exited on SIGKILL', code: null, signal: 'SIGKILL' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.closes).toHaveLength(1);
  });

  it('reports the exit promptly and once, even when a grandchild keeps stdout open', async () => {
    // The child exits at once; its grandchild inherits stdout and holds it open for 800 ms.
    const h = make(
      `require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 800)'], { stdio: ['ignore', 'inherit', 'ignore'] }); process.exit(4);`,
    );
    await h.transport.start();
    const startedAt = performance.now();
    await vi.waitFor(() => expect(h.closes).toHaveLength(1));
    expect(performance.now() - startedAt).toBeLessThan(700);
    expect(h.closes[0]).toMatchObject({ code: 4 });
    // When the grandchild finally lets go of stdout, nothing more is reported.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(h.closes).toHaveLength(1);
  });

  it('rejects with SB_UPSTREAM_SPAWN when the command does not exist, and reports the close once', async () => {
    const h = make('', { command: '/nonexistent/switchboard-no-such-server' });
    const error = await h.transport.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SwitchboardError);
    expect((error as SwitchboardError).code).toBe('SB_UPSTREAM_SPAWN');
    expect((error as SwitchboardError).message).toMatch(/ENOENT/);
    expect(h.closes).toHaveLength(1);
    expect(h.closes[0]?.reason).toMatch(/^spawn failed/);
    await expect(h.transport.close()).resolves.toBeUndefined();
    expect(h.closes).toHaveLength(1);
  });

  it('gives the child only the environment it was given', async () => {
    process.env.SWITCHBOARD_CPT_TEST_SECRET = 'do-not-leak';
    try {
      const h = make(
        `process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'env', params: process.env }) + '\\n');`,
      );
      await h.transport.start();
      await vi.waitFor(() => expect(h.texts).toHaveLength(1));
      const env = parsed(h)[0]?.params as Record<string, string>;
      expect(env).not.toHaveProperty('SWITCHBOARD_CPT_TEST_SECRET');
      expect(env.PATH).toBe(process.env.PATH);
    } finally {
      delete process.env.SWITCHBOARD_CPT_TEST_SECRET;
    }
  });
});
