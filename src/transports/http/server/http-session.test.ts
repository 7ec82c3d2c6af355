import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Metrics } from '../../../observe/metrics.js';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import { MemoryEventStore } from '../events/memory-event-store.js';
import { SseParser } from '../sse/sse-parser.js';
import { DEFAULT_HOLD_MS, HttpSession, type ResponseMode } from './http-session.js';

/** The part of a `ServerResponse` the session uses, recording every call. */
class FakeResponse extends EventEmitter {
  readonly calls: string[] = [];
  status: number | undefined;
  headers: Record<string, string> = {};
  body = '';
  headersSent = false;
  writableEnded = false;
  destroyed = false;
  writeHead(status: number, headers: Record<string, string>): this {
    this.calls.push('writeHead');
    this.status = status;
    this.headers = headers;
    return this;
  }
  flushHeaders(): void {
    this.calls.push('flushHeaders');
    this.headersSent = true;
  }
  write(chunk: string): boolean {
    this.calls.push('write');
    this.headersSent = true;
    this.body += chunk;
    return true;
  }
  end(chunk?: string): this {
    this.calls.push(chunk === undefined ? 'end' : 'end(body)');
    this.headersSent = true;
    if (chunk !== undefined) this.body += chunk;
    this.writableEnded = true;
    return this;
  }
  /** The client goes away. */
  drop(): void {
    this.destroyed = true;
    this.emit('close');
  }
  events(): { id: string; data: string }[] {
    const out: { id: string; data: string }[] = [];
    const parser = new SseParser({ onEvent: (e) => out.push({ id: e.lastEventId, data: e.data }) });
    parser.push(this.body);
    return out;
  }
}

const HEADERS = { 'mcp-session-id': 'mcp-1' };

function setup(options: { revision?: string; maxStreams?: number } = {}) {
  const store = new MemoryEventStore();
  const metrics = new Metrics();
  const session = new HttpSession({
    key: 'K',
    mcpSessionId: 'mcp-1',
    principal: 'local',
    endpoint: '*',
    ephemeral: false,
    store,
    metrics,
    revision: () => options.revision ?? '2025-11-25',
    retryMs: 1000,
    now: () => Date.now(),
    ...(options.maxStreams === undefined ? {} : { maxStreams: options.maxStreams }),
  });
  const open = (ids: number[], mode: ResponseMode = 'hold', batch = false) => {
    const res = new FakeResponse();
    const exchange = session.openExchange(res as unknown as ServerResponse, ids, mode, batch, HEADERS);
    return { res, exchange };
  };
  const respond = (id: number) => {
    const message: JsonRpcMessage = { jsonrpc: '2.0', id, result: { n: id } };
    session.send(JSON.stringify(message), message, { kind: 'response', request: id });
  };
  const progress = (id: number, value: number) => {
    const message: JsonRpcMessage = {
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: 't', progress: value },
    };
    session.send(JSON.stringify(message), message, { kind: 'related', request: id });
  };
  return { store, metrics, session, open, respond, progress };
}

describe('HttpSession: a held POST', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answered before anything else is one application/json write, and leaves nothing in the event store', () => {
    const { store, open, respond } = setup();
    const { res, exchange } = open([1]);
    expect(res.calls).toEqual([]);
    respond(1);
    expect(res.calls).toEqual(['writeHead', 'end(body)']);
    expect(res.status).toBe(200);
    expect(res.headers).toEqual({ 'content-type': 'application/json', ...HEADERS });
    expect(JSON.parse(res.body)).toEqual({ jsonrpc: '2.0', id: 1, result: { n: 1 } });
    expect(exchange.mode).toBe('json');
    expect(store.stats()).toMatchObject({ streams: 0, events: 0 });
    vi.advanceTimersByTime(DEFAULT_HOLD_MS * 10);
    expect(res.calls).toEqual(['writeHead', 'end(body)']);
  });

  it('becomes a resumable SSE stream when a notification comes first: priming event, then everything', () => {
    const { store, open, respond, progress } = setup();
    const { res } = open([1]);
    progress(1, 1);
    expect(res.headers).toMatchObject({ 'content-type': 'text/event-stream', ...HEADERS });
    progress(1, 2);
    respond(1);
    expect(res.writableEnded).toBe(true);
    const events = res.events();
    expect(events.map((e) => e.data)).toEqual([
      '',
      expect.stringContaining('"progress":1'),
      expect.stringContaining('"progress":2'),
      expect.stringContaining('"result"'),
    ]);
    // The priming event's id replays exactly the rest of the stream.
    const replay = store.replayAfter('K', events[0]!.id, Date.now());
    expect(replay).toMatchObject({ ok: true, gap: false });
    expect(replay.ok && replay.events.map((e) => e.id)).toEqual(events.slice(1).map((e) => e.id));
  });

  it('becomes a stream after holdMs when nothing comes, then carries the answer as an event', () => {
    const { open, respond } = setup();
    const { res } = open([1]);
    vi.advanceTimersByTime(DEFAULT_HOLD_MS - 1);
    expect(res.calls).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(res.calls).toEqual(['writeHead', 'write']);
    expect(res.events()).toEqual([{ id: expect.any(String), data: '' }]);
    respond(1);
    expect(res.events().map((e) => e.data)).toEqual(['', expect.stringContaining('"result"')]);
    expect(res.writableEnded).toBe(true);
  });

  it('sends its headers on their own when the revision has no priming event', () => {
    const { open, progress } = setup({ revision: '2025-06-18' });
    const { res } = open([1]);
    vi.advanceTimersByTime(DEFAULT_HOLD_MS);
    expect(res.calls).toEqual(['writeHead', 'flushHeaders']);
    progress(1, 1);
    expect(res.events()).toHaveLength(1);
  });

  it('collects a batch until every response is in (one JSON array), or streams what it has so far', () => {
    const { open, respond, progress } = setup();
    const json = open([1, 2], 'hold', true);
    respond(2);
    expect(json.res.calls).toEqual([]);
    respond(1);
    expect(JSON.parse(json.res.body).map((m: { id: number }) => m.id)).toEqual([2, 1]);

    const sse = open([3, 4], 'hold', true);
    respond(3);
    progress(4, 1);
    respond(4);
    expect(sse.res.events().map((e) => e.data && JSON.parse(e.data).id)).toEqual(['', 3, undefined, 4]);
  });

  it('stops waiting for a request the client cancelled: the batch goes with the rest, a lone one gets 202', () => {
    const { session, metrics, open, respond } = setup();
    const batch = open([1, 2], 'hold', true);
    respond(2);
    session.dropped(1);
    expect(batch.res.status).toBe(200);
    expect(JSON.parse(batch.res.body).map((m: { id: number }) => m.id)).toEqual([2]);

    const lone = open([3], 'hold');
    session.dropped(3);
    expect(lone.res.status).toBe(202);
    expect(lone.res.body).toBe('');
    expect(lone.res.headers).toEqual(HEADERS);
    expect(session.hasPending(3)).toBe(false);

    const sse = open([4, 5], 'sse', true);
    respond(4);
    session.dropped(5);
    expect(sse.res.writableEnded).toBe(true);
    expect(session.busy).toBe(false);
    // Ids that are no longer pending, or never were, change nothing.
    session.dropped(4);
    session.dropped(99);
    expect(metrics.get('http_cancelled_requests_released_total')).toBe(3);
  });

  it('stays JSON at the session’s stream limit, and counts the downgrade', () => {
    const { metrics, open, respond } = setup({ maxStreams: 1 });
    const first = open([1], 'sse');
    const held = open([2]);
    vi.advanceTimersByTime(DEFAULT_HOLD_MS);
    expect(held.res.calls).toEqual([]);
    expect(metrics.get('http_sse_downgraded_total', { reason: 'stream-limit' })).toBe(1);
    respond(2);
    expect(held.res.calls).toEqual(['writeHead', 'end(body)']);
    expect(held.res.headers['content-type']).toBe('application/json');
    respond(1);
    expect(first.res.writableEnded).toBe(true);
  });

  it('whose client left is never streamed: the timer stops and the late answer is counted as undeliverable', () => {
    const { metrics, open, respond } = setup();
    const { res } = open([1]);
    res.drop();
    vi.advanceTimersByTime(DEFAULT_HOLD_MS * 2);
    respond(1);
    expect(res.calls).toEqual([]);
    expect(metrics.get('http_deliveries_dropped_total', { reason: 'json-client-gone' })).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is answered 404 when the session ends while it is held', () => {
    const { session, open } = setup();
    const { res } = open([1]);
    session.close();
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ error: { message: 'session ended' } });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('HttpSession: an SSE POST', () => {
  it('sends its headers with the priming event, and its last event with the end of the stream', () => {
    const { open, respond, progress } = setup();
    const { res } = open([1], 'sse');
    expect(res.calls).toEqual(['writeHead', 'write']);
    progress(1, 1);
    respond(1);
    expect(res.calls).toEqual(['writeHead', 'write', 'write', 'end(body)']);
    expect(res.events().map((e) => e.data)).toEqual([
      '',
      expect.stringContaining('progress'),
      expect.stringContaining('result'),
    ]);
  });
});

describe('HttpSession: stream ids', () => {
  it('gives every POST stream of a session its own id, none equal to the GET stream', () => {
    const { session, open } = setup();
    const ids = new Set([session.getStreamId]);
    for (let i = 0; i < 100; i++) ids.add(open([i], 'json').exchange.streamId);
    expect(ids.size).toBe(101);
    const other = setup().session;
    expect(other.getStreamId.slice(0, 16)).not.toBe(session.getStreamId.slice(0, 16));
  });
});
