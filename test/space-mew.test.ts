/**
 * Joining the space of a `switchboard serve` that has authentication configured, over real
 * WebSockets: bearer tokens on the upgrade (the gateway's tokens, and space-only tokens), and the
 * MEW reference client's handshake (a `{type: "join", space, token, participantId, capabilities}`
 * first frame) with its `mew/v0.4` envelopes (ids like `alice-1`), answered in its dialect.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ECHO_SERVER } from './support/cli.js';
import { MewLikeProposer } from './support/mew-proposer.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { Participant, spaceUrlOf, type Wire } from './support/space.js';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const ALICE = 'sbt_alice_for_the_space_tests_0001';
const BOB = 'sbt_bob_for_the_space_tests_000002';
const BOT = 'sbt_bot_space_only_token_00000003';

const CONFIG = `auth:
  tokens:
    - { principal: alice, sha256: ${sha(ALICE)}, roles: [approver] }
    - { principal: bob, sha256: ${sha(BOB)}, roles: [] }
space:
  name: dev-space
  joinTimeout: 1s
  participants:
    alice:
      capabilities: [{ kind: "**" }]
    bot:
      tokens: [{ sha256: ${sha(BOT)} }]
      capabilities: [chat]
`;

let serve: RunningServe;
let url: string;
const open: Participant[] = [];

async function track(p: Promise<Participant>): Promise<Participant> {
  const participant = await p;
  open.push(participant);
  return participant;
}

/** A raw WebSocket and everything it receives, for handshakes that fail. */
async function raw(headers: Record<string, string> = {}) {
  const ws = new WebSocket(url, { headers });
  const received: Wire[] = [];
  ws.on('message', (d) => received.push(JSON.parse(d.toString()) as Wire));
  const closed = new Promise<{ code: number; reason: string }>((r) =>
    ws.once('close', (code, reason) => r({ code, reason: reason.toString() })),
  );
  await new Promise((r) => ws.once('open', r));
  return { ws, received, closed };
}

beforeAll(async () => {
  serve = await startServe({ configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, CONFIG) });
  url = spaceUrlOf(serve.base);
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((p) => p.close()));
  await serve?.stop();
});

describe('bearer tokens on the upgrade', () => {
  it('joins a gateway principal as itself, in meup/v0.2', async () => {
    const alice = await track(Participant.connect(url, { token: ALICE }));
    const welcome = alice.ofKind('system/welcome')[0]!;
    expect(welcome.protocol).toBe('meup/v0.2');
    expect((welcome.payload as { you: Wire; space: string }).you).toEqual({
      id: 'alice',
      capabilities: [{ kind: '**' }],
    });
    expect((welcome.payload as { space: string }).space).toBe('dev-space');
  });

  it('joins a space-only token as its participant', async () => {
    const bot = await track(Participant.connect(url, { token: BOT }));
    expect(bot.id).toBe('bot');
  });

  it('answers 401 with a Bearer challenge to a bad token, and to a token in the URL', async () => {
    const bad = Participant.connect(url, { token: 'sbt_wrong', welcome: false });
    await expect(bad).rejects.toMatchObject({ status: 401 });
    await bad.catch((err: { headers: Record<string, string> }) =>
      expect(err.headers['www-authenticate']).toMatch(/^Bearer realm="switchboard"/),
    );
    await expect(
      Participant.connect(`${url}?access_token=${ALICE}`, { token: ALICE, welcome: false }),
    ).rejects.toMatchObject({
      status: 401,
    });
  });

  it("swallows the MEW client's join frame when it agrees with the credentials", async () => {
    const alice = await track(Participant.connect(url, { token: ALICE }));
    alice.sendRaw(
      JSON.stringify({
        type: 'join',
        space: 'dev-space',
        token: ALICE,
        participantId: 'alice',
        capabilities: [],
      }),
    );
    await alice.barrier();
    expect(alice.ofKind('system/error')).toEqual([]);
    alice.sendRaw(JSON.stringify({ type: 'join', participantId: 'alice' }));
    await alice.barrier();
    expect(alice.ofKind('system/error').map((e) => (e.payload as Wire).error)).toEqual(['already_joined']);
  });
});

describe('the MEW join handshake', () => {
  it('joins with a token in the join frame and answers in mew/v0.4', async () => {
    const alice = await track(
      Participant.connect(url, {
        join: {
          type: 'join',
          space: 'dev-space',
          token: ALICE,
          participantId: 'alice',
          capabilities: [{ kind: 'chat' }],
        },
      }),
    );
    const welcome = alice.ofKind('system/welcome')[0]!;
    expect(welcome.protocol).toBe('mew/v0.4');
    // The join frame's capabilities are ignored: they come from the configuration.
    expect((welcome.payload as { you: Wire }).you).toEqual({ id: 'alice', capabilities: [{ kind: '**' }] });
  });

  it("routes MEW envelopes as sent (their ids, their protocol) and answers refusals in the sender's dialect", async () => {
    const mew = await track(
      Participant.connect(url, {
        join: { type: 'join', space: 'dev-space', token: ALICE, participantId: 'alice' },
      }),
    );
    const meup = await track(Participant.connect(url, { token: BOB }));
    // What MEWClient.send produces: protocol mew/v0.4, id `<participant>-<n>`, from, ts, correlation_id an array.
    mew.send({
      protocol: 'mew/v0.4',
      id: 'alice-1',
      kind: 'chat',
      to: ['bob'],
      payload: { text: 'hello from MEW', format: 'plain' },
    });
    const chat = await meup.next((e) => e.id === 'alice-1');
    expect(chat).toMatchObject({
      protocol: 'mew/v0.4',
      from: 'alice',
      kind: 'chat',
      payload: { text: 'hello from MEW' },
    });
    meup.send({
      kind: 'chat/acknowledge',
      to: ['alice'],
      correlation_id: ['alice-1'],
      payload: { status: 'received' },
    });
    const ack = await mew.next((e) => e.kind === 'chat/acknowledge');
    expect(ack).toMatchObject({ protocol: 'meup/v0.2', correlation_id: ['alice-1'] });
    mew.send({ protocol: 'mew/v0.4', id: 'alice-2', kind: 'system/register', payload: {} });
    const error = await mew.reply('alice-2', 'system/error');
    expect(error).toMatchObject({
      protocol: 'mew/v0.4',
      from: 'gateway',
      payload: { error: 'reserved_kind' },
    });
    mew.send({ protocol: 'mew/v0.4', id: 'alice-3', kind: 'chat', from: 'bob', payload: {} });
    expect((await mew.reply('alice-3', 'system/error')).payload).toMatchObject({ error: 'from_mismatch' });
  });

  it('speaks mew/v0.3 to a client that asks for it', async () => {
    const old = await track(
      Participant.connect(url, {
        join: { type: 'join', token: BOT, participantId: 'bot', protocol: 'mew/v0.3' },
      }),
    );
    expect(old.ofKind('system/welcome')[0]!.protocol).toBe('mew/v0.3');
    old.send({
      protocol: 'mew/v0.3',
      id: 'bot-1',
      kind: 'mcp/request',
      to: ['server-echo'],
      payload: { method: 'tools/list' },
    });
    const error = await old.reply('bot-1', 'system/error');
    expect(error).toMatchObject({
      protocol: 'mew/v0.3',
      payload: { error: 'capability_violation', attempted_kind: 'mcp/request' },
    });
  });

  it("answers the MEW client's heartbeat pings", async () => {
    const bot = await track(
      Participant.connect(url, { join: { type: 'join', token: BOT, participantId: 'bot' } }),
    );
    await expect(bot.barrier()).resolves.toBeUndefined();
  });

  it("refuses a join without a token, with another id than the token's, or naming another space; then closes", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ type: 'join', participantId: 'alice' }, /needs a token/],
      [{ type: 'join', token: BOB, participantId: 'alice' }, /not alice.*never overwritten/],
      [{ type: 'join', token: ALICE, space: 'other-space' }, /hosts the space "dev-space"/],
      [{ type: 'join', token: ALICE, protocol: 'meup/v0.1' }, /unsupported protocol/],
      [{ kind: 'chat', payload: {} }, /first frame must be a join frame/],
    ];
    for (const [frame, message] of cases) {
      const c = await raw();
      c.ws.send(JSON.stringify(frame));
      const { code } = await c.closed;
      expect(code).toBe(1008);
      const [error] = c.received;
      expect(error).toMatchObject({ kind: 'system/error', from: 'gateway' });
      expect(String((error!.payload as Wire).message)).toMatch(message);
      expect(c.received.some((e) => e.kind === 'system/welcome')).toBe(false);
    }
  });

  it('closes a connection that never joins', async () => {
    const c = await raw();
    const { code, reason } = await c.closed;
    expect(code).toBe(1008);
    expect(reason).toMatch(/no join frame/);
  });

  it('keeps frames sent right after the join frame and handles them after the welcome, in order', async () => {
    const bob = await track(Participant.connect(url, { token: BOB }));
    const c = await raw();
    c.ws.send(JSON.stringify({ type: 'join', token: ALICE, participantId: 'alice' }));
    for (let i = 1; i <= 3; i++)
      c.ws.send(
        JSON.stringify({
          protocol: 'mew/v0.4',
          id: `alice-early-${i}`,
          ts: new Date().toISOString(),
          from: 'alice',
          to: ['bob'],
          kind: 'chat',
          payload: { i },
        }),
      );
    const chats = await bob.all((e) => String(e.id).startsWith('alice-early-'), 3);
    expect(chats.map((e) => (e.payload as { i: number }).i)).toEqual([1, 2, 3]);
    expect(c.received[0]!.kind).toBe('system/welcome');
    c.ws.close();
  });
});

describe('a proposal fulfilled, followed as the MEW reference client follows it', () => {
  const echoCall = (message: string) => ({
    jsonrpc: '2.0',
    id: 44,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message } },
  });

  it('the proposer receives the fulfilling mcp/request (naming its proposal) and its response, and resolves; others see neither', async () => {
    // bob has the default capabilities: mcp/proposal, not mcp/request. Like MEWParticipant.mcpRequest,
    // it proposes and links the outcome only through the request that names its proposal.
    const bob = await track(
      Participant.connect(url, {
        join: { type: 'join', space: 'dev-space', token: BOB, participantId: 'bob' },
      }),
    );
    const alice = await track(Participant.connect(url, { token: ALICE }));
    const bot = await track(Participant.connect(url, { token: BOT }));
    const mew = new MewLikeProposer(bob);
    const result = mew.mcpRequest(['server-echo'], echoCall('fulfilled for bob'), 5000);
    const proposal = await alice.next((e) => e.kind === 'mcp/proposal' && e.from === 'bob');
    expect(mew.sent.get(String(proposal.id))).toBe('mcp/proposal');
    const fulfil = alice.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      correlation_id: [proposal.id],
      payload: echoCall('fulfilled for bob'),
    });
    await expect(result).resolves.toMatchObject({ content: [{ text: 'fulfilled for bob' }] });

    // What bob got: the fulfilment as alice sent it, then the response naming it first.
    const request = bob.received.findIndex((e) => e.id === fulfil.id);
    const response = bob.received.findIndex(
      (e) => e.kind === 'mcp/response' && (e.correlation_id as unknown[])[0] === fulfil.id,
    );
    expect(request).toBeGreaterThanOrEqual(0);
    expect(bob.received[request]).toEqual(fulfil);
    expect(response).toBeGreaterThan(request);
    // The proposal was never withdrawn (the reference client withdraws on its timeout).
    await alice.barrier();
    expect(alice.received.some((e) => e.kind === 'mcp/withdraw')).toBe(false);

    // The proposer can find the fulfilment in the history too.
    const ask = bob.send({ kind: 'space/history', to: ['gateway'], payload: {} });
    const history = (await bob.reply(ask.id, 'system/history')).payload as { envelopes: Wire[] };
    expect(history.envelopes.map((e) => e.id)).toContain(fulfil.id);

    // bot saw the (broadcast) proposal; the fulfilment and its response were addressed to the server
    // and the proposer, not to it.
    await bot.next((e) => e.id === proposal.id);
    await bot.barrier();
    expect(bot.received.some((e) => e.id === fulfil.id)).toBe(false);
    expect(bot.repliesTo(fulfil.id)).toEqual([]);
  });
});
