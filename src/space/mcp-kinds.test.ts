/**
 * The MCP kinds in the space: participants' proposals and their end (fulfil, reject, withdraw, with
 * several proposals at once), and calls held for approval on a real `ApprovalRegistry` (the one the
 * HTTP approvals API shares): proposed from the MCP client, decided by an approver in the space, or
 * elsewhere. The held call's end is delivered the way the router's call watcher delivers it.
 */
import { describe, expect, it } from 'vitest';
import type { ApprovalOutcome, ApprovalRegistry } from '../policy/approvals.js';
import { errorsOf, makeSpace, traffic, type Wire } from './test-support/space-kit.js';

const CALL = { method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } };

describe('participant proposals', () => {
  it('delivers a proposal addressed to a server to everyone (someone else must fulfil it)', () => {
    const { join, send } = makeSpace();
    const agent = join('agent');
    const human = join('human');
    const p = send(agent, { kind: 'mcp/proposal', to: ['server-everything'], payload: CALL });
    expect(human.ofKind('mcp/proposal').map((e) => [e.id, e.to])).toEqual([[p.id, ['server-everything']]]);
    send(agent, { kind: 'mcp/proposal', id: p.id, payload: CALL });
    expect(errorsOf(agent).map((e) => e.code)).toEqual(['duplicate_id']);
  });

  it('R15: one reject naming several proposals rejects them all; later acts on them are refused', () => {
    const { join, send } = makeSpace({
      participants: [{ id: 'human', capabilities: [{ kind: 'mcp/*' }] }],
    });
    const agent = join('agent');
    const human = join('human');
    const p1 = send(agent, { kind: 'mcp/proposal', payload: CALL });
    const p2 = send(agent, { kind: 'mcp/proposal', payload: CALL });
    send(human, { kind: 'mcp/reject', correlation_id: [p1.id, p2.id], payload: { reason: 'unsafe' } });
    const reject = agent.ofKind('mcp/reject');
    expect(reject).toHaveLength(1);
    expect(new Set(reject[0]!.correlation_id as string[])).toEqual(new Set([p1.id, p2.id]));
    send(human, { kind: 'mcp/reject', correlation_id: [p2.id], payload: {} });
    send(agent, { kind: 'mcp/withdraw', correlation_id: [p1.id], payload: {} });
    send(human, { kind: 'mcp/reject', correlation_id: ['never-proposed'], payload: {} });
    expect(errorsOf(human).map((e) => e.code)).toEqual(['proposal_closed', 'unknown_proposal']);
    expect(errorsOf(agent).map((e) => e.code)).toEqual(['proposal_closed']);
  });

  it('R18: only the proposer withdraws, and a withdraw naming several withdraws all', () => {
    const { join, send } = makeSpace();
    const agent = join('agent');
    const other = join('other');
    const p1 = send(agent, { kind: 'mcp/proposal', payload: CALL });
    const p2 = send(agent, { kind: 'mcp/proposal', payload: CALL });
    send(other, { kind: 'mcp/withdraw', correlation_id: [p1.id], payload: { reason: 'no_longer_needed' } });
    expect(errorsOf(other)).toMatchObject([{ code: 'not_proposer', payload: { proposals: [p1.id] } }]);
    expect(other.ofKind('mcp/withdraw')).toEqual([]);
    send(agent, {
      kind: 'mcp/withdraw',
      correlation_id: [p1.id, p2.id],
      payload: { reason: 'no_longer_needed' },
    });
    expect(other.ofKind('mcp/withdraw')).toHaveLength(1);
    send(agent, { kind: 'mcp/withdraw', correlation_id: [p2.id], payload: {} });
    expect(errorsOf(agent).map((e) => e.code)).toEqual(['proposal_closed']);
  });

  it('refuses a fulfilment that is not sent to a server participant', () => {
    const { join, send } = makeSpace({ defaults: [{ kind: 'mcp/*' }] });
    const agent = join('agent');
    const human = join('human');
    const p = send(agent, { kind: 'mcp/proposal', payload: CALL });
    send(human, { kind: 'mcp/request', to: ['agent'], correlation_id: [p.id], payload: CALL });
    send(human, { kind: 'mcp/request', to: ['server-everything', 'agent'], payload: CALL });
    expect(errorsOf(human).map((e) => e.code)).toEqual(['invalid_target', 'invalid_target']);
  });

  it("refuses a call whose _meta writes in the gateway's own namespace", () => {
    const { join, send } = makeSpace({ defaults: [{ kind: 'mcp/*' }] });
    const human = join('human');
    const forged = {
      ...CALL,
      params: { ...CALL.params, _meta: { 'switchboard.dev/forwardHeaders': { 'Mcp-Param-X': 'y' } } },
    };
    send(human, { kind: 'mcp/request', to: ['server-everything'], payload: forged });
    const [error] = errorsOf(human);
    expect(error?.code).toBe('invalid_payload');
    expect(JSON.stringify(error?.payload)).toContain('switchboard.dev/forwardHeaders');
  });

  it('routes an mcp/request to participants like any envelope (a participant may serve tools)', () => {
    const { join, send } = makeSpace({ defaults: [{ kind: 'mcp/*' }] });
    const client = join('client');
    const toolbox = join('toolbox');
    const r = send(client, {
      kind: 'mcp/request',
      to: ['toolbox'],
      payload: { jsonrpc: '2.0', id: 1, ...CALL },
    });
    send(toolbox, {
      kind: 'mcp/response',
      to: ['client'],
      correlation_id: [r.id],
      payload: { jsonrpc: '2.0', id: 1, result: {} },
    });
    expect(toolbox.ofKind('mcp/request').map((e) => e.id)).toEqual([r.id]);
    expect(client.ofKind('mcp/response').map((e) => e.correlation_id)).toEqual([[r.id]]);
  });
});

/** A held call as the governance interceptor makes one: the MCP client session S, request T. */
function hold(registry: ApprovalRegistry, overrides: Record<string, unknown> = {}) {
  const held = registry.request({
    principal: 'carol',
    session: 'SessionKeyAAAAAAAAAAAAA',
    upstream: 'everything',
    method: 'tools/call',
    target: 'echo',
    tier: 'T1',
    args: { message: 'hi' },
    traceId: '01JTRACE000000000000000001',
    ...overrides,
  });
  let outcome: ApprovalOutcome | undefined;
  void held.outcome.then((o) => {
    outcome = o;
  });
  return { id: held.id, outcome: () => outcome };
}

function approvalSpace() {
  const kit = makeSpace({
    participants: [
      { id: 'approver', capabilities: [{ kind: 'mcp/*' }] },
      { id: 'watcher', capabilities: [{ kind: 'mcp/*' }] },
    ],
  });
  const { registry, bridge } = kit.withApprovals();
  const approver = kit.join('approver', { roles: ['approver'] });
  const watcher = kit.join('watcher');
  return { ...kit, registry, bridge, approver, watcher };
}

describe('calls held for approval', () => {
  it("become an mcp/proposal from the MCP client, in the call's context, correlated to its request", () => {
    const { registry, watcher, traced } = approvalSpace();
    const held = hold(registry);
    const [proposal] = watcher.ofKind('mcp/proposal');
    expect(proposal).toMatchObject({
      id: held.id,
      from: 'client-SessionKeyAAAAAAAAAAAAA',
      to: ['server-everything'],
      correlation_id: ['01JTRACE000000000000000001'],
      context: 'SessionKeyAAAAAAAAAAAAA/01JTRACE000000000000000001',
      payload: { method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } },
    });
    expect((proposal!.payload as Wire).approval).toMatchObject({
      principal: 'carol',
      tier: 'T1',
      upstream: 'everything',
    });
    expect(traced.find((r) => r.envelope.id === held.id)?.session).toBe('SessionKeyAAAAAAAAAAAAA');
  });

  it("are approved by an approver's fulfilment, who then gets the held call's result as its response", async () => {
    const { registry, bridge, approver, watcher, send, traced } = approvalSpace();
    const held = hold(registry);
    const fulfil = send(approver, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [held.id],
      payload: { jsonrpc: '2.0', id: 'f-1', method: 'tools/call', params: { name: 'echo', arguments: {} } },
    });
    await Promise.resolve();
    expect(held.outcome()).toEqual({ approved: true, decidedBy: 'approver' });
    expect(watcher.ofKind('system/approval').map((e) => e.payload)).toEqual([
      { approval_id: held.id, outcome: 'approved', via: 'space', decided_by: 'approver' },
    ]);
    // The router's call watcher reports the end of the held call.
    bridge.callCompleted('01JTRACE000000000000000001', { jsonrpc: '2.0', id: 7, result: { content: [] } });
    const [response] = approver.ofKind('mcp/response');
    expect(response).toMatchObject({
      from: 'server-everything',
      to: ['approver'],
      correlation_id: [fulfil.id, '01JTRACE000000000000000001'],
      payload: { jsonrpc: '2.0', id: 'f-1', result: { content: [] } },
    });
    // Proposal, fulfilment and response are all recorded under the MCP client's session.
    const ids = [held.id, fulfil.id, response!.id];
    expect(ids.map((id) => traced.find((r) => r.envelope.id === id)?.session)).toEqual(
      Array(3).fill('SessionKeyAAAAAAAAAAAAA'),
    );
    send(approver, { kind: 'mcp/reject', correlation_id: [held.id], payload: {} });
    expect(errorsOf(approver).map((e) => e.code)).toEqual(['proposal_closed']);
  });

  it("are rejected by an approver's mcp/reject, with its reason; one reject decides several", async () => {
    const { registry, approver, send } = approvalSpace();
    const a = hold(registry);
    const b = hold(registry, { traceId: '01JTRACE000000000000000002' });
    send(approver, { kind: 'mcp/reject', correlation_id: [a.id, b.id], payload: { reason: 'unsafe' } });
    await Promise.resolve();
    for (const held of [a, b])
      expect(held.outcome()).toEqual({
        approved: false,
        why: 'rejected',
        decidedBy: 'approver',
        reason: 'unsafe',
      });
  });

  it('cannot be decided by a participant without an approver role, nor fulfilled with another call', async () => {
    const { registry, watcher, approver, send } = approvalSpace();
    const held = hold(registry);
    send(watcher, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [held.id],
      payload: CALL,
    });
    send(watcher, { kind: 'mcp/reject', correlation_id: [held.id], payload: {} });
    expect(errorsOf(watcher).map((e) => e.code)).toEqual(['not_approver', 'not_approver']);
    const other = { method: 'tools/call', params: { name: 'rm_rf', arguments: {} } };
    send(approver, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [held.id],
      payload: other,
    });
    send(approver, { kind: 'mcp/request', to: ['server-other'], correlation_id: [held.id], payload: CALL });
    const p = send(watcher, { kind: 'mcp/proposal', payload: CALL });
    send(approver, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [held.id, p.id],
      payload: CALL,
    });
    expect(errorsOf(approver).map((e) => e.code)).toEqual([
      'proposal_mismatch',
      'unknown_participant',
      'invalid_correlation',
    ]);
    await Promise.resolve();
    expect(held.outcome()).toBeUndefined();
  });

  it('four eyes: an approver may not approve its own held call (self_approval), but may reject it', async () => {
    const { registry, approver, watcher, send } = approvalSpace();
    const own = hold(registry, { principal: 'approver' });
    const fulfil = send(approver, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [own.id],
      payload: CALL,
    });
    expect(errorsOf(approver)).toMatchObject([
      { code: 'self_approval', correlation: [fulfil.id], payload: { proposals: [own.id] } },
    ]);
    expect(String(errorsOf(approver)[0]!.payload.message)).toMatch(
      /approver made this call.*allowSelfApproval/,
    );
    await Promise.resolve();
    expect(own.outcome()).toBeUndefined();
    expect(watcher.ofKind('mcp/request')).toEqual([]);
    send(approver, { kind: 'mcp/reject', correlation_id: [own.id], payload: { reason: 'never mind' } });
    await Promise.resolve();
    expect(own.outcome()).toMatchObject({ approved: false, why: 'rejected', decidedBy: 'approver' });
  });

  it('with self-approval allowed, an approver approves its own held call and is named the decider', async () => {
    const kit = makeSpace({ participants: [{ id: 'approver', capabilities: [{ kind: 'mcp/*' }] }] });
    const { registry } = kit.withApprovals(60_000, true);
    const approver = kit.join('approver', { roles: ['approver'] });
    const own = hold(registry, { principal: 'approver' });
    kit.send(approver, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [own.id],
      payload: CALL,
    });
    await Promise.resolve();
    expect(errorsOf(approver)).toEqual([]);
    expect(own.outcome()).toEqual({ approved: true, decidedBy: 'approver' });
  });

  it('are closed in the space when decided over HTTP, by timeout, or withdrawn by the client', async () => {
    const { registry, watcher, approver, send } = approvalSpace();
    const byHttp = hold(registry);
    registry.decide(byHttp.id, { approve: false, by: 'alice', reason: 'no' });
    const aborted = new AbortController();
    const withdrawn = registry.request(
      {
        principal: 'carol',
        session: 'S2',
        upstream: 'everything',
        method: 'resources/read',
        target: 'file:///x',
        tier: 'T0',
      },
      aborted.signal,
    );
    aborted.abort();
    await withdrawn.outcome;
    expect(watcher.ofKind('system/approval').map((e) => e.payload)).toEqual([
      { approval_id: byHttp.id, outcome: 'rejected', via: 'http', decided_by: 'alice', reason: 'no' },
      {
        approval_id: withdrawn.id,
        outcome: 'withdrawn',
        via: 'gateway',
        reason: 'the client cancelled the call',
      },
    ]);
    expect((watcher.ofKind('mcp/proposal')[1]!.payload as Wire).params).toEqual({ uri: 'file:///x' });
    send(approver, {
      kind: 'mcp/request',
      to: ['server-everything'],
      correlation_id: [byHttp.id],
      payload: CALL,
    });
    expect(errorsOf(approver).map((e) => e.code)).toEqual(['proposal_closed']);
  });

  it('time out into a system/approval', async () => {
    const kit = makeSpace();
    const { registry } = kit.withApprovals(20);
    const watcher = kit.join('watcher');
    const held = hold(registry);
    await new Promise((r) => setTimeout(r, 60));
    expect(traffic(watcher).map((e) => [e.kind, (e.payload as Wire).outcome])).toEqual([
      ['mcp/proposal', undefined],
      ['system/approval', 'timeout'],
    ]);
    expect(held.outcome()).toMatchObject({ approved: false, why: 'timeout' });
  });

  it('a client may be addressed while its proposal is open', () => {
    const { registry, approver, send } = approvalSpace();
    const held = hold(registry);
    send(approver, {
      kind: 'mcp/reject',
      to: ['client-SessionKeyAAAAAAAAAAAAA'],
      correlation_id: [held.id],
      payload: {},
    });
    // Its proposal closed, the client is no longer someone to address.
    send(approver, {
      kind: 'mcp/reject',
      to: ['client-SessionKeyAAAAAAAAAAAAA'],
      correlation_id: [held.id],
      payload: {},
    });
    expect(errorsOf(approver).map((e) => e.code)).toEqual(['unknown_participant']);
  });
});
