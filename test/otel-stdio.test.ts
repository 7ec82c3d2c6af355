/**
 * `switchboard stdio` exports OpenTelemetry with the options of its command line (--otel-endpoint,
 * --otel-protocol, --otel-header, --otel-service-name, --otel-resource-attribute): the client's
 * call is a SERVER span on `pipe`, the request to the child a CLIENT span under it, and the child
 * receives the CLIENT span's context in `_meta` (test/fixtures/trace-context-server.mjs reports it).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, tempDir } from './support/cli.js';
import { type OtlpReceiver, SPAN_KIND, startOtlpReceiver } from './support/otlp-receiver.js';

const FIXTURE = `${ROOT}/test/fixtures/trace-context-server.mjs`;

describe('switchboard stdio --otel-*', () => {
  let receiver: OtlpReceiver;
  let reported: { meta: Record<string, unknown> | null };

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'stdio',
        '--data-dir',
        tempDir(),
        '--no-audit',
        '--log-level',
        'warn',
        '--otel-endpoint',
        receiver.url,
        '--otel-protocol',
        'http/json',
        '--otel-header',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the option's own syntax.
        'x-collector-token: ${env:COLLECTOR_TOKEN}',
        '--otel-service-name',
        'stdio-wrapper',
        '--otel-resource-attribute',
        'deployment.environment.name=test',
        '--',
        process.execPath,
        FIXTURE,
        'stdio',
      ],
      env: { ...(process.env as Record<string, string>), COLLECTOR_TOKEN: 'stdio-secret' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'otel-stdio-it', version: '1.0.0' });
    await client.connect(transport);
    const result = (await client.callTool({ name: 'report', arguments: {} })) as {
      content: { text: string }[];
    };
    reported = JSON.parse(result.content[0]!.text);
    // Closing stdin ends the wrapper, which flushes its exporters before it exits.
    await client.close();
    await receiver.waitFor(
      () => receiver.spans.some((s) => s.name === 'tools/call report' && s.kind === SPAN_KIND.server),
      15_000,
      'the tools/call SERVER span',
    );
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
  });

  it('exports with the command line settings', () => {
    expect(receiver.requests.every((r) => r.encoding === 'json')).toBe(true);
    expect(receiver.requests.every((r) => r.headers['x-collector-token'] === 'stdio-secret')).toBe(true);
    const server = receiver.spans.find((s) => s.kind === SPAN_KIND.server && s.name === 'tools/call report');
    expect(server?.resource['service.name']).toBe('stdio-wrapper');
    expect(server?.resource['deployment.environment.name']).toBe('test');
  });

  it("makes the client's call a SERVER span on pipe, and the child's request its CLIENT span, whose context the child got", () => {
    const server = receiver.spans.find((s) => s.kind === SPAN_KIND.server && s.name === 'tools/call report');
    expect(server?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'report',
      'network.transport': 'pipe',
    });
    const client = receiver.spans.find(
      (s) =>
        s.kind === SPAN_KIND.client && s.parentSpanId === server?.spanId && s.traceId === server?.traceId,
    );
    expect(client?.attributes['network.transport']).toBe('pipe');
    expect(reported.meta?.traceparent).toBe(`00-${client?.traceId}-${client?.spanId}-01`);
  });
});

describe('switchboard stdio --otel-endpoint with a collector that is gone', () => {
  it('answers every call after the collector dies mid-session, with spans still to export', async () => {
    const receiver = await startOtlpReceiver();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'stdio',
        '--data-dir',
        tempDir(),
        '--no-audit',
        '--log-level',
        'error',
        '--otel-endpoint',
        receiver.url,
        '--',
        process.execPath,
        FIXTURE,
        'stdio',
      ],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'otel-dead-collector', version: '1.0.0' });
    await client.connect(transport);
    await client.callTool({ name: 'report', arguments: {} });
    // The collector dies with spans in flight and more to come: the calls must not notice.
    await receiver.close();
    for (let i = 0; i < 50; i++) {
      const result = (await client.callTool({ name: 'report', arguments: {} })) as { content: unknown[] };
      expect(result.content.length).toBeGreaterThan(0);
    }
    await client.close();
  }, 60_000);
});
