import { describe, expect, it } from 'vitest';
import type { MeupEnvelope } from '../meup/types.js';
import { SpaceHistory } from './history.js';
import { errorsOf, makeSpace } from './test-support/space-kit.js';

function env(id: string, context?: string): MeupEnvelope {
  return {
    protocol: 'meup/v0.2',
    id,
    ts: new Date().toISOString(),
    from: 'a',
    kind: 'chat',
    ...(context === undefined ? {} : { context }),
    payload: {},
  };
}

describe('SpaceHistory', () => {
  it('keeps the last N, answers oldest first, and says when it left older matches out', () => {
    const history = new SpaceHistory(3);
    for (const id of ['1', '2', '3', '4']) history.add(env(id), { kind: 'everyone' });
    const all = history.query({ viewer: 'x', observer: false, limit: 10 });
    expect(all.envelopes.map((e) => e.id)).toEqual(['2', '3', '4']);
    expect(all.truncated).toBe(false);
    const two = history.query({ viewer: 'x', observer: false, limit: 2 });
    expect(two.envelopes.map((e) => e.id)).toEqual(['3', '4']);
    expect(two.truncated).toBe(true);
  });

  it('filters a context subtree (the root and below, not a sibling sharing a prefix)', () => {
    const history = new SpaceHistory(10);
    for (const [id, ctx] of [
      ['1', 'a'],
      ['2', 'a/b'],
      ['3', 'ab/c'],
      ['4', undefined],
      ['5', 'a/b/c'],
    ] as const)
      history.add(env(id, ctx), { kind: 'everyone' });
    expect(
      history.query({ viewer: 'x', observer: false, context: 'a', limit: 10 }).envelopes.map((e) => e.id),
    ).toEqual(['1', '2', '5']);
    expect(
      history.query({ viewer: 'x', observer: false, context: 'a/b', limit: 10 }).envelopes.map((e) => e.id),
    ).toEqual(['2', '5']);
  });

  it('returns only what the viewer could have seen', () => {
    const history = new SpaceHistory(10);
    history.add(env('public'), { kind: 'everyone' });
    history.add(env('private'), { kind: 'participants', ids: new Set(['a', 'b']) });
    history.add(env('mcp'), { kind: 'observers' });
    const ids = (viewer: string, observer: boolean) =>
      history.query({ viewer, observer, limit: 10 }).envelopes.map((e) => e.id);
    expect(ids('b', false)).toEqual(['public', 'private']);
    expect(ids('c', false)).toEqual(['public']);
    expect(ids('c', true)).toEqual(['public', 'mcp']);
  });

  it('drops the oldest to stay within its byte budget, and never keeps one larger than it', () => {
    const history = new SpaceHistory(100, 1000);
    for (let i = 0; i < 10; i++) history.add(env(String(i)), { kind: 'everyone' }, 300);
    expect(history.bytes).toBeLessThanOrEqual(1000);
    expect(history.query({ viewer: 'x', observer: false, limit: 100 }).envelopes.map((e) => e.id)).toEqual([
      '7',
      '8',
      '9',
    ]);
    history.add(env('huge'), { kind: 'everyone' }, 5000);
    expect(history.query({ viewer: 'x', observer: false, limit: 100 }).envelopes.map((e) => e.id)).toEqual([
      '7',
      '8',
      '9',
    ]);
    for (let i = 0; i < 3000; i++) history.add(env(`n${i}`), { kind: 'everyone' }, 1);
    expect(history.size).toBe(100);
    expect(history.query({ viewer: 'x', observer: false, limit: 1 }).envelopes.map((e) => e.id)).toEqual([
      'n2999',
    ]);
  });

  it('keeps nothing with a size of 0', () => {
    const history = new SpaceHistory(0);
    history.add(env('1'), { kind: 'everyone' });
    expect(history.query({ viewer: 'x', observer: false, limit: 5 }).envelopes).toEqual([]);
  });
});

describe('space/history through the space', () => {
  it('answers the asking connection alone with system/history correlated to the request', () => {
    const { join, send } = makeSpace();
    const early = join('early');
    const other = join('other');
    const start = send(early, { kind: 'reasoning/start', payload: { message: 'go' } });
    send(early, { kind: 'reasoning/thought', context: start.id, payload: { message: 't1' } });
    send(early, { kind: 'chat', to: ['other'], context: start.id, payload: { text: 'private' } });
    send(early, { kind: 'chat', context: 'elsewhere', payload: { text: 'x' } });
    const late = join('late');
    const ask = send(late, { kind: 'space/history', to: ['gateway'], payload: { context: start.id } });
    const [answer] = late.ofKind('system/history');
    expect(answer).toMatchObject({ from: 'gateway', to: ['late'], correlation_id: [ask.id] });
    const payload = answer!.payload as {
      envelopes: Record<string, unknown>[];
      truncated: boolean;
      context: string;
    };
    expect(payload.context).toBe(start.id);
    expect(payload.envelopes.map((e) => e.kind)).toEqual(['reasoning/thought']);
    expect(payload.truncated).toBe(false);
    expect(other.ofKind('space/history')).toEqual([]);
    expect(other.ofKind('system/history')).toEqual([]);
  });

  it('bounds the answer by the limit and by the frame size, and refuses bad requests', () => {
    const { join, send } = makeSpace({
      config: { maxFrameBytes: 8192, history: { maxEnvelopes: 100, maxBytes: 1_000_000, maxResults: 50 } },
    });
    const a = join('a');
    for (let i = 0; i < 40; i++) send(a, { kind: 'chat', context: 'c', payload: { text: 'x'.repeat(200) } });
    const b = join('b');
    send(b, { kind: 'space/history', payload: { context: 'c', limit: 5 } });
    send(b, { kind: 'space/history', payload: { context: 'c', limit: 50 } });
    send(b, { kind: 'space/history', payload: { limit: 51 } });
    send(b, { kind: 'space/history', payload: { context: '/bad' } });
    const answers = b
      .ofKind('system/history')
      .map((e) => e.payload as { envelopes: unknown[]; truncated: boolean });
    expect(answers[0]).toMatchObject({ truncated: true });
    expect(answers[0]!.envelopes).toHaveLength(5);
    expect(answers[1]!.truncated).toBe(true);
    expect(answers[1]!.envelopes.length).toBeLessThan(40);
    expect(b.texts.every((t) => Buffer.byteLength(t) <= 8192)).toBe(true);
    expect(errorsOf(b).map((e) => e.code)).toEqual(['invalid_payload', 'invalid_payload']);
  });
});
