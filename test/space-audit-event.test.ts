/**
 * The audit events the governance interceptor writes for calls decided or made in the space, seen
 * in-process (the serve gateway composed as the serve command composes it, with a sink that keeps
 * the events); test/space-mcp.test.ts reads the same facts from the real ledger of `serve`. Real
 * upstream (stdio), real HTTP client, real WebSocket participant.
 *
 * - A held call approved or rejected in the space: `approved` / `rejected`, `decided_by` the
 *   participant.
 * - A participant's own call: `client_id` is the participant and `request_id` its `mcp/request`
 *   envelope (the request scope the space binds).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeGateway } from '../src/gateways/serve/serve-gateway.js';
import { silentLogger } from '../src/observe/logger.js';
import { Metrics } from '../src/observe/metrics.js';
import { ECHO_SERVER } from './support/cli.js';
import { type KeptEvent, KeptEvents } from './support/kept-events.js';
import { parsedServeConfig, stdioUpstreamConfig } from './support/serve.js';
import { Participant, type Wire } from './support/space.js';

let gateway: ServeGateway;
let base: string;
let alice: Participant;
const ledger = new KeptEvents();

beforeAll(async () => {
  const yaml = stdioUpstreamConfig(
    { echo: { script: ECHO_SERVER } },
    [
      'server: { port: 0 }',
      'policy:',
      '  rules:',
      '    - { target: echo, principals: [local], action: ask }',
      'space:',
      '  participants:',
      '    alice: { capabilities: [{ kind: "mcp/*" }] }',
      '',
    ].join('\n'),
  );
  const config = parsedServeConfig(yaml);
  gateway = new ServeGateway({
    config,
    version: 'test',
    logger: silentLogger,
    metrics: new Metrics(),
    ledger,
  });
  const address = await gateway.start();
  base = `http://127.0.0.1:${address.port}`;
  alice = await Participant.connect(`ws://127.0.0.1:${address.port}/meup`, {
    join: { type: 'join', participantId: 'alice', protocol: 'meup/v0.2' },
  });
}, 60_000);

afterAll(async () => {
  await alice?.close();
  await gateway?.close();
});

async function heldCall(message: string, decide: (proposal: Wire) => void): Promise<unknown> {
  const client = new Client({ name: 'audit-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  try {
    const result = client.callTool({ name: 'echo', arguments: { message } });
    const proposal = await alice.next(
      (e) =>
        e.kind === 'mcp/proposal' &&
        (e.payload as { params: { arguments: Wire } }).params.arguments.message === message,
    );
    decide(proposal);
    return await result.catch((err: unknown) => err);
  } finally {
    await client.close();
  }
}

/** The ledger is written when the call ends; wait for the event of `target` with `decision`. */
async function eventOf(decision: string, clientId: string): Promise<KeptEvent> {
  for (let i = 0; i < 100; i++) {
    const event = ledger.events.find((e) => e.decision === decision && e.client_id === clientId);
    if (event) return event;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no ${decision} event for ${clientId}: ${JSON.stringify(ledger.events)}`);
}

describe('the audit events of calls decided or made in the space', () => {
  it('name the participant who approved a held call by fulfilling it', async () => {
    const result = await heldCall('approve me', (proposal) =>
      alice.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [proposal.id],
        payload: { method: 'tools/call', params: { name: 'echo', arguments: {} } },
      }),
    );
    expect(result).toEqual({ content: [{ type: 'text', text: 'approve me' }] });
    expect(await eventOf('approved', 'local')).toMatchObject({
      method: 'tools/call',
      target: 'echo',
      decided_by: 'alice',
    });
  });

  it('name the participant who rejected a held call', async () => {
    const result = await heldCall('reject me', (proposal) =>
      alice.send({ kind: 'mcp/reject', correlation_id: [proposal.id], payload: { reason: 'audit' } }),
    );
    expect(String(result)).toMatch(/rejected by alice: audit/);
    expect(await eventOf('rejected', 'local')).toMatchObject({ target: 'echo', decided_by: 'alice' });
  });

  it('name the participant as the client of its own calls, and its envelope as the request', async () => {
    const request = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      payload: { method: 'tools/call', params: { name: 'echo', arguments: { message: 'mine' } } },
    });
    await alice.reply(request.id, 'mcp/response');
    expect(await eventOf('allowed', 'alice')).toMatchObject({ target: 'echo', request_id: request.id });
  });
});
