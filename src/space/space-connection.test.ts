import { describe, expect, it } from 'vitest';
import type { MeupEnvelope } from '../meup/types.js';
import { EnvelopeTexts } from './space-connection.js';

const envelope: MeupEnvelope = {
  protocol: 'meup/v0.2',
  id: 'e1',
  ts: '2026-01-01T00:00:00Z',
  from: 'gateway',
  kind: 'system/presence',
  correlationId: ['a', 'a'],
  payload: { event: 'join' },
};

describe('EnvelopeTexts', () => {
  it("writes the gateway's own envelopes in each connection's dialect, once per dialect", () => {
    const texts = new EnvelopeTexts(envelope, true);
    const mew = JSON.parse(texts.for({ protocol: 'mew/v0.4' })) as Record<string, unknown>;
    expect(mew.protocol).toBe('mew/v0.4');
    expect(mew.correlation_id).toEqual(['a']);
    expect(texts.for({ protocol: 'mew/v0.4' })).toBe(texts.for({ protocol: 'mew/v0.4' }));
    expect(JSON.parse(texts.for({ protocol: 'meup/v0.2' })).protocol).toBe('meup/v0.2');
    expect(texts.size()).toBe(texts.for({ protocol: 'mew/v0.4' }).length);
  });

  it("keeps a forwarded envelope's own protocol", () => {
    const texts = new EnvelopeTexts({ ...envelope, protocol: 'mew/v0.3' }, false);
    expect(JSON.parse(texts.for({ protocol: 'meup/v0.2' })).protocol).toBe('mew/v0.3');
  });
});
