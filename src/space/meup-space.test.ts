/**
 * The space's envelope pipeline with in-memory connections: joining, validation (meup.md
 * requirements 1-14 and 19-27 as they apply to a gateway), capabilities, routing and order.
 * Observed only at the connections (what each participant receives) and the trace sink.
 */
import { describe, expect, it } from 'vitest';
import { isValidContextSegment } from '../meup/context-path.js';
import { errorsOf, makeSpace, traffic } from './test-support/space-kit.js';

const ALL = [{ kind: '**' }];

describe('joining', () => {
  it('welcomes a participant with its id, capabilities and who is present, and tells the others', () => {
    const { join } = makeSpace({ participants: [{ id: 'alice', capabilities: [{ kind: 'chat' }] }] });
    const bob = join('bob');
    const alice = join('alice');
    const welcome = alice.ofKind('system/welcome')[0]!;
    expect(welcome.from).toBe('gateway');
    expect(welcome.to).toEqual(['alice']);
    const payload = welcome.payload as {
      you: { id: string; capabilities: unknown[] };
      participants: { id: string }[];
    };
    expect(payload.you).toEqual({ id: 'alice', capabilities: [{ kind: 'chat' }] });
    expect(payload.participants.map((p) => p.id).sort()).toEqual(['bob', 'server-everything']);
    const presence = bob.ofKind('system/presence');
    expect(presence.map((p) => (p.payload as { event: string }).event)).toEqual(['join']);
    expect((presence[0]!.payload as { participant: { id: string } }).participant.id).toBe('alice');
    // The joiner is not told of its own arrival.
    expect(alice.ofKind('system/presence')).toEqual([]);
  });

  it('announces a participant once, when its first connection joins and its last leaves', () => {
    const { space, join } = makeSpace();
    const watcher = join('watcher');
    const a1 = join('alice');
    const a2 = join('alice');
    space.leave(a1);
    expect(watcher.ofKind('system/presence').map((p) => (p.payload as { event: string }).event)).toEqual([
      'join',
    ]);
    space.leave(a2);
    expect(watcher.ofKind('system/presence').map((p) => (p.payload as { event: string }).event)).toEqual([
      'join',
      'leave',
    ]);
  });
});

describe('validation (meup.md requirements 1-8)', () => {
  it('R1: refuses what is not an envelope, correlating to the id when it can be read', () => {
    const { join, sendText, send } = makeSpace();
    const bob = join('bob');
    sendText(bob, '[1,2]');
    sendText(bob, 'not json');
    send(bob, { id: 'e1', kind: undefined });
    send(bob, { id: undefined, kind: 'chat' });
    expect(errorsOf(bob).map((e) => [e.code, e.correlation])).toEqual([
      ['not_an_object', undefined],
      ['invalid_json', undefined],
      ['missing_field', ['e1']],
      ['missing_field', undefined],
    ]);
  });

  it('R2: accepts exactly the configured protocol strings and names the one refused', () => {
    const { join, send } = makeSpace({ config: { protocols: ['meup/v0.2'] } });
    const bob = join('bob');
    const watcher = join('watcher');
    for (const protocol of ['meup/v0.1', 'MEUP/v0.2', 'meup/v0.2 ', 'mew/v0.4'])
      send(bob, { protocol, kind: 'chat' });
    send(bob, { kind: 'chat', payload: { text: 'ok' } });
    const errors = errorsOf(bob);
    expect(errors.map((e) => e.code)).toEqual(Array(4).fill('invalid_protocol'));
    expect(String(errors[0]!.payload.message)).toContain('"meup/v0.1"');
    expect(traffic(watcher).map((e) => e.kind)).toEqual(['chat']);
  });

  it('R2 (dialects): a mew/v0.4 participant is answered in mew/v0.4, and its envelopes keep their protocol', () => {
    const { join, send } = makeSpace();
    const mew = join('mew', { protocol: 'mew/v0.4' });
    const meup = join('meup');
    send(mew, { protocol: 'mew/v0.4', kind: 'chat', payload: { text: 'hi' } });
    send(mew, { protocol: 'mew/v0.4', kind: 'system/presence' });
    expect(meup.ofKind('chat')[0]!.protocol).toBe('mew/v0.4');
    expect(mew.ofKind('system/error')[0]!.protocol).toBe('mew/v0.4');
    expect(meup.ofKind('system/presence').every((e) => e.protocol === 'meup/v0.2')).toBe(true);
  });

  it("R2 (dialects): one broadcast reaches each connection in its own dialect, and it follows a connection's latest envelope", () => {
    const { space, join, send } = makeSpace();
    const meup = join('meup');
    const meup2 = join('meup2');
    const mew = join('mew', { protocol: 'mew/v0.4' });
    const mew3 = join('mew3', { protocol: 'mew/v0.3' });
    const notice = (text: string) => ({
      protocol: 'meup/v0.2' as const,
      id: `n-${text}`,
      ts: new Date().toISOString(),
      from: 'gateway',
      kind: 'system/notice',
      payload: { text },
    });
    for (const c of [meup, meup2, mew, mew3]) c.clear();
    space.publish(notice('one'));
    const protocolOf = (c: typeof meup) => c.ofKind('system/notice').map((e) => e.protocol);
    expect(protocolOf(meup)).toEqual(['meup/v0.2']);
    expect(protocolOf(meup2)).toEqual(['meup/v0.2']);
    expect(protocolOf(mew)).toEqual(['mew/v0.4']);
    expect(protocolOf(mew3)).toEqual(['mew/v0.3']);
    // The same envelope in every dialect: only the protocol string differs.
    const strip = (e: Record<string, unknown>) => ({ ...e, protocol: undefined });
    expect(strip(mew.ofKind('system/notice')[0]!)).toEqual(strip(meup.ofKind('system/notice')[0]!));
    // meup2 now speaks mew/v0.4: the next broadcast reaches it in that dialect.
    send(meup2, { protocol: 'mew/v0.4', kind: 'chat', payload: { text: 'switching' } });
    expect(meup.ofKind('chat')[0]!.protocol).toBe('mew/v0.4');
    space.publish(notice('two'));
    expect(protocolOf(meup2)).toEqual(['meup/v0.2', 'mew/v0.4']);
    expect(protocolOf(meup)).toEqual(['meup/v0.2', 'meup/v0.2']);
  });

  it('R3: to is a list of ids; empty or absent means everyone', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    const carol = join('carol');
    send(bob, { kind: 'chat', to: 'carol' });
    send(bob, { kind: 'chat', to: [''] });
    send(bob, { kind: 'chat', to: [] });
    send(bob, { kind: 'chat' });
    expect(errorsOf(bob).map((e) => e.code)).toEqual(['invalid_field_type', 'invalid_to']);
    expect(carol.ofKind('chat')).toHaveLength(2);
  });

  it('R4: refuses dotted kinds', () => {
    const { join, send } = makeSpace({ defaults: ALL });
    const bob = join('bob');
    send(bob, { kind: 'mcp.request', payload: { method: 'tools/list' } });
    expect(errorsOf(bob).map((e) => e.code)).toEqual(['invalid_kind']);
  });

  it('R5: refuses camelCase correlationId, and writes only snake_case keys', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    const carol = join('carol');
    send(bob, { kind: 'chat', correlationId: ['x'] });
    send(bob, { kind: 'chat', correlation_id: ['x'], extraField: 1 });
    expect(errorsOf(bob).map((e) => e.code)).toEqual(['camel_case_field']);
    for (const envelope of carol.received)
      for (const key of Object.keys(envelope)) expect(key).toMatch(/^[a-z][a-z0-9_]*$/);
    expect(carol.ofKind('chat')[0]).not.toHaveProperty('extraField');
  });

  it('R6: refuses a from that is not the sender, and never delivers it', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    const carol = join('carol');
    const sent = send(bob, { kind: 'chat', from: 'carol', payload: { text: 'I am carol' } });
    expect(errorsOf(bob)).toMatchObject([{ code: 'from_mismatch', correlation: [sent.id] }]);
    expect(carol.ofKind('chat')).toEqual([]);
  });

  it('R7: refuses system/* kinds from participants even when a capability matches them', () => {
    const { join, send } = makeSpace({ defaults: [{ kind: 'system/*' }, { kind: '**' }] });
    const bob = join('bob');
    const carol = join('carol');
    for (const kind of ['system/welcome', 'system/presence', 'system/error', 'system/register', 'system'])
      send(bob, { kind });
    expect(errorsOf(bob).map((e) => e.code)).toEqual(Array(5).fill('reserved_kind'));
    expect(traffic(carol)).toEqual([]);
  });

  it('R8: the gateway never sends participant kinds itself (no grant-ack on a grant)', () => {
    const { join, send } = makeSpace({ defaults: ALL });
    const alice = join('alice');
    const bob = join('bob');
    send(alice, {
      kind: 'capability/grant',
      to: ['bob'],
      payload: { recipient: 'bob', capabilities: [{ kind: 'x' }] },
    });
    const fromGateway = [...alice.received, ...bob.received].filter((e) => e.from === 'gateway');
    expect(fromGateway.every((e) => String(e.kind).startsWith('system/'))).toBe(true);
    expect(fromGateway.some((e) => e.kind === 'capability/grant-ack')).toBe(false);
  });
});

describe('correlation_id (seed 000, requirements 9-16)', () => {
  it('R9, R13: absent, [], one and several ids are accepted and delivered unchanged', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    const carol = join('carol');
    send(bob, { kind: 'chat' });
    send(bob, { kind: 'chat', correlation_id: [] });
    send(bob, { kind: 'chat', correlation_id: ['a'] });
    send(bob, { kind: 'chat', correlation_id: ['a', 'b'] });
    expect(carol.ofKind('chat').map((e) => e.correlation_id)).toEqual([undefined, [], ['a'], ['a', 'b']]);
    expect(errorsOf(bob)).toEqual([]);
  });

  it('R10: accept mode reads a string as a one-element array and counts the deprecation; strict refuses it', () => {
    const loose = makeSpace();
    const bob = loose.join('bob');
    const carol = loose.join('carol');
    loose.send(bob, { kind: 'chat', correlation_id: 'x' });
    expect(carol.ofKind('chat')[0]!.correlation_id).toEqual(['x']);
    expect(loose.metrics.get('meup_correlation_string_total', { sender: 'bob' })).toBe(1);
    expect(loose.logger.entries.some((e) => e.level === 'warn' && e.message.includes('deprecated'))).toBe(
      true,
    );

    const strict = makeSpace({ config: { correlation: 'strict' } });
    const dave = strict.join('dave');
    const sent = strict.send(dave, { kind: 'chat', correlation_id: 'x' });
    expect(errorsOf(dave)).toMatchObject([{ code: 'correlation_string_rejected', correlation: [sent.id] }]);
  });

  it('R11: refuses non-string elements and other types', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    for (const correlation_id of [[1], [null], ['a', {}], {}, 5, true])
      send(bob, { kind: 'chat', correlation_id });
    expect(errorsOf(bob).map((e) => e.code)).toEqual(Array(6).fill('invalid_correlation_id'));
  });

  it('R12: deduplicates (compared as sets)', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    const carol = join('carol');
    send(bob, { kind: 'chat', correlation_id: ['a', 'b', 'a'] });
    expect(new Set(carol.ofKind('chat')[0]!.correlation_id as string[])).toEqual(new Set(['a', 'b']));
    expect((carol.ofKind('chat')[0]!.correlation_id as string[]).length).toBe(2);
  });

  it('R14: requires a correlation on responses, withdraws, rejects, acknowledgements and cancels; errors name the offender', () => {
    const { join, send } = makeSpace({ defaults: ALL });
    const bob = join('bob');
    const ids = [
      'mcp/response',
      'mcp/withdraw',
      'mcp/reject',
      'chat/acknowledge',
      'chat/cancel',
      'participant/compact-done',
    ].map((kind) => send(bob, { kind }).id);
    const errors = errorsOf(bob);
    expect(errors.map((e) => e.code)).toEqual(Array(6).fill('correlation_required'));
    expect(errors.map((e) => e.correlation)).toEqual(ids.map((id) => [id]));
  });
});

describe('context (seed 004, requirements 19-27)', () => {
  it('R19: refuses a context that is not a string', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    for (const context of [{ id: 'a' }, ['a'], 5, null]) send(bob, { kind: 'chat', context });
    expect(errorsOf(bob).map((e) => e.code)).toEqual(Array(4).fill('context_not_string'));
  });

  it('R20, R21: enforces the path syntax and the configured bounds', () => {
    const { join, send } = makeSpace({ config: { context: { mode: 'reject', maxDepth: 3, maxLength: 20 } } });
    const bob = join('bob');
    const carol = join('carol');
    for (const context of ['/a', 'a/', 'a//b', 'a/b c', 'a/b/c/d', 'a'.repeat(21)])
      send(bob, { kind: 'chat', context });
    send(bob, { kind: 'chat', context: 'a/b/c' });
    expect(errorsOf(bob).map((e) => e.code)).toEqual([
      'context_leading_slash',
      'context_trailing_slash',
      'context_empty_segment',
      'context_invalid_segment',
      'context_too_deep',
      'context_too_long',
    ]);
    expect(carol.ofKind('chat').map((e) => e.context)).toEqual(['a/b/c']);
  });

  it('R24: keeps the context byte for byte (warn mode keeps even an invalid one) and never drops or misroutes for it', () => {
    const { join, send } = makeSpace({ config: { context: { mode: 'warn', maxDepth: 5, maxLength: 255 } } });
    const bob = join('bob');
    const carol = join('carol');
    const dave = join('dave');
    const odd = 'weird//Context_-/ünïcode';
    send(bob, { kind: 'chat', to: ['carol'], context: odd });
    send(bob, { kind: 'mcp/proposal', to: ['carol'], context: 'x/y', payload: { method: 'tools/call' } });
    expect(carol.ofKind('chat')[0]!.context).toBe(odd);
    expect(carol.ofKind('mcp/proposal')[0]!.context).toBe('x/y');
    expect(traffic(dave)).toEqual([]);
  });

  it('R26: reasoning envelopes carry context = the reasoning/start id and correlation independently', () => {
    const { join, send } = makeSpace();
    const agent = join('agent');
    const human = join('human');
    const trigger = send(human, { kind: 'chat', payload: { text: 'why?' } });
    const start = send(agent, {
      kind: 'reasoning/start',
      correlation_id: [trigger.id],
      payload: { message: 'thinking' },
    });
    send(agent, { kind: 'reasoning/thought', context: start.id, payload: { message: 'step 1' } });
    send(agent, {
      kind: 'reasoning/conclusion',
      context: start.id,
      correlation_id: [trigger.id],
      payload: { message: 'because' },
    });
    const seen = traffic(human);
    expect(seen.map((e) => e.kind)).toEqual(['reasoning/start', 'reasoning/thought', 'reasoning/conclusion']);
    expect(seen[0]!.correlation_id).toEqual([trigger.id]);
    expect(seen.slice(1).map((e) => e.context)).toEqual([start.id, start.id]);
    expect(seen[2]!.correlation_id).toEqual([trigger.id]);
  });

  it('R27: every id the gateway makes is a valid context segment', () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    send(bob, { kind: 'system/x' });
    for (const envelope of bob.received) expect(isValidContextSegment(String(envelope.id))).toBe(true);
  });
});

describe('capabilities', () => {
  it('refuses what no capability allows, saying which kind and what the sender holds', () => {
    const caps = [{ kind: 'chat' }, { kind: 'mcp/request', payload: { method: 'tools/list' } }];
    const { join, send } = makeSpace({ defaults: caps });
    const bob = join('bob');
    const carol = join('carol');
    const sent = send(bob, { kind: 'mcp/request', to: ['carol'], payload: { method: 'tools/call' } });
    send(bob, { kind: 'mcp/request', to: ['carol'], payload: { method: 'tools/list' } });
    expect(errorsOf(bob)).toEqual([
      {
        code: 'capability_violation',
        correlation: [sent.id],
        payload: expect.objectContaining({ attempted_kind: 'mcp/request', your_capabilities: caps }),
      },
    ]);
    expect(carol.ofKind('mcp/request')).toHaveLength(1);
  });
});

describe('routing', () => {
  it('delivers to the named participants only, or to everyone but the sending connection', () => {
    const { join, send } = makeSpace();
    const a1 = join('alice');
    const a2 = join('alice');
    const bob = join('bob');
    const carol = join('carol');
    send(a1, { kind: 'chat', to: ['bob'], payload: { text: 'to bob' } });
    send(a1, { kind: 'chat', payload: { text: 'to all' } });
    const texts = (c: typeof a1) => c.ofKind('chat').map((e) => (e.payload as { text: string }).text);
    expect(texts(bob)).toEqual(['to bob', 'to all']);
    expect(texts(carol)).toEqual(['to all']);
    expect(texts(a2)).toEqual(['to all']);
    expect(texts(a1)).toEqual([]);
  });

  it('refuses recipients the space does not know, delivering nothing', () => {
    const { join, send } = makeSpace({ participants: [{ id: 'offline' }] });
    const bob = join('bob');
    const carol = join('carol');
    send(bob, { kind: 'chat', to: ['carol', 'nobody'] });
    send(bob, { kind: 'chat', to: ['offline'] });
    expect(errorsOf(bob)).toMatchObject([
      { code: 'unknown_participant', payload: { participants: ['nobody'] } },
    ]);
    expect(carol.ofKind('chat')).toEqual([]);
  });

  it("keeps each sender's order", () => {
    const { join, send } = makeSpace();
    const bob = join('bob');
    const dave = join('dave');
    const carol = join('carol');
    for (let i = 0; i < 50; i++) {
      send(bob, { kind: 'chat', payload: { n: i, who: 'bob' } });
      send(dave, { kind: 'chat', payload: { n: i, who: 'dave' } });
    }
    const from = (who: string) =>
      carol
        .ofKind('chat')
        .map((e) => e.payload as { n: number; who: string })
        .filter((p) => p.who === who)
        .map((p) => p.n);
    expect(from('bob')).toEqual([...Array(50).keys()]);
    expect(from('dave')).toEqual([...Array(50).keys()]);
  });

  it('records every accepted envelope in the trace, under the space session', () => {
    const { join, send, traced } = makeSpace();
    const bob = join('bob');
    const sent = send(bob, { kind: 'chat', context: 'c1', payload: { text: 'x' } });
    const record = traced.find((r) => r.envelope.id === sent.id)!;
    expect(record).toMatchObject({ session: 'space', direction: 'internal', transport: 'websocket' });
    expect(record.envelope.context).toBe('c1');
  });

  it('counts what a connection that stopped reading could not take, and goes on with the others', () => {
    const { join, send, metrics } = makeSpace();
    const bob = join('bob');
    const slow = join('slow', { capacity: 2 });
    const carol = join('carol');
    for (let i = 0; i < 5; i++) send(bob, { kind: 'chat', payload: { n: i } });
    expect(carol.ofKind('chat')).toHaveLength(5);
    expect(metrics.get('space_deliveries_dropped_total')).toBeGreaterThan(0);
    expect(slow.texts.length).toBe(2);
  });

  it('answers a second join frame with already_joined', () => {
    const { join, sendText } = makeSpace();
    const bob = join('bob');
    sendText(bob, JSON.stringify({ type: 'join', participantId: 'bob' }));
    expect(errorsOf(bob).map((e) => e.code)).toEqual(['already_joined']);
  });

  it('refuses a frame nested past the depth limit, correlated to its id, and goes on (issue 18)', () => {
    const { join, sendText, send } = makeSpace({ config: { maxFrameBytes: 64 * 1024 } });
    const bob = join('bob');
    const deep = `${'['.repeat(4500)}${']'.repeat(4500)}`;
    sendText(bob, `{"id":"deep-1","kind":"chat","payload":{"text":${deep}}}`);
    expect(errorsOf(bob)).toMatchObject([
      {
        code: 'frame_too_deep',
        correlation: ['deep-1'],
        payload: {
          message:
            'the frame nests 4502 levels of objects and arrays; the gateway accepts at most 128 (maxJsonDepth)',
        },
      },
    ]);
    send(bob, { kind: 'chat', payload: { text: 'still here' } });
    expect(errorsOf(bob)).toHaveLength(1);
  });

  it('refuses binary frames, MEW stream frames and oversized frames (with the id when readable)', () => {
    const { space, join, sendText } = makeSpace({ config: { maxFrameBytes: 200 } });
    const bob = join('bob');
    space.receive(bob, Buffer.from('{}'), true);
    sendText(bob, '#stream-1#some data');
    sendText(bob, JSON.stringify({ id: 'big-1', payload: { text: 'x'.repeat(300) } }));
    expect(errorsOf(bob)).toMatchObject([
      { code: 'invalid_frame' },
      { code: 'invalid_frame' },
      { code: 'frame_too_large', correlation: ['big-1'] },
    ]);
  });
});
