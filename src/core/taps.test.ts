import diagnosticsChannel from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { HOP_CHANNEL, type HopEvent, LazyHopEvent, type Tap, TapBus } from './taps.js';

function hop(message: JsonRpcMessage, extra: Partial<ConstructorParameters<typeof LazyHopEvent>[0]> = {}) {
  return new LazyHopEvent({
    id: '01JAAAAAAAAAAAAAAAAAAAAAAA',
    message,
    direction: 'server->client',
    from: 'server-a',
    to: 'gateway',
    context: 'S/01JBBBBBBBBBBBBBBBBBBBBBBB',
    session: 'S',
    sessionContext: { id: 'mcp-1', protocolVersion: '2025-11-25', state: 'active' },
    transport: { kind: 'stdio', pid: 1 },
    receivedAt: Date.UTC(2026, 0, 1, 0, 0, 0, 5),
    ...extra,
  });
}

const listChanged: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
const progress: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/progress', params: {} };
const response: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: {} };

function recording(name: string, methods?: string[]): Tap & { seen: HopEvent[] } {
  const seen: HopEvent[] = [];
  return { name, ...(methods ? { methods } : {}), seen, observe: (e) => seen.push(e) };
}

describe('TapBus', () => {
  it('wants nothing without taps, only the named methods with method taps, everything with a plain tap', () => {
    const bus = new TapBus(new MemoryLogger(), new Metrics());
    expect(bus.active).toBe(false);
    expect(bus.wants(listChanged)).toBe(false);
    const catalog = recording('catalog', ['notifications/tools/list_changed']);
    bus.add(catalog);
    expect(bus.active).toBe(true);
    expect(bus.wants(listChanged)).toBe(true);
    expect(bus.wants(progress)).toBe(false);
    expect(bus.wants(response)).toBe(false);
    const trace = recording('trace');
    bus.add(trace);
    expect(bus.wants(progress)).toBe(true);
    expect(bus.wants(response)).toBe(true);
    bus.remove(trace);
    expect(bus.wants(response)).toBe(false);
    bus.remove(catalog);
    expect(bus.active).toBe(false);
  });

  it('gives a method tap only its methods and a plain tap every hop', () => {
    const catalog = recording('catalog', ['notifications/tools/list_changed']);
    const trace = recording('trace');
    const bus = new TapBus(new MemoryLogger(), new Metrics(), [catalog, trace]);
    for (const message of [listChanged, progress, response]) bus.emit(hop(message));
    expect(catalog.seen.map((e) => e.message)).toEqual([listChanged]);
    expect(trace.seen.map((e) => e.message)).toEqual([listChanged, progress, response]);
  });

  it('counts and logs a failing tap once, and the other taps still see the hop', () => {
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const after = recording('after');
    const failing: Tap = {
      name: 'broken',
      observe: () => {
        throw new Error('boom');
      },
    };
    const bus = new TapBus(logger, metrics, [failing, after]);
    bus.emit(hop(progress));
    bus.emit(hop(progress));
    expect(after.seen).toHaveLength(2);
    expect(metrics.get('tap_errors_total', { tap: 'broken' })).toBe(2);
    expect(logger.entries.filter((e) => e.level === 'error')).toHaveLength(1);
  });
});

describe('LazyHopEvent', () => {
  it('builds the MEUP envelope and the MessageEnvelope from its fields, once, on first access', () => {
    const event = hop(response, {
      correlationId: ['01JCCCCCCCCCCCCCCCCCCCCCCC'],
      sentAt: Date.UTC(2026, 0, 1, 0, 0, 0, 9),
      upstream: 'a',
    });
    expect(event.meup).toEqual({
      protocol: event.meup.protocol,
      id: '01JAAAAAAAAAAAAAAAAAAAAAAA',
      ts: '2026-01-01T00:00:00.009Z',
      from: 'server-a',
      to: ['gateway'],
      kind: 'mcp/response',
      context: 'S/01JBBBBBBBBBBBBBBBBBBBBBBB',
      correlationId: ['01JCCCCCCCCCCCCCCCCCCCCCCC'],
      payload: response,
    });
    expect(event.meup).toBe(event.meup);
    expect(event.envelope.message).toBe(response);
    expect(event.envelope.context.direction).toBe('server->client');
    expect(event.envelope.context.session).toEqual({
      id: 'mcp-1',
      protocolVersion: '2025-11-25',
      state: 'active',
    });
    expect(event.envelope.context.timing.wallClock).toBe(event.receivedAt);
    expect(event.envelope).toBe(event.envelope);
  });

  it('leaves an empty correlation out, and names no client session for the gateway’s own traffic', () => {
    const event = hop(progress, { correlationId: [], sessionContext: undefined });
    expect(event.correlationId).toBeUndefined();
    expect(event.meup.correlationId).toBeUndefined();
    expect(event.meup.ts).toBe('2026-01-01T00:00:00.005Z');
    expect(event.envelope.context.session.id).toBeUndefined();
    expect(event.envelope.context.session.state).toBe('active');
  });

  it('publishes every hop on the switchboard:hop diagnostics channel, built only while it has subscribers', () => {
    const bus = new TapBus(new MemoryLogger(), new Metrics());
    expect(bus.active).toBe(false);
    expect(bus.wants(response)).toBe(false);
    const seen: unknown[] = [];
    const subscriber = (event: unknown) => seen.push(event);
    diagnosticsChannel.subscribe(HOP_CHANNEL, subscriber);
    try {
      // A subscriber alone makes every hop wanted, as a plain tap does.
      expect(bus.active).toBe(true);
      expect(bus.wants(response)).toBe(true);
      expect(bus.wants(progress)).toBe(true);
      const event = hop(progress);
      bus.emit(event);
      expect(seen).toEqual([event]);
      expect((seen[0] as HopEvent).meup.kind).toBeDefined();
    } finally {
      diagnosticsChannel.unsubscribe(HOP_CHANNEL, subscriber);
    }
    expect(bus.active).toBe(false);
    bus.emit(hop(progress));
    expect(seen).toHaveLength(1);
  });
});
