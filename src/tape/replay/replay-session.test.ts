import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage, RequestId } from '../../protocol/jsonrpc/types.js';
import { readTapeFile } from '../tape-reader.js';
import { buildScript } from './replay-script.js';
import { ReplaySession, type Scheduler } from './replay-session.js';
import type { MatchMode } from './tape-matcher.js';

const TAPE = join(import.meta.dirname, '../../../test/fixtures/tapes/small.tape.jsonl');
const script = buildScript(readTapeFile(TAPE));

/** Time that moves only when the test says so. */
class ManualClock implements Scheduler {
  now = 0;
  #timers: { at: number; fn: () => void; n: number }[] = [];
  #n = 0;
  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { at: this.now + ms, fn, n: this.#n++ };
    this.#timers.push(timer);
    return timer;
  }
  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t !== handle);
  }
  /** Runs every timer due within `ms`, in time order (timers they set included). */
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.n - b.n)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.now = due.at;
      due.fn();
    }
    this.now = end;
  }
}

interface Sent {
  readonly at: number;
  readonly message: JsonRpcMessage & Record<string, unknown>;
  readonly related?: RequestId;
}

function replay(mode: MatchMode = 'match', speed = 1) {
  const clock = new ManualClock();
  const sent: Sent[] = [];
  const warnings: string[] = [];
  const session = new ReplaySession({
    script,
    mode,
    speed,
    scheduler: clock,
    send: (message, related) =>
      sent.push({
        at: clock.now,
        message: message as Sent['message'],
        ...(related === undefined ? {} : { related }),
      }),
    warn: (text) => warnings.push(text),
  });
  return { clock, sent, warnings, session };
}

const call = (id: RequestId, name: string, args: object, meta?: object): JsonRpcMessage => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
});

describe('ReplaySession', () => {
  it('answers initialize with the recorded result under the live id, in a later turn', () => {
    const { clock, sent, session } = replay();
    session.receive({
      jsonrpc: '2.0',
      id: 'live-0',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18' },
    });
    expect(sent).toEqual([]);
    clock.advance(0);
    expect(sent[0]?.message).toEqual({ jsonrpc: '2.0', id: 'live-0', result: script.initialize });
  });

  it('answers initialize of a 2026-07-28 tape in the session era the client asked for', async () => {
    const { initializeAnswer } = await import('./replay-session.js');
    const recorded = {
      protocolVersion: '2026-07-28',
      capabilities: { tools: {} },
      serverInfo: { name: 's', version: '1' },
    };
    expect(initializeAnswer(recorded, '2025-06-18')).toEqual({ ...recorded, protocolVersion: '2025-06-18' });
    expect(initializeAnswer(recorded, 'nonsense')).toEqual({ ...recorded, protocolVersion: '2025-11-25' });
    expect(initializeAnswer(script.initialize, '2025-03-26')).toBe(script.initialize);
  });

  it('answers identical requests in recorded order, then refuses with the closest one named', () => {
    const { clock, sent, session } = replay('match');
    session.receive(call(7, 'echo', { message: 'hi' }));
    session.receive(call(8, 'echo', { message: 'hi' }));
    session.receive(call(9, 'echo', { message: 'hi' }));
    clock.advance(10);
    const byId = new Map(sent.map((s) => [s.message.id, s.message]));
    expect(byId.get(7)).toMatchObject({ result: { content: [{ text: 'Echo: hi' }] } });
    expect(byId.get(8)).toMatchObject({ result: { content: [{ text: 'Echo: hi (again)' }] } });
    expect(byId.get(9)).toMatchObject({
      error: { code: -32011, data: { code: 'SB_TAPE_NO_MATCH', reason: 'used-up', closest: { seq: 16 } } },
    });
  });

  it.each([
    [1, [100, 200, 300]],
    [2, [50, 100, 150]],
    [0, [0, 0, 0]],
  ])(
    'plays progress at the recorded pace divided by speed %s, with the live token and id',
    (speed, times) => {
      const { clock, sent, session } = replay('match', speed);
      session.receive(call('c1', 'slow', { steps: 2 }, { progressToken: 'live-token' }));
      clock.advance(1000);
      expect(sent.map((s) => s.at)).toEqual(times);
      expect(sent.map((s) => s.message)).toEqual([
        {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: 'live-token', progress: 1, total: 2 },
        },
        {
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: 'live-token', progress: 2, total: 2 },
        },
        { jsonrpc: '2.0', id: 'c1', result: { content: [{ type: 'text', text: 'done in 2 steps' }] } },
      ]);
      expect(sent.slice(0, 2).every((s) => s.related === 'c1')).toBe(true);
    },
  );

  it('leaves progress out for a live request that asked for none', () => {
    const { clock, sent, session } = replay('match', 0);
    session.receive(call('c1', 'slow', { steps: 2 }));
    clock.advance(0);
    expect(sent.map((s) => s.message.id)).toEqual(['c1']);
  });

  it('asks the client what the server asked, waits for its answer, warns when it differs, then answers', () => {
    const { clock, sent, warnings, session } = replay('match', 1);
    session.receive(call('q', 'ask', { prompt: '6x7?' }));
    clock.advance(10);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      at: 10,
      related: 'q',
      message: { id: 'tape-1', method: 'sampling/createMessage', params: { maxTokens: 10 } },
    });
    clock.advance(5000);
    expect(sent).toHaveLength(1);
    session.receive({
      jsonrpc: '2.0',
      id: 'tape-1',
      result: { model: 'm', role: 'assistant', content: { type: 'text', text: '41' } },
    });
    expect(warnings.join('\n')).toContain('differs from the recorded one');
    clock.advance(49);
    expect(sent).toHaveLength(1);
    clock.advance(1);
    expect(sent[1]?.message).toEqual({
      jsonrpc: '2.0',
      id: 'q',
      result: { content: [{ type: 'text', text: 'the model said 42' }] },
    });
  });

  it('does not warn when the client answers as recorded', () => {
    const { clock, warnings, session } = replay('match', 0);
    session.receive(call('q', 'ask', { prompt: '6x7?' }));
    clock.advance(0);
    session.receive({
      jsonrpc: '2.0',
      id: 'tape-1',
      result: { model: 'm', role: 'assistant', content: { type: 'text', text: '42' } },
    });
    expect(warnings).toEqual([]);
  });

  it('stops a call its client cancels: nothing more is sent for it', () => {
    const { clock, sent, session } = replay('match', 1);
    session.receive(call('c1', 'slow', { steps: 2 }, { progressToken: 1 }));
    clock.advance(150);
    session.receive({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1' } });
    clock.advance(1000);
    expect(sent.map((s) => s.at)).toEqual([100]);
  });

  it('strict: refuses a request ahead of its turn, naming the one expected, lists aside', () => {
    const { clock, sent, session } = replay('strict', 0);
    session.receive({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    session.receive(call(2, 'ask', { prompt: '6x7?' }));
    session.receive(call(3, 'echo', { message: 'hi' }));
    clock.advance(0);
    const byId = new Map(sent.map((s) => [s.message.id, s.message]));
    expect(byId.get(1)).toMatchObject({
      result: { tools: [{ name: 'echo' }, { name: 'slow' }, { name: 'ask' }] },
    });
    expect(byId.get(2)).toMatchObject({
      error: { code: -32011, data: { reason: 'out-of-order', closest: { seq: 6 } } },
    });
    expect(byId.get(3)).toMatchObject({ result: { content: [{ text: 'Echo: hi' }] } });
  });

  it('answers server/discover as a session-era server would: method not found', () => {
    const { clock, sent, session } = replay();
    session.receive({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} });
    clock.advance(0);
    expect(sent[0]?.message).toMatchObject({ id: 1, error: { code: -32601 } });
  });

  it('sends nothing once closed', () => {
    const { clock, sent, session } = replay('match', 1);
    session.receive(call('c1', 'slow', { steps: 2 }, { progressToken: 1 }));
    session.close();
    clock.advance(1000);
    expect(sent).toEqual([]);
  });

  it('with Node timers, close() clears both kinds of wait (immediate at speed 0, timeout at speed 1)', async () => {
    for (const speed of [0, 1]) {
      const sent: unknown[] = [];
      const session = new ReplaySession({ script, mode: 'match', speed, send: (m) => sent.push(m) });
      session.receive(call('c1', 'slow', { steps: 2 }, { progressToken: 1 }));
      session.receive(call('c2', 'echo', { message: 'hi' }));
      session.close();
      await new Promise((r) => setTimeout(r, 150));
      expect(sent).toEqual([]);
    }
  });
});
