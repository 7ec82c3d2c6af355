import { describe, expect, it } from 'vitest';
import type { PolicyConfig } from '../config/types.js';
import { globMatch } from './glob.js';
import { type CallSubject, PolicyEngine, tierAtLeast, tierFromHints } from './policy-engine.js';

const base: CallSubject = {
  upstream: 'everything',
  method: 'tools/call',
  target: 'echo',
  principal: 'alice',
  roles: ['dev'],
};

function engine(rules: PolicyConfig['rules'], def: PolicyConfig['default'] = 'allow'): PolicyEngine {
  return new PolicyEngine({
    default: def,
    rules,
    approvals: { timeoutMs: 1000, approverRoles: ['approver'], allowSelfApproval: false },
  });
}

describe('globMatch', () => {
  it.each([
    ['*', 'anything', true],
    ['trigger-*', 'trigger-long-running-operation', true],
    ['trigger-*', 'echo', false],
    ['get-?um', 'get-sum', true],
    ['file:///srv/*', 'file:///srv/a/b.md', true],
    ['a.b', 'aXb', false],
    ['[x]', '[x]', true],
    ['echo', 'echo2', false],
  ])('%s ~ %s = %s', (pattern, value, expected) => {
    expect(globMatch(pattern, value)).toBe(expected);
  });
});

describe('PolicyEngine', () => {
  it('uses the default action when no rule matches', () => {
    expect(engine([], 'deny').decide(base)).toEqual({ action: 'deny', tier: 'T1' });
    expect(engine([]).decide(base)).toEqual({ action: 'allow', tier: 'T1' });
  });

  it('takes the first matching rule with an action, and names it', () => {
    const e = engine([
      { id: 'r0', target: 'get-*', action: 'deny' },
      { id: 'r1', upstream: 'everything', target: 'ec*', action: 'ask' },
      { id: 'r2', action: 'deny' },
    ]);
    expect(e.decide(base)).toEqual({ action: 'ask', tier: 'T1', rule: 'r1' });
    expect(e.decide({ ...base, target: 'get-env' })).toMatchObject({ action: 'deny', rule: 'r0' });
    expect(e.decide({ ...base, target: 'other' })).toMatchObject({ action: 'deny', rule: 'r2' });
  });

  it('matches principals and roles, with globs', () => {
    const e = engine(
      [
        { id: 'admins', roles: ['admin*'], action: 'allow' },
        { id: 'bob', principals: ['bob'], action: 'allow' },
      ],
      'deny',
    );
    expect(e.decide({ ...base, roles: ['administrator'] }).action).toBe('allow');
    expect(e.decide({ ...base, principal: 'bob', roles: [] }).action).toBe('allow');
    expect(e.decide(base).action).toBe('deny');
  });

  it('restricts rules to methods', () => {
    const e = engine([{ id: 'reads', methods: ['resources/read'], action: 'deny' }]);
    expect(e.decide({ ...base, method: 'resources/read', target: 'file:///x' }).action).toBe('deny');
    expect(e.decide(base).action).toBe('allow');
  });

  it('derives the tier from annotations unless a rule sets it; tier rules and action rules are independent', () => {
    const e = engine([
      { id: 'pin', target: 'echo', tier: 'T3' },
      { id: 'all', action: 'allow' },
    ]);
    expect(e.decide(base)).toEqual({ action: 'allow', tier: 'T3', rule: 'all' });
    expect(e.decide({ ...base, target: 'x' }, { destructiveHint: true }).tier).toBe('T2');
    expect(e.decide({ ...base, target: 'x' }, { readOnlyHint: true }).tier).toBe('T0');
  });

  it('gives reads and prompts T0, and orders tiers', () => {
    expect(tierFromHints('resources/read', { destructiveHint: true })).toBe('T0');
    expect(tierFromHints('prompts/get', undefined)).toBe('T0');
    expect(tierFromHints('tools/call', {})).toBe('T1');
    expect(tierAtLeast('T2', 'T1')).toBe(true);
    expect(tierAtLeast('T0', 'T1')).toBe(false);
  });

  it('knows approvers by role', () => {
    expect(engine([]).isApprover(['approver'])).toBe(true);
    expect(engine([]).isApprover(['dev'])).toBe(false);
  });
});
