/**
 * The trace keeps what it knew of a session after the session ends (issue 18, item 6): sessions of
 * `switchboard serve` that end by DELETE, one with an id the client chose (lenient sessions) and one
 * with the gateway's, are still listed by `switchboard trace sessions` with their Mcp-Session-Id,
 * principal, client info and revision, and `switchboard trace show <Mcp-Session-Id>` finds them.
 * Then, in-process, what the gateway itself reports when a session ends: the session's facts, not
 * only its key (the store would keep them anyway; the report should not depend on that).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeGateway } from '../src/gateways/serve/serve-gateway.js';
import { silentLogger } from '../src/observe/logger.js';
import { Metrics } from '../src/observe/metrics.js';
import type { TraceSessionInfo } from '../src/trace/types.js';
import { ECHO_SERVER } from './support/cli.js';
import { parsedServeConfig, type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { initialize, post, send, waitUntil } from './support/sse-client.js';
import { type TraceSession, traceSessions, traceShow } from './support/trace.js';

let serve: RunningServe;

beforeAll(async () => {
  serve = await startServe({
    configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, 'sessions:\n  mode: lenient\n'),
  });
});

afterAll(async () => {
  await serve?.stop();
});

/** The session recorded under `mcpSessionId` once the trace says it ended. */
async function endedSession(mcpSessionId: string): Promise<TraceSession> {
  let found: TraceSession | undefined;
  await waitUntil(
    async () => {
      // An ended session whose row lost its Mcp-Session-Id is found by its start instead: the
      // assertions below then say what it lost.
      const all = await traceSessions(serve.dataDir);
      found = all.find((s) => s.mcpSessionId === mcpSessionId && s.endedAt !== undefined);
      found ??= all.find((s) => s.endedAt !== undefined && s.envelopes > 0 && !s.mcpSessionId);
      return found !== undefined;
    },
    20_000,
    `the end of session ${mcpSessionId} in the trace`,
    100,
  );
  return found as TraceSession;
}

describe('the trace of a session that ended', () => {
  it.each([
    ['an id the client chose', true],
    ["the gateway's id", false],
  ])('keeps every fact of a session with %s, and trace show finds it by that id', async (_what, own) => {
    const chosen = `client-chosen-${Date.now()}`;
    const session = await initialize(serve.url, {
      version: '2025-06-18',
      ...(own ? { headers: { 'mcp-session-id': chosen } } : {}),
    });
    if (own) expect(session.id).toBe(chosen);
    const call = await post(
      serve.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } },
      session.headers,
    );
    expect(call.status, call.text).toBe(200);
    expect((await send(serve.url, 'DELETE', session.headers)).status).toBe(200);

    const ended = await endedSession(session.id);
    expect(ended).toMatchObject({
      mcpSessionId: session.id,
      principal: 'local',
      transport: 'http',
      upstreams: ['echo'],
      protocolVersion: '2025-06-18',
      clientInfo: { name: 'switchboard-raw-test', version: '0.0.0' },
    });
    expect(ended.endedAt).toBeGreaterThanOrEqual(ended.startedAt);

    // `trace show` takes the client-facing id, as a user has it.
    const shown = await traceShow(session.id, serve.dataDir);
    const methods = shown.map((e) => e.payload.method).filter((m) => m !== undefined);
    expect(methods).toContain('initialize');
    expect(methods).toContain('tools/call');
  });
});

describe('what the serve gateway reports when a session ends', () => {
  it('reports the facts it knew of the session, although the router has forgotten them', async () => {
    const reports: TraceSessionInfo[] = [];
    const gateway = new ServeGateway({
      config: parsedServeConfig(
        stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, 'server: { port: 0 }\n'),
      ),
      version: 'test',
      logger: silentLogger,
      metrics: new Metrics(),
      onSession: (info) => reports.push(info),
    });
    const address = await gateway.start();
    try {
      const url = `http://127.0.0.1:${address.port}/mcp`;
      const session = await initialize(url, { version: '2025-11-25' });
      expect((await send(url, 'DELETE', session.headers)).status).toBe(200);
      const end = reports.find((r) => r.endedAt !== undefined);
      expect(end).toMatchObject({
        mcpSessionId: session.id,
        principal: 'local',
        transport: 'http',
        upstreams: ['echo'],
        protocolVersion: '2025-11-25',
        clientInfo: { name: 'switchboard-raw-test', version: '0.0.0' },
      });
      // Its start is when it opened, as the first report said.
      expect(end?.startedAt).toBe(reports[0]?.startedAt);
    } finally {
      await gateway.close();
    }
  });
});
