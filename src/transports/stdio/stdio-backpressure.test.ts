/**
 * The gateway's stdout when the client stops reading it: a real socket on loopback stands for the
 * pipe (its reader pauses), stdin is a PassThrough. Nothing is dropped; while stdout is behind the
 * gateway stops reading stdin and holds the server's output gate closed, and reads again once the
 * client has caught up.
 */
import { createServer, type Server, Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { FlowGate } from '../flow-gate.js';
import { StdioDownstream } from './stdio-downstream.js';

vi.setConfig({ testTimeout: 60_000 });

const LIMIT = 128 * 1024;
const PAD = 'n'.repeat(4096);

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const s of servers.splice(0)) s.close();
});

async function socketPair(): Promise<{ writer: Socket; reader: Socket }> {
  const server = createServer();
  servers.push(server);
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const reader = new Socket();
  reader.pause();
  sockets.push(reader);
  await new Promise<void>((resolve) =>
    reader.connect((server.address() as { port: number }).port, '127.0.0.1', resolve),
  );
  const writer = await accepted;
  sockets.push(writer);
  return { writer, reader };
}

async function harness() {
  const { writer, reader } = await socketPair();
  const input = new PassThrough();
  const upstream = new FlowGate();
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const received: JsonRpcMessage[] = [];
  const downstream = new StdioDownstream({
    input,
    output: writer,
    maxMessageBytes: 1024 * 1024,
    logger,
    metrics,
    revision: () => '2025-11-25',
    onmessage: (message) => received.push(message),
    onend: () => {},
    maxBufferedBytes: LIMIT,
    producers: [upstream],
  });
  downstream.start();
  const lines: number[] = [];
  let pending = '';
  reader.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const line of parts) lines.push((JSON.parse(line) as { params: { n: number } }).params.n);
  });
  reader.pause();
  let sent = 0;
  const notify = (): void => {
    const message: JsonRpcMessage = {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { n: sent++, pad: PAD },
    };
    downstream.send(JSON.stringify(message), message, { kind: 'unrelated' });
  };
  /** Sends until the gateway stops reading what feeds stdout (or gives up: the test then fails). */
  const fill = (): void => {
    const upTo = sent + 10_000;
    while (upstream.open && sent < upTo) notify();
  };
  return {
    writer,
    reader,
    input,
    upstream,
    logger,
    metrics,
    received,
    notify,
    fill,
    lines,
    sent: () => sent,
  };
}

describe('StdioDownstream when the client does not read stdout', () => {
  it('stops reading stdin and holds the server’s output, drops nothing, and goes on once the client reads', async () => {
    const h = await harness();
    h.fill();
    expect(h.upstream.open).toBe(false);
    expect(h.input.isPaused()).toBe(true);
    // Bounded: the limit plus the one line whose write crossed it.
    expect(h.writer.writableLength).toBeLessThan(LIMIT + PAD.length + 200);
    expect(h.metrics.get('stdio_output_paused_total')).toBe(1);
    expect(h.logger.entries.filter((e) => e.level === 'warn')).toHaveLength(1);

    // The client's next request waits in its pipe, unread, while stdout is behind.
    h.input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    await new Promise((r) => setTimeout(r, 100));
    expect(h.received).toHaveLength(0);

    h.reader.resume();
    await vi.waitFor(() => expect(h.upstream.open).toBe(true), { timeout: 20_000 });
    await vi.waitFor(() => expect(h.received).toHaveLength(1));
    await vi.waitFor(() => expect(h.lines).toHaveLength(h.sent()), { timeout: 20_000 });
    expect(h.lines).toEqual(h.lines.map((_n, i) => i));
  });

  it('counts every pause, and logs only the first as a warning', async () => {
    const h = await harness();
    h.fill();
    h.reader.resume();
    await vi.waitFor(() => expect(h.upstream.open).toBe(true), { timeout: 20_000 });
    await vi.waitFor(() => expect(h.lines).toHaveLength(h.sent()), { timeout: 20_000 });
    h.reader.pause();
    h.fill();
    expect(h.upstream.open).toBe(false);
    expect(h.metrics.get('stdio_output_paused_total')).toBe(2);
    expect(h.logger.entries.filter((e) => e.level === 'warn')).toHaveLength(1);
    expect(h.logger.entries.filter((e) => e.level === 'debug')).toHaveLength(1);
  });
});
