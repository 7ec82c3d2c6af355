/**
 * The registry of `/metrics` driven through a real router (in-memory upstream and client): what
 * each call adds, the bound on every label (10,000 calls of invented tool names add no series), the
 * counters of `Metrics`, the gauges read from their sources, both text formats, and `promtool check
 * metrics` (Prometheus's own linter of names and units) on what is exposed.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { DownstreamPort, UpstreamTransport } from '../../core/ports.js';
import { Router } from '../../core/router.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { MemoryLogger } from '../logger.js';
import { Metrics } from '../metrics.js';
import { negotiateFormat } from './exposition.js';
import { GatewayMetrics, type GatewaySources } from './gateway-metrics.js';
import { MAX_TARGETS_PER_UPSTREAM } from './label-bounds.js';

class Upstream implements UpstreamTransport {
  readonly sent: JsonRpcMessage[] = [];
  onmessage?: UpstreamTransport['onmessage'];
  async start(): Promise<void> {}
  send(_json: string, message: JsonRpcMessage): undefined {
    this.sent.push(message);
    return undefined;
  }
  async close(): Promise<void> {}
  reply(payload: Record<string, unknown>): void {
    const request = this.sent.at(-1) as JsonRpcRequest;
    this.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: request.id, ...payload }), {
      transport: { kind: 'memory' },
    });
  }
}

class Port implements DownstreamPort {
  send(): void {}
}

function gateway(options: { principals?: { max: number }; sources?: GatewaySources } = {}) {
  const metrics = new Metrics();
  const gm = new GatewayMetrics({
    metrics,
    version: '9.9.9',
    processMetrics: false,
    ...options,
  });
  const router = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'a' }),
      notificationLinks: () => [],
      sessionsFor: () => [],
      notificationTargets: () => [],
    },
    logger: new MemoryLogger(),
    metrics,
    observers: gm.observers,
  });
  const upstream = new Upstream();
  router.addLink({
    id: 'a',
    name: 'alpha',
    transport: upstream,
    transportContext: { kind: 'stdio', pid: 1 },
  });
  let n = 0;
  const open = (key: string, principal?: string) =>
    router.openSession({
      key,
      port: new Port(),
      transport: 'http',
      transportContext: { kind: 'memory' },
      ...(principal ? { principal } : {}),
    });
  open('S');
  const call = (
    method: string,
    params: Record<string, unknown> | undefined,
    reply: Record<string, unknown>,
    session = 'S',
  ) => {
    router.handleClientMessage(
      session,
      { jsonrpc: '2.0', id: ++n, method, ...(params ? { params } : {}) },
      { kind: 'memory' },
    );
    upstream.reply(reply);
  };
  return { gm, metrics, router, call, open };
}

async function scrape(gm: GatewayMetrics, accept?: string): Promise<string> {
  return (await gm.render(accept)).body;
}

/** The sample lines (series) of an exposition. */
function series(text: string): string[] {
  return text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

/** A series as name and labels in a canonical order: `a{x="1",y="2"}` however the labels were ordered. */
function canonical(series: string): string {
  const brace = series.indexOf('{');
  if (brace < 0) return series;
  const labels = [...series.slice(brace).matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map(
    (m) => `${m[1]}=${m[2]}`,
  );
  return `${series.slice(0, brace)}{${labels.sort().join(',')}}`;
}

/** The value of the series `wanted` (labels in any order), or undefined when it is not exposed. */
function value(text: string, wanted: string): number | undefined {
  const key = canonical(wanted);
  for (const line of series(text)) {
    const space = line.lastIndexOf(' ');
    if (canonical(line.slice(0, space)) === key) return Number(line.slice(space + 1));
  }
  return undefined;
}

describe('GatewayMetrics', () => {
  it('counts and times a call by upstream, method, listed target and outcome, and the conventions’ histograms', async () => {
    const { gm, call } = gateway();
    call('tools/list', undefined, { result: { tools: [{ name: 'echo' }, { name: 'add' }] } });
    call('tools/call', { name: 'echo' }, { result: { content: [] } });
    call('tools/call', { name: 'add' }, { result: { content: [], isError: true } });
    call('tools/call', { name: 'invented' }, { error: { code: -32602, message: 'unknown tool' } });
    const text = await scrape(gm);
    expect(
      value(text, 'switchboard_calls_total{upstream="alpha",method="tools/call",target="echo",outcome="ok"}'),
    ).toBe(1);
    expect(
      value(
        text,
        'switchboard_calls_total{upstream="alpha",method="tools/call",target="add",outcome="tool_error"}',
      ),
    ).toBe(1);
    expect(
      value(
        text,
        'switchboard_calls_total{upstream="alpha",method="tools/call",target="other",outcome="error"}',
      ),
    ).toBe(1);
    expect(
      value(text, 'switchboard_calls_total{upstream="alpha",method="tools/list",target="",outcome="ok"}'),
    ).toBe(1);
    expect(
      value(
        text,
        'switchboard_upstream_requests_total{upstream="alpha",method="tools/call",target="echo",outcome="ok"}',
      ),
    ).toBe(1);
    expect(
      value(
        text,
        'switchboard_call_duration_seconds_count{upstream="alpha",method="tools/call",target="echo",outcome="ok"}',
      ),
    ).toBe(1);
    // The semantic-convention buckets, in seconds.
    expect(text).toContain('switchboard_call_duration_seconds_bucket{le="0.01",upstream="alpha"');
    expect(text).toContain('le="300"');
    expect(
      value(
        text,
        'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="echo",gen_ai_operation_name="execute_tool",mcp_protocol_version="2025-11-25",network_transport="tcp"}',
      ),
    ).toBe(1);
    expect(
      value(
        text,
        'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="other",gen_ai_operation_name="execute_tool",error_type="-32602",rpc_response_status_code="-32602",mcp_protocol_version="2025-11-25",network_transport="tcp"}',
      ),
    ).toBe(1);
    expect(
      value(
        text,
        'mcp_client_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="add",gen_ai_operation_name="execute_tool",error_type="tool_error",network_transport="pipe",switchboard_upstream="alpha"}',
      ),
    ).toBe(1);
    expect(value(text, 'switchboard_build_info{version="9.9.9"}')).toBe(1);
  });

  it('10,000 calls of distinct unknown tool names and methods do not grow the series count', async () => {
    const { gm, call } = gateway();
    call('tools/list', undefined, { result: { tools: [{ name: 'echo' }] } });
    call('tools/call', { name: 'unknown-0' }, { error: { code: -32602, message: 'no' } });
    call('made/up-0', undefined, { error: { code: -32601, message: 'no' } });
    const before = series(await scrape(gm)).length;
    for (let i = 1; i <= 10_000; i++) {
      call('tools/call', { name: `unknown-${i}` }, { error: { code: -32602, message: 'no' } });
      call(`made/up-${i}`, undefined, { error: { code: -32601, message: 'no' } });
    }
    const after = await scrape(gm);
    expect(series(after).length).toBe(before);
    expect(
      value(
        after,
        'switchboard_calls_total{upstream="alpha",method="tools/call",target="other",outcome="error"}',
      ),
    ).toBe(10_001);
    expect(
      value(after, 'switchboard_calls_total{upstream="alpha",method="other",target="",outcome="error"}'),
    ).toBe(10_001);
    expect(after).not.toContain('unknown-');
    expect(after).not.toContain('made/up');
  });

  it('keeps at most MAX_TARGETS_PER_UPSTREAM listed names, and error codes outside JSON-RPC’s ranges as other', async () => {
    const { gm, call } = gateway();
    const tools = Array.from({ length: MAX_TARGETS_PER_UPSTREAM + 500 }, (_, i) => ({ name: `t${i}` }));
    call('tools/list', undefined, { result: { tools } });
    expect(gm.calls.targets.size).toBe(MAX_TARGETS_PER_UPSTREAM);
    call(
      'tools/call',
      { name: `t${MAX_TARGETS_PER_UPSTREAM + 1}` },
      { error: { code: 4242, message: 'odd' } },
    );
    const text = await scrape(gm);
    expect(
      value(
        text,
        'switchboard_calls_total{upstream="alpha",method="tools/call",target="other",outcome="error"}',
      ),
    ).toBe(1);
    expect(text).toContain('error_type="other"');
    expect(text).not.toContain('4242');
  });

  it('labels principals only when asked, the first max by name and the rest other', async () => {
    const plain = gateway();
    plain.call('ping', undefined, { result: {} });
    expect(await scrape(plain.gm)).not.toContain('principal=');
    const { gm, call, open } = gateway({ principals: { max: 2 } });
    for (const who of ['alice', 'bob', 'carol', 'dave']) {
      open(who, who);
      call('ping', undefined, { result: {} }, who);
    }
    const text = await scrape(gm);
    expect(text).toContain('principal="alice"');
    expect(text).toContain('principal="bob"');
    expect(
      value(
        text,
        'switchboard_calls_total{upstream="alpha",method="ping",target="",outcome="ok",principal="other"}',
      ),
    ).toBe(2);
  });

  it('exports every counter of Metrics as switchboard_<name>, a client-chosen method bounded', async () => {
    const { gm, metrics } = gateway();
    metrics.inc('orphan_responses_total', { direction: 'server->client', upstream: 'alpha' }, 3);
    metrics.inc('modern_requests_total', { method: 'tools/call' });
    metrics.inc('modern_requests_total', { method: 'x/1' });
    metrics.inc('modern_requests_total', { method: 'x/2' });
    metrics.inc('weird-name');
    const text = await scrape(gm);
    expect(
      value(text, 'switchboard_orphan_responses_total{direction="server->client",upstream="alpha"}'),
    ).toBe(3);
    expect(value(text, 'switchboard_modern_requests_total{method="other"}')).toBe(2);
    expect(value(text, 'switchboard_modern_requests_total{method="tools/call"}')).toBe(1);
    expect(value(text, 'switchboard_weird_name_total')).toBe(1);
    expect(text).toContain('# TYPE switchboard_orphan_responses_total counter');
  });

  it('reads the gauges from their sources when scraped', async () => {
    let failing: string | undefined;
    // The registry keeps no link record of its own: the gauge shows the state the composition
    // reads (serve: its link record; here the router's own state of alpha's link), scrape by scrape.
    let routerRef: Router | undefined;
    const { gm, router } = gateway({
      sources: {
        callsInFlight: () => 3,
        upstreamRequestsPending: () => 2,
        sessionProtocol: (key) => (key === 'M' ? '2026-07-28' : '2025-06-18'),
        upstreams: () => [
          { name: 'alpha', state: routerRef?.linkState('a') ?? 'idle', protocolVersion: '2025-06-18' },
          { name: 'beta', state: 'idle' },
          { name: 'gamma', state: 'restarting' },
        ],
        httpStreams: () => ({ legacy: 4, modern: 1 }),
        resumption: () => ({ events: 7, bytes: 700, streams: 2 }),
        traceQueue: () => 11,
        ledger: () => ({ queued: 5, ...(failing === undefined ? {} : { failingClosed: failing }) }),
        approvalsPending: () => 1,
        spaceParticipants: () => 6,
      },
    });
    routerRef = router;
    router.openSession({
      key: 'M',
      port: new Port(),
      transport: 'http',
      transportContext: { kind: 'memory' },
    });
    router.setSessionProtocol('M', '2026-07-28');
    let text = await scrape(gm);
    expect(value(text, 'switchboard_calls_in_flight')).toBe(3);
    expect(value(text, 'switchboard_upstream_requests_pending')).toBe(2);
    expect(value(text, 'switchboard_sessions{era="legacy",transport="http"}')).toBe(1);
    expect(value(text, 'switchboard_sessions{era="modern",transport="http"}')).toBe(1);
    expect(value(text, 'switchboard_upstream_state{upstream="alpha",state="ready"}')).toBe(1);
    expect(value(text, 'switchboard_upstream_state{upstream="alpha",state="down"}')).toBe(0);
    expect(value(text, 'switchboard_upstream_state{upstream="beta",state="idle"}')).toBe(1);
    expect(value(text, 'switchboard_upstream_state{upstream="gamma",state="restarting"}')).toBe(1);
    expect(
      value(text, 'switchboard_upstream_info{upstream="alpha",protocol_version="2025-06-18",era="legacy"}'),
    ).toBe(1);
    expect(value(text, 'switchboard_http_streams{era="legacy"}')).toBe(4);
    expect(value(text, 'switchboard_resumption_bytes')).toBe(700);
    expect(value(text, 'switchboard_trace_queue_records')).toBe(11);
    expect(value(text, 'switchboard_audit_queue_records')).toBe(5);
    expect(value(text, 'switchboard_audit_failing_closed{reason="backlog"}')).toBe(0);
    expect(value(text, 'switchboard_approvals_pending')).toBe(1);
    expect(value(text, 'switchboard_space_participants')).toBe(6);
    failing = 'backlog';
    router.linkClosed('a', { reason: 'exited' });
    router.closeSession('M', 'bye');
    text = await scrape(gm);
    expect(value(text, 'switchboard_audit_failing_closed{reason="backlog"}')).toBe(1);
    expect(value(text, 'switchboard_upstream_state{upstream="alpha",state="down"}')).toBe(1);
    expect(value(text, 'switchboard_sessions{era="modern",transport="http"}')).toBeUndefined();
    expect(
      value(
        text,
        'mcp_server_session_duration_seconds_count{mcp_protocol_version="2026-07-28",network_transport="tcp"}',
      ),
    ).toBe(1);
    expect(
      value(
        text,
        'mcp_client_session_duration_seconds_count{network_transport="pipe",switchboard_upstream="alpha"}',
      ),
    ).toBe(1);
    gm.approvalDecided('approved', 90_000);
    expect(
      value(await scrape(gm), 'switchboard_approval_wait_seconds_bucket{le="120",outcome="approved"}'),
    ).toBe(1);
  });

  it('speaks OpenMetrics when the scraper asks: counters named without _total, samples with it, # EOF', async () => {
    const { gm, call } = gateway();
    call('ping', undefined, { result: {} });
    expect(negotiateFormat(undefined)).toBe('prometheus');
    expect(negotiateFormat('text/plain;version=0.0.4')).toBe('prometheus');
    expect(negotiateFormat('application/openmetrics-text;version=1.0.0,text/plain;q=0.5')).toBe(
      'openmetrics',
    );
    expect(negotiateFormat('application/openmetrics-text;q=0,text/plain')).toBe('prometheus');
    const om = await gm.render('application/openmetrics-text; version=1.0.0');
    expect(om.contentType).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(om.body).toContain('# TYPE switchboard_calls counter');
    expect(om.body).toContain('switchboard_calls_total{upstream="alpha",method="ping"');
    expect(om.body.endsWith('# EOF\n')).toBe(true);
    const text = await gm.render(undefined);
    expect(text.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text.body).toContain('# TYPE switchboard_calls_total counter');
    // Asking for OpenMetrics does not change what the text format says next.
    expect((await gm.render(undefined)).body).toContain('# TYPE switchboard_calls_total counter');
  });

  it('passes promtool check metrics (names, units, _total), process metrics included', async () => {
    const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
    if (!promtool && process.env.CI) throw new Error('promtool is missing in CI (Debian package prometheus)');
    if (!promtool) {
      console.warn('gateway-metrics.test.ts: promtool not found (Debian package prometheus): lint skipped');
      return;
    }
    const metrics = new Metrics();
    const gm = new GatewayMetrics({ metrics, version: '1.0.0', sources: { callsInFlight: () => 0 } });
    metrics.inc('orphan_responses_total', { direction: 'client->server' });
    const body = (await gm.render(undefined)).body;
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
    // prom-client's process metrics keep their customary names (nodejs_active_handles_total is a
    // gauge); everything the gateway names itself must pass.
    const problems = `${lint.stdout}${lint.stderr}`
      .split('\n')
      .filter((line) => line.trim() !== '' && !/^(nodejs|process)_/.test(line));
    expect(problems).toEqual([]);
    expect(body).toContain('process_cpu_user_seconds_total');
    expect(body).toContain('nodejs_gc_duration_seconds');
  });
});
