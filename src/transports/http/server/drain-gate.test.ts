/**
 * Pins where the drain gate sits relative to authentication (docs/architecture.md, "Shutdown: the
 * drain"). While draining, a request that would open something new is refused with 503 before
 * its credentials are checked: the drain is public already (`/health` and `/ready` say
 * `draining` to anyone, as probes carry no credentials), a load balancer or client must learn it
 * at once to go elsewhere, and a 401 instead would send a client to refresh its token rather than
 * retry. Everything that reaches a session or its data still needs valid credentials.
 */
import type { IncomingMessage } from 'node:http';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuthOutcome } from '../../../auth/auth-outcome.js';
import { DEFAULTS } from '../../../config/defaults.js';
import { PassthroughResolver } from '../../../core/passthrough-resolver.js';
import { Router } from '../../../core/router.js';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import { MemoryEventStore } from '../events/memory-event-store.js';
import { McpHttpServer } from './mcp-http-server.js';

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const POST_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

describe('the drain gate and authentication', () => {
  let server: McpHttpServer | undefined;
  let router: Router | undefined;
  afterEach(async () => {
    await server?.close();
    router?.close();
    server = undefined;
  });

  async function start() {
    const metrics = new Metrics();
    router = new Router({ resolver: new PassthroughResolver('a', 'unused'), logger: silentLogger, metrics });
    const asked: string[] = [];
    // Bearer `good` is principal p; anything else is refused, as a token authenticator does.
    const authenticate = (req: IncomingMessage): AuthOutcome => {
      asked.push(`${req.method} ${req.url}`);
      return req.headers.authorization === 'Bearer good'
        ? { ok: true, principal: 'p' }
        : { ok: false, status: 401, message: 'Unauthorized', headers: { 'www-authenticate': 'Bearer' } };
    };
    server = new McpHttpServer({
      config: {
        server: { ...DEFAULTS.server, port: 0 },
        sessions: { ...DEFAULTS.sessions, mode: 'strict' },
        resumability: DEFAULTS.resumability,
      },
      router,
      hooks: { opened: () => {}, closed: () => {} },
      upstreamNames: ['a'],
      store: new MemoryEventStore(),
      logger: silentLogger,
      metrics,
      authenticate,
      gatewayVersion: '0.0.0-test',
      modern: {
        discover: () => Promise.reject(new Error('not used')),
        paramHeaders: () => Promise.resolve(undefined),
      },
    });
    const address = await server.listen();
    return { base: `http://127.0.0.1:${address.port}`, asked };
  }

  it('answers a new session 503 before authentication, as /health tells anyone', async () => {
    const { base, asked } = await start();
    // Before the drain, the same request without credentials is a 401.
    const before = await request(`${base}/mcp`, { method: 'POST', headers: POST_HEADERS, body: INITIALIZE });
    expect(before.statusCode).toBe(401);
    await before.body.dump();
    asked.length = 0;

    server!.beginDrain();
    const refused = await request(`${base}/mcp`, { method: 'POST', headers: POST_HEADERS, body: INITIALIZE });
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(await refused.body.json()).toMatchObject({
      error: { code: -32010, data: { code: 'SB_SHUTTING_DOWN' } },
    });
    const stream = await request(`${base}/mcp`, { method: 'GET', headers: { accept: 'text/event-stream' } });
    expect(stream.statusCode).toBe(503);
    await stream.body.dump();
    expect(asked).toEqual([]);

    const health = await request(`${base}/health`);
    expect(health.statusCode).toBe(503);
    expect(await health.body.json()).toMatchObject({ status: 'draining' });
    const ready = await request(`${base}/ready`);
    expect(ready.statusCode).toBe(503);
    expect(await ready.body.json()).toMatchObject({ status: 'not_ready' });
  });

  it('still authenticates everything that reaches a session: no credentials, 401, drain or not', async () => {
    const { base, asked } = await start();
    server!.beginDrain();
    const sessionHeaders = {
      ...POST_HEADERS,
      'mcp-session-id': 'some-session',
      'mcp-protocol-version': '2025-11-25',
    };
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const unauthenticated = await request(`${base}/mcp`, {
      method: 'POST',
      headers: sessionHeaders,
      body: list,
    });
    expect(unauthenticated.statusCode).toBe(401);
    await unauthenticated.body.dump();
    const resume = await request(`${base}/mcp`, {
      method: 'GET',
      headers: { accept: 'text/event-stream', 'mcp-session-id': 'some-session', 'last-event-id': 'x.1' },
    });
    expect(resume.statusCode).toBe(401);
    await resume.body.dump();
    const ended = await request(`${base}/mcp`, {
      method: 'DELETE',
      headers: { 'mcp-session-id': 'some-session' },
    });
    expect(ended.statusCode).toBe(401);
    await ended.body.dump();
    expect(asked).toEqual(['POST /mcp', 'GET /mcp', 'DELETE /mcp']);
  });
});
