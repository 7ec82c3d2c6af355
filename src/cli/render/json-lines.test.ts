import { describe, expect, it } from 'vitest';
import { decodeMeupEnvelope } from '../../meup/codec.js';
import { renderEnvelopeJsonLines, renderJsonLines } from './json-lines.js';
import { sampleTrace } from './test-support/trace-fixture.js';

describe('JSON lines', () => {
  it('writes one wire MEUP envelope per line, with correlation_id, each id once', () => {
    const { records, R } = sampleTrace();
    const out = renderEnvelopeJsonLines([...records, records[0]!]);
    expect(out.endsWith('\n')).toBe(true);
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(records.length);
    const last = JSON.parse(lines[lines.length - 1] ?? '') as Record<string, unknown>;
    expect(last).toMatchObject({
      id: R,
      kind: 'mcp/response',
      protocol: 'meup/v0.2',
      context: expect.any(String),
    });
    expect(last.correlation_id).toEqual(records[6]?.envelope.correlationId);
    expect(last).not.toHaveProperty('correlationId');
    expect(JSON.parse(lines[0] ?? '')).not.toHaveProperty('correlation_id');
  });

  it('adds the OpenTelemetry ids of the call as otel.trace_id and otel.span_id, when the trace kept them', () => {
    const { records } = sampleTrace();
    const otel = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
    const lines = renderEnvelopeJsonLines([{ ...records[0]!, otel }, records[1]!])
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]?.otel).toEqual({ trace_id: otel.traceId, span_id: otel.spanId });
    expect(lines[1]).not.toHaveProperty('otel');
    // Without it, the line is the bare wire envelope, as a MEUP participant decodes it.
    const { otel: _ids, ...bare } = lines[0]!;
    const decoded = decodeMeupEnvelope(bare);
    expect(decoded.ok && decoded.warnings).toEqual([]);
  });

  it('writes any values one per line, and nothing for nothing', () => {
    expect(renderJsonLines([{ a: 1 }, 'x'])).toBe('{"a":1}\n"x"\n');
    expect(renderJsonLines([])).toBe('');
    expect(renderEnvelopeJsonLines([])).toBe('');
  });
});
