/** A WebSocket connection of the space over a real `ws` pair on loopback. */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import { OutgoingFrame } from './space-connection.js';
import { WsSpaceConnection } from './ws-connection.js';

let wss: WebSocketServer | undefined;
afterEach(() => wss?.close());

async function pair(maxBufferedBytes: number) {
  wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss!.once('listening', r));
  const serverSide = new Promise<WebSocket>((r) => wss!.once('connection', r));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: string[] = [];
  const binary: boolean[] = [];
  client.on('message', (d, isBinary) => {
    received.push(d.toString());
    binary.push(isBinary);
  });
  const closed = new Promise<number>((r) => client.once('close', (code) => r(code)));
  await new Promise((r) => client.once('open', r));
  const metrics = new Metrics();
  const server = await serverSide;
  const connection = new WsSpaceConnection(server, {
    id: 'c1',
    participant: 'bob',
    roles: [],
    protocol: 'meup/v0.2',
    maxBufferedBytes,
    metrics,
    logger: new MemoryLogger(),
  });
  const socket = (server as unknown as { _socket: import('node:net').Socket })._socket;
  return { client, connection, received, binary, closed, metrics, socket };
}

const frame = (text: string) => new OutgoingFrame(text);
const until = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('WsSpaceConnection', () => {
  it('sends text frames', async () => {
    const { connection, received, binary } = await pair(1 << 20);
    expect(connection.send(frame('{"a":"ü"}'))).toBe(true);
    await until(() => received.length > 0);
    expect(received).toEqual(['{"a":"ü"}']);
    expect(binary).toEqual([false]);
  });

  it('writes the frames of one turn together, in order, once the turn is over', async () => {
    const { connection, received, socket } = await pair(1 << 20);
    const writes: number[] = [];
    const writev = socket._writev!.bind(socket);
    socket._writev = (chunks, cb) => {
      writes.push(chunks.length);
      writev(chunks, cb);
    };
    for (let i = 0; i < 10; i++) expect(connection.send(frame(`{"n":${i}}`))).toBe(true);
    expect(socket.writableCorked).toBe(1);
    await new Promise((r) => process.nextTick(r));
    expect(socket.writableCorked).toBe(0);
    // One writev of the 10 frames, each framed once (header and payload in one chunk).
    expect(writes).toEqual([10]);
    await until(() => received.length === 10);
    expect(received).toEqual(Array.from({ length: 10 }, (_, i) => `{"n":${i}}`));
  });

  it('sends one shared frame to several connections, unchanged', async () => {
    const a = await pair(1 << 20);
    const wssA = wss;
    const b = await pair(1 << 20);
    const shared = frame('{"text":"héllo"}');
    expect(a.connection.send(shared)).toBe(true);
    expect(b.connection.send(shared)).toBe(true);
    await until(() => a.received.length > 0 && b.received.length > 0);
    expect(a.received).toEqual(['{"text":"héllo"}']);
    expect(b.received).toEqual(['{"text":"héllo"}']);
    expect(shared.bytes.toString('utf8')).toBe('{"text":"héllo"}');
    wssA?.close();
  });

  it('frames payloads of every length class so that a ws client reads them back', async () => {
    const { connection, received, binary } = await pair(1 << 22);
    const texts = [0, 1, 125, 126, 127, 65_535, 65_536, 70_000].map(
      (n) => 'é'.repeat(n >> 1) + 'a'.repeat(n & 1),
    );
    for (const t of texts) expect(connection.send(frame(t))).toBe(true);
    expect(connection.send(frame('🌍 ok'))).toBe(true);
    await until(() => received.length === texts.length + 1);
    expect(received).toEqual([...texts, '🌍 ok']);
    expect(binary.every((b) => !b)).toBe(true);
  });

  it('falls back to ws.send when the socket under ws is not reachable', () => {
    const sent: { data: unknown; options: unknown }[] = [];
    const fake = {
      readyState: 1,
      bufferedAmount: 0,
      send: (data: unknown, options: unknown) => sent.push({ data, options }),
    };
    const connection = new WsSpaceConnection(fake as unknown as import('ws').WebSocket, {
      id: 'c1',
      participant: 'bob',
      roles: [],
      protocol: 'meup/v0.2',
      maxBufferedBytes: 1024,
      metrics: new Metrics(),
      logger: new MemoryLogger(),
    });
    const f = frame('{"a":"ü"}');
    expect(connection.send(f)).toBe(true);
    expect(sent).toEqual([{ data: f.bytes, options: { binary: false } }]);
    expect(f.bytes.toString('utf8')).toBe('{"a":"ü"}');
  });

  it('does not count what the cork holds back against a peer that reads: a burst beyond the budget in one turn passes', async () => {
    const { connection, received, metrics } = await pair(4096);
    const text = `"${'y'.repeat(1022)}"`;
    for (let i = 0; i < 16; i++) expect(connection.send(frame(text))).toBe(true);
    expect(connection.closing).toBe(false);
    expect(metrics.get('space_slow_consumers_total')).toBe(0);
    await until(() => received.length === 16);
    expect(received.length).toBe(16);
  });

  it('sends a frame larger than the budget to a peer that has nothing pending: it is not slow', async () => {
    const { connection, received, metrics } = await pair(64 * 1024);
    const big = 'b'.repeat(256 * 1024);
    expect(connection.send(frame(big))).toBe(true);
    expect(connection.closing).toBe(false);
    expect(metrics.get('space_slow_consumers_total')).toBe(0);
    await until(() => received.length === 1);
    expect(received[0]?.length).toBe(big.length);
  });

  it('closes with 1013 a peer that does not read, instead of queueing without bound', async () => {
    const { client, connection, closed, metrics } = await pair(64 * 1024);
    (client as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    let accepted = 0;
    const big = frame('x'.repeat(16 * 1024));
    for (let i = 0; i < 5000 && connection.send(big); i++) accepted++;
    expect(accepted).toBeLessThan(5000);
    expect(connection.closing).toBe(true);
    expect(connection.send(frame('more'))).toBe(false);
    expect(metrics.get('space_slow_consumers_total')).toBe(1);
    (client as unknown as { _socket: { resume(): void } })._socket.resume();
    expect([1006, 1013]).toContain(await closed);
  });

  it('cuts a peer that missed a pong at the next heartbeat', async () => {
    const { connection, closed, metrics } = await pair(1 << 20);
    expect(connection.heartbeat()).toBe(true);
    connection.alive = false;
    expect(connection.heartbeat()).toBe(false);
    expect(await closed).toBe(1006);
    expect(metrics.get('space_heartbeat_timeouts_total')).toBe(1);
  });
});
