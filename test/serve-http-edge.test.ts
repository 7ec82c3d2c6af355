/**
 * The HTTP edge of `switchboard serve` under hostile clients (issue 18): DNS rebinding refused on
 * every endpoint (`/mcp`, `/servers/<name>/mcp`, `/approvals`, the `/meup` upgrade), `Accept`
 * as the transport specifies it, the edge's timeouts (slow-loris headers and bodies cut at the
 * configured time, idle kept-alive connections closed) without ever cutting a long SSE stream or a
 * WebSocket, the connection limit, and the session limit of one principal (`local`) evicting its
 * least recently active idle session instead of locking every local client out.
 *
 * Raw sockets where the timing of bytes matters; undici elsewhere. Small configured values keep
 * it quick; every wait is for an event, with generous bounds for a loaded machine.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { EVERYTHING } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { Participant, spaceUrlOf } from './support/space.js';
import {
  ACCEPT_BOTH,
  headerOf,
  initialize,
  jsonOf,
  openSse,
  post,
  type RawResponse,
  send,
} from './support/sse-client.js';

const REBIND = '127.0.0.1.rebind.evil.example';
const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'edge', version: '1' } },
};

/** What a raw connection received, and when it closed (ms after it was opened). */
interface RawConnection {
  readonly socket: Socket;
  readonly opened: number;
  data(): string;
  closedAfter(): number | undefined;
}

const raws: Socket[] = [];

function rawConnection(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    raws.push(socket);
    const opened = Date.now();
    let text = '';
    let closed: number | undefined;
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = Date.now() - opened;
    });
    socket.once('connect', () => resolve({ socket, opened, data: () => text, closedAfter: () => closed }));
    socket.once('error', reject);
  });
}

/** Writes `chunk` every `everyMs` while the socket is open; returns the stop function. */
function drip(socket: Socket, chunk: string, everyMs: number): () => void {
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(chunk);
  }, everyMs);
  return () => clearInterval(timer);
}

function statusLine(text: string): string {
  return text.split('\r\n')[0] ?? '';
}

/** The JSON body of a raw HTTP answer (sent whole or in one chunk). */
function jsonBody(text: string): { error?: { code: number; message: string } } {
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  return JSON.parse(body.slice(body.indexOf('{'), body.lastIndexOf('}') + 1)) as {
    error?: { code: number; message: string };
  };
}

function expectForbidden(response: RawResponse): void {
  expect(response.status, response.text).toBe(403);
  expect(response.text).toMatch(/Host|Origin/);
}

afterAll(() => {
  for (const socket of raws) socket.destroy();
});

describe('serve: the HTTP edge', () => {
  let gw: RunningServe;
  let port: number;

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig(
        { everything: { script: EVERYTHING, args: ['stdio'] } },
        [
          'server:',
          '  headersTimeout: 500ms',
          '  bodyTimeout: 500ms',
          '  idleConnectionTimeout: 1s',
          'sessions:',
          '  maxSessionsPerPrincipal: 3',
          '',
        ].join('\n'),
      ),
    });
    port = Number(new URL(gw.base).port);
  }, 90_000);

  afterAll(async () => {
    await gw?.stop();
  });

  describe('DNS rebinding: one guard on every endpoint', () => {
    const rebound = () => ({ host: `${REBIND}:${port}`, origin: `http://${REBIND}:${port}` });

    it('refuses a rebound Host (and Origin) on /mcp, /servers/<name>/mcp and /approvals', async () => {
      expectForbidden(await post(gw.url, INIT, rebound()));
      expectForbidden(await post(`${gw.base}/servers/everything/mcp`, INIT, rebound()));
      expectForbidden(await send(`${gw.base}/approvals`, 'GET', rebound()));
      expectForbidden(await send(`${gw.base}/health`, 'GET', rebound()));
      // The Host alone, and the Origin alone, are each enough to refuse.
      expectForbidden(await post(gw.url, INIT, { host: `${REBIND}:${port}` }));
      expectForbidden(await post(gw.url, INIT, { origin: `http://${REBIND}:${port}` }));
      // And the loopback forms are served on each.
      const local = { host: `localhost.:${port}`, origin: `http://LOCALHOST:${port}` };
      expect((await post(gw.url, INIT, local)).status).toBe(200);
      expect((await post(`${gw.base}/servers/everything/mcp`, INIT, { host: `[::1]:${port}` })).status).toBe(
        200,
      );
      const approvals = await send(`${gw.base}/approvals`, 'GET', { host: `app.localhost:${port}` });
      expect(approvals.status, approvals.text).toBe(200);
      expect(jsonOf(approvals)).toEqual({ approvals: [] });
    });

    it('refuses a tool call of an open session sent through a rebound name', async () => {
      const session = await initialize(gw.url);
      const call = {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get-env', arguments: {} },
      };
      const refused = await post(gw.url, call, { ...session.headers, ...rebound() });
      expectForbidden(refused);
      expect(refused.text).not.toContain('PATH');
      const served = await post(gw.url, call, session.headers);
      expect(served.status).toBe(200);
      expect(served.text).toContain('PATH');
    });

    it('refuses the /meup WebSocket upgrade through a rebound name, and opens it through a loopback one', async () => {
      const url = spaceUrlOf(gw.base);
      await expect(
        Participant.connect(url, { headers: { Host: `${REBIND}:${port}` }, welcome: false }),
      ).rejects.toMatchObject({ status: 403 });
      await expect(
        Participant.connect(url, {
          headers: { Origin: `http://${REBIND}:${port}` },
          welcome: false,
        }),
      ).rejects.toMatchObject({ status: 403 });
      const ok = await Participant.connect(url, {
        headers: { Host: `127.0.0.1:${port}`, Origin: `http://localhost:${port}` },
        join: { type: 'join', participantId: 'edge-guard', protocol: 'meup/v0.2' },
      });
      await ok.close();
    });

    it('refuses a request with a second Host line (Node would keep only the first)', async () => {
      const c = await rawConnection(port);
      c.socket.write(`GET /health HTTP/1.1\r\nHost: localhost:${port}\r\nHost: ${REBIND}\r\n\r\n`);
      await vi.waitFor(() => expect(c.data()).toContain('\r\n\r\n'), { timeout: 10_000 });
      expect(statusLine(c.data())).toBe('HTTP/1.1 403 Forbidden');
    });
  });

  describe('Accept, as the transport specifies it', () => {
    it('answers 406 unless Accept lists both types by name (wildcards do not list them)', async () => {
      for (const accept of [undefined, '*/*', 'application/*, text/*', 'application/json, text/*']) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (accept !== undefined) headers.accept = accept;
        const response = await send(gw.url, 'POST', headers, JSON.stringify(PING));
        expect(response.status, `${accept}: ${response.text}`).toBe(406);
        expect(jsonOf<{ error: { code: number } }>(response).error.code).toBe(-32600);
      }
      const session = await initialize(gw.url);
      expect((await send(gw.url, 'GET', { ...session.headers, accept: '*/*' })).status).toBe(406);
      // 2026-07-28 (stateless) requests too.
      const modern = await send(
        gw.url,
        'POST',
        {
          'content-type': 'application/json',
          accept: '*/*',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'server/discover',
        },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'server/discover',
          params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
        }),
      );
      expect(modern.status, modern.text).toBe(406);
      const ok = await send(
        gw.url,
        'POST',
        { 'content-type': 'application/json', accept: ACCEPT_BOTH },
        '{}',
      );
      expect(ok.status).not.toBe(406);
    });
  });

  // Before the timeouts: no session of an earlier test holds a stream, so all of them are idle.
  describe('the session limit of one principal', () => {
    it('evicts the least recently active idle session of `local` instead of refusing, and refuses (logged) only when none is idle', async () => {
      const base = `${gw.base}/servers/everything/mcp`;
      const first = await initialize(base);
      const second = await initialize(base);
      const third = await initialize(base);
      // Activity on the first: the second is now the least recently active.
      expect((await post(base, PING, first.headers)).status).toBe(200);
      const fourth = await initialize(base);
      expect((await post(base, PING, second.headers)).status).toBe(404);
      for (const s of [first, third, fourth]) expect((await post(base, PING, s.headers)).status).toBe(200);

      // Sessions with an open stream are never idle: with all three streaming, a fourth is refused.
      const streams = await Promise.all([first, third, fourth].map((s) => openSse(base, 'GET', s.headers)));
      try {
        const refused = await post(base, INIT);
        expect(refused.status, refused.text).toBe(429);
        expect(jsonOf<{ error: { code: number; message: string } }>(refused).error).toMatchObject({
          code: -32007,
          message: expect.stringContaining('none of them idle'),
        });
        await vi.waitFor(() => expect(gw.stderr()).toMatch(/session refused: principal local holds/), {
          timeout: 10_000,
        });
        for (const s of [first, third, fourth]) expect((await post(base, PING, s.headers)).status).toBe(200);
      } finally {
        for (const stream of streams) stream.abort();
      }
      // Streams closed: the sessions are idle again and make room once more.
      await vi.waitFor(async () => expect((await post(base, INIT)).status).toBe(200), { timeout: 10_000 });
    }, 60_000);
  });

  describe('timeouts', () => {
    it('cuts a slow-loris header sender at server.headersTimeout with 408, and a connection that sends nothing', async () => {
      const slow = await rawConnection(port);
      slow.socket.write(`POST /mcp HTTP/1.1\r\nHost: localhost:${port}\r\n`);
      const stop = drip(slow.socket, 'X-Slow: 1\r\n', 100);
      const silent = await rawConnection(port);
      try {
        await vi.waitFor(
          () => {
            expect(slow.closedAfter()).toBeDefined();
            expect(silent.closedAfter()).toBeDefined();
          },
          { timeout: 15_000, interval: 50 },
        );
      } finally {
        stop();
      }
      for (const c of [slow, silent]) {
        expect(statusLine(c.data())).toBe('HTTP/1.1 408 Request Timeout');
        expect(jsonBody(c.data()).error).toMatchObject({
          code: -32600,
          message: expect.stringContaining('server.headersTimeout'),
        });
        expect(c.closedAfter()).toBeGreaterThanOrEqual(450);
      }
    });

    it('cuts a slow body at server.bodyTimeout with 408 and closes the connection', async () => {
      const c = await rawConnection(port);
      const body = JSON.stringify(PING);
      c.socket.write(
        `POST /mcp HTTP/1.1\r\nHost: localhost:${port}\r\nContent-Type: application/json\r\n` +
          `Accept: ${ACCEPT_BOTH}\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      let at = 0;
      const timer = setInterval(() => {
        if (at < body.length - 1 && !c.socket.destroyed) c.socket.write(body[at++]!);
      }, 50);
      try {
        await vi.waitFor(() => expect(c.closedAfter()).toBeDefined(), { timeout: 15_000, interval: 50 });
      } finally {
        clearInterval(timer);
      }
      expect(statusLine(c.data())).toBe('HTTP/1.1 408 Request Timeout');
      expect(jsonBody(c.data()).error).toMatchObject({
        code: -32600,
        message: expect.stringContaining('server.bodyTimeout'),
      });
      expect(c.closedAfter()).toBeGreaterThanOrEqual(450);
    });

    it('closes an idle kept-alive connection after server.idleConnectionTimeout', async () => {
      const c = await rawConnection(port);
      c.socket.write(`GET /health HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
      await vi.waitFor(() => expect(c.data()).toContain('"status":"ok"'), { timeout: 10_000 });
      const answered = Date.now() - c.opened;
      await vi.waitFor(() => expect(c.closedAfter()).toBeDefined(), { timeout: 15_000, interval: 50 });
      expect(c.closedAfter()! - answered).toBeGreaterThanOrEqual(900);
    });

    it('never cuts a long SSE answer, a silent GET stream or a WebSocket, however long past the timeouts', async () => {
      const session = await initialize(gw.url);
      const get = await openSse(gw.url, 'GET', session.headers);
      expect(get.status).toBe(200);
      const participant = await Participant.connect(spaceUrlOf(gw.base), {
        join: { type: 'join', participantId: 'edge-long', protocol: 'meup/v0.2' },
      });
      try {
        // A call of about 3 s (three times every timeout configured), streamed with progress.
        const call = await openSse(
          gw.url,
          'POST',
          { ...session.headers, 'content-type': 'application/json' },
          JSON.stringify({
            jsonrpc: '2.0',
            id: 7,
            method: 'tools/call',
            params: {
              name: 'trigger-long-running-operation',
              arguments: { duration: 3, steps: 3 },
              _meta: { progressToken: 'edge' },
            },
          }),
        );
        expect(headerOf(call, 'content-type'), call.text).toMatch(/^text\/event-stream/);
        const started = Date.now();
        await call.waitFor((_e, message) => message?.id === 7, 30_000);
        expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
        const result = call.messages().find((m) => m.id === 7) as { result?: { content?: unknown[] } };
        expect(result.result?.content?.length).toBeGreaterThan(0);
        expect(call.messages().filter((m) => m.method === 'notifications/progress').length).toBe(3);
        // The GET stream, silent all along (keep-alive comments every 15 s), is still open...
        expect(get.ended).toBe(false);
        // ...and so is the WebSocket: it answers a ping.
        expect(participant.ws.readyState).toBe(WebSocket.OPEN);
        const pong = new Promise<void>((resolve) => participant.ws.once('pong', () => resolve()));
        participant.ws.ping();
        await pong;
      } finally {
        get.abort();
        await participant.close();
      }
    }, 60_000);
  });
});

describe('serve: the connection limit (server.maxConnections)', () => {
  let gw: RunningServe;
  let port: number;

  beforeAll(async () => {
    gw = await startServe({
      configYaml: stdioUpstreamConfig(
        { everything: { script: EVERYTHING, args: ['stdio'] } },
        'server:\n  maxConnections: 3\nspace:\n  enabled: false\n',
      ),
    });
    port = Number(new URL(gw.base).port);
  }, 90_000);

  afterAll(async () => {
    await gw?.stop();
  });

  /** A kept-alive connection that has had one answer (so the server has surely counted it). */
  async function held(): Promise<RawConnection> {
    const c = await rawConnection(port);
    c.socket.write(`GET /health HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
    await vi.waitFor(() => expect(c.data()).toContain('"status":"ok"'), { timeout: 10_000 });
    return c;
  }

  it('closes the connection beyond the limit unanswered, logs it, and serves again once one closes', async () => {
    const kept = [await held(), await held(), await held()];
    const extra = await rawConnection(port);
    extra.socket.write(`GET /health HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
    await vi.waitFor(() => expect(extra.closedAfter()).toBeDefined(), { timeout: 10_000 });
    expect(extra.data()).toBe('');
    await vi.waitFor(
      () => expect(gw.stderr()).toMatch(/connection refused: the gateway holds server.maxConnections/),
      {
        timeout: 10_000,
      },
    );
    // The held connections are still served.
    kept[0]!.socket.write(`GET /health HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
    await vi.waitFor(() => expect(kept[0]!.data().match(/"status":"ok"/g)?.length).toBe(2), {
      timeout: 10_000,
    });
    kept[1]!.socket.destroy();
    await vi.waitFor(
      async () => {
        const c = await rawConnection(port);
        c.socket.write(`GET /health HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\n`);
        await vi.waitFor(() => expect(c.closedAfter()).toBeDefined(), { timeout: 5000 });
        expect(c.data()).toContain('"status":"ok"');
      },
      { timeout: 15_000, interval: 200 },
    );
    for (const c of kept) c.socket.destroy();
  }, 60_000);
});
