/** A WebSocket connection of the space over a real `ws` pair on loopback. */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import { WsSpaceConnection } from './ws-connection.js';

let wss: WebSocketServer | undefined;
afterEach(() => wss?.close());

async function pair(maxBufferedBytes: number) {
  wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((r) => wss!.once('listening', r));
  const serverSide = new Promise<WebSocket>((r) => wss!.once('connection', r));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: string[] = [];
  client.on('message', (d) => received.push(d.toString()));
  const closed = new Promise<number>((r) => client.once('close', (code) => r(code)));
  await new Promise((r) => client.once('open', r));
  const metrics = new Metrics();
  const connection = new WsSpaceConnection(await serverSide, {
    id: 'c1',
    participant: 'bob',
    roles: [],
    protocol: 'meup/v0.2',
    maxBufferedBytes,
    metrics,
    logger: new MemoryLogger(),
  });
  return { client, connection, received, closed, metrics };
}

describe('WsSpaceConnection', () => {
  it('sends text frames', async () => {
    const { connection, received } = await pair(1 << 20);
    expect(connection.sendText('{"a":1}')).toBe(true);
    for (let i = 0; i < 50 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(received).toEqual(['{"a":1}']);
  });

  it('closes with 1013 a peer that does not read, instead of queueing without bound', async () => {
    const { client, connection, closed, metrics } = await pair(64 * 1024);
    (client as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    let accepted = 0;
    for (let i = 0; i < 5000 && connection.sendText('x'.repeat(16 * 1024)); i++) accepted++;
    expect(accepted).toBeLessThan(5000);
    expect(connection.closing).toBe(true);
    expect(connection.sendText('more')).toBe(false);
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
