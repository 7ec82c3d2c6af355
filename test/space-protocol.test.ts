/**
 * The MEUP space of a real `switchboard serve`, over real WebSockets: every requirement of
 * meup.md that applies to a gateway (numbered R1-R27 as there), plus joining, presence,
 * capabilities, routing and order, history, and bad input of every kind (malformed JSON, binary
 * and oversized frames, spoofed `from`, unknown participants, silent and slow peers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ECHO_SERVER } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { Participant, spaceUrlOf, type Wire } from './support/space.js';

const SPACE = `space:
  maxFrameBytes: 16KiB
  maxBufferedBytes: 64KiB
  heartbeat: 1s
  participants:
    admin:
      capabilities: [{ kind: "**" }]
    limited:
      capabilities:
        - chat
        - kind: mcp/request
          payload: { method: tools/list }
    slow-slow: {}
`;

let serve: RunningServe;
let url: string;
const open: Participant[] = [];

/** Joins as `id` with a join frame in meup/v0.2 (the gateway has no authentication: local ids). */
async function join(id: string, protocol = 'meup/v0.2'): Promise<Participant> {
  const p = await Participant.connect(url, { join: { type: 'join', participantId: id, protocol } });
  open.push(p);
  return p;
}

const errors = (p: Participant) =>
  p.ofKind('system/error').map((e) => ({ code: (e.payload as Wire).error, correlation: e.correlation_id }));

beforeAll(async () => {
  serve = await startServe({ configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, SPACE) });
  url = spaceUrlOf(serve.base);
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((p) => p.close()));
  await serve?.stop();
});

describe('joining the space', () => {
  it('welcomes with id, capabilities and the participants present (servers included), and announces presence', async () => {
    const bob = await join('bob');
    const admin = await join('admin');
    const welcome = admin.ofKind('system/welcome')[0]!;
    expect(welcome).toMatchObject({ protocol: 'meup/v0.2', from: 'gateway', to: ['admin'] });
    const payload = welcome.payload as { you: Wire; participants: { id: string }[] };
    expect(payload.you).toEqual({ id: 'admin', capabilities: [{ kind: '**' }] });
    const ids = payload.participants.map((p) => p.id);
    expect(ids).toContain('bob');
    expect(ids).toContain('server-echo');
    await bob.next((e) => e.kind === 'system/presence' && (e.payload as Wire).event === 'join');
    await admin.close();
    const leave = await bob.next(
      (e) => e.kind === 'system/presence' && (e.payload as Wire).event === 'leave',
    );
    expect((leave.payload as { participant: Wire }).participant.id).toBe('admin');
  });

  it('refuses upgrades on other paths, and cross-origin pages', async () => {
    await expect(
      Participant.connect(`${serve.base.replace('http', 'ws')}/mcp`, { welcome: false }),
    ).rejects.toMatchObject({
      status: 404,
    });
    await expect(
      Participant.connect(url, { headers: { Origin: 'https://evil.example' }, welcome: false }),
    ).rejects.toMatchObject({ status: 403 });
  });
});

describe('envelope validation (R1-R8)', () => {
  it('R1: refuses non-objects and envelopes without kind or id, correlating when the id is readable', async () => {
    const bob = await join('r1');
    bob.sendRaw('[1,2,3]');
    bob.sendRaw('{not json');
    bob.send({ id: 'r1-a', kind: undefined });
    bob.send({ id: undefined, kind: 'chat' });
    await bob.barrier();
    expect(errors(bob)).toEqual([
      { code: 'not_an_object', correlation: undefined },
      { code: 'invalid_json', correlation: undefined },
      { code: 'missing_field', correlation: ['r1-a'] },
      { code: 'missing_field', correlation: undefined },
    ]);
  });

  it('R2: accepts exactly meup/v0.2 (and the MEW dialects); the refusal names the version', async () => {
    const bob = await join('r2');
    const carol = await join('r2-carol');
    const bad = ['meup/v0.1', 'MEUP/v0.2', 'meup/v0.2 ', 'mcpx/v0.1'].map((protocol) =>
      bob.send({ protocol, kind: 'chat' }),
    );
    bob.send({ kind: 'chat', payload: { text: 'fine' } });
    await bob.barrier();
    expect(errors(bob)).toEqual(bad.map((e) => ({ code: 'invalid_protocol', correlation: [e.id] })));
    expect(String((bob.ofKind('system/error')[0]!.payload as Wire).message)).toContain('"meup/v0.1"');
    await carol.next((e) => e.kind === 'chat');
    expect(carol.ofKind('chat')).toHaveLength(1);
  });

  it('R3: to is a list of participant ids; [] and absent mean everyone', async () => {
    const bob = await join('r3');
    const carol = await join('r3-carol');
    const a = bob.send({ kind: 'chat', to: 'r3-carol' });
    const b = bob.send({ kind: 'chat', to: [42] });
    bob.send({ kind: 'chat', to: [], payload: { n: 1 } });
    bob.send({ kind: 'chat', payload: { n: 2 } });
    await carol.all((e) => e.kind === 'chat', 2);
    await bob.barrier();
    expect(errors(bob)).toEqual([
      { code: 'invalid_field_type', correlation: [a.id] },
      { code: 'invalid_to', correlation: [b.id] },
    ]);
  });

  it('R4: refuses dotted kinds', async () => {
    const admin = await join('admin');
    const e = admin.send({ kind: 'mcp.request', payload: { method: 'tools/list' } });
    expect((await admin.reply(e.id, 'system/error')).payload).toMatchObject({ error: 'invalid_kind' });
  });

  it('R5: refuses camelCase correlationId; everything delivered has snake_case keys', async () => {
    const bob = await join('r5');
    const carol = await join('r5-carol');
    const e = bob.send({ kind: 'chat', correlationId: ['x'] });
    bob.send({ kind: 'chat', correlation_id: ['x'], someCamelField: 1 });
    expect((await bob.reply(e.id, 'system/error')).payload).toMatchObject({ error: 'camel_case_field' });
    const chat = await carol.next((x) => x.kind === 'chat');
    for (const envelope of [...carol.received, ...bob.received])
      for (const key of Object.keys(envelope)) expect(key).toMatch(/^[a-z][a-z0-9_]*$/);
    expect(chat).not.toHaveProperty('someCamelField');
  });

  it('R6: refuses a spoofed from (never overwrites it) and delivers nothing', async () => {
    const bob = await join('r6');
    const carol = await join('r6-carol');
    const e = bob.send({ kind: 'chat', from: 'r6-carol', to: ['r6-carol'], payload: { text: 'I am carol' } });
    const error = await bob.reply(e.id, 'system/error');
    expect(error.payload).toMatchObject({ error: 'from_mismatch' });
    await carol.barrier();
    bob.send({ kind: 'chat', to: ['r6-carol'], payload: { text: 'after' } });
    const chat = await carol.next((x) => x.kind === 'chat');
    expect(chat.payload).toEqual({ text: 'after' });
    expect(carol.ofKind('chat')).toHaveLength(1);
  });

  it('R7: refuses system/* from a participant whose capabilities match everything', async () => {
    const admin = await join('admin');
    const bob = await join('r7-bob');
    const sent = [
      'system/welcome',
      'system/presence',
      'system/error',
      'system/register',
      'system/heartbeat',
    ].map((kind) => admin.send({ kind, payload: {} }));
    await admin.barrier();
    expect(errors(admin)).toEqual(sent.map((e) => ({ code: 'reserved_kind', correlation: [e.id] })));
    await bob.barrier();
    expect(bob.received.filter((e) => e.from === 'admin')).toEqual([]);
  });

  it('R8: the gateway never forges a participant kind (a grant is not acknowledged by it)', async () => {
    const admin = await join('admin');
    const bot = await join('r8-bot');
    const grant = admin.send({
      kind: 'capability/grant',
      to: ['r8-bot'],
      payload: { recipient: 'r8-bot', capabilities: ['x/y'] },
    });
    await bot.next((e) => e.kind === 'capability/grant');
    await bot.all((e) => e.kind === 'system/welcome', 2);
    await admin.barrier();
    const fromGateway = [...admin.received, ...bot.received].filter((e) => e.from === 'gateway');
    expect(fromGateway.every((e) => String(e.kind).startsWith('system/'))).toBe(true);
    expect(admin.repliesTo(grant.id)).toEqual([]);
  });
});

describe('correlation_id (R9-R16)', () => {
  it('R9, R13: absent, [], one and several ids pass unchanged', async () => {
    const bob = await join('r9');
    const carol = await join('r9-carol');
    for (const correlation_id of [undefined, [], ['a'], ['a', 'b']])
      bob.send({ kind: 'chat', to: ['r9-carol'], correlation_id });
    const chats = await carol.all((e) => e.kind === 'chat', 4);
    expect(chats.map((e) => e.correlation_id)).toEqual([undefined, [], ['a'], ['a', 'b']]);
  });

  it('R10: a string is read as a one-element array during the transition', async () => {
    const bob = await join('r10');
    const carol = await join('r10-carol');
    bob.send({ kind: 'chat', to: ['r10-carol'], correlation_id: 'legacy-id' });
    expect((await carol.next((e) => e.kind === 'chat')).correlation_id).toEqual(['legacy-id']);
  });

  it('R11: refuses non-string elements and non-array values', async () => {
    const bob = await join('r11');
    const sent = [[1], [null], ['ok', {}], { a: 1 }, 7, false].map((correlation_id) =>
      bob.send({ kind: 'chat', correlation_id }),
    );
    await bob.barrier();
    expect(errors(bob)).toEqual(sent.map((e) => ({ code: 'invalid_correlation_id', correlation: [e.id] })));
  });

  it('R12: deduplicates; compared as a set', async () => {
    const bob = await join('r12');
    const carol = await join('r12-carol');
    bob.send({ kind: 'chat', to: ['r12-carol'], correlation_id: ['b', 'a', 'b', 'a'] });
    const chat = await carol.next((e) => e.kind === 'chat');
    expect(new Set(chat.correlation_id as string[])).toEqual(new Set(['a', 'b']));
    expect(chat.correlation_id).toHaveLength(2);
  });

  it('R14: requires a correlation on mcp/response, mcp/withdraw, mcp/reject, chat/acknowledge, chat/cancel, participant/compact-done', async () => {
    const admin = await join('admin');
    const sent = [
      'mcp/response',
      'mcp/withdraw',
      'mcp/reject',
      'chat/acknowledge',
      'chat/cancel',
      'participant/compact-done',
    ].map((kind) => admin.send({ kind, correlation_id: kind === 'mcp/reject' ? [] : undefined }));
    await admin.barrier();
    expect(errors(admin)).toEqual(sent.map((e) => ({ code: 'correlation_required', correlation: [e.id] })));
  });

  it('R15: one reject names several proposals and rejects them all; one grant-ack acknowledges several grants', async () => {
    const admin = await join('admin');
    const agent = await join('r15-agent');
    const call = { method: 'tools/call', params: { name: 'echo', arguments: { message: 'x' } } };
    const p1 = agent.send({ kind: 'mcp/proposal', payload: call });
    const p2 = agent.send({ kind: 'mcp/proposal', payload: call });
    await admin.all((e) => e.kind === 'mcp/proposal' && (e.id === p1.id || e.id === p2.id), 2);
    admin.send({ kind: 'mcp/reject', correlation_id: [p1.id, p2.id], payload: { reason: 'unsafe' } });
    const reject = await agent.next((e) => e.kind === 'mcp/reject');
    expect(new Set(reject.correlation_id as string[])).toEqual(new Set([p1.id, p2.id]));
    const w = agent.send({ kind: 'mcp/withdraw', correlation_id: [p2.id], payload: {} });
    expect((await agent.reply(w.id, 'system/error')).payload).toMatchObject({ error: 'proposal_closed' });

    const g1 = admin.send({
      kind: 'capability/grant',
      to: ['r15-agent'],
      payload: { recipient: 'r15-agent', capabilities: ['a'] },
    });
    const g2 = admin.send({
      kind: 'capability/grant',
      to: ['r15-agent'],
      payload: { recipient: 'r15-agent', capabilities: ['b'] },
    });
    await agent.all((e) => e.kind === 'capability/grant', 2);
    agent.send({
      kind: 'capability/grant-ack',
      to: ['admin'],
      correlation_id: [g1.id, g2.id],
      payload: { status: 'accepted' },
    });
    const ack = await admin.next((e) => e.kind === 'capability/grant-ack');
    expect(new Set(ack.correlation_id as string[])).toEqual(new Set([g1.id, g2.id]));
    expect(ack.from).toBe('r15-agent');
  });

  it('R18: only the proposer may withdraw', async () => {
    const agent = await join('r18-agent');
    const other = await join('r18-other');
    const p = agent.send({ kind: 'mcp/proposal', payload: { method: 'tools/list' } });
    await other.next((e) => e.id === p.id);
    const w = other.send({
      kind: 'mcp/withdraw',
      correlation_id: [p.id],
      payload: { reason: 'no_longer_needed' },
    });
    expect((await other.reply(w.id, 'system/error')).payload).toMatchObject({
      error: 'not_proposer',
      proposals: [p.id],
    });
    agent.send({ kind: 'mcp/withdraw', correlation_id: [p.id], payload: { reason: 'no_longer_needed' } });
    expect((await other.next((e) => e.kind === 'mcp/withdraw')).correlation_id).toEqual([p.id]);
  });
});

describe('context (R19-R27)', () => {
  it('R19: refuses a context that is not a string', async () => {
    const bob = await join('r19');
    const sent = [{ id: 'x' }, ['a'], 3].map((context) => bob.send({ kind: 'chat', context }));
    await bob.barrier();
    expect(errors(bob)).toEqual(sent.map((e) => ({ code: 'context_not_string', correlation: [e.id] })));
  });

  it('R20, R21: enforces the path syntax, depth 5 and length 255', async () => {
    const bob = await join('r20');
    const carol = await join('r20-carol');
    const bad = ['/a', 'a/', 'a//b', 'a/b:c', 'a/b/c/d/e/f', `a/${'b'.repeat(254)}`].map((context) =>
      bob.send({ kind: 'chat', context }),
    );
    bob.send({ kind: 'chat', to: ['r20-carol'], context: 'a/b/c/d/e' });
    await bob.barrier();
    expect(errors(bob).map((e) => e.code)).toEqual([
      'context_leading_slash',
      'context_trailing_slash',
      'context_empty_segment',
      'context_invalid_segment',
      'context_too_deep',
      'context_too_long',
    ]);
    expect(errors(bob).map((e) => e.correlation)).toEqual(bad.map((e) => [e.id]));
    expect((await carol.next((e) => e.kind === 'chat')).context).toBe('a/b/c/d/e');
  });

  it('R24, R25: keeps context byte for byte and delivers addressed MCP kinds whatever their context', async () => {
    const bob = await join('r24');
    const carol = await join('r24-carol');
    bob.send({
      kind: 'mcp/proposal',
      to: ['r24-carol'],
      context: 'Deep_ctx-1/x-2/Y_3',
      payload: { method: 'tools/list' },
    });
    bob.send({ kind: 'chat', to: ['r24-carol'], context: 'other-root', payload: {} });
    const [proposal, chat] = await carol.all((e) => e.from === 'r24', 2);
    expect(proposal!.context).toBe('Deep_ctx-1/x-2/Y_3');
    expect(chat!.context).toBe('other-root');
  });

  it('R26, R27: reasoning uses context = the reasoning/start id, correlation separately; gateway ids are context segments', async () => {
    const agent = await join('r26-agent');
    const human = await join('r26-human');
    const trigger = human.send({ kind: 'chat', payload: { text: 'why?' } });
    const start = agent.send({
      kind: 'reasoning/start',
      correlation_id: [trigger.id],
      payload: { message: 'let me think' },
    });
    agent.send({ kind: 'reasoning/thought', context: start.id, payload: { message: 'one' } });
    agent.send({ kind: 'reasoning/conclusion', context: start.id, payload: { message: 'because' } });
    agent.send({ kind: 'reasoning/cancel', context: start.id, payload: { reason: 'done' } });
    const seen = await human.all((e) => String(e.kind).startsWith('reasoning/'), 4);
    expect(seen.map((e) => [e.kind, e.context, e.correlation_id])).toEqual([
      ['reasoning/start', undefined, [trigger.id]],
      ['reasoning/thought', start.id, undefined],
      ['reasoning/conclusion', start.id, undefined],
      ['reasoning/cancel', start.id, undefined],
    ]);
    for (const e of human.received.filter((x) => x.from === 'gateway'))
      expect(String(e.id)).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});

describe('capabilities', () => {
  it("answers capability_violation with the attempted kind and the sender's capabilities", async () => {
    const limited = await join('limited');
    const e = limited.send({
      kind: 'mcp/request',
      to: ['server-echo'],
      payload: { method: 'tools/call', params: { name: 'echo' } },
    });
    const error = await limited.reply(e.id, 'system/error');
    expect(error.payload).toMatchObject({
      error: 'capability_violation',
      attempted_kind: 'mcp/request',
      your_capabilities: [{ kind: 'chat' }, { kind: 'mcp/request', payload: { method: 'tools/list' } }],
    });
  });
});

describe('routing', () => {
  it('sends to the participants named, or to everyone but the sending connection; in order per sender', async () => {
    const a1 = await join('route-a');
    const a2 = await join('route-a');
    const b = await join('route-b');
    const c = await join('route-c');
    a1.send({ kind: 'chat', to: ['route-b'], payload: { text: 'private' } });
    for (let i = 0; i < 100; i++) a1.send({ kind: 'chat', payload: { n: i } });
    const atB = await b.all((e) => e.kind === 'chat', 101);
    const atC = await c.all((e) => e.kind === 'chat', 100);
    const atA2 = await a2.all((e) => e.kind === 'chat', 100);
    expect(atB[0]!.payload).toEqual({ text: 'private' });
    for (const list of [atB.slice(1), atC, atA2])
      expect(list.map((e) => (e.payload as { n: number }).n)).toEqual([...Array(100).keys()]);
    await a1.barrier();
    expect(a1.ofKind('chat')).toEqual([]);
  });

  it('refuses recipients nobody knows, delivering nothing', async () => {
    const bob = await join('unknown-to');
    const carol = await join('unknown-to-carol');
    const e = bob.send({ kind: 'chat', to: ['unknown-to-carol', 'ghost'] });
    expect((await bob.reply(e.id, 'system/error')).payload).toMatchObject({
      error: 'unknown_participant',
      participants: ['ghost'],
    });
    await carol.barrier();
    expect(carol.ofKind('chat')).toEqual([]);
  });
});

describe('history', () => {
  it('gives a late joiner the envelopes of a context subtree it could have seen', async () => {
    const early = await join('hist-early');
    const start = early.send({ kind: 'reasoning/start', payload: { message: 'go' } });
    early.send({ kind: 'reasoning/thought', context: start.id, payload: { message: 'a' } });
    early.send({ kind: 'reasoning/thought', context: `${start.id}/sub`, payload: { message: 'b' } });
    early.send({ kind: 'chat', context: 'elsewhere', payload: {} });
    await early.barrier();
    const late = await join('hist-late');
    const ask = late.send({ kind: 'space/history', to: ['gateway'], payload: { context: String(start.id) } });
    const answer = await late.reply(ask.id, 'system/history');
    expect(answer.from).toBe('gateway');
    const envelopes = (answer.payload as { envelopes: Wire[] }).envelopes;
    expect(envelopes.map((e) => (e.payload as Wire).message)).toEqual(['a', 'b']);
  });
});

describe('bad input and bad peers', () => {
  it('refuses binary, stream and oversized frames with a reason and keeps the connection', async () => {
    const bob = await join('bad-frames');
    bob.sendRaw(Buffer.from('{"kind":"chat"}'), true);
    bob.sendRaw('#stream-1#payload');
    bob.sendRaw(
      JSON.stringify({
        protocol: 'meup/v0.2',
        id: 'too-big-1',
        kind: 'chat',
        payload: { text: 'x'.repeat(20_000) },
      }),
    );
    bob.send({ kind: 'chat', payload: { text: 'still here' } });
    await bob.barrier();
    expect(errors(bob)).toEqual([
      { code: 'invalid_frame', correlation: undefined },
      { code: 'invalid_frame', correlation: undefined },
      { code: 'frame_too_large', correlation: ['too-big-1'] },
    ]);
    expect(bob.ws.readyState).toBe(WebSocket.OPEN);
  });

  it('closes a connection whose frame exceeds the hard limit with 1009', async () => {
    const bob = await join('huge-frame');
    bob.sendRaw(JSON.stringify({ payload: 'x'.repeat(200_000) }));
    expect((await bob.closed).code).toBe(1009);
  });

  it('cuts a peer that stops answering pings, and announces that it left', async () => {
    const watcher = await join('hb-watcher');
    const silent = new WebSocket(url, { autoPong: false });
    await new Promise((r) => silent.once('open', r));
    silent.send(JSON.stringify({ type: 'join', participantId: 'hb-silent' }));
    const closed = new Promise<number>((r) => silent.once('close', (code) => r(code)));
    await watcher.next(
      (e) =>
        e.kind === 'system/presence' && (e.payload as { participant: Wire }).participant.id === 'hb-silent',
    );
    const leave = await watcher.next(
      (e) =>
        e.kind === 'system/presence' &&
        (e.payload as Wire).event === 'leave' &&
        (e.payload as { participant: Wire }).participant.id === 'hb-silent',
      8000,
    );
    expect(leave).toBeDefined();
    expect(await closed).toBe(1006);
  });

  it('closes a consumer that does not read instead of buffering without bound; the others get everything', async () => {
    const sender = await join('slow-sender');
    const fast = await join('slow-fast');
    const slow = await join('slow-slow');
    // Stop reading: the kernel buffers fill, then the gateway's.
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const text = 'y'.repeat(8000);
    const total = 3000;
    // Paced, and addressed to the two of them only: the reader keeps up, the other does not read.
    for (let batch = 0; batch < total / 100; batch++) {
      for (let i = batch * 100; i < (batch + 1) * 100; i++)
        sender.send({ kind: 'chat', to: ['slow-fast', 'slow-slow'], payload: { i, text } });
      await fast.all((e) => e.kind === 'chat' && e.from === 'slow-sender', (batch + 1) * 100, 30_000);
    }
    expect(fast.ofKind('chat').map((e) => (e.payload as { i: number }).i)).toEqual([...Array(total).keys()]);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const { code } = await slow.closed;
    expect([1006, 1013]).toContain(code);
    expect(slow.ofKind('chat').length).toBeLessThan(total);
  }, 60_000);

  it('forgets a participant that closed: others are told, and it cannot be addressed (not configured)', async () => {
    const bob = await join('gone-bob');
    const carol = await join('gone-carol');
    await carol.close();
    await bob.next((e) => e.kind === 'system/presence' && (e.payload as Wire).event === 'leave');
    const e = bob.send({ kind: 'chat', to: ['gone-carol'] });
    expect((await bob.reply(e.id, 'system/error')).payload).toMatchObject({ error: 'unknown_participant' });
  });
});

describe('a second gateway: strict correlation, context warn mode, other limits', () => {
  let strict: RunningServe;
  let strictUrl: string;
  beforeAll(async () => {
    strict = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        'space:\n  correlation: strict\n  context: { mode: warn, maxDepth: 2, maxLength: 30 }\n',
      ),
    });
    strictUrl = spaceUrlOf(strict.base);
  }, 60_000);
  afterAll(async () => {
    await strict?.stop();
  });

  it('R10 (cut-over): refuses a string correlation_id in strict mode', async () => {
    const bob = await Participant.connect(strictUrl, {
      join: { type: 'join', participantId: 'bob', protocol: 'meup/v0.2' },
    });
    const e = bob.send({ kind: 'chat', correlation_id: 'legacy' });
    expect((await bob.reply(e.id, 'system/error')).payload).toMatchObject({
      error: 'correlation_string_rejected',
    });
    await bob.close();
  });

  it('R20, R21, R24 (warn mode): keeps an invalid context unchanged and delivers it', async () => {
    const bob = await Participant.connect(strictUrl, {
      join: { type: 'join', participantId: 'bob', protocol: 'meup/v0.2' },
    });
    const carol = await Participant.connect(strictUrl, {
      join: { type: 'join', participantId: 'carol', protocol: 'meup/v0.2' },
    });
    for (const context of ['a/b/c', 'x'.repeat(40), 'a//b', 'sp ace'])
      bob.send({ kind: 'chat', to: ['carol'], context });
    const chats = await carol.all((e) => e.kind === 'chat', 4);
    expect(chats.map((e) => e.context)).toEqual(['a/b/c', 'x'.repeat(40), 'a//b', 'sp ace']);
    await bob.barrier();
    expect(bob.ofKind('system/error')).toEqual([]);
    await Promise.all([bob.close(), carol.close()]);
  });
});
