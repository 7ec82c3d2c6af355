import { describe, expect, it } from 'vitest';
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

  it('writes any values one per line, and nothing for nothing', () => {
    expect(renderJsonLines([{ a: 1 }, 'x'])).toBe('{"a":1}\n"x"\n');
    expect(renderJsonLines([])).toBe('');
    expect(renderEnvelopeJsonLines([])).toBe('');
  });
});
