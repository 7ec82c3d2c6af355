// A Streamable HTTP MCP load client on undici: one session (initialize, read Mcp-Session-Id,
// notifications/initialized), then `tools/call` requests from C workers over a keep-alive Pool of C
// connections. Responses may be JSON or SSE; both are parsed and the response matching the request
// id is required. Every gateway is measured with exactly this client.
import { Pool } from 'undici';
import { cpuMsOf } from './procs.mjs';
import { summarize } from './stats.mjs';
import { THREAD_KINDS, threadCpuDelta, threadCpuOf } from './threads.mjs';

export const PROTOCOL_VERSION = '2025-11-25';
const ACCEPT = 'application/json, text/event-stream';

/** The JSON-RPC messages in an SSE body (events with non-empty data). */
export function parseSse(text) {
  const messages = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let data = '';
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(line[5] === ' ' ? 6 : 5);
    }
    if (data.trim().length > 0) {
      try {
        messages.push(JSON.parse(data));
      } catch {}
    }
  }
  return messages;
}

function parseBody(contentType, text) {
  if (contentType?.includes('text/event-stream')) return parseSse(text);
  if (text.trim().length === 0) return [];
  const parsed = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}

function header(headers, name) {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** One MCP session on `url` (http://host:port/path). */
export class HttpMcpSession {
  constructor(url, pool) {
    const u = new URL(url);
    this.origin = u.origin;
    this.path = u.pathname;
    this.pool = pool;
    this.sessionId = undefined;
    this.protocolVersion = PROTOCOL_VERSION;
    this.nextId = 1;
  }

  headers() {
    const h = {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-protocol-version': this.protocolVersion,
    };
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    return h;
  }

  /** POSTs one JSON-RPC message; resolves with { status, messages }. */
  async post(message, pool = this.pool) {
    const { statusCode, headers, body } = await pool.request({
      origin: this.origin,
      path: this.path,
      method: 'POST',
      headers: this.headers(),
      body: JSON.stringify(message),
    });
    const text = await body.text();
    if (statusCode >= 300) return { status: statusCode, messages: [], text, headers };
    return { status: statusCode, messages: parseBody(header(headers, 'content-type'), text), headers };
  }

  async initialize(clientName = 'switchboard-bench') {
    const id = this.nextId++;
    const { status, messages, headers, text } = await this.post({
      jsonrpc: '2.0',
      id,
      method: 'initialize',
      params: {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: clientName, version: '1.0.0' },
      },
    });
    const response = messages.find((m) => m.id === id);
    if (status !== 200 || !response?.result) {
      throw new Error(
        `initialize on ${this.origin}${this.path} failed: HTTP ${status} ${text ?? JSON.stringify(messages)}`,
      );
    }
    this.sessionId = header(headers, 'mcp-session-id');
    this.protocolVersion = response.result.protocolVersion ?? PROTOCOL_VERSION;
    const ack = await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    if (ack.status !== 202 && ack.status !== 200)
      throw new Error(`notifications/initialized: HTTP ${ack.status}`);
    return response.result;
  }

  /** One tools/call; resolves true on a result, false on an HTTP or JSON-RPC error. */
  async callTool(name, args, pool = this.pool) {
    const id = this.nextId++;
    const { status, messages } = await pool
      .request({
        origin: this.origin,
        path: this.path,
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
      })
      .then(async ({ statusCode, headers, body }) => {
        const text = await body.text();
        return {
          status: statusCode,
          messages: statusCode === 200 ? parseBody(header(headers, 'content-type'), text) : [],
        };
      });
    if (status !== 200) return false;
    const response = messages.find((m) => m.id === id);
    return response !== undefined && response.result !== undefined && response.result.isError !== true;
  }

  /** Ends the session (DELETE); errors are ignored (some servers answer 405). */
  async close() {
    if (!this.sessionId) return;
    try {
      const { body } = await this.pool.request({
        origin: this.origin,
        path: this.path,
        method: 'DELETE',
        headers: this.headers(),
      });
      await body.text();
    } catch {}
  }
}

/** A keep-alive pool of `connections` HTTP/1.1 connections (no pipelining). */
export function makePool(url, connections) {
  return new Pool(new URL(url).origin, {
    connections,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
}

/**
 * Drives `concurrency` workers, each issuing one tools/call after another, first for `warmupMs`
 * (not recorded), then for `durationMs`. Returns the round trips (µs), completed count, errors and
 * the measured wall time.
 */
export async function loadWindow(session, pool, { concurrency, warmupMs, durationMs, tool, args }) {
  const run = async (ms, record) => {
    const latencies = [];
    let errors = 0;
    let completed = 0;
    const t0 = process.hrtime.bigint();
    const end = t0 + BigInt(Math.round(ms * 1e6));
    const worker = async () => {
      while (process.hrtime.bigint() < end) {
        const s = process.hrtime.bigint();
        let ok;
        try {
          ok = await session.callTool(tool, args, pool);
        } catch {
          ok = false;
        }
        const e = process.hrtime.bigint();
        if (ok) {
          completed++;
          if (record) latencies.push(Number(e - s) / 1000);
        } else errors++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const elapsedMs = Number(process.hrtime.bigint() - t0) / 1e6;
    return { latencies, errors, completed, elapsedMs };
  };
  if (warmupMs > 0) await run(warmupMs, false);
  return run(durationMs, true);
}

/**
 * Opens the bench session on a gateway and finds the echo tool's name on its endpoint (`echo` or
 * `<name>__echo`). Resolves with { session, setupPool, tool }; close both when done.
 */
export async function prepareEcho(target) {
  const pool = makePool(target.url, 2);
  const session = new HttpMcpSession(target.url, pool);
  await session.initialize();
  const listed = await session.post({
    jsonrpc: '2.0',
    id: session.nextId++,
    method: 'tools/list',
    params: {},
  });
  const tools = listed.messages.find((m) => m.result)?.result?.tools ?? [];
  const tool = tools.find((t) => t.name === 'echo') ?? tools.find((t) => t.name.endsWith('__echo'));
  if (!tool) throw new Error(`${target.url}: no echo tool in ${JSON.stringify(tools.map((t) => t.name))}`);
  return { session, setupPool: pool, tool: tool.name };
}

/**
 * One measured window on a prepared gateway (`target`: { url, pid, session }): a fresh pool of C
 * connections, `loadWindow`, and the CPU time of the gateway process (`pid`, without its upstream
 * children) and of this load client, each per request of the window. CPU is read over warm-up +
 * window and scaled to the window (approximate); `threadUsPerReq` splits the gateway's by thread kind
 * (bench/lib/threads.mjs: main, v8-platform, libuv-pool, worker, other). Resolves with { rps, p50,
 * p99, errors, completed, cpuUsPerReq, threadUsPerReq, clientUsPerReq }.
 */
export async function measureWindow(target, { concurrency, warmupMs, durationMs, tool, args }) {
  const pool = makePool(target.url, concurrency);
  const threads0 = threadCpuOf(target.pid);
  const cpu0 = cpuMsOf(target.pid);
  const self0 = process.cpuUsage();
  const w = await loadWindow(target.session, pool, { concurrency, warmupMs, durationMs, tool, args });
  const cpu1 = cpuMsOf(target.pid);
  const threads = threadCpuDelta(threads0, threadCpuOf(target.pid));
  const self1 = process.cpuUsage(self0);
  await pool.close();
  const s = summarize(w.latencies);
  const share = durationMs / (durationMs + warmupMs);
  const completed = Math.max(1, w.completed);
  return {
    rps: (w.completed / w.elapsedMs) * 1000,
    p50: s.p50,
    p99: s.p99,
    errors: w.errors,
    completed: w.completed,
    cpuUsPerReq: ((cpu1 - cpu0) * 1000 * share) / completed,
    threadUsPerReq: Object.fromEntries(THREAD_KINDS.map((k) => [k, (threads[k] * 1000 * share) / completed])),
    clientUsPerReq: ((self1.user + self1.system) * share) / completed,
  };
}
