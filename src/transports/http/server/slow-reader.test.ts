/**
 * SSE streams whose client stops reading, over real HTTP on loopback: the gateway's session and
 * its 2026-07-28 counterpart write to a Node HTTP server on port 0, and a Node HTTP client pauses
 * its response (so the socket stops being read, the kernel buffers fill, and what the gateway
 * writes piles up in the response). The stream must be cut once `maxBufferedBytes` is unsent, the
 * cut counted and logged, and a session-based stream's client must get every event back, in order
 * and once, by resuming with `Last-Event-ID`, even while new events keep coming.
 */
import {
  type ClientRequest,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';

// Real sockets on a machine shared with other test runs: generous, and waits are on events.
vi.setConfig({ testTimeout: 60_000 });

import { MemoryLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import { StreamBound } from '../../stream-bound.js';
import { MemoryEventStore } from '../events/memory-event-store.js';
import { SseParser } from '../sse/sse-parser.js';
import { HttpSession } from './http-session.js';
import { type ModernCall, ModernSession } from './modern/modern-session.js';
import { RequestStateCodec } from './modern/request-state.js';

const HEADERS = { 'mcp-session-id': 'mcp-1' };
const PAD = 'p'.repeat(16 * 1024);
const BOUND = 256 * 1024;
/** Far more than the kernel's socket buffers and the bound together: a stream that is never cut fails. */
const MAX_EVENTS = 4000;
/** Events sent after a cut: 16 MiB, more than loopback's socket buffers take at once. */
const AFTER_CUT = 1000;

const servers: Server[] = [];
const clients: ClientRequest[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** An HTTP server on loopback whose requests go to the handler the test sets. */
async function httpServer() {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer((req, res) => handler(req, res));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    /** Serves the next requests with `serve`, and resolves with the response of the first. */
    next(serve: (req: IncomingMessage, res: ServerResponse) => void): void {
      handler = serve;
    },
  };
}

/** A client response read on demand: paused until `read()`, then parsed as it arrives, to its end. */
interface HeldResponse {
  readonly response: IncomingMessage;
  /** The data events received so far (complete events only), with their ids. */
  readonly events: { id: string; n: number }[];
  ended: boolean;
  read(): void;
  /** Resolves once the connection is over (ended by the server, or cut). */
  readonly over: Promise<void>;
}

function open(port: number, method: 'GET' | 'POST', headers: Record<string, string>, paused: boolean) {
  return new Promise<HeldResponse>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: '/mcp', headers }, (response) => {
      let finish: () => void = () => {};
      const held: HeldResponse = {
        response,
        events: [],
        ended: false,
        read: () => response.resume(),
        over: new Promise<void>((r) => {
          finish = r;
        }),
      };
      const parser = eventParser(held.events);
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => parser.push(chunk));
      response.once('end', () => {
        held.ended = true;
      });
      response.once('error', () => {});
      response.once('close', () => finish());
      if (paused) response.pause();
      resolve(held);
    });
    req.once('error', reject);
    clients.push(req);
    req.end();
  });
}

/**
 * A parser that adds each data event of an SSE body to `out` with its id and the message's `n`
 * (-1 for a response), skipping comments and priming events; a cut-off tail is never dispatched.
 */
function eventParser(out: { id: string; n: number }[]): SseParser {
  return new SseParser({
    onEvent: (event) => {
      if (event.data.length === 0) return;
      const message = JSON.parse(event.data) as { params?: { n?: number }; id?: number };
      out.push({ id: event.lastEventId, n: message.params?.n ?? -1 });
    },
  });
}

function notification(n: number): [string, JsonRpcMessage] {
  const message: JsonRpcMessage = {
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: { level: 'info', n, pad: PAD },
  };
  return [JSON.stringify(message), message];
}

function setup(maxBufferedBytes = BOUND) {
  const store = new MemoryEventStore({ maxEventsPerSession: 100_000, maxTotalBytes: 1024 * 1024 * 1024 });
  const metrics = new Metrics();
  const logger = new MemoryLogger();
  const session = new HttpSession({
    key: 'K',
    mcpSessionId: 'mcp-1',
    principal: 'local',
    endpoint: '*',
    ephemeral: false,
    store,
    metrics,
    revision: () => '2025-11-25',
    retryMs: 1000,
    now: () => Date.now(),
    maxBufferedBytes,
    logger,
  });
  let sent = 0;
  /** Sends the next unrelated notification (it goes to the GET stream). */
  const notify = (): void => {
    const [json, message] = notification(sent++);
    session.send(json, message, { kind: 'unrelated' });
  };
  const cuts = () => metrics.total('http_slow_streams_cut_total');
  return { store, metrics, logger, session, notify, cuts, sentCount: () => sent };
}

/** Resumes with `Last-Event-ID` as the legacy endpoint does: the store's replay, then the session. */
function resumeHandler(s: ReturnType<typeof setup>, afterResume?: () => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const replay = s.store.replayAfter('K', String(req.headers['last-event-id']), Date.now());
    if (!replay.ok) throw new Error(`cannot resume: ${replay.reason}`);
    s.session.resume(res, replay.streamId, replay.events, HEADERS);
    afterResume?.();
  };
}

describe('a GET stream whose client stops reading', () => {
  it('is cut once the bound is unsent, counted and logged, and its client resumes with every event, in order and once', async () => {
    const http = await httpServer();
    const s = setup();
    http.next((_req, res) => s.session.openGetStream(res, HEADERS));
    const slow = await open(http.port, 'GET', { accept: 'text/event-stream' }, true);

    while (s.cuts() === 0 && s.sentCount() < MAX_EVENTS) s.notify();
    expect(s.cuts()).toBe(1);
    expect(s.metrics.get('http_slow_streams_cut_total', { stream: 'get' })).toBe(1);
    const line = s.logger.entries.find((e) => e.message.startsWith('cutting an SSE stream'));
    expect(line?.level).toBe('warn');
    expect(line?.fields).toMatchObject({ session: 'K', kind: 'get', limit: BOUND });
    expect(line?.fields.unsent as number).toBeGreaterThanOrEqual(BOUND);
    // Events after the cut go to the store only: more than the kernel's socket buffers hold, so
    // that the replay cannot all be handed to the OS at once.
    for (let i = 0; i < AFTER_CUT; i++) s.notify();
    expect(s.metrics.get('http_events_kept_for_resumption_total')).toBeGreaterThanOrEqual(AFTER_CUT);

    // The client reads what reached it, then finds the connection gone.
    slow.read();
    await slow.over;
    expect(slow.ended).toBe(false);
    const before = slow.events;
    const last = before.at(-1)!;
    expect(before.map((e) => e.n)).toEqual(before.map((_e, i) => i));

    // Resuming: the backlog (at least the bound) comes at the client's pace, while new events keep
    // arriving; those follow it, none twice, none missing, and the stream is not cut again.
    http.next(
      resumeHandler(s, () => {
        for (let i = 0; i < 30; i++) s.notify();
      }),
    );
    const resumed = await open(
      http.port,
      'GET',
      { accept: 'text/event-stream', 'last-event-id': last.id },
      false,
    );
    const total = s.sentCount();
    await vi.waitFor(() => expect(resumed.events.at(-1)?.n).toBe(total - 1), { timeout: 20_000 });
    const after = resumed.events;
    expect([...before, ...after].map((e) => e.n)).toEqual(Array.from({ length: total }, (_v, i) => i));
    expect(s.cuts()).toBe(1);
    // And it is live again: the next event comes straight through.
    s.notify();
    await vi.waitFor(() => expect(resumed.events.at(-1)?.n).toBe(total), { timeout: 20_000 });
  });

  it('is not cut for a burst written in one turn while its client reads (Node corks a response for the turn)', async () => {
    const http = await httpServer();
    const s = setup();
    http.next((_req, res) => s.session.openGetStream(res, HEADERS));
    const reader = await open(http.port, 'GET', { accept: 'text/event-stream' }, false);
    // Four times the bound in one turn: all of it sits behind the cork until the turn ends.
    for (let i = 0; i < (4 * BOUND) / PAD.length; i++) s.notify();
    expect(s.cuts()).toBe(0);
    await vi.waitFor(() => expect(reader.events).toHaveLength(s.sentCount()), { timeout: 20_000 });
  });

  it('is cut by a keep-alive that finds it behind', async () => {
    const http = await httpServer();
    const s = setup();
    let res: ServerResponse | undefined;
    http.next((_req, r) => {
      res = r;
      s.session.openGetStream(r, HEADERS);
    });
    await open(http.port, 'GET', { accept: 'text/event-stream' }, true);
    const bound = new StreamBound(BOUND);
    // Fill it to the bound without any write finding it behind yet.
    while (!bound.isBehind(res!) && s.sentCount() < MAX_EVENTS) s.notify();
    expect(s.cuts()).toBe(0);
    s.session.keepAlive(': keep-alive\n\n');
    expect(s.cuts()).toBe(1);
    expect(res!.destroyed).toBe(true);
  });
});

describe('a POST stream whose client stops reading', () => {
  it('is cut; its response waits in the store and a GET with Last-Event-ID gets the rest and ends', async () => {
    const http = await httpServer();
    const s = setup();
    http.next((_req, res) => {
      s.session.openExchange(res, [1], 'sse', false, HEADERS);
    });
    const slow = await open(http.port, 'POST', { accept: 'text/event-stream' }, true);
    let n = 0;
    while (s.cuts() === 0 && n < MAX_EVENTS) {
      const [json, message] = notification(n++);
      s.session.send(json, message, { kind: 'related', request: 1 });
    }
    expect(s.metrics.get('http_slow_streams_cut_total', { stream: 'post' })).toBe(1);
    const answer: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { n: -7 } };
    s.session.send(JSON.stringify(answer), answer, { kind: 'response', request: 1 });
    slow.read();
    await slow.over;
    const before = slow.events;
    expect(before.length).toBeLessThan(n);

    http.next(resumeHandler(s));
    const resumed = await open(
      http.port,
      'GET',
      { accept: 'text/event-stream', 'last-event-id': before.at(-1)!.id },
      false,
    );
    await resumed.over;
    expect(resumed.ended).toBe(true);
    const after = resumed.events;
    expect([...before, ...after].map((e) => e.n)).toEqual([...Array.from({ length: n }, (_v, i) => i), -1]);
  });
});

describe('2026-07-28 streams whose client stops reading', () => {
  function modern() {
    const metrics = new Metrics();
    const logger = new MemoryLogger();
    const toRouter: JsonRpcMessage[] = [];
    const session = new ModernSession({
      key: 'M',
      principal: 'local',
      metrics,
      states: new RequestStateCodec(),
      serverInfo: { name: 'switchboard', version: '0' },
      parkMs: 60_000,
      toRouter: (message) => toRouter.push(message),
      maxBufferedBytes: BOUND,
      logger,
    });
    return { metrics, logger, toRouter, session };
  }

  it('cuts a call stream, which cancels the call upstream', async () => {
    const http = await httpServer();
    const m = modern();
    let call: ModernCall | undefined;
    http.next((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      call = {
        downstreamId: '1#1',
        request: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } },
        res,
        mode: 'sse',
        capabilities: {},
        inputs: new Map(),
        done: false,
      };
      m.session.track(call);
    });
    await open(http.port, 'POST', { accept: 'text/event-stream' }, true);
    await vi.waitFor(() => expect(call).toBeDefined());
    let n = 0;
    while (m.metrics.total('http_slow_streams_cut_total') === 0 && n < MAX_EVENTS) {
      const message: JsonRpcMessage = {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 't', progress: n++, pad: PAD },
      };
      m.session.send(JSON.stringify(message), message, { kind: 'related', request: '1#1' });
    }
    expect(m.metrics.get('http_slow_streams_cut_total', { stream: 'modern-call' })).toBe(1);
    await vi.waitFor(() =>
      expect(m.toRouter).toContainEqual(
        expect.objectContaining({
          method: 'notifications/cancelled',
          params: expect.objectContaining({ requestId: '1#1' }),
        }),
      ),
    );
    expect(m.logger.entries.some((e) => e.level === 'warn' && e.fields.kind === 'modern-call')).toBe(true);
  });

  it('cuts a listen stream', async () => {
    const http = await httpServer();
    const m = modern();
    let res: ServerResponse | undefined;
    http.next((_req, r) => {
      res = r;
      r.writeHead(200, { 'content-type': 'text/event-stream' });
      r.flushHeaders();
      const listener = {
        id: 9,
        res: r,
        filter: { tools: true, prompts: false, resources: false, uris: new Set<string>() },
      };
      m.session.listeners.add(listener);
      r.once('close', () => m.session.listeners.delete(listener));
    });
    await open(http.port, 'POST', { accept: 'text/event-stream' }, true);
    await vi.waitFor(() => expect(res).toBeDefined());
    const changed: JsonRpcMessage = {
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { pad: PAD } },
    };
    for (let i = 0; i < MAX_EVENTS && m.metrics.total('http_slow_streams_cut_total') === 0; i++)
      m.session.send(JSON.stringify(changed), changed, { kind: 'unrelated' });
    expect(m.metrics.get('http_slow_streams_cut_total', { stream: 'listen' })).toBe(1);
    await vi.waitFor(() => expect(m.session.listeners.size).toBe(0));
  });
});
