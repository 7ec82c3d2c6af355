/**
 * The `policy` section: allow / deny / ask per upstream, tool (or prompt, or resource URI), method,
 * principal and role, first match wins; tiers T0-T3 overriding the tool's annotations; how "ask"
 * approvals are decided.
 */
import { globMatch } from '../../policy/glob.js';
import { type Checker, type ConfigPath, describeValue, entriesOf, oneOf, suggest } from '../checker.js';
import type {
  GatewayConfig,
  GovernedMethod,
  PolicyAction,
  PolicyConfig,
  PolicyRule,
  Tier,
} from '../types.js';

export const POLICY_KEYS = ['default', 'rules', 'approvals'] as const;
export const RULE_KEYS = [
  'id',
  'upstream',
  'target',
  'tool',
  'methods',
  'principals',
  'roles',
  'action',
  'tier',
] as const;
export const APPROVAL_KEYS = ['timeout', 'approverRoles', 'allowSelfApproval'] as const;
export const ACTIONS: readonly PolicyAction[] = ['allow', 'deny', 'ask'];
export const TIERS: readonly Tier[] = ['T0', 'T1', 'T2', 'T3'];
export const GOVERNED_METHODS: readonly GovernedMethod[] = ['tools/call', 'resources/read', 'prompts/get'];

export const POLICY_DEFAULTS: PolicyConfig = {
  default: 'allow',
  rules: [],
  approvals: { timeoutMs: 300_000, approverRoles: ['approver'], allowSelfApproval: false },
};

function glob(c: Checker, value: unknown, path: ConfigPath): string | undefined {
  const text = c.text(value, path, 'a name or a glob pattern (* and ?)');
  if (text !== undefined && text.length === 0)
    c.issue(path, '""', 'a non-empty name or glob pattern (* and ?)');
  return text;
}

/**
 * A rule's list of patterns or methods; absent means "any", so an empty list (which would match
 * nothing and silently disable the rule) is refused.
 */
function matchList<T>(
  c: Checker,
  r: Map<string, unknown>,
  path: ConfigPath,
  key: string,
  item: (value: unknown, path: ConfigPath) => T | undefined,
): readonly T[] | undefined {
  const raw = r.get(key);
  if (raw === undefined) return undefined;
  if (Array.isArray(raw) && raw.length === 0) {
    c.issue([...path, key], 'an empty list', `at least one item; leave ${key} out to match any`);
    return undefined;
  }
  return c.list<T>(r, path, key, [], item);
}

function method(c: Checker, value: unknown, path: ConfigPath): GovernedMethod | undefined {
  const expected = oneOf(GOVERNED_METHODS);
  const m = c.text(value, path, expected);
  if (m === undefined) return undefined;
  if ((GOVERNED_METHODS as readonly string[]).includes(m)) return m as GovernedMethod;
  const suggestion = suggest(m, GOVERNED_METHODS);
  c.issue(
    path,
    describeValue(m),
    `${expected}${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}`,
  );
  return undefined;
}

const RULE_EXPECTED =
  'a rule: match fields (upstream, target, methods, principals, roles) and an action and/or a tier';

export function readPolicy(c: Checker, raw: unknown): PolicyConfig {
  if (raw === undefined || raw === null) return POLICY_DEFAULTS;
  const p = ['policy'];
  const f = c.section(raw, p, POLICY_KEYS);
  const defaultAction = c.choice(f, p, 'default', ACTIONS, POLICY_DEFAULTS.default);
  /** Each id taken so far, and the path of the rule that gave it explicitly (if it did). */
  const ids = new Map<string, ConfigPath | undefined>();
  const rules = c.list<PolicyRule>(f, p, 'rules', [], (value, path) => {
    if (value !== null && entriesOf(value) === undefined) {
      c.issue(path, describeValue(value), RULE_EXPECTED);
      return undefined;
    }
    const r = c.section(value, path, RULE_KEYS, RULE_EXPECTED);
    const defaultId = `rules[${String(path[path.length - 1])}]`;
    let id = defaultId;
    if (r.get('id') !== undefined) {
      const text = c.text(r.get('id'), [...path, 'id'], 'a rule id: a non-empty string');
      if (text !== undefined && text.trim() === '')
        c.issue([...path, 'id'], describeValue(text), 'a rule id: a non-empty string');
      else if (text !== undefined) id = text;
    }
    const explicit = r.has('id') ? [...path, 'id'] : undefined;
    if (ids.has(id)) {
      // Report it where the id was written: a rule without one did not choose its default.
      const at = explicit ?? ids.get(id);
      c.issue(
        at ?? [...path, 'id'],
        explicit === undefined ? `${JSON.stringify(id)}, the default id of ${id}` : JSON.stringify(id),
        'a rule id not used by another rule',
      );
    }
    ids.set(id, explicit);
    if (r.has('tool') && r.has('target'))
      c.issue(
        [...path, 'tool'],
        'both tool and target',
        'one of them (tool is another name for target)',
        'key',
      );
    // A key that is present but empty (`target:` is YAML null) is an error, never "matches anything":
    // read as absent, `- { target: , action: allow }` would allow every call.
    const targetKey = r.has('target') ? 'target' : 'tool';
    const target = r.has(targetKey) ? glob(c, r.get(targetKey), [...path, targetKey]) : undefined;
    const upstream = r.has('upstream') ? glob(c, r.get('upstream'), [...path, 'upstream']) : undefined;
    const methods = matchList<GovernedMethod>(c, r, path, 'methods', (v, mp) => method(c, v, mp));
    const principals = matchList<string>(c, r, path, 'principals', (v, pp) => glob(c, v, pp));
    const roles = matchList<string>(c, r, path, 'roles', (v, rp) => glob(c, v, rp));
    const action = c.choice(r, path, 'action', ACTIONS, undefined);
    const tier = c.choice(r, path, 'tier', TIERS, undefined);
    if (!r.has('action') && !r.has('tier'))
      c.issue(
        path,
        'a rule with neither action nor tier',
        'an action (allow, deny, ask), a tier (T0-T3), or both',
      );
    const rule: { -readonly [K in keyof PolicyRule]: PolicyRule[K] } = { id };
    if (upstream !== undefined) rule.upstream = upstream;
    if (target !== undefined) rule.target = target;
    if (methods !== undefined) rule.methods = methods;
    if (principals !== undefined) rule.principals = principals;
    if (roles !== undefined) rule.roles = roles;
    if (action !== undefined) rule.action = action;
    if (tier !== undefined) rule.tier = tier;
    return rule;
  });
  const ap = [...p, 'approvals'];
  const a = c.section(f.get('approvals'), ap, APPROVAL_KEYS);
  const timeoutMs = c.duration(a, ap, 'timeout', POLICY_DEFAULTS.approvals.timeoutMs, false);
  const approverRoles = c.list<string>(
    a,
    ap,
    'approverRoles',
    POLICY_DEFAULTS.approvals.approverRoles,
    (v, rp) => {
      const role = c.text(v, rp, 'a role name');
      if (role !== undefined && role.trim() === '') {
        c.issue(rp, describeValue(role), 'a non-empty role name');
        return undefined;
      }
      return role;
    },
  );
  const allowSelfApproval = c.boolean(
    a,
    ap,
    'allowSelfApproval',
    POLICY_DEFAULTS.approvals.allowSelfApproval,
  );
  return { default: defaultAction, rules, approvals: { timeoutMs, approverRoles, allowSelfApproval } };
}

// ------------------------------------------------------------------ checks across sections

/** Where the policy can hold a call for approval (`default`, or the first rule whose action is ask). */
function askedBy(policy: PolicyConfig): string | undefined {
  if (policy.default === 'ask') return 'policy.default';
  const rule = policy.rules.find((r) => r.action === 'ask');
  return rule === undefined ? undefined : `the rule ${rule.id}`;
}

/**
 * With authentication, only principals holding one of `approvals.approverRoles` may decide held
 * calls (over HTTP or in the space); without it the local caller may. An empty list while the
 * policy can ask therefore turns every `ask` into a rejection after `approvals.timeout`: an error,
 * as an empty match list in a rule is, since nothing anyone holds can make it work. Called by
 * validate.ts once every section is read.
 */
export function checkApprovers(c: Checker, policy: PolicyConfig, authConfigured: boolean): void {
  const asker = askedBy(policy);
  if (!authConfigured || asker === undefined || policy.approvals.approverRoles.length > 0) return;
  c.issue(
    ['policy', 'approvals', 'approverRoles'],
    'an empty list',
    `at least one role: ${asker} can ask, and with authentication only principals holding one of ` +
      'these roles may approve (with none, every held call is rejected when approvals.timeout ends)',
  );
}

/**
 * Warnings about a valid policy that cannot do what it says: a rule naming an upstream that is not
 * configured (it never matches), and approvals that no configured principal can give.
 */
export function warnAboutPolicy(c: Checker, config: GatewayConfig): void {
  const names = config.upstreams.map((u) => u.name);
  config.policy.rules.forEach((rule, index) => {
    const pattern = rule.upstream;
    if (pattern === undefined || names.some((name) => globMatch(pattern, name))) return;
    const literal = !/[*?]/.test(pattern);
    const suggestion = literal ? suggest(pattern, names) : undefined;
    c.warn(
      ['policy', 'rules', index, 'upstream'],
      `${JSON.stringify(pattern)} ${literal ? 'is not a configured upstream' : 'matches no configured upstream'}` +
        `${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}, so the rule never matches`,
    );
  });
  const { auth, policy, space } = config;
  const asker = askedBy(policy);
  const approvers = new Set(policy.approvals.approverRoles);
  // JWT roles come from the tokens' claims, which the configuration cannot see.
  if (auth === undefined || auth.jwt !== undefined || asker === undefined || approvers.size === 0) return;
  const holders = [
    ...auth.tokens.map((t) => t.roles),
    ...(space.enabled ? space.participants.map((p) => p.roles) : []),
  ];
  if (holders.some((roles) => roles.some((r) => approvers.has(r)))) return;
  c.warn(
    ['policy', 'approvals', 'approverRoles'],
    `${asker} can ask, but no principal of auth.tokens (nor any space participant) holds one of ` +
      `these roles (${[...approvers].join(', ')}): nobody can approve, so every held call is ` +
      'rejected when approvals.timeout ends',
  );
}
