/**
 * The request scope the HTTP transport binds (seed 002, ADR-0038): while the router admits a
 * client's `tools/call`, `currentRequestScope()` holds the call's JSON-RPC id as `requestId`
 * (bounded by `boundId`) and the authenticated principal as `clientId`, for sessions (2025-11-25)
 * and for stateless 2026-07-28 requests alike.
 *
 * Why this is asserted on the scope itself and not only on the ledger's records: the governance
 * layer falls back to the session's principal and the raw JSON-RPC id when no scope is bound, so
 * a record alone cannot tell whether the transport bound anything. A probe interceptor reads the
 * scope at `admit`, where the governance layer reads it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentRequestScope, type RequestScope } from '../src/audit/request-scope.js';
import { createAuthenticator } from '../src/auth/authenticator.js';
import { hashToken } from '../src/auth/token-hash.js';
import { ServeGateway } from '../src/gateways/serve/serve-gateway.js';
import { silentLogger } from '../src/observe/logger.js';
import { Metrics } from '../src/observe/metrics.js';
import { ECHO_SERVER } from './support/cli.js';
import { type KeptEvent, KeptEvents } from './support/kept-events.js';
import { parsedServeConfig, stdioUpstreamConfig } from './support/serve.js';
import { initialize, messagesOf, post } from './support/sse-client.js';

const BOB_TOKEN = 'sbt_request-scope-test-token-of-bob-0123456789abcdef';
const MODERN = '2026-07-28';

let gateway: ServeGateway;
let url: string;
const ledger = new KeptEvents();
/** What the probe saw at `admit`, per tool call, in order. */
const seen: { readonly message: unknown; readonly scope: RequestScope | undefined }[] = [];

beforeAll(async () => {
  const yaml = stdioUpstreamConfig(
    { echo: { script: ECHO_SERVER } },
    [
      'server: { port: 0 }',
      'auth:',
      '  tokens:',
      `    - { principal: bob, sha256: ${hashToken(BOB_TOKEN)} }`,
      '',
    ].join('\n'),
  );
  const config = parsedServeConfig(yaml);
  const metrics = new Metrics();
  const authenticate = createAuthenticator(config.auth!, { logger: silentLogger, metrics });
  gateway = new ServeGateway({
    config,
    version: 'test',
    logger: silentLogger,
    metrics,
    authenticate,
    ledger,
  });
  gateway.router.addInterceptor({
    name: 'scope-probe',
    admit(call) {
      if (call.request.method === 'tools/call') {
        const params = call.request.params as { arguments?: { message?: unknown } } | undefined;
        seen.push({ message: params?.arguments?.message, scope: currentRequestScope() });
      }
      return { allow: true };
    },
  });
  const address = await gateway.start();
  url = `http://127.0.0.1:${address.port}/mcp`;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
});

const auth = { authorization: `Bearer ${BOB_TOKEN}` };

function scopeOf(message: string): RequestScope | undefined {
  const entry = seen.find((s) => s.message === message);
  if (!entry) throw new Error(`the probe saw no call with ${message}: ${JSON.stringify(seen)}`);
  return entry.scope;
}

async function recorded(message: string): Promise<KeptEvent> {
  for (let i = 0; i < 100; i++) {
    const event = ledger.events.find((e) => (e.args as { message?: unknown })?.message === message);
    if (event) return event;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no audit event for ${message}`);
}

describe('the HTTP transport binds the request scope', () => {
  it('in a session: the JSON-RPC id, bounded, and the principal', async () => {
    const session = await initialize(url, { headers: auth });
    const headers = { ...auth, ...session.headers };
    // A hostile id: padded, with a control character; boundId trims it and drops the control.
    const id = '  call\u0007-7  ';
    const response = await post(
      url,
      {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'legacy' } },
      },
      headers,
    );
    expect(response.status, response.text).toBe(200);
    expect(messagesOf(response).find((m) => m.id === id)).toMatchObject({
      result: { content: [{ type: 'text', text: 'legacy' }] },
    });
    expect(scopeOf('legacy')).toEqual({ requestId: 'call-7', clientId: 'bob' });
    expect(await recorded('legacy')).toMatchObject({ request_id: 'call-7', client_id: 'bob' });
  });

  it('for a 2026-07-28 request: a numeric id as its text, and the principal', async () => {
    const response = await post(
      url,
      {
        jsonrpc: '2.0',
        id: 41,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { message: 'modern' },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN,
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
      { ...auth, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
    );
    expect(response.status, response.text).toBe(200);
    expect(messagesOf(response).find((m) => m.id === 41)).toMatchObject({
      result: { content: [{ type: 'text', text: 'modern' }] },
    });
    expect(scopeOf('modern')).toEqual({ requestId: '41', clientId: 'bob' });
    expect(await recorded('modern')).toMatchObject({ request_id: '41', client_id: 'bob' });
  });
});
