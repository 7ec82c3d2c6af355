import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { MessageContext } from './message-context.js';
import { MessageEnvelope } from './message-envelope.js';

const request: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };

function context(): MessageContext {
  return {
    direction: 'client->server',
    session: { id: 's-1', protocolVersion: '2025-06-18', state: 'active' },
    transport: { kind: 'http', method: 'POST', path: '/mcp', headers: { accept: 'application/json' } },
    timing: { received: 10, wallClock: 1_700_000_000_000 },
  };
}

describe('MessageEnvelope', () => {
  it('is immutable all the way into its context, and never shares the caller’s mutable objects', () => {
    const source = context();
    const envelope = new MessageEnvelope(request, source);
    for (const part of [
      envelope,
      envelope.context,
      envelope.context.session,
      envelope.context.transport,
      envelope.context.timing,
      (envelope.context.transport as { headers: object }).headers,
    ]) {
      expect(Object.isFrozen(part)).toBe(true);
    }
    // ESM is strict mode: writing to a frozen object throws.
    expect(() => {
      (envelope.context as { direction: string }).direction = 'server->client';
    }).toThrow(TypeError);
    // Changing what the context was built from changes nothing in the envelope.
    (source.session as { state: string }).state = 'closed';
    (source.transport as { headers: Record<string, string> }).headers.accept = 'text/event-stream';
    expect(envelope.context.session.state).toBe('active');
    expect(envelope.context.transport).toMatchObject({ headers: { accept: 'application/json' } });
    // A frozen context is kept as it is (builders do not copy it again).
    expect(new MessageEnvelope(request, envelope.context).context).toBe(envelope.context);
  });

  it('builds new envelopes with one part changed, leaving the original as it was', () => {
    const original = new MessageEnvelope(request, context());
    const session = { id: 's-2', protocolVersion: '2025-11-25', state: 'closing' } as const;
    const withSession = original.withSession(session);
    expect(withSession).not.toBe(original);
    expect(withSession.context.session).toEqual(session);
    expect(withSession.context.transport).toEqual(original.context.transport);
    expect(original.context.session.id).toBe('s-1');

    const withTransport = original.withTransport({ kind: 'stdio', pid: 4242 });
    expect(withTransport.context.transport).toEqual({ kind: 'stdio', pid: 4242 });
    expect(withTransport.context.session).toBe(original.context.session);
    expect(original.context.transport.kind).toBe('http');

    const withDirection = original.withDirection('internal');
    expect(withDirection.direction).toBe('internal');
    expect(original.direction).toBe('client->server');
  });

  it('reverse() flips the direction and nothing else; reversing twice comes back', () => {
    const original = new MessageEnvelope(request, context());
    const reversed = original.reverse();
    expect(reversed.direction).toBe('server->client');
    expect(reversed.message).toBe(original.message);
    expect(reversed.context.session).toBe(original.context.session);
    expect(reversed.reverse().direction).toBe('client->server');
    expect(original.withDirection('internal').reverse().direction).toBe('internal');
    expect(original.withDirection('unknown').reverse().direction).toBe('unknown');
  });

  it('isComplete() needs a known direction and a session id', () => {
    const complete = new MessageEnvelope(request, context());
    expect(complete.isComplete()).toBe(true);
    expect(complete.withDirection('unknown').isComplete()).toBe(false);
    expect(complete.withSession({ protocolVersion: '2025-06-18', state: 'uninitialized' }).isComplete()).toBe(
      false,
    );
    expect(MessageEnvelope.of(request).isComplete()).toBe(false);
  });

  it('marks processing and sending times on new envelopes and measures the processing', () => {
    const original = new MessageEnvelope(request, context());
    const done = original.markProcessingStarted(11).markProcessingCompleted(14.5).markSent(15);
    expect(done.context.timing).toEqual({
      received: 10,
      wallClock: 1_700_000_000_000,
      processingStarted: 11,
      processingCompleted: 14.5,
      sent: 15,
    });
    expect(done.processingDuration()).toBe(3.5);
    expect(original.processingDuration()).toBeUndefined();
    expect(original.context.timing.sent).toBeUndefined();
  });
});
