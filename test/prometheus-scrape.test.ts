/**
 * A real Prometheus server scrapes a real `switchboard serve` (issue 21, "Done means"): Debian's
 * `prometheus` binary, started here on a free port with a generated configuration and a one-second
 * scrape interval; the test makes calls through the gateway with the official SDK client and reads
 * the counters and histograms back through Prometheus's HTTP query API (`/api/v1/query`: a sum, a
 * `rate`, a `histogram_quantile`, the conventions' histogram), so the exposition is held to what a
 * Prometheus server accepts (it asks for OpenMetrics first, as every Prometheus does).
 *
 * `.ci/run` installs the package when it is missing; elsewhere, without the binary, the test is
 * skipped and says so.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_SERVER, tempDir } from './support/cli.js';
import { type StartedProcess, startProcess } from './support/peers.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { waitUntil } from './support/sse-client.js';

const hasPrometheus = spawnSync('prometheus', ['--version'], { stdio: 'ignore' }).status === 0;
if (!hasPrometheus && process.env.CI)
  throw new Error("prometheus is missing in CI: .ci/run installs Debian's prometheus package");
if (!hasPrometheus)
  console.warn(
    'prometheus-scrape.test.ts: the prometheus binary was not found (Debian package prometheus): skipping the real-Prometheus test',
  );

/** A port nobody listens on now (the kernel's pick, released at once). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Vector {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

describe.skipIf(!hasPrometheus)('a real Prometheus scrapes serve', () => {
  let serve: RunningServe;
  let prometheus: StartedProcess;
  let api: string;

  /** The instant vector of `expr`, as Prometheus answers `/api/v1/query`. */
  async function query(expr: string): Promise<Vector[]> {
    const response = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as { status: string; error?: string; data?: { result: Vector[] } };
    if (body.status !== 'success') throw new Error(`query ${expr} failed: ${body.error}`);
    return body.data?.result ?? [];
  }

  /** The one value of `expr`, or undefined while it has none. */
  async function scalar(expr: string): Promise<number | undefined> {
    const result = await query(expr);
    return result.length === 0 ? undefined : Number(result[0]!.value[1]);
  }

  beforeAll(async () => {
    serve = await startServe({
      configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER }, twin: { script: ECHO_SERVER } }),
    });
    const dir = tempDir('switchboard-prometheus-');
    const port = await freePort();
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'scrape_configs:',
        '  - job_name: switchboard',
        '    metrics_path: /metrics',
        '    static_configs:',
        `      - targets: ["${new URL(serve.base).host}"]`,
        '',
      ].join('\n'),
    );
    prometheus = await startProcess(
      'prometheus',
      [
        `--config.file=${config}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=info',
      ],
      { readyPattern: /Server is ready to receive web requests/, readyStream: 'stderr', timeoutMs: 60_000 },
    );
    api = `http://127.0.0.1:${port}`;
  }, 120_000);

  afterAll(async () => {
    await prometheus?.stop();
    await serve?.stop();
  });

  it('reads the calls back: counters, a rate, a quantile of the durations, the conventions’ histogram', async () => {
    await waitUntil(async () => (await scalar('up{job="switchboard"}')) === 1, 30_000, 'the first scrape');
    const client = new Client({ name: 'prometheus-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(serve.url)));
    const okCalls = (): Promise<number | undefined> =>
      scalar('sum(switchboard_calls_total{method="tools/call",target="echo",outcome="ok"})');
    // Two batches, each seen by a scrape: a counter's rate needs it to grow between two samples
    // (a series first seen at 10 has no rate of its own).
    const calls = 20;
    try {
      await client.listTools();
      for (let i = 0; i < calls / 2; i++)
        await client.callTool({ name: 'echo__echo', arguments: { message: `m${i}` } });
      await waitUntil(async () => (await okCalls()) === calls / 2, 30_000, 'the first calls in Prometheus');
      for (let i = calls / 2; i < calls; i++)
        await client.callTool({ name: 'echo__echo', arguments: { message: `m${i}` } });
      await client.callTool({ name: 'twin__echo', arguments: { message: 7 } });
    } finally {
      await client.close();
    }
    await waitUntil(async () => (await okCalls()) === calls, 30_000, `the ${calls} calls in Prometheus`);
    expect(
      await scalar(
        'switchboard_calls_total{upstream="twin",method="tools/call",target="echo",outcome="tool_error"}',
      ),
    ).toBe(1);
    expect(await scalar('sum(switchboard_upstream_requests_total{method="tools/list"})')).toBe(2);
    expect(await scalar('switchboard_sessions{era="legacy",transport="http"}')).toBeGreaterThanOrEqual(0);
    expect(await scalar('switchboard_upstream_state{upstream="echo",state="ready"}')).toBe(1);

    const rate = await scalar('sum(rate(switchboard_calls_total{method="tools/call"}[1m]))');
    expect(rate).toBeGreaterThan(0);
    const p99 = await scalar(
      'histogram_quantile(0.99, sum by (le) (rate(switchboard_call_duration_seconds_bucket{method="tools/call"}[1m])))',
    );
    expect(p99).toBeGreaterThan(0);
    expect(p99).toBeLessThanOrEqual(300);
    const server = await query(
      'sum by (gen_ai_tool_name, mcp_protocol_version, network_transport) (mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})',
    );
    expect(server).toContainEqual(
      expect.objectContaining({
        metric: {
          gen_ai_tool_name: 'echo__echo',
          mcp_protocol_version: '2025-11-25',
          network_transport: 'tcp',
        },
        value: [expect.any(Number), String(calls)],
      }),
    );
    const clientSide = await scalar(
      'sum(mcp_client_operation_duration_seconds_count{mcp_method_name="tools/call",switchboard_upstream="echo",gen_ai_tool_name="echo"})',
    );
    expect(clientSide).toBe(calls);
    const upstreamP50 = await scalar(
      'histogram_quantile(0.5, sum by (le) (rate(mcp_client_operation_duration_seconds_bucket{mcp_method_name="tools/call"}[1m])))',
    );
    expect(upstreamP50).toBeGreaterThan(0);
    expect(await scalar('process_resident_memory_bytes{job="switchboard"}')).toBeGreaterThan(0);
    // Every sample of a scrape was taken (none refused by Prometheus's parser).
    expect(await scalar('scrape_samples_scraped{job="switchboard"}')).toBeGreaterThan(100);
  }, 120_000);
});
