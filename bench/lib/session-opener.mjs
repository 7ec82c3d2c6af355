#!/usr/bin/env node
// Opens many idle MCP sessions on a Streamable HTTP endpoint and keeps them open: per session an
// initialize and notifications/initialized (over a small keep-alive pool), then a GET stream on a
// connection of its own (a raw socket: the response headers are checked, the stream's bytes are
// drained). Driven over IPC:
//   { type: 'open', url, total }  -> opens sessions until `total` are open -> { type: 'opened', open, failed, ms }
//   { type: 'closeAll' }         -> DELETEs every session and closes its stream -> { type: 'closed', closed }
// Runs in its own process so that 10,000 sockets do not share the bench runner's file descriptors.
import { connect } from 'node:net';
import { HttpMcpSession, makePool } from './http-client.mjs';

const PARALLEL = 32;
const sessions = []; // { session, socket }
const pools = new Map(); // origin -> undici Pool

function openStream(url, session) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: u.hostname, port: Number(u.port) });
    socket.setNoDelay(true);
    let head = '';
    let done = false;
    const fail = (e) => {
      if (done) return;
      done = true;
      socket.destroy();
      reject(e);
    };
    socket.on('error', fail);
    socket.setTimeout(30_000, () => fail(new Error('GET stream: no response headers within 30 s')));
    socket.on('data', (chunk) => {
      if (done) return; // drain keep-alive comments
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      done = true;
      socket.setTimeout(0);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (status?.[1] !== '200') {
        socket.destroy();
        reject(new Error(`GET stream: ${head.slice(0, end).split('\r\n')[0]}`));
        return;
      }
      resolve(socket);
    });
    socket.on('connect', () => {
      socket.write(
        `GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nAccept: text/event-stream\r\n` +
          `Mcp-Session-Id: ${session.sessionId}\r\nMcp-Protocol-Version: ${session.protocolVersion}\r\n\r\n`,
      );
    });
  });
}

function poolFor(url) {
  const { origin } = new URL(url);
  if (!pools.has(origin)) pools.set(origin, makePool(url, PARALLEL));
  return pools.get(origin);
}

async function openOne(url) {
  const session = new HttpMcpSession(url, poolFor(url));
  await session.initialize('switchboard-bench-idle');
  if (!session.sessionId) throw new Error('the server issued no Mcp-Session-Id');
  const socket = await openStream(url, session);
  sessions.push({ session, socket });
}

async function open(url, total) {
  const started = Date.now();
  let failed = 0;
  let lastError;
  const want = total - sessions.length;
  let issued = 0;
  const worker = async () => {
    while (issued < want) {
      issued++;
      try {
        await openOne(url);
      } catch (error) {
        failed++;
        lastError = error.message;
        if (failed > 50) throw new Error(`too many failures opening sessions; last: ${lastError}`);
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  return { open: sessions.length, failed, lastError, ms: Date.now() - started };
}

async function closeAll() {
  let closed = 0;
  const list = sessions.splice(0);
  for (let i = 0; i < list.length; i += PARALLEL) {
    await Promise.all(
      list.slice(i, i + PARALLEL).map(async ({ session, socket }) => {
        await session.close();
        socket.destroy();
        closed++;
      }),
    );
  }
  return { closed };
}

process.on('message', async (message) => {
  try {
    if (message.type === 'open')
      process.send({ type: 'opened', ...(await open(message.url, message.total)) });
    else if (message.type === 'closeAll') process.send({ type: 'closed', ...(await closeAll()) });
  } catch (error) {
    process.send({ type: 'error', message: error.message });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready' });
