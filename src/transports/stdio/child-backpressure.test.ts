/**
 * A stdio upstream that stops reading its stdin, or whose output the gateway cannot pass on, over
 * real `node -e` children and pipes: the child's stdin is bounded (requests refused, or the gate
 * held closed, until it reads again) and its stdout is read only while the gate is open.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { UpstreamClose } from '../../core/ports.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { FlowGate } from '../flow-gate.js';
import { childEnvironment } from './child-env.js';
import { ChildProcessTransport } from './child-process-transport.js';

vi.setConfig({ testTimeout: 60_000 });

/** Reads nothing from stdin until SIGUSR2, then everything. */
const DEAF_UNTIL_SIGNAL = `
process.on('SIGUSR2', () => { process.stdin.on('data', () => {}); process.stdin.resume(); });
setInterval(() => {}, 1000);
process.stdout.write('{"jsonrpc":"2.0","method":"ready"}\\n');
`;

/** Writes numbered lines to stdout as fast as the pipe takes them, respecting its backpressure. */
const FLOOD = `
let n = 0;
const pad = 'f'.repeat(1024);
function pump() {
  for (;;) {
    const ok = process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'tick', params: { n: n++, pad } }) + '\\n');
    if (!ok) { process.stdout.once('drain', pump); return; }
    if (n % 500 === 0) { setImmediate(pump); return; }
  }
}
pump();
`;

const LIMIT = 256 * 1024;

const started: ChildProcessTransport[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((t) => t.close()));
});

function make(script: string, gates: { stdinGate?: FlowGate; stdoutGate?: FlowGate } = {}) {
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const transport = new ChildProcessTransport({
    name: 'fixture',
    command: process.execPath,
    args: ['-e', script],
    env: childEnvironment({}),
    maxMessageBytes: 1024 * 1024,
    logger,
    metrics,
    shutdownGraceMs: 500,
    maxStdinBufferBytes: LIMIT,
    ...gates,
  });
  const texts: string[] = [];
  const closes: UpstreamClose[] = [];
  transport.onmessage = (text) => texts.push(text);
  transport.onclose = (close) => closes.push(close);
  started.push(transport);
  return { transport, logger, metrics, texts, closes };
}

function request(id: number): JsonRpcRequest {
  return {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'x', arguments: { pad: 'r'.repeat(8192) } },
  };
}

/** Sends requests as the router does (asking `refuse` first) until one is refused or `max` went. */
function sendUntilRefused(transport: ChildProcessTransport, max = 20_000) {
  for (let id = 1; id <= max; id++) {
    const req = request(id);
    const refusal = transport.refuse(req);
    if (refusal) return { sent: id - 1, refusal };
    transport.send(JSON.stringify(req), req);
  }
  return { sent: max, refusal: undefined };
}

describe('a stdio upstream that stops reading its stdin', () => {
  it('without a gate (serve): requests are refused with -32007 once the limit waits, and flow again once it reads', async () => {
    const h = make(DEAF_UNTIL_SIGNAL);
    await h.transport.start();
    await vi.waitFor(() => expect(h.texts).toHaveLength(1));
    const { sent, refusal } = sendUntilRefused(h.transport);
    expect(refusal).toMatchObject({
      code: -32007,
      data: { code: 'SB_LIMIT_EXCEEDED', upstream: 'fixture', limit: LIMIT },
    });
    expect(refusal?.message).toContain('not reading its input');
    // Bounded: about the limit plus a pipe's worth, not everything ever sent.
    expect(sent * 8192).toBeLessThan(LIMIT + 1024 * 1024);
    expect(h.metrics.get('upstream_stdin_backpressure_total', { upstream: 'fixture' })).toBe(1);
    expect(h.logger.entries.filter((e) => e.level === 'warn' && e.message.includes('stdin'))).toHaveLength(1);

    process.kill(h.transport.pid!, 'SIGUSR2');
    await vi.waitFor(() => expect(h.transport.refuse(request(0))).toBeUndefined(), { timeout: 20_000 });
    // Requests go again (a few, well under the limit within one turn).
    expect(sendUntilRefused(h.transport, 10).refusal).toBeUndefined();
  });

  it('with a gate (stdio gateway): holds it closed instead, refuses nothing, and lets go once it reads', async () => {
    const gate = new FlowGate();
    const h = make(DEAF_UNTIL_SIGNAL, { stdinGate: gate });
    await h.transport.start();
    await vi.waitFor(() => expect(h.texts).toHaveLength(1));
    let id = 0;
    while (gate.open && id < 20_000) {
      const req = request(++id);
      expect(h.transport.refuse(req)).toBeUndefined();
      h.transport.send(JSON.stringify(req), req);
    }
    expect(gate.open).toBe(false);
    expect(id * 8192).toBeLessThan(LIMIT + 1024 * 1024);
    expect(h.metrics.get('upstream_stdin_backpressure_total', { upstream: 'fixture' })).toBe(1);
    process.kill(h.transport.pid!, 'SIGUSR2');
    await vi.waitFor(() => expect(gate.open).toBe(true), { timeout: 20_000 });
  });

  it('lets go of the gate when the child exits while behind', async () => {
    const gate = new FlowGate();
    const h = make(DEAF_UNTIL_SIGNAL, { stdinGate: gate });
    await h.transport.start();
    await vi.waitFor(() => expect(h.texts).toHaveLength(1));
    for (let id = 1; gate.open && id < 20_000; id++) {
      const req = request(id);
      h.transport.send(JSON.stringify(req), req);
    }
    expect(gate.open).toBe(false);
    process.kill(h.transport.pid!, 'SIGKILL');
    await vi.waitFor(() => expect(h.closes).toHaveLength(1), { timeout: 20_000 });
    expect(gate.open).toBe(true);
  });
});

describe('a stdio upstream whose output the gateway cannot pass on', () => {
  it('is not read while the stdout gate is closed, and is read again once it opens', async () => {
    const gate = new FlowGate();
    const h = make(FLOOD, { stdoutGate: gate });
    await h.transport.start();
    await vi.waitFor(() => expect(h.texts.length).toBeGreaterThan(100));
    gate.close('stdout');
    const held = h.texts.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(h.texts.length).toBe(held);
    gate.reopen('stdout');
    await vi.waitFor(() => expect(h.texts.length).toBeGreaterThan(held + 1000), { timeout: 20_000 });
    // Nothing lost or reordered on the way.
    const ns = h.texts.map((t) => (JSON.parse(t) as { params: { n: number } }).params.n);
    expect(ns).toEqual(ns.map((_n, i) => i));
  });

  it('starts paused when the gate is already closed (a restarted child)', async () => {
    const gate = new FlowGate();
    gate.close('stdout');
    const h = make(FLOOD, { stdoutGate: gate });
    await h.transport.start();
    await new Promise((r) => setTimeout(r, 300));
    expect(h.texts).toHaveLength(0);
    gate.reopen('stdout');
    await vi.waitFor(() => expect(h.texts.length).toBeGreaterThan(100), { timeout: 20_000 });
  });
});
