// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write ${env:NAME} references.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GatewayConfig, PolicyConfig } from '../types.js';
import { type ConfigIssue, type ValidateOptions, validateConfig } from '../validate.js';

const BASE: ValidateOptions = { baseDir: '/etc/switchboard', env: {} };
const MINIMAL = { upstreams: { everything: { command: 'npx' } } };

function valid(
  raw: unknown,
  options: Partial<ValidateOptions> = {},
): { config: GatewayConfig; warnings: string[] } {
  const result = validateConfig(raw, { ...BASE, ...options });
  if (!result.ok)
    throw new Error(`expected a valid configuration, got:\n${JSON.stringify(result.errors, null, 2)}`);
  return result;
}

function invalid(raw: unknown, options: Partial<ValidateOptions> = {}): ConfigIssue[] {
  const result = validateConfig(raw, { ...BASE, ...options });
  if (result.ok) throw new Error('expected issues, the configuration is valid');
  return result.errors;
}

/** The one issue of `raw`, which must have exactly one. */
function issue(raw: unknown, options: Partial<ValidateOptions> = {}): ConfigIssue {
  const errors = invalid(raw, options);
  expect(errors).toHaveLength(1);
  return errors[0]!;
}

const withPolicy = (policy: unknown) => ({ ...MINIMAL, policy });
const policyOf = (policy: unknown, options: Partial<ValidateOptions> = {}): PolicyConfig =>
  valid(withPolicy(policy), options).config.policy;
const withRules = (...rules: unknown[]) => withPolicy({ rules });
const rulesOf = (...rules: unknown[]) => policyOf({ rules }).rules;
/** A rule that is valid on its own, with `over` added. */
const deny = (over: Record<string, unknown> = {}) => ({ action: 'deny', ...over });

const DEFAULTS: PolicyConfig = {
  default: 'allow',
  rules: [],
  approvals: { timeoutMs: 300_000, approverRoles: ['approver'], allowSelfApproval: false },
};
const LIST_EXPECTED = 'a list, e.g. [a, b] or one "- item" per line';
const GLOB_EXPECTED = 'a name or a glob pattern (* and ?)';
const METHODS_EXPECTED = 'tools/call, resources/read or prompts/get';
const RULE_EXPECTED =
  'a rule: match fields (upstream, target, methods, principals, roles) and an action and/or a tier';
const RULE_KEYS = 'id, upstream, target, tool, methods, principals, roles, action, tier';
const NEITHER = {
  found: 'a rule with neither action nor tier',
  expected: 'an action (allow, deny, ask), a tier (T0-T3), or both',
};

describe('policy defaults', () => {
  it.each([
    ['absent', MINIMAL],
    ['empty', withPolicy(null)],
    ['an empty map', withPolicy({})],
    ['with empty approvals', withPolicy({ approvals: null, rules: [] })],
  ])('allows everything with 5m approvals by approvers when %s', (_name, raw) => {
    expect(valid(raw).config.policy).toEqual(DEFAULTS);
  });

  it('refuses a policy that is not a map', () => {
    expect(issue(withPolicy('deny'))).toEqual({
      path: 'policy',
      found: '"deny"',
      expected: 'a map with the keys default, rules, approvals',
    });
  });

  it.each([
    ['rule', 'rules'],
    ['approval', 'approvals'],
    ['defaultAction', 'default'],
  ])('reports the unknown key %j, suggesting %j', (key, suggestion) => {
    expect(issue(withPolicy({ [key]: 'x' }))).toEqual({
      path: `policy.${key}`,
      found: 'an unknown key',
      expected: `one of the keys allowed in policy: default, rules, approvals (did you mean "${suggestion}"?)`,
    });
  });
});

describe('policy.default', () => {
  it.each(['allow', 'deny', 'ask'] as const)('accepts %j', (action) => {
    expect(policyOf({ default: action }).default).toBe(action);
  });

  it('reads it from the environment', () => {
    expect(policyOf({ default: '${env:DEFAULT}' }, { env: { DEFAULT: 'ask' } }).default).toBe('ask');
  });

  it.each([
    ['Deny', '"Deny"', ' (did you mean "deny"?)'],
    ['allowed', '"allowed"', ' (did you mean "allow"?)'],
    ['block', '"block"', ''],
    [true, 'true', ''],
  ])('refuses %j', (value, found, hint) => {
    expect(issue(withPolicy({ default: value }))).toEqual({
      path: 'policy.default',
      found,
      expected: `allow, deny or ask${hint}`,
    });
  });
});

describe('policy.rules', () => {
  it('reads every field of a rule', () => {
    const rule = {
      id: 'no-prod-writes',
      upstream: 'prod-*',
      target: 'write_?ile',
      methods: ['tools/call', 'resources/read', 'prompts/get'],
      principals: ['alice', 'svc@*'],
      roles: ['ops', 'admin*'],
      action: 'ask',
      tier: 'T3',
    };
    expect(rulesOf(rule)).toEqual([rule]);
  });

  it('numbers rules without an id rules[N], in file order', () => {
    expect(rulesOf(deny(), { tier: 'T1' }, deny({ id: 'named' }), { action: 'allow' })).toEqual([
      { id: 'rules[0]', action: 'deny' },
      { id: 'rules[1]', tier: 'T1' },
      { id: 'named', action: 'deny' },
      { id: 'rules[3]', action: 'allow' },
    ]);
  });

  it('reads tool as another name for target', () => {
    expect(rulesOf(deny({ tool: 'delete_*' }))).toEqual([
      { id: 'rules[0]', target: 'delete_*', action: 'deny' },
    ]);
  });

  it('leaves out the match fields that are absent (absent matches any)', () => {
    const [rule] = rulesOf(deny());
    expect(Object.keys(rule ?? {})).toEqual(['id', 'action']);
  });

  it('reads values from the environment', () => {
    const env = { UP: 'prod', WHO: 'alice', ACTION: 'deny', TIER: 'T2' };
    expect(
      policyOf(
        {
          rules: [
            {
              upstream: '${env:UP}-*',
              principals: ['${env:WHO}'],
              action: '${env:ACTION}',
              tier: '${env:TIER}',
            },
          ],
        },
        { env },
      ).rules,
    ).toEqual([{ id: 'rules[0]', upstream: 'prod-*', principals: ['alice'], action: 'deny', tier: 'T2' }]);
  });

  it.each(['allow', 'deny', 'ask'] as const)('accepts the action %j alone', (action) => {
    expect(rulesOf({ action })).toEqual([{ id: 'rules[0]', action }]);
  });

  it.each(['T0', 'T1', 'T2', 'T3'] as const)('accepts the tier %j alone', (tier) => {
    expect(rulesOf({ tier })).toEqual([{ id: 'rules[0]', tier }]);
  });

  it.each([
    ['Deny', '"Deny"', ' (did you mean "deny"?)'],
    ['block', '"block"', ''],
    [0, '0', ''],
  ])('refuses the action %j with one issue', (action, found, hint) => {
    expect(issue(withRules({ action }))).toEqual({
      path: 'policy.rules[0].action',
      found,
      expected: `allow, deny or ask${hint}`,
    });
  });

  it.each([
    ['t2', '"t2"', ' (did you mean "T2"?)'],
    ['high', '"high"', ''],
    [2, '2', ''],
  ])('refuses the tier %j with one issue', (tier, found, hint) => {
    expect(issue(withRules({ tier }))).toEqual({
      path: 'policy.rules[0].tier',
      found,
      expected: `T0, T1, T2 or T3${hint}`,
    });
  });

  it('refuses a rule with neither action nor tier', () => {
    expect(issue(withRules(deny(), { upstream: 'x' }))).toEqual({ path: 'policy.rules[1]', ...NEITHER });
    expect(issue(withRules(null))).toEqual({ path: 'policy.rules[0]', ...NEITHER });
  });

  it.each([
    ['deny', '"deny"'],
    [['deny'], 'a list of 1 item'],
    [7, '7'],
  ])('refuses the rule %j with one issue', (rule, found) => {
    expect(issue(withRules(rule))).toEqual({ path: 'policy.rules[0]', found, expected: RULE_EXPECTED });
  });

  it('refuses rules that are not a list', () => {
    expect(issue(withPolicy({ rules: { first: deny() } }))).toEqual({
      path: 'policy.rules',
      found: 'a map (first)',
      expected: LIST_EXPECTED,
    });
  });

  describe('methods', () => {
    it.each(['tools/call', 'resources/read', 'prompts/get'])('accepts %j', (method) => {
      expect(rulesOf(deny({ methods: [method] }))[0]?.methods).toEqual([method]);
    });

    it.each([
      ['tools/list', ''],
      ['initialize', ''],
      ['TOOLS/CALL', ' (did you mean "tools/call"?)'],
      ['tool/call', ' (did you mean "tools/call"?)'],
      ['resource/read', ' (did you mean "resources/read"?)'],
    ])('refuses %j', (method, hint) => {
      expect(issue(withRules(deny({ methods: ['tools/call', method] })))).toEqual({
        path: 'policy.rules[0].methods[1]',
        found: JSON.stringify(method),
        expected: `${METHODS_EXPECTED}${hint}`,
      });
    });

    it('refuses a method that is not a string', () => {
      expect(issue(withRules(deny({ methods: [42] })))).toEqual({
        path: 'policy.rules[0].methods[0]',
        found: '42',
        expected: METHODS_EXPECTED,
      });
    });

    it('refuses one method written without a list', () => {
      expect(issue(withRules(deny({ methods: 'tools/call' })))).toEqual({
        path: 'policy.rules[0].methods',
        found: '"tools/call"',
        expected: LIST_EXPECTED,
      });
    });
  });

  describe('patterns', () => {
    it.each(['target', 'tool', 'upstream'])(
      'refuses an empty %s (YAML null) instead of matching every call',
      (key) => {
        const found = issue(withRules({ [key]: null, action: 'allow' }));
        expect(found).toMatchObject({ path: `policy.rules[0].${key}`, expected: GLOB_EXPECTED });
      },
    );

    it.each(['*', 'exact', 'a?c', 'file:///srv/*', 'ns/*/tool', '**'])(
      'keeps the glob %j as written',
      (glob) => {
        expect(rulesOf(deny({ upstream: glob, target: glob, principals: [glob], roles: [glob] }))[0]).toEqual(
          {
            id: 'rules[0]',
            upstream: glob,
            target: glob,
            principals: [glob],
            roles: [glob],
            action: 'deny',
          },
        );
      },
    );

    it.each(['upstream', 'target', 'tool'])('refuses an empty or non-string %s', (key) => {
      expect(issue(withRules(deny({ [key]: '' })))).toEqual({
        path: `policy.rules[0].${key}`,
        found: '""',
        expected: 'a non-empty name or glob pattern (* and ?)',
      });
      expect(issue(withRules(deny({ [key]: ['a'] })))).toEqual({
        path: `policy.rules[0].${key}`,
        found: 'a list of 1 item',
        expected: GLOB_EXPECTED,
      });
    });

    it.each(['principals', 'roles'])('refuses an empty or non-string item of %s', (key) => {
      expect(issue(withRules(deny({ [key]: ['ok', ''] })))).toEqual({
        path: `policy.rules[0].${key}[1]`,
        found: '""',
        expected: 'a non-empty name or glob pattern (* and ?)',
      });
      expect(issue(withRules(deny({ [key]: [null] })))).toEqual({
        path: `policy.rules[0].${key}[0]`,
        found: 'an empty value',
        expected: GLOB_EXPECTED,
      });
    });

    it.each(['methods', 'principals', 'roles'])(
      'refuses an empty list of %s, which would match nothing',
      (key) => {
        expect(issue(withRules(deny({ [key]: [] })))).toEqual({
          path: `policy.rules[0].${key}`,
          found: 'an empty list',
          expected: `at least one item; leave ${key} out to match any`,
        });
      },
    );

    it.each(['principals', 'roles'])('refuses one %s pattern written without a list', (key) => {
      expect(issue(withRules(deny({ [key]: 'admin' })))).toEqual({
        path: `policy.rules[0].${key}`,
        found: '"admin"',
        expected: LIST_EXPECTED,
      });
    });

    it('refuses both tool and target', () => {
      expect(issue(withRules(deny({ tool: 'a', target: 'b' })))).toEqual({
        path: 'policy.rules[0].tool',
        found: 'both tool and target',
        expected: 'one of them (tool is another name for target)',
      });
    });
  });

  describe('ids', () => {
    it('refuses an id used twice, at the second', () => {
      expect(issue(withRules(deny({ id: 'x' }), deny(), deny({ id: 'x' })))).toEqual({
        path: 'policy.rules[2].id',
        found: '"x"',
        expected: 'a rule id not used by another rule',
      });
    });

    it('refuses an id that is a later rule default id, where it is written', () => {
      expect(issue(withRules(deny({ id: 'rules[1]' }), deny()))).toEqual({
        path: 'policy.rules[0].id',
        found: '"rules[1]", the default id of rules[1]',
        expected: 'a rule id not used by another rule',
      });
    });

    it('refuses an id that is an earlier rule default id', () => {
      expect(issue(withRules(deny(), deny({ id: 'rules[0]' })))).toEqual({
        path: 'policy.rules[1].id',
        found: '"rules[0]"',
        expected: 'a rule id not used by another rule',
      });
    });

    it('accepts a rule named by its own default id', () => {
      expect(rulesOf(deny({ id: 'rules[0]' }), deny())).toEqual([
        { id: 'rules[0]', action: 'deny' },
        { id: 'rules[1]', action: 'deny' },
      ]);
    });

    it.each([
      ['', '""'],
      ['  ', '"  "'],
      [12, '12'],
    ])('refuses the id %j', (id, found) => {
      expect(issue(withRules(deny({ id })))).toEqual({
        path: 'policy.rules[0].id',
        found,
        expected: 'a rule id: a non-empty string',
      });
    });
  });

  it.each([
    ['method', 'methods'],
    ['principal', 'principals'],
    ['role', 'roles'],
  ])('reports the unknown rule key %j, suggesting %j', (key, suggestion) => {
    expect(issue(withRules(deny({ [key]: ['x'] })))).toEqual({
      path: `policy.rules[0].${key}`,
      found: 'an unknown key',
      expected: `one of the keys allowed in policy.rules[0]: ${RULE_KEYS} (did you mean "${suggestion}"?)`,
    });
  });

  it('reports an unknown rule key without a near miss plainly', () => {
    expect(issue(withRules(deny({ effect: 'deny' })))).toEqual({
      path: 'policy.rules[0].effect',
      found: 'an unknown key',
      expected: `one of the keys allowed in policy.rules[0]: ${RULE_KEYS}`,
    });
  });
});

describe('policy.approvals', () => {
  it.each([
    ['30s', 30_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['1.5m', 90_000],
    [45_000, 45_000],
    ['45000', 45_000],
  ])('reads the timeout %j as %d ms', (timeout, ms) => {
    expect(policyOf({ approvals: { timeout } }).approvals).toEqual({
      timeoutMs: ms,
      approverRoles: ['approver'],
      allowSelfApproval: false,
    });
  });

  it('reads any positive whole duration', () => {
    const units = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])),
        (n, unit) => {
          expect(policyOf({ approvals: { timeout: `${n}${unit}` } }).approvals.timeoutMs).toBe(
            n * units[unit],
          );
        },
      ),
    );
  });

  it.each([0, '0', '0s'])('refuses the timeout %j: a held call needs time to be decided', (timeout) => {
    expect(issue(withPolicy({ approvals: { timeout } }))).toEqual({
      path: 'policy.approvals.timeout',
      found: JSON.stringify(timeout),
      expected: 'a duration longer than 0, e.g. 30s or 10m',
    });
  });

  it.each([
    ['5 minutes', 'a unit ms, s, m, h or d after the number, not "minutes"'],
    [
      '-5m',
      'a duration: a whole number of milliseconds or a number with a unit ms, s, m, h or d (e.g. 250ms, 30s, 10m, 1h)',
    ],
  ])('refuses the timeout %j', (timeout, expected) => {
    expect(issue(withPolicy({ approvals: { timeout } }))).toEqual({
      path: 'policy.approvals.timeout',
      found: JSON.stringify(timeout),
      expected,
    });
  });

  it('reads approver roles, including none', () => {
    expect(
      policyOf({ approvals: { approverRoles: ['ops', 'https://idp/roles/approver'] } }).approvals
        .approverRoles,
    ).toEqual(['ops', 'https://idp/roles/approver']);
    expect(policyOf({ approvals: { approverRoles: [] } }).approvals.approverRoles).toEqual([]);
  });

  it('refuses approver roles that are not a list, or empty names', () => {
    expect(issue(withPolicy({ approvals: { approverRoles: 'ops' } }))).toEqual({
      path: 'policy.approvals.approverRoles',
      found: '"ops"',
      expected: LIST_EXPECTED,
    });
    expect(issue(withPolicy({ approvals: { approverRoles: ['ops', ''] } }))).toEqual({
      path: 'policy.approvals.approverRoles[1]',
      found: '""',
      expected: 'a non-empty role name',
    });
    expect(issue(withPolicy({ approvals: { approverRoles: [1] } }))).toEqual({
      path: 'policy.approvals.approverRoles[0]',
      found: '1',
      expected: 'a role name',
    });
  });

  it('reads allowSelfApproval (default false: four eyes) and refuses what is not a boolean', () => {
    expect(policyOf({}).approvals.allowSelfApproval).toBe(false);
    expect(policyOf({ approvals: { allowSelfApproval: true } }).approvals.allowSelfApproval).toBe(true);
    expect(issue(withPolicy({ approvals: { allowSelfApproval: 'yes' } }))).toMatchObject({
      path: 'policy.approvals.allowSelfApproval',
      found: '"yes"',
    });
  });

  it('reports an unknown key with its suggestion', () => {
    expect(issue(withPolicy({ approvals: { timeoutMs: 1000 } }))).toEqual({
      path: 'policy.approvals.timeoutMs',
      found: 'an unknown key',
      expected:
        'one of the keys allowed in policy.approvals: timeout, approverRoles, allowSelfApproval (did you mean "timeout"?)',
    });
    expect(issue(withPolicy({ approvals: { approvers: ['x'] } }))).toEqual({
      path: 'policy.approvals.approvers',
      found: 'an unknown key',
      expected: 'one of the keys allowed in policy.approvals: timeout, approverRoles, allowSelfApproval',
    });
  });
});

it('reports every mistake in the section at once, in order', () => {
  const errors = invalid(
    withPolicy({
      default: 'block',
      rules: [{ action: 'nope' }, { tier: 'T9', methods: [] }],
      approvals: { timeout: 0 },
    }),
  );
  expect(errors.map((e) => e.path)).toEqual([
    'policy.default',
    'policy.rules[0].action',
    'policy.rules[1].methods',
    'policy.rules[1].tier',
    'policy.approvals.timeout',
  ]);
});

describe('policy across sections', () => {
  const TOKEN = 'a'.repeat(64);
  const auth = (roles: string[] = ['approver']) => ({
    tokens: [{ principal: 'alice', sha256: TOKEN, roles }],
  });
  const upstreams = { github: { command: 'x' }, 'files-01': { command: 'y' } };

  describe('approverRoles that nobody can hold', () => {
    it.each([
      ['a rule asks', { rules: [{ action: 'ask' }], approvals: { approverRoles: [] } }, 'the rule rules[0]'],
      [
        'a named rule asks',
        {
          rules: [
            { action: 'deny', tool: 'x' },
            { id: 'hold-writes', action: 'ask' },
          ],
          approvals: { approverRoles: [] },
        },
        'the rule hold-writes',
      ],
      ['the default asks', { default: 'ask', approvals: { approverRoles: [] } }, 'policy.default'],
    ])('is an error with authentication when %s', (_, policy, asker) => {
      expect(issue({ ...withPolicy(policy), auth: auth() })).toEqual({
        path: 'policy.approvals.approverRoles',
        found: 'an empty list',
        expected:
          `at least one role: ${asker} can ask, and with authentication only principals holding one of ` +
          'these roles may approve (with none, every held call is rejected when approvals.timeout ends)',
      });
      // The same with authentication configured outside the file.
      expect(issue(withPolicy(policy), { authConfigured: true }).path).toBe('policy.approvals.approverRoles');
    });

    it('is fine without authentication (the local caller approves) or when nothing can ask', () => {
      expect(policyOf({ default: 'ask', approvals: { approverRoles: [] } }).approvals.approverRoles).toEqual(
        [],
      );
      const noAsk = valid({
        ...withPolicy({ rules: [{ action: 'deny' }], approvals: { approverRoles: [] } }),
        auth: auth(),
      });
      expect(noAsk.warnings).toEqual([]);
    });

    it('warns when no token and no space participant holds an approver role', () => {
      const { warnings } = valid({ ...withPolicy({ default: 'ask' }), auth: auth(['dev']) });
      expect(warnings).toEqual([
        'policy.approvals.approverRoles: policy.default can ask, but no principal of auth.tokens (nor any ' +
          'space participant) holds one of these roles (approver): nobody can approve, so every held call ' +
          'is rejected when approvals.timeout ends',
      ]);
      // A token, a space participant or JWT roles (which the file cannot see) may hold it.
      expect(valid({ ...withPolicy({ default: 'ask' }), auth: auth() }).warnings).toEqual([]);
      const participant = {
        participants: { bob: { roles: ['approver'], tokens: [{ sha256: 'b'.repeat(64) }] } },
      };
      expect(
        valid({ ...withPolicy({ default: 'ask' }), auth: auth(['dev']), space: participant }).warnings,
      ).toEqual([]);
      const jwt = { jwks: 'https://idp.example/jwks', issuer: 'https://idp.example', audience: 'gw' };
      expect(valid({ ...withPolicy({ default: 'ask' }), auth: { jwt } }).warnings).toEqual([]);
    });
  });

  describe('rules naming upstreams that do not exist', () => {
    const warningsOf = (...rules: unknown[]) => valid({ upstreams, policy: { rules } }).warnings;

    it('warns about a literal name that is not configured, with a suggestion', () => {
      expect(
        warningsOf(deny({ upstream: 'githb' }), deny({ upstream: 'GitHub' }), deny({ upstream: 'slack' })),
      ).toEqual([
        'policy.rules[0].upstream: "githb" is not a configured upstream (did you mean "github"?), so the rule never matches',
        'policy.rules[1].upstream: "GitHub" is not a configured upstream (did you mean "github"?), so the rule never matches',
        'policy.rules[2].upstream: "slack" is not a configured upstream, so the rule never matches',
      ]);
    });

    it('warns about a glob that matches no configured upstream', () => {
      expect(warningsOf(deny({ upstream: 'git?ab*' }))).toEqual([
        'policy.rules[0].upstream: "git?ab*" matches no configured upstream, so the rule never matches',
      ]);
    });

    it('says nothing about names and globs that match', () => {
      expect(
        warningsOf(
          deny({ upstream: 'github' }),
          deny({ upstream: 'files-??' }),
          deny({ upstream: '*' }),
          deny(),
        ),
      ).toEqual([]);
    });
  });
});
