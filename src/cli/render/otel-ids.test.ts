import { describe, expect, it } from 'vitest';
import { traceRecord } from '../../trace/trace-store.contract.js';
import { renderOtelIds } from './otel-ids.js';

const otel = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };

describe('renderOtelIds', () => {
  it('prints one line per call, by its request envelope id', () => {
    const records = [
      { ...traceRecord({ id: 'A', context: 's1/A' }), otel },
      { ...traceRecord({ id: 'B', context: 's1/A' }), otel },
      { ...traceRecord({ id: 'C', context: 's1/A/C' }), otel },
      traceRecord({ id: 'D', context: 's1' }),
    ];
    expect(renderOtelIds(records)).toBe(
      `\nOpenTelemetry (call envelope  trace id  span id):\n  A  ${otel.traceId}  ${otel.spanId}\n`,
    );
  });

  it('prints nothing for a trace recorded without OpenTelemetry', () => {
    expect(renderOtelIds([traceRecord({ id: 'A', context: 's1/A' })])).toBe('');
  });
});
