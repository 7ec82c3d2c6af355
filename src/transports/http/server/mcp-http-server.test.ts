import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../config/defaults.js';
import type { Router } from '../../../core/router.js';
import { MemoryLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import { MemoryEventStore } from '../events/memory-event-store.js';
import { McpHttpServer } from './mcp-http-server.js';

/**
 * The server's last line of defence: a request whose handling throws (a bug in the gateway, on the
 * POST path after its body was read, or in an extra route) gets 500 with a JSON-RPC error, is
 * logged and counted, and the server goes on serving.
 */
describe('McpHttpServer: a request that fails inside the gateway', () => {
  let server: McpHttpServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function start(failure: Error) {
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    // Only what the legacy endpoint asks of the router on an initialize; dispatching fails.
    const router = {
      session: () => undefined,
      openSession: () => undefined,
      closeSession: () => undefined,
      handleClientMessage: () => {
        throw failure;
      },
    } as unknown as Router; // a stand-in: the real router cannot be made to throw on demand
    server = new McpHttpServer({
      config: {
        server: { ...DEFAULTS.server, port: 0 },
        sessions: { ...DEFAULTS.sessions, mode: 'lenient' },
        resumability: DEFAULTS.resumability,
      },
      router,
      hooks: { opened: () => {}, closed: () => {} },
      upstreamNames: ['a'],
      store: new MemoryEventStore(),
      logger,
      metrics,
      gatewayVersion: '0.0.0-test',
      modern: {
        discover: () => Promise.reject(new Error('not used')),
        paramHeaders: () => Promise.resolve(undefined),
      },
      routes: [
        async (_req, _res, path) => {
          if (path !== '/broken') return false;
          throw failure;
        },
      ],
    });
    const address = await server.listen();
    return { base: `http://127.0.0.1:${address.port}`, logger, metrics };
  }

  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });

  it('answers 500 to a POST whose dispatch throws, logs it, and keeps serving', async () => {
    const { base, logger, metrics } = await start(new Error('boom in dispatch'));
    const response = await request(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: initialize,
    });
    expect(response.statusCode).toBe(500);
    expect(await response.body.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32603, message: 'Internal error in the gateway' },
    });
    expect(metrics.get('http_internal_errors_total')).toBe(1);
    expect(JSON.stringify(logger.entries)).toContain('boom in dispatch');
    const health = await request(`${base}/health`);
    expect(health.statusCode).toBe(200);
    await health.body.text();
  });

  it('answers 500 to a request an extra route fails on', async () => {
    const { base, metrics } = await start(new Error('boom in a route'));
    const response = await request(`${base}/broken`);
    expect(response.statusCode).toBe(500);
    await response.body.text();
    expect(metrics.get('http_internal_errors_total')).toBe(1);
  });
});
