/**
 * MCP inside the space of a real `switchboard serve` (authentication, policy and trace on):
 * participants call servers through the router as themselves (policy applies), observers see every
 * MCP message as its MEUP envelope, proposals are fulfilled by holders of the capability, and a
 * call held by policy "ask" is proposed in the space on behalf of its MCP client and decided there.
 *
 * The end-to-end test: an MCP client (the official SDK, over HTTP) calls a gated tool; a space
 * participant sees the proposal and fulfils it; the client gets the result; `switchboard trace show
 * --json` has proposal, fulfilling request and response correlated; the approvals API and the
 * audit ledger name the approver.
 */
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_SERVER, jsonLines, runCli } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { Participant, spaceUrlOf, type Wire } from './support/space.js';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const ALICE = 'sbt_alice_approver_token_0000000001';
const BOB = 'sbt_bob_plain_participant_token_0002';
const CAROL = 'sbt_carol_the_mcp_client_token_00003';
const BOT = 'sbt_bot_space_only_token_00000000004';

const CONFIG = `auth:
  tokens:
    - { principal: alice, sha256: ${sha(ALICE)}, roles: [approver] }
    - { principal: bob, sha256: ${sha(BOB)}, roles: [] }
    - { principal: carol, sha256: ${sha(CAROL)}, roles: [] }
policy:
  rules:
    - { target: echo, principals: [carol], action: ask }
    - { target: echo, principals: [bot], action: deny }
space:
  participants:
    alice:
      capabilities: [{ kind: "**" }]
      observe: true
    bot:
      tokens: [{ sha256: ${sha(BOT)} }]
      capabilities:
        - kind: mcp/request
          payload: { method: "tools/*" }
`;

let serve: RunningServe;
let url: string;
let alice: Participant;
let bob: Participant;
let bot: Participant;

const echoCall = (message: string) => ({
  method: 'tools/call',
  params: { name: 'echo', arguments: { message } },
});

async function mcpClient(token: string): Promise<Client> {
  const client = new Client({ name: 'space-test-client', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(serve.url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

beforeAll(async () => {
  serve = await startServe({ configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, CONFIG) });
  url = spaceUrlOf(serve.base);
  alice = await Participant.connect(url, { token: ALICE });
  bob = await Participant.connect(url, { token: BOB });
  bot = await Participant.connect(url, { token: BOT });
}, 60_000);

afterAll(async () => {
  await Promise.all([alice, bob, bot].map((p) => p?.close()));
  await serve?.stop();
});

describe('participants calling servers', () => {
  it('executes an mcp/request to server-<name> as the participant and answers mcp/response correlated to it', async () => {
    const request = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      payload: { jsonrpc: '2.0', id: 41, ...echoCall('hi') },
    });
    const response = await alice.reply(request.id, 'mcp/response');
    expect(response).toMatchObject({
      from: 'server-echo',
      to: ['alice'],
      payload: { jsonrpc: '2.0', id: 41, result: { content: [{ type: 'text', text: 'hi' }] } },
    });
    const correlation = response.correlation_id as string[];
    expect(correlation[0]).toBe(request.id);
    // The second id is the router's envelope of the call: observers saw it go through the gateway.
    const traceId = correlation[1];
    const hop = await alice.next((e) => e.id === traceId);
    // The ledger names the participant as the client, and its envelope as the request.
    let records: Wire[] = [];
    for (let attempt = 0; attempt < 50 && !records.some((r) => r.trace_id === traceId); attempt++) {
      const tail = await runCli(['audit', 'tail', '--json', '-n', '100', '--data-dir', serve.dataDir]);
      records = tail.code === 0 ? jsonLines(tail.stdout) : [];
      if (!records.some((r) => r.trace_id === traceId)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(records.find((r) => r.trace_id === traceId)).toMatchObject({
      client_id: 'alice',
      request_id: request.id,
      decision: 'allowed',
    });
    expect(hop).toMatchObject({ kind: 'mcp/request', to: ['gateway'], payload: { method: 'tools/call' } });
    expect(String(hop.from)).toMatch(/^client-/);
    await alice.next(
      (e) =>
        e.kind === 'mcp/request' &&
        e.from === 'gateway' &&
        e.to?.toString() === 'server-echo' &&
        (e.correlation_id as string[])?.includes(String(traceId)),
    );
  });

  it('shows the MCP traffic to observers only', async () => {
    await bob.barrier();
    expect(bob.received.some((e) => String(e.from).startsWith('client-') || e.from === 'server-echo')).toBe(
      false,
    );
    expect(alice.received.some((e) => e.from === 'server-echo' && (e.to as string[])[0] === 'gateway')).toBe(
      true,
    );
  });

  it('refuses an mcp/request to a participant without the capability', async () => {
    const request = bob.send({ kind: 'mcp/request', to: ['server-echo'], payload: echoCall('no') });
    expect((await bob.reply(request.id, 'system/error')).payload).toMatchObject({
      error: 'capability_violation',
      attempted_kind: 'mcp/request',
    });
  });

  it("applies the gateway's policy to a participant's calls (principal = participant)", async () => {
    const denied = bot.send({ kind: 'mcp/request', to: ['server-echo'], payload: echoCall('x') });
    const listed = bot.send({ kind: 'mcp/request', to: ['server-echo'], payload: { method: 'tools/list' } });
    const [deny, list] = await Promise.all([
      bot.reply(denied.id, 'mcp/response'),
      bot.reply(listed.id, 'mcp/response'),
    ]);
    expect((deny.payload as { error: Wire }).error).toMatchObject({ code: -32003 });
    // tools/list is filtered by the same policy: bot may not call echo, so it does not see it.
    expect((list.payload as { result: { tools: Wire[] } }).result.tools.map((t) => t.name)).toEqual([]);
    const aliceList = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      payload: { method: 'tools/list' },
    });
    const forAlice = await alice.reply(aliceList.id, 'mcp/response');
    expect((forAlice.payload as { result: { tools: Wire[] } }).result.tools.map((t) => t.name)).toEqual([
      'echo',
    ]);
  });

  it('R17: a proposal fulfilled by a holder runs, and the proposer follows the chain to the response', async () => {
    const proposal = bob.send({ kind: 'mcp/proposal', to: ['server-echo'], payload: echoCall('proposed') });
    await alice.next((e) => e.id === proposal.id);
    const fulfil = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      correlation_id: [proposal.id],
      payload: echoCall('proposed'),
    });
    const atBob = await bob.reply(fulfil.id, 'mcp/response');
    expect(atBob).toMatchObject({
      to: ['alice', 'bob'],
      payload: { result: { content: [{ text: 'proposed' }] } },
    });
    await alice.reply(fulfil.id, 'mcp/response');
    const again = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      correlation_id: [proposal.id],
      payload: echoCall('again'),
    });
    expect((await alice.reply(again.id, 'system/error')).payload).toMatchObject({ error: 'proposal_closed' });
  });

  it('seed 000: one fulfilment naming several proposals fulfils them all', async () => {
    const first = bob.send({ kind: 'mcp/proposal', to: ['server-echo'], payload: echoCall('twice') });
    const second = bob.send({ kind: 'mcp/proposal', to: ['server-echo'], payload: echoCall('twice') });
    await alice.next((e) => e.id === second.id);
    const fulfil = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      correlation_id: [first.id, second.id],
      payload: echoCall('twice'),
    });
    expect(await bob.reply(fulfil.id, 'mcp/response')).toMatchObject({
      to: ['alice', 'bob'],
      payload: { result: { content: [{ text: 'twice' }] } },
    });
    await alice.reply(fulfil.id, 'mcp/response');
    for (const proposal of [first, second]) {
      const again = alice.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [proposal.id],
        payload: echoCall('twice'),
      });
      expect((await alice.reply(again.id, 'system/error')).payload).toMatchObject({
        error: 'proposal_closed',
      });
    }
  });
});

describe('approvals in the space', () => {
  it('end to end: a gated call over HTTP is proposed, fulfilled in the space, answered, traced and attributed', async () => {
    const client = await mcpClient(CAROL);
    try {
      const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
      const result = client.callTool({ name: 'echo', arguments: { message: 'needs approval' } });
      const proposal = await alice.next(
        (e) => e.kind === 'mcp/proposal' && String(e.from).startsWith('client-'),
      );
      expect(proposal).toMatchObject({
        to: ['server-echo'],
        payload: { method: 'tools/call', params: { name: 'echo', arguments: { message: 'needs approval' } } },
      });
      expect((proposal.payload as { approval: Wire }).approval).toMatchObject({
        principal: 'carol',
        upstream: 'echo',
      });
      const [heldRequest] = proposal.correlation_id as string[];
      expect(proposal.context).toMatch(new RegExp(`/${heldRequest}$`));

      // Not an approver: refused, and the call stays held.
      const early = bot.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [proposal.id],
        payload: echoCall('x'),
      });
      expect((await bot.reply(early.id, 'system/error')).payload).toMatchObject({ error: 'not_approver' });

      const fulfil = alice.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [proposal.id],
        payload: {
          jsonrpc: '2.0',
          id: 'approve-1',
          method: 'tools/call',
          params: { name: 'echo', arguments: {} },
        },
      });
      expect(await result).toEqual({ content: [{ type: 'text', text: 'needs approval' }] });
      const response = await alice.reply(fulfil.id, 'mcp/response');
      expect(response).toMatchObject({
        from: 'server-echo',
        payload: { id: 'approve-1', result: { content: [{ text: 'needs approval' }] } },
      });
      expect(response.correlation_id).toEqual([fulfil.id, heldRequest]);
      const decided = await bob.next(
        (e) => e.kind === 'system/approval' && (e.correlation_id as string[])[0] === proposal.id,
      );
      expect(decided.payload).toEqual({
        approval_id: proposal.id,
        outcome: 'approved',
        via: 'space',
        decided_by: 'alice',
      });

      // The approvals API shares the state: it names the approver.
      const status = await fetch(`${serve.base}/approvals/${String(proposal.id)}`, {
        headers: { Authorization: `Bearer ${ALICE}` },
      });
      expect(await status.json()).toMatchObject({ status: 'approved', decidedBy: 'alice' });

      // The trace: proposal, fulfilling request and response, correlated, in the client's session.
      // The trace is written off the forwarding path: wait (up to ~15 s on a loaded machine) until
      // every envelope the assertions name is there.
      const expected = [heldRequest, proposal.id, fulfil.id, response.id, decided.id];
      let trace: Wire[] = [];
      for (let attempt = 0; attempt < 150; attempt++) {
        const shown = await runCli(['trace', 'show', '--json', '--data-dir', serve.dataDir, '--', sessionId]);
        trace = shown.code === 0 ? jsonLines(shown.stdout) : [];
        if (expected.every((id) => trace.some((e) => e.id === id))) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const byId = (id: unknown) => trace.find((e) => e.id === id);
      expect(byId(heldRequest)).toMatchObject({ kind: 'mcp/request', payload: { method: 'tools/call' } });
      expect(byId(proposal.id)).toMatchObject({ kind: 'mcp/proposal', correlation_id: [heldRequest] });
      expect(byId(fulfil.id)).toMatchObject({
        kind: 'mcp/request',
        from: 'alice',
        correlation_id: [proposal.id],
      });
      expect(byId(response.id)).toMatchObject({
        kind: 'mcp/response',
        correlation_id: [fulfil.id, heldRequest],
      });
      expect(byId(decided.id)).toMatchObject({ kind: 'system/approval', correlation_id: [proposal.id] });

      // The audit ledger names the approver of carol's call.
      let records: Wire[] = [];
      for (let attempt = 0; attempt < 50; attempt++) {
        const tail = await runCli(['audit', 'tail', '--json', '-n', '100', '--data-dir', serve.dataDir]);
        records = tail.code === 0 ? jsonLines(tail.stdout) : [];
        if (records.some((r) => r.trace_id === heldRequest)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(records.find((r) => r.trace_id === heldRequest)).toMatchObject({
        method: 'tools/call',
        target: 'echo',
        client_id: 'carol',
        decision: 'approved',
        decided_by: 'alice',
      });
    } finally {
      await client.close();
    }
  });

  it("an approver's mcp/reject refuses the held call with the reason, naming the approver", async () => {
    const client = await mcpClient(CAROL);
    try {
      const result = client.callTool({ name: 'echo', arguments: { message: 'no way' } });
      const proposal = await alice.next(
        (e) =>
          e.kind === 'mcp/proposal' &&
          (e.payload as { params: { arguments: Wire } }).params.arguments?.message === 'no way',
      );
      alice.send({ kind: 'mcp/reject', correlation_id: [proposal.id], payload: { reason: 'too risky' } });
      await expect(result).rejects.toThrow(/rejected by alice: too risky/);
    } finally {
      await client.close();
    }
  });

  it('a decision over the HTTP approvals API appears in the space', async () => {
    const client = await mcpClient(CAROL);
    try {
      const result = client.callTool({ name: 'echo', arguments: { message: 'via http' } });
      const proposal = await bob.next(
        (e) =>
          e.kind === 'mcp/proposal' &&
          (e.payload as { params: { arguments: Wire } }).params.arguments?.message === 'via http',
      );
      const decided = await fetch(`${serve.base}/approvals/${String(proposal.id)}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      });
      expect(decided.status).toBe(200);
      expect(await result).toEqual({ content: [{ type: 'text', text: 'via http' }] });
      const notice = await bob.next(
        (e) => e.kind === 'system/approval' && (e.correlation_id as string[])[0] === proposal.id,
      );
      expect(notice.payload).toEqual({
        approval_id: proposal.id,
        outcome: 'approved',
        via: 'http',
        decided_by: 'alice',
      });
      const late = alice.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [proposal.id],
        payload: echoCall('via http'),
      });
      expect((await alice.reply(late.id, 'system/error')).payload).toMatchObject({
        error: 'proposal_closed',
      });
    } finally {
      await client.close();
    }
  });
});
