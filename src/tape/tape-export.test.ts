import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { MemoryTraceStore } from '../trace/memory-trace-store.js';
import type { TracePayloadMode } from '../trace/payload-mode.js';
import type { TraceRecord } from '../trace/types.js';
import { exportTape } from './tape-export.js';
import { createMessageRedactor } from './tape-redaction.js';

const S = 'sess1';
let n = 0;
let clock = 1_000;

/** One hop as the router records it: `from` → `to`, in `context`, of `session`. */
function hop(
  session: string,
  from: string,
  to: string,
  payload: Record<string, unknown>,
  context: string,
): TraceRecord {
  n += 1;
  clock += 1;
  return {
    envelope: {
      protocol: 'meup/v0.2',
      id: `E${String(n).padStart(4, '0')}`,
      ts: new Date(clock).toISOString(),
      from,
      to: [to],
      kind: 'method' in payload ? ('id' in payload ? 'mcp/request' : 'mcp/notification') : 'mcp/response',
      context,
      payload,
    },
    session,
    direction: from.startsWith('server-') ? 'server->client' : 'client->server',
    transport: 'http',
    ...(from.startsWith('server-') || to.startsWith('server-')
      ? { upstream: (from.startsWith('server-') ? from : to).slice(7) }
      : {}),
    receivedAt: clock,
  };
}

const up = (name: string, p: Record<string, unknown>, ctx: string) =>
  hop(S, 'gateway', `server-${name}`, p, ctx);
const down = (name: string, p: Record<string, unknown>, ctx: string) =>
  hop(S, `server-${name}`, 'gateway', p, ctx);
const client = (p: Record<string, unknown>, ctx: string) => hop(S, `client-${S}`, 'gateway', p, ctx);

/** A serve-like trace: the link's handshake in the gateway session, then a session with two calls. */
function store(mode: TracePayloadMode, upstreams: readonly string[] = ['a']): MemoryTraceStore {
  const s = new MemoryTraceStore({ payloads: mode });
  const records: TraceRecord[] = [];
  for (const name of upstreams) {
    records.push(
      hop(
        'gateway',
        'gateway',
        `server-${name}`,
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18' } },
        'gateway',
      ),
      hop(
        'gateway',
        `server-${name}`,
        'gateway',
        {
          jsonrpc: '2.0',
          id: 1,
          result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name } },
        },
        'gateway',
      ),
      hop(
        'gateway',
        'gateway',
        `server-${name}`,
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        'gateway',
      ),
    );
  }
  for (const [i, name] of upstreams.entries()) {
    const ctx = `${S}/C${i}`;
    const args = { name: 'echo', arguments: { message: 'password=hunter22' } };
    records.push(
      client({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: args }, ctx),
      up(name, { jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: args }, ctx),
      hop(
        S,
        `server-${name}`,
        'gateway',
        { jsonrpc: '2.0', id: 7, method: 'sampling/createMessage', params: {} },
        `${ctx}/X${i}`,
      ),
      hop(
        S,
        'gateway',
        `server-${name}`,
        { jsonrpc: '2.0', id: 7, result: { role: 'assistant' } },
        `${ctx}/X${i}`,
      ),
      down(name, { jsonrpc: '2.0', id: 100 + i, result: { content: [{ type: 'text', text: 'hi' }] } }, ctx),
    );
  }
  s.append(records);
  s.upsertSession({ key: S, transport: 'http', upstreams, startedAt: 1 });
  return s;
}

const source = { gateway: 'switchboard test' };

function refusal(run: () => unknown): SwitchboardError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(SwitchboardError);
    return err as SwitchboardError;
  }
  throw new Error('not refused');
}

describe('exportTape', () => {
  it("keeps the upstream side only, with the link's handshake first and calls tied together", () => {
    const tape = exportTape(store('full'), { target: S, source });
    expect(
      tape.messages.map((m) => [m.seq, m.dir, 'method' in m.message ? m.message.method : 'answer', m.re]),
    ).toEqual([
      [1, 'c2s', 'initialize', undefined],
      [2, 's2c', 'answer', 1],
      [3, 'c2s', 'notifications/initialized', undefined],
      [4, 'c2s', 'tools/call', undefined],
      [5, 's2c', 'sampling/createMessage', 4],
      [6, 'c2s', 'answer', 5],
      [7, 's2c', 'answer', 4],
    ]);
    expect(tape.header.server.initialize).toMatchObject({ serverInfo: { name: 'a' } });
    expect(tape.header.source).toMatchObject({ via: 'export', session: S, upstream: 'a' });
    expect(tape.header.incomplete).toEqual([]);
    expect(tape.messages.slice(0, 3).every((m) => m.t === 0)).toBe(true);
  });

  it('cuts secrets with a redactor, and lists the cuts', () => {
    const tape = exportTape(store('full'), { target: S, source, redactor: createMessageRedactor() });
    expect(JSON.stringify(tape)).not.toContain('hunter22');
    expect(tape.header.redactions).toEqual([
      { seq: 4, path: '/message/params/arguments/message', rule: 'secret-shape' },
    ]);
  });

  it('refuses a trace that kept outputs as digests, listing them, unless allowed', () => {
    const s = store('redacted');
    const err = refusal(() => exportTape(s, { target: S, source }));
    expect(err.code).toBe('SB_TAPE_INCOMPLETE');
    expect(err.message).toContain('message 7 (tools/call)');
    const tape = exportTape(s, { target: S, source, allowIncomplete: true });
    expect(tape.header.incomplete).toEqual([expect.objectContaining({ seq: 7, method: 'tools/call' })]);
    // The trace's own redactions are listed as such.
    expect(tape.header.redactions).toContainEqual({
      seq: 4,
      path: '/message/params/arguments/message',
      rule: 'trace-redacted',
    });
  });

  it('asks which upstream when the session talked to several, listing them', () => {
    const s = store('full', ['a', 'b']);
    const err = refusal(() => exportTape(s, { target: S, source }));
    expect(err.message).toContain('talked to 2 upstreams (a, b); name one with --upstream');
    const tape = exportTape(s, { target: S, source, upstream: 'b' });
    expect(tape.header.server.initialize).toMatchObject({ serverInfo: { name: 'b' } });
    expect(
      tape.messages.filter((m) => 'method' in m.message && m.message.method === 'tools/call'),
    ).toHaveLength(1);
    expect(refusal(() => exportTape(s, { target: S, source, upstream: 'c' })).message).toContain(
      'did not talk to upstream "c"',
    );
  });

  it('exports one context, and says when nothing is there', () => {
    const tape = exportTape(store('full', ['a', 'b']), { target: `${S}/C1`, source });
    expect(tape.header.source).toMatchObject({ session: S, context: `${S}/C1`, upstream: 'b' });
    expect(tape.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(refusal(() => exportTape(store('full'), { target: 'nope', source })).details?.notFound).toBe(true);
  });
});

describe('exportTape without a handshake in the trace', () => {
  it("says the server's initialize answer is missing, unless the session is of the stateless era", () => {
    const s = new MemoryTraceStore({ payloads: 'full' });
    s.append([
      up('a', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, `${S}/L`),
      down('a', { jsonrpc: '2.0', id: 1, result: { tools: [] } }, `${S}/L`),
    ]);
    s.upsertSession({
      key: S,
      transport: 'http',
      upstreams: ['a'],
      startedAt: 1,
      protocolVersion: '2025-06-18',
    });
    const err = refusal(() => exportTape(s, { target: S, source }));
    expect(err.code).toBe('SB_TAPE_INCOMPLETE');
    expect(err.message).toContain(
      "message 1 (initialize): the server's initialize answer is not in the trace",
    );
    s.upsertSession({
      key: S,
      transport: 'http',
      upstreams: ['a'],
      startedAt: 1,
      protocolVersion: '2026-07-28',
    });
    const stateless = exportTape(s, { target: S, source }).header;
    expect(stateless.incomplete).toEqual([]);
    expect(stateless.protocolVersion).toBe('2026-07-28');
  });
});
