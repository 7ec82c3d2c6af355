import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApprovalRegistry } from './approvals.js';

const details = {
  principal: 'alice',
  upstream: 'everything',
  method: 'tools/call',
  target: 'echo',
  tier: 'T2' as const,
};

describe('ApprovalRegistry', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('resolves with the approver when approved, and lists the request while pending', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 60_000 });
    const { id, outcome } = registry.request(details);
    expect(registry.pending().map((r) => r.id)).toEqual([id]);
    expect(registry.decide(id, { approve: true, by: 'carol' })).toBe('decided');
    await expect(outcome).resolves.toEqual({ approved: true, decidedBy: 'carol' });
    expect(registry.pending()).toEqual([]);
    expect(registry.decide(id, { approve: false, by: 'dave' })).toBe('already-decided');
    expect(registry.decide('nope', { approve: true, by: 'x' })).toBe('unknown');
  });

  it('rejects, with the decider and reason', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 60_000 });
    const { id, outcome } = registry.request(details);
    registry.decide(id, { approve: false, by: 'carol', reason: 'not today' });
    await expect(outcome).resolves.toEqual({
      approved: false,
      why: 'rejected',
      decidedBy: 'carol',
      reason: 'not today',
    });
  });

  it('four eyes by default: the caller may not approve its own call (it stays held), but may reject it', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 60_000 });
    const held = registry.request(details);
    expect(registry.isSelfApproval(held.id, 'alice')).toBe(true);
    expect(registry.isSelfApproval(held.id, 'carol')).toBe(false);
    expect(registry.decide(held.id, { approve: true, by: 'alice' })).toBe('self-approval');
    expect(registry.pending().map((r) => r.id)).toEqual([held.id]);
    expect(registry.decide(held.id, { approve: true, by: 'carol' })).toBe('decided');
    await expect(held.outcome).resolves.toEqual({ approved: true, decidedBy: 'carol' });
    const other = registry.request(details);
    expect(registry.decide(other.id, { approve: false, by: 'alice', reason: 'changed my mind' })).toBe(
      'decided',
    );
    await expect(other.outcome).resolves.toMatchObject({
      approved: false,
      why: 'rejected',
      decidedBy: 'alice',
    });
  });

  it('lets the caller approve its own call when self-approval is allowed', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 60_000, allowSelfApproval: true });
    const held = registry.request(details);
    expect(registry.isSelfApproval(held.id, 'alice')).toBe(false);
    expect(registry.decide(held.id, { approve: true, by: 'alice' })).toBe('decided');
    await expect(held.outcome).resolves.toEqual({ approved: true, decidedBy: 'alice' });
  });

  it('rejects when nobody decides before the timeout', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 5000 });
    const { outcome } = registry.request(details);
    vi.advanceTimersByTime(5000);
    await expect(outcome).resolves.toMatchObject({ approved: false, why: 'timeout' });
  });

  it('withdraws the request when its call is cancelled', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 5000 });
    const controller = new AbortController();
    const { outcome } = registry.request(details, controller.signal);
    controller.abort();
    await expect(outcome).resolves.toMatchObject({ approved: false, why: 'withdrawn' });
  });

  it('refuses beyond maxPending, and tells listeners', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 5000, maxPending: 1 });
    const events: string[] = [];
    registry.subscribe({
      created: (r) => events.push(`created ${r.target}`),
      decided: (_r, o) => events.push(`decided ${o.approved}`),
    });
    const first = registry.request(details);
    const second = registry.request(details);
    await expect(second.outcome).resolves.toMatchObject({ why: 'overloaded' });
    registry.decide(first.id, { approve: true, by: 'x' });
    expect(events).toEqual(['created echo', 'decided true']);
  });

  it('close rejects everything pending', async () => {
    const registry = new ApprovalRegistry({ timeoutMs: 5000 });
    const { outcome } = registry.request(details);
    registry.close();
    await expect(outcome).resolves.toMatchObject({ approved: false, why: 'rejected' });
  });
});
