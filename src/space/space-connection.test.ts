import { describe, expect, it } from 'vitest';
import type { MeupEnvelope } from '../meup/types.js';
import { EnvelopeTexts, OutgoingFrame } from './space-connection.js';

const envelope: MeupEnvelope = {
  protocol: 'meup/v0.2',
  id: 'e1',
  ts: '2026-01-01T00:00:00Z',
  from: 'gateway',
  kind: 'system/presence',
  correlationId: ['a', 'a'],
  payload: { event: 'join' },
};

const parse = (frame: OutgoingFrame) => JSON.parse(frame.text) as Record<string, unknown>;

describe('EnvelopeTexts', () => {
  it("writes the gateway's own envelopes in each connection's dialect, once per dialect", () => {
    const texts = new EnvelopeTexts(envelope, true);
    const mew = parse(texts.for({ protocol: 'mew/v0.4' }));
    expect(mew.protocol).toBe('mew/v0.4');
    expect(mew.correlation_id).toEqual(['a']);
    expect(texts.for({ protocol: 'mew/v0.4' })).toBe(texts.for({ protocol: 'mew/v0.4' }));
    expect(parse(texts.for({ protocol: 'meup/v0.2' })).protocol).toBe('meup/v0.2');
    expect(texts.size()).toBe(texts.for({ protocol: 'mew/v0.4' }).text.length);
  });

  it("keeps a forwarded envelope's own protocol", () => {
    const texts = new EnvelopeTexts({ ...envelope, protocol: 'mew/v0.3' }, false);
    expect(parse(texts.for({ protocol: 'meup/v0.2' })).protocol).toBe('mew/v0.3');
    // A forwarded envelope is one frame whatever the recipients' dialects.
    expect(texts.for({ protocol: 'meup/v0.2' })).toBe(texts.for({ protocol: 'mew/v0.4' }));
  });

  it('gives each dialect its own bytes, converted once and shared by every connection of that dialect', () => {
    const texts = new EnvelopeTexts({ ...envelope, payload: { text: 'héllo 🌍' } }, true);
    const meup = texts.for({ protocol: 'meup/v0.2' });
    const mew = texts.for({ protocol: 'mew/v0.4' });
    expect(meup.bytes).toBe(texts.for({ protocol: 'meup/v0.2' }).bytes);
    expect(mew.bytes).not.toBe(meup.bytes);
    expect(JSON.parse(meup.bytes.toString('utf8')).protocol).toBe('meup/v0.2');
    expect(JSON.parse(mew.bytes.toString('utf8')).protocol).toBe('mew/v0.4');
    expect(mew.bytes.toString('utf8')).toBe(mew.text);
    expect(mew.bytes.length).toBe(Buffer.byteLength(mew.text));
    expect(mew.bytes.length).toBeGreaterThan(mew.text.length);
  });
});

describe('OutgoingFrame', () => {
  it('converts its text to UTF-8 on first use only', () => {
    const frame = new OutgoingFrame('{"a":"ü"}');
    expect(frame.bytes).toBe(frame.bytes);
    expect([...frame.bytes]).toEqual([...Buffer.from('{"a":"ü"}', 'utf8')]);
  });
});
