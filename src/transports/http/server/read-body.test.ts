import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type BodyResult, readBody } from './read-body.js';

/**
 * `readBody` over a real connection: the body's size limit and its deadline (a slow-loris body is
 * cut at the deadline however it trickles).
 */
describe('readBody', () => {
  let server: Server | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  async function serve(limits: { maxBytes: number; timeoutMs: number }) {
    const results: { result: BodyResult; after: number }[] = [];
    server = createServer(async (req, res) => {
      const started = Date.now();
      const result = await readBody(req, limits);
      results.push({ result, after: Date.now() - started });
      res.writeHead(result.kind === 'ok' ? 200 : 408, { connection: 'close' }).end(result.kind);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { port: (server.address() as AddressInfo).port, results };
  }

  function open(port: number, head: string): Socket {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(head);
    sockets.push(socket);
    return socket;
  }

  it('reads a body that arrives in time, in pieces', async () => {
    const { port, results } = await serve({ maxBytes: 1024, timeoutMs: 10_000 });
    const socket = open(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc');
    setTimeout(() => socket.write('def'), 50);
    await vi.waitFor(() => expect(results).toHaveLength(1), { timeout: 10_000 });
    expect(results[0]!.result).toEqual({ kind: 'ok', text: 'abcdef' });
  });

  it('gives up on a body that trickles past its deadline (slow loris), and on one that stalls', async () => {
    const { port, results } = await serve({ maxBytes: 1024, timeoutMs: 300 });
    const drip = open(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
    const timer = setInterval(() => drip.write('a'), 20);
    open(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab');
    try {
      await vi.waitFor(() => expect(results).toHaveLength(2), { timeout: 10_000 });
    } finally {
      clearInterval(timer);
    }
    for (const { result, after } of results) {
      expect(result).toEqual({ kind: 'timeout' });
      expect(after).toBeGreaterThanOrEqual(290);
    }
  });

  it('refuses a body above the limit without waiting for it', async () => {
    const { port, results } = await serve({ maxBytes: 4, timeoutMs: 10_000 });
    open(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n');
    open(port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n');
    await vi.waitFor(() => expect(results).toHaveLength(2), { timeout: 10_000 });
    expect(results.map((r) => r.result.kind)).toEqual(['too-large', 'too-large']);
  });
});
