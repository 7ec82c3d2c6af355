import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { batchSettings, SPAN_QUEUE_DEFAULT } from './otel-runtime.js';

/** Ends `n` spans in one turn of the loop (a burst) and returns how many reached the exporter. */
async function burst(n: number, env: NodeJS.ProcessEnv): Promise<number> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(exporter, batchSettings(env))],
  });
  const tracer = provider.getTracer('burst');
  for (let i = 0; i < n; i++) tracer.startSpan(`span ${i}`).end();
  await provider.forceFlush();
  const exported = exporter.getFinishedSpans().length;
  await provider.shutdown();
  return exported;
}

describe('the batch span processor settings', () => {
  it('keep a burst of 5,000 spans that the SDK default queue (2,048) would drop', async () => {
    expect(SPAN_QUEUE_DEFAULT).toBeGreaterThan(5_000);
    expect(await burst(5_000, {})).toBe(5_000);
  });

  it('leave the queue to OTEL_BSP_MAX_QUEUE_SIZE when it is set (the control: the SDK default, 2,048 here, drops spans)', async () => {
    expect(batchSettings({ OTEL_BSP_MAX_QUEUE_SIZE: '2048' })).toEqual({});
    expect(await burst(5_000, { OTEL_BSP_MAX_QUEUE_SIZE: '2048' })).toBeLessThan(5_000);
  });
});
