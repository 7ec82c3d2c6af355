import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AuditLedger } from '../../audit/ledger/audit-ledger.js';
import type { LedgerUnavailable } from '../../audit/ledger/ledger-unavailable.js';
import { failingWritesIo, openLedger, tempDir } from '../../audit/ledger/test-support/ledger-fixture.js';
import { runInRequestScope } from '../../audit/request-scope.js';
import type { PolicyConfig } from '../../config/types.js';
import type {
  Delivery,
  DownstreamPort,
  InboundMeta,
  UpstreamClose,
  UpstreamTransport,
} from '../../core/ports.js';
import { Router } from '../../core/router.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { ApprovalRegistry } from '../../policy/approvals.js';
import { PolicyEngine } from '../../policy/policy-engine.js';
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import type { AuditEvent, AuditSink } from './audit-sink.js';
import { GovernanceInterceptor } from './governance-interceptor.js';
import { ToolCatalog } from './tool-catalog.js';

class Upstream implements UpstreamTransport {
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  readonly sent: JsonRpcMessage[] = [];
  /** Answers tools/call with { ok: <tool name> } at once; tools/list with the catalog below. */
  auto = true;
  async start(): Promise<void> {}
  async close(): Promise<void> {}
  send(_json: string, message: JsonRpcMessage): undefined {
    this.sent.push(message);
    if (!this.auto || !('method' in message) || !('id' in message)) return;
    const params = message.params as { name?: string };
    const result =
      message.method === 'tools/list'
        ? {
            tools: [
              { name: 'echo', annotations: { readOnlyHint: true } },
              { name: 'wipe', annotations: { destructiveHint: true } },
              { name: 'note' },
              { name: 'secret-tool' },
            ],
          }
        : { ok: params.name };
    queueMicrotask(() =>
      this.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }), {
        transport: { kind: 'memory' },
      }),
    );
  }
  calls(): string[] {
    return this.sent
      .filter((m): m is JsonRpcRequest => 'method' in m && m.method === 'tools/call')
      .map((m) => (m.params as { name: string }).name);
  }
}

class Client implements DownstreamPort {
  readonly got: JsonRpcMessage[] = [];
  send(_json: string, message: JsonRpcMessage, _delivery: Delivery): void {
    this.got.push(message);
  }
  answer(id: number): JsonRpcResponse | undefined {
    return this.got.find((m): m is JsonRpcResponse => !('method' in m) && m.id === id);
  }
}

class Ledger implements AuditSink {
  healthy = true;
  unavailable: LedgerUnavailable | undefined;
  failWrites = false;
  readonly records: { event: AuditEvent; durable: boolean }[] = [];
  async append(event: AuditEvent, options?: { durable?: boolean }): Promise<unknown> {
    if (this.failWrites) throw new Error('disk full');
    this.records.push({ event, durable: options?.durable === true });
    return { seq: this.records.length };
  }
  appendUnawaited(event: AuditEvent, failed: (error: unknown) => void): void {
    this.append(event).catch(failed);
  }
}

const flush = () => new Promise((r) => setTimeout(r, 5));

function setup<L extends AuditSink = Ledger>(
  policy: Partial<PolicyConfig> = {},
  options: { ledger?: L; approvalTimeoutMs?: number } = {},
) {
  const config: PolicyConfig = {
    default: 'allow',
    rules: [],
    approvals: {
      timeoutMs: options.approvalTimeoutMs ?? 60_000,
      approverRoles: ['approver'],
      allowSelfApproval: false,
    },
    ...policy,
  };
  const upstream = new Upstream();
  const router = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'L' }),
      notificationLinks: () => ['L'],
      sessionsFor: () => ['s'],
      notificationTargets: () => ['s'],
    },
    logger: new MemoryLogger(),
    metrics: new Metrics(),
  });
  router.addLink({ id: 'L', name: 'srv', transport: upstream, transportContext: { kind: 'memory' } });
  const client = new Client();
  router.openSession({
    key: 's',
    port: client,
    transport: 'http',
    transportContext: { kind: 'memory' },
    principal: 'alice',
    roles: ['dev'],
    mcpSessionId: 'mcp-1',
  });
  // The fake unless the test brings a ledger (then `L` is its type).
  const ledger = (options.ledger ?? new Ledger()) as L;
  const approvals = new ApprovalRegistry({ timeoutMs: config.approvals.timeoutMs });
  const catalog = new ToolCatalog(async () => [
    { name: 'echo', annotations: { readOnlyHint: true } },
    { name: 'wipe', annotations: { destructiveHint: true } },
    { name: 'note' },
  ]);
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const governance = new GovernanceInterceptor({
    policy: new PolicyEngine(config),
    approvals,
    catalog,
    ledger,
    redact: (v) => v,
    logger,
    metrics,
  });
  router.addInterceptor(governance);
  const call = (id: number, name: string, args: Record<string, unknown> = {}) =>
    runInRequestScope({ requestId: id, clientId: 'alice' }, () =>
      router.handleClientMessage(
        's',
        { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
        { kind: 'memory' },
      ),
    );
  return { router, upstream, client, ledger, approvals, call, logger, metrics };
}

describe('GovernanceInterceptor', () => {
  it('records an allowed call once, with ids from the request scope, the output hash input and the tier from annotations', async () => {
    const h = setup();
    h.call(1, 'note', { text: 'hi' });
    await flush();
    expect(h.client.answer(1)).toMatchObject({ result: { ok: 'note' } });
    expect(h.ledger.records).toHaveLength(1);
    const { event, durable } = h.ledger.records[0]!;
    expect(event).toMatchObject({
      session_id: 'mcp-1',
      client_id: 'alice',
      request_id: '1',
      upstream: 'srv',
      method: 'tools/call',
      target: 'note',
      tier: 'T1',
      decision: 'allowed',
      args: { text: 'hi' },
      // Recorded once the answer is out, with the text the client got (not the result object).
      output: JSON.stringify({ ok: 'note' }),
    });
    expect(event.result).toBeUndefined();
    expect(event.trace_id).toMatch(/^[0-9A-Z]{26}$/);
    expect(durable).toBe(false);
  });

  it('makes T2+ records durable before the answer, and withholds the result when that write fails', async () => {
    const h = setup();
    h.call(1, 'wipe');
    await flush();
    expect(h.ledger.records[0]).toMatchObject({ event: { tier: 'T2', decision: 'allowed' }, durable: true });
    expect(h.client.answer(1)).toMatchObject({ result: { ok: 'wipe' } });
    h.ledger.failWrites = true;
    h.call(2, 'wipe');
    await flush();
    // The call ran (the upstream has it): the answer says so, so the client does not retry blindly.
    expect(h.upstream.calls()).toEqual(['wipe', 'wipe']);
    expect(h.client.answer(2)).toMatchObject({
      error: {
        code: -32005,
        message: expect.stringMatching(
          /^the call ran: upstream srv answered it, .*check before retrying it$/,
        ),
        data: { code: 'SB_AUDIT_UNAVAILABLE', forwarded: true },
      },
    });
  });

  it('denies by rule before the upstream hears of the call, recording the denial durably', async () => {
    const h = setup({ rules: [{ id: 'no-secrets', target: 'secret-*', action: 'deny' }] });
    h.call(1, 'secret-tool');
    await flush();
    expect(h.upstream.calls()).toEqual([]);
    expect(h.client.answer(1)).toMatchObject({
      error: { code: -32003, data: { code: 'SB_POLICY_DENIED', rule: 'no-secrets' } },
    });
    expect(h.ledger.records).toEqual([
      {
        event: expect.objectContaining({ decision: 'denied', rule: 'no-secrets', target: 'secret-tool' }),
        durable: true,
      },
    ]);
  });

  it('holds an "ask" call until approved, then forwards it and records who approved', async () => {
    const h = setup({ rules: [{ id: 'careful', target: 'note', action: 'ask' }] });
    h.call(1, 'note');
    await flush();
    expect(h.upstream.calls()).toEqual([]);
    const [pending] = h.approvals.pending();
    expect(pending).toMatchObject({ principal: 'alice', upstream: 'srv', target: 'note', rule: 'careful' });
    h.approvals.decide(pending!.id, { approve: true, by: 'carol' });
    await flush();
    expect(h.upstream.calls()).toEqual(['note']);
    expect(h.client.answer(1)).toMatchObject({ result: { ok: 'note' } });
    expect(h.ledger.records).toEqual([
      { event: expect.objectContaining({ decision: 'approved', decided_by: 'carol' }), durable: false },
    ]);
  });

  it('answers a rejected or timed-out "ask" with -32004 and records it', async () => {
    const h = setup(
      { rules: [{ id: 'ask-note', target: 'note', action: 'ask' }] },
      { approvalTimeoutMs: 30 },
    );
    h.call(1, 'note');
    await flush();
    h.approvals.decide(h.approvals.pending()[0]!.id, { approve: false, by: 'carol', reason: 'no' });
    h.call(2, 'note');
    await new Promise((r) => setTimeout(r, 80));
    expect(h.upstream.calls()).toEqual([]);
    expect(h.client.answer(1)).toMatchObject({
      error: { code: -32004, message: expect.stringContaining('rejected by carol: no') },
    });
    expect(h.client.answer(2)).toMatchObject({ error: { code: -32004, data: { outcome: 'timeout' } } });
    expect(h.ledger.records.map((r) => [r.event.decision, r.event.decided_by, r.durable])).toEqual([
      ['rejected', 'carol', true],
      ['rejected', undefined, true],
    ]);
  });

  it('records a call cancelled while held exactly once, and never forwards it', async () => {
    const h = setup({ rules: [{ id: 'ask-note', target: 'note', action: 'ask' }] });
    h.call(1, 'note');
    await flush();
    h.router.handleClientMessage(
      's',
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { kind: 'memory' },
    );
    await flush();
    expect(h.approvals.pending()).toEqual([]);
    expect(h.upstream.calls()).toEqual([]);
    expect(h.client.answer(1)).toBeUndefined();
    expect(h.ledger.records.map((r) => [r.event.decision, r.event.error])).toEqual([
      ['error', 'cancelled by the client'],
    ]);
  });

  it('records a forwarded T1 call the client cancelled exactly once, after the upstream answers or not', async () => {
    const h = setup();
    h.upstream.auto = false;
    h.call(1, 'note');
    await flush();
    expect(h.upstream.calls()).toEqual(['note']);
    h.router.handleClientMessage(
      's',
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { kind: 'memory' },
    );
    await flush();
    const forwarded = h.upstream.sent.find(
      (m) => 'method' in m && m.method === 'tools/call',
    ) as JsonRpcRequest;
    h.upstream.onmessage?.(JSON.stringify({ jsonrpc: '2.0', id: forwarded.id, result: { ok: 'late' } }), {
      transport: { kind: 'memory' },
    });
    await flush();
    expect(h.client.answer(1)).toBeUndefined();
    expect(h.ledger.records.map((r) => r.event)).toMatchObject([
      { decision: 'error', error: 'cancelled by the client', tier: 'T1' },
    ]);
    expect(h.ledger.records[0]?.durable).toBe(false);
    // The call ended at the cancellation: the late answer is dropped, and nothing of it is hashed.
    expect(h.ledger.records[0]?.event.output).toBeUndefined();
    expect(h.ledger.records[0]?.event.result).toBeUndefined();
  });

  it('fails closed: while the ledger cannot be written, T1+ calls are refused and T0 calls still run', async () => {
    const ledger = new Ledger();
    ledger.healthy = false;
    ledger.unavailable = { reason: 'backlog', detail: '12 records wait' };
    const h = setup({}, { ledger });
    h.call(1, 'note');
    h.call(2, 'echo');
    await flush();
    expect(h.client.answer(1)).toMatchObject({
      error: {
        code: -32005,
        message: expect.stringMatching(
          /^not run: .*\(its writes are not completing\).* tier T1 are refused before/,
        ),
        data: { forwarded: false, reason: 'backlog' },
      },
    });
    expect(h.client.answer(2)).toMatchObject({ result: { ok: 'echo' } });
    expect(h.upstream.calls()).toEqual(['echo']);
    expect(h.metrics.get('audit_fail_closed_total', { reason: 'backlog' })).toBe(1);
  });

  it('counts every T0/T1 record that could not be written and logs them at most every 10 s', async () => {
    const ledger = new Ledger();
    ledger.failWrites = true;
    const h = setup({}, { ledger });
    for (let id = 1; id <= 3; id++) h.call(id, 'note');
    await flush();
    // The calls were answered (their records are written after the answer, and T1 is not durable).
    for (let id = 1; id <= 3; id++) expect(h.client.answer(id)).toMatchObject({ result: { ok: 'note' } });
    expect(h.metrics.get('audit_records_lost_total')).toBe(3);
    const lost = h.logger.entries.filter((e) => e.message === 'could not write an audit record');
    expect(lost).toHaveLength(1);
    expect(lost[0]?.fields).toMatchObject({ err: 'Error: disk full' });
  });

  it('asks the upstream for its tools once when a tool is called before any listing (so tiers are right)', async () => {
    const h = setup();
    h.call(1, 'wipe');
    h.call(2, 'wipe');
    await flush();
    expect(h.ledger.records.map((r) => r.event.tier)).toEqual(['T2', 'T2']);
  });

  it('filters tools/list to what the principal may call', async () => {
    const h = setup({
      rules: [
        { id: 'r0', target: 'secret-*', action: 'deny' },
        { id: 'r1', target: 'wipe', action: 'ask' },
      ],
    });
    h.router.handleClientMessage('s', { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { kind: 'memory' });
    await flush();
    const names = (h.client.answer(9) as { result: { tools: { name: string }[] } }).result.tools.map(
      (t) => t.name,
    );
    expect(names).toEqual(['echo', 'wipe', 'note']);
  });

  it('records a refused call even when no policy decision was made (an upstream error)', async () => {
    const h = setup();
    h.router.linkClosed('L', { reason: 'gone' });
    h.call(1, 'note');
    await flush();
    expect(h.client.answer(1)).toMatchObject({ error: { code: -32000 } });
    expect(h.ledger.records.map((r) => r.event.decision)).toEqual(['error']);
  });
});

describe('GovernanceInterceptor over the real ledger (issue 18: a T2 call must not run unrecorded)', () => {
  const MiB = 1024 * 1024;
  const open: AuditLedger[] = [];
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    for (const ledger of open.splice(0)) await ledger.close();
    for (const cleanup of cleanups.splice(0)) cleanup();
  });
  async function realLedger(options: Parameters<typeof openLedger>[1]): Promise<AuditLedger> {
    const made = tempDir();
    cleanups.push(made.cleanup);
    const ledger = await openLedger(made.dir, options);
    open.push(ledger);
    return ledger;
  }
  const answered = (h: { client: Client }, id: number) =>
    vi.waitFor(() => {
      const answer = h.client.answer(id);
      expect(answer).toBeDefined();
      return answer as JsonRpcResponse;
    });

  it('refuses T1+ calls before forwarding while free space is below the threshold, logs each, and admits them once there is room', async () => {
    const disk = { free: 100 * MiB };
    const ledger = await realLedger({
      freeSpace: async () => disk.free,
      minFreeBytes: 64 * MiB,
      spaceCheckIntervalMs: 5,
    });
    const h = setup({}, { ledger });
    h.call(1, 'wipe');
    expect(await answered(h, 1)).toMatchObject({ result: { ok: 'wipe' } });

    // The disk fills up (another process, a log): the ledger knows before any write fails.
    disk.free = 10 * MiB;
    await vi.waitFor(() => expect(ledger.healthy).toBe(false));
    h.call(2, 'wipe');
    h.call(3, 'note');
    h.call(4, 'echo');
    expect(await answered(h, 2)).toMatchObject({
      error: {
        code: -32005,
        message: expect.stringContaining(
          'not run: the audit ledger cannot be written (its file system is low on free space)',
        ),
        data: { code: 'SB_AUDIT_UNAVAILABLE', forwarded: false, reason: 'low-space' },
      },
    });
    expect(await answered(h, 3)).toMatchObject({ error: { code: -32005, data: { forwarded: false } } });
    // T0 runs, as before; its record is still written (the margin is for records).
    expect(await answered(h, 4)).toMatchObject({ result: { ok: 'echo' } });
    expect(h.upstream.calls()).toEqual(['wipe', 'echo']);
    // What stands in for the refused calls' records: one log line each, with what a record holds.
    const refusals = h.logger.entries.filter((e) => /refused a T1\+ call before forwarding/.test(e.message));
    expect(refusals.map((e) => e.fields)).toMatchObject([
      {
        reason: 'low-space',
        session_id: 'mcp-1',
        principal: 'alice',
        request_id: '2',
        upstream: 'srv',
        target: 'wipe',
        tier: 'T2',
      },
      { reason: 'low-space', request_id: '3', target: 'note', tier: 'T1' },
    ]);
    expect(h.metrics.get('audit_fail_closed_total', { reason: 'low-space' })).toBe(2);

    // Space is freed: calls are admitted again.
    disk.free = 100 * MiB;
    await vi.waitFor(() => expect(ledger.healthy).toBe(true));
    h.call(5, 'wipe');
    expect(await answered(h, 5)).toMatchObject({ result: { ok: 'wipe' } });
    expect(h.upstream.calls()).toEqual(['wipe', 'echo', 'wipe']);
    await ledger.checkpoint();
    expect(ledger.head.seq).toBe(3);
  });

  it('a write that fails after admission: the call ran and the answer says so; the next T2 call does not run; then it recovers', async () => {
    const { io, state } = failingWritesIo();
    const ledger = await realLedger({ io, minFreeBytes: 0, probeIntervalMs: 5 });
    const h = setup({}, { ledger });
    // A disk that fails without warning (EIO, or filled between two looks): the window that remains.
    state.failing = true;
    h.call(1, 'wipe');
    expect(await answered(h, 1)).toMatchObject({
      error: { code: -32005, message: expect.stringContaining('the call ran'), data: { forwarded: true } },
    });
    expect(h.upstream.calls()).toEqual(['wipe']);
    expect(h.metrics.get('audit_results_withheld_total')).toBe(1);
    // From then on the ledger is known unable: a T2 call is refused before it reaches the upstream.
    expect(ledger.unavailable?.reason).toBe('write-failed');
    h.call(2, 'wipe');
    expect(await answered(h, 2)).toMatchObject({
      error: {
        code: -32005,
        message: expect.stringContaining('(its last write failed)'),
        data: { forwarded: false },
      },
    });
    expect(h.upstream.calls()).toEqual(['wipe']);
    // The disk works again: the ledger's probe notices, and the call is admitted.
    state.failing = false;
    await vi.waitFor(() => expect(ledger.healthy).toBe(true));
    h.call(3, 'wipe');
    expect(await answered(h, 3)).toMatchObject({ result: { ok: 'wipe' } });
    expect(h.upstream.calls()).toEqual(['wipe', 'wipe']);
  });
});
