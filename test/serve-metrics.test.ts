/**
 * `GET /metrics` of a real `switchboard serve` (issue 21): after calls through the gateway with the
 * official SDK client, the scrape counts them by upstream, method, listed target and outcome, times
 * them in the conventions' histograms, and reports sessions and upstreams; OpenMetrics when asked.
 * Access: with authentication, 401 without credentials and 403 for a principal without the
 * `metrics` role (or the configured one); `observe.metrics.listen` moves it to a listener of its
 * own; `enabled: false` removes it.
 */
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { ECHO_SERVER } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { jsonOf, send, waitUntil } from './support/sse-client.js';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const SCRAPER = 'sbt_metrics_scraper_token_0000000000001';
const ALICE = 'sbt_metrics_alice_no_role_00000000000002';

async function mcpClient(serve: RunningServe, token?: string): Promise<Client> {
  const client = new Client({ name: 'metrics-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(serve.url),
      token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } },
    ),
  );
  return client;
}

/** Three calls: one answered, one the tool's own error, one for a tool its upstream never listed. */
async function someCalls(client: Client): Promise<void> {
  await client.listTools();
  await client.callTool({ name: 'echo__echo', arguments: { message: 'hi' } });
  await client.callTool({ name: 'echo__echo', arguments: { message: 42 } });
  // The gateway cannot tell whether an upstream has a tool it did not list: it forwards, and the
  // upstream refuses.
  await expect(client.callTool({ name: 'echo__no_such_tool', arguments: {} })).rejects.toThrow();
}

/** The value of a sample whose name is `name` and whose labels include all of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !(line.startsWith(`${name}{`) || line.startsWith(`${name} `))) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('GET /metrics on serve', () => {
  it('without authentication: the calls, sessions, upstreams and process, in both formats', async () => {
    // Two upstreams: the aggregated endpoint names tools <server>__<name> and lists them by fan-out.
    const serve = await startServe({
      configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER }, twin: { script: ECHO_SERVER } }),
    });
    const client = await mcpClient(serve);
    try {
      await waitUntil(() => serve.stderr().includes('Prometheus metrics on'), 5000, 'the metrics URL');
      expect(serve.stderr()).toContain(`Prometheus metrics on ${serve.base}/metrics`);
      await someCalls(client);
      // The ledger writes in batches (audit.flushDelay): wait for the calls' records.
      await waitUntil(
        async () =>
          (sample(
            (await send(`${serve.base}/metrics`, 'GET', {})).text,
            'switchboard_audit_records_written_total',
          ) ?? 0) >= 3,
        5000,
        'the audit records of the calls',
      );
      const scrape = await send(`${serve.base}/metrics`, 'GET', {});
      expect(scrape.status).toBe(200);
      expect(scrape.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = scrape.text;
      const calls = (target: string, outcome: string) =>
        sample(text, 'switchboard_calls_total', { upstream: 'echo', method: 'tools/call', target, outcome });
      expect(calls('echo', 'ok')).toBe(1);
      expect(calls('echo', 'tool_error')).toBe(1);
      expect(calls('other', 'error')).toBe(1);
      expect(text).not.toContain('no_such_tool');
      // tools/list is the gateway's own answer, built from a fan-out to the upstream.
      expect(
        sample(text, 'switchboard_calls_total', { upstream: '', method: 'tools/list', outcome: 'ok' }),
      ).toBe(1);
      expect(
        sample(text, 'switchboard_upstream_requests_total', {
          upstream: 'echo',
          method: 'tools/list',
          outcome: 'ok',
        }),
      ).toBeGreaterThanOrEqual(1);
      expect(
        sample(text, 'switchboard_call_duration_seconds_count', {
          method: 'tools/call',
          target: 'echo',
          outcome: 'ok',
        }),
      ).toBe(1);
      expect(
        sample(text, 'mcp_server_operation_duration_seconds_count', {
          mcp_method_name: 'tools/call',
          gen_ai_tool_name: 'echo__echo',
          error_type: 'tool_error',
          network_transport: 'tcp',
        }),
      ).toBe(1);
      expect(
        sample(text, 'mcp_client_operation_duration_seconds_count', {
          mcp_method_name: 'tools/call',
          gen_ai_tool_name: 'echo',
          network_transport: 'pipe',
          switchboard_upstream: 'echo',
        }),
      ).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'switchboard_sessions', { era: 'legacy', transport: 'http' })).toBe(1);
      expect(sample(text, 'switchboard_upstream_state', { upstream: 'echo', state: 'ready' })).toBe(1);
      expect(sample(text, 'switchboard_upstream_info', { upstream: 'echo' })).toBe(1);
      expect(sample(text, 'switchboard_calls_in_flight')).toBe(0);
      expect(sample(text, 'switchboard_trace_queue_records')).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'switchboard_audit_failing_closed', { reason: 'write-failed' })).toBe(0);
      expect(sample(text, 'switchboard_audit_records_written_total')).toBeGreaterThanOrEqual(3);
      expect(sample(text, 'switchboard_policy_decisions_total', { action: 'allow' })).toBeGreaterThanOrEqual(
        1,
      );
      expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(text).toContain('nodejs_gc_duration_seconds');

      const om = await send(`${serve.base}/metrics`, 'GET', {
        accept: 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5',
      });
      expect(om.headers['content-type']).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
      expect(om.text).toContain('# TYPE switchboard_calls counter');
      expect(om.text.endsWith('# EOF\n')).toBe(true);

      // The session's end is timed once the client ends it (DELETE).
      await (client.transport as StreamableHTTPClientTransport).terminateSession();
      await client.close();
      const after = (await send(`${serve.base}/metrics`, 'GET', {})).text;
      expect(
        sample(after, 'mcp_server_session_duration_seconds_count', { mcp_protocol_version: '2025-11-25' }),
      ).toBe(1);
    } finally {
      await client.close().catch(() => undefined);
      await serve.stop();
    }
  });

  it('a call the policy refuses is refused; a held call, once approved, is timed in the approvals histogram', async () => {
    const serve = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER }, twin: { script: ECHO_SERVER } },
        `policy:
  rules:
    - { id: no-twin, upstream: twin, action: deny }
    - { id: ask-echo, upstream: echo, target: echo, action: ask }
`,
      ),
    });
    const client = await mcpClient(serve);
    try {
      await client.listTools();
      await expect(client.callTool({ name: 'twin__echo', arguments: { message: 'no' } })).rejects.toThrow();
      const held = client.callTool({ name: 'echo__echo', arguments: { message: 'wait' } });
      let id = '';
      await waitUntil(
        async () => {
          const listed = jsonOf<{ approvals: { id: string }[] }>(
            await send(`${serve.base}/approvals`, 'GET', {}),
          );
          id = listed.approvals[0]?.id ?? '';
          return id !== '';
        },
        10_000,
        'the held call',
      );
      const pending = (await send(`${serve.base}/metrics`, 'GET', {})).text;
      expect(sample(pending, 'switchboard_approvals_pending')).toBe(1);
      expect(sample(pending, 'switchboard_calls_in_flight')).toBe(1);
      const decided = await send(
        `${serve.base}/approvals/${id}`,
        'POST',
        { 'content-type': 'application/json' },
        JSON.stringify({ decision: 'approve' }),
      );
      expect(decided.status).toBe(200);
      await held;
      const text = (await send(`${serve.base}/metrics`, 'GET', {})).text;
      expect(
        sample(text, 'switchboard_calls_total', {
          upstream: 'twin',
          method: 'tools/call',
          target: 'echo',
          outcome: 'refused',
        }),
      ).toBe(1);
      expect(
        sample(text, 'switchboard_calls_total', {
          upstream: 'echo',
          method: 'tools/call',
          target: 'echo',
          outcome: 'ok',
        }),
      ).toBe(1);
      expect(sample(text, 'switchboard_approval_wait_seconds_count', { outcome: 'approved' })).toBe(1);
      expect(sample(text, 'switchboard_approvals_pending')).toBe(0);
      expect(sample(text, 'switchboard_approvals_total', { outcome: 'approved' })).toBe(1);
      expect(sample(text, 'switchboard_policy_decisions_total', { action: 'deny' })).toBe(1);
      // Refused before it went out: no upstream request for it.
      expect(
        sample(text, 'switchboard_upstream_requests_total', { upstream: 'twin', method: 'tools/call' }),
      ).toBeUndefined();
    } finally {
      await client.close();
      await serve.stop();
    }
  });

  it('with authentication: 401 without credentials, 403 without the role, 200 with it; a configured role', async () => {
    const yaml = (metrics: string) =>
      stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        `auth:
  tokens:
    - { principal: prometheus, sha256: ${sha(SCRAPER)}, roles: [metrics, scraper] }
    - { principal: alice, sha256: ${sha(ALICE)}, roles: [approver] }
${metrics}`,
      );
    const serve = await startServe({ configYaml: yaml('') });
    try {
      const anonymous = await send(`${serve.base}/metrics`, 'GET', {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer/);
      const alice = await send(`${serve.base}/metrics`, 'GET', bearer(ALICE));
      expect(alice.status).toBe(403);
      expect(alice.text).toContain('needs the role metrics');
      const scraper = await send(`${serve.base}/metrics`, 'GET', bearer(SCRAPER));
      expect(scraper.status).toBe(200);
      expect(sample(scraper.text, 'switchboard_metrics_scrapes_refused_total', { status: '403' })).toBe(1);
      expect(sample(scraper.text, 'switchboard_metrics_scrapes_refused_total', { status: '401' })).toBe(1);
    } finally {
      await serve.stop();
    }
    const custom = await startServe({ configYaml: yaml('observe:\n  metrics:\n    role: ops\n') });
    try {
      expect((await send(`${custom.base}/metrics`, 'GET', bearer(SCRAPER))).status).toBe(403);
    } finally {
      await custom.stop();
    }
  });

  it('observe.metrics.listen serves it on a listener of its own only; enabled: false not at all', async () => {
    const serve = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        'observe:\n  metrics:\n    listen: 127.0.0.1:0\n',
      ),
    });
    try {
      await waitUntil(() => serve.stderr().includes('Prometheus metrics on'), 5000, 'the metrics URL');
      const at = /Prometheus metrics on (http:\/\/[^\s]+)\/metrics/.exec(serve.stderr())?.[1];
      expect(at).toBeDefined();
      expect(at).not.toBe(serve.base);
      expect((await send(`${at}/metrics`, 'GET', {})).status).toBe(200);
      expect((await send(`${at}/mcp`, 'GET', {})).status).toBe(404);
      expect((await send(`${at}/metrics`, 'GET', { host: 'evil.example.com' })).status).toBe(403);
      expect((await send(`${serve.base}/metrics`, 'GET', {})).status).toBe(404);
    } finally {
      await serve.stop();
    }
    const off = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        'observe:\n  metrics:\n    enabled: false\n',
      ),
    });
    try {
      expect((await send(`${off.base}/metrics`, 'GET', {})).status).toBe(404);
      expect(off.stderr()).not.toContain('Prometheus metrics on');
    } finally {
      await off.stop();
    }
  });
});
