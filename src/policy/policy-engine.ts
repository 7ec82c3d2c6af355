/**
 * Policy decisions: for one call (upstream, method, target, principal, roles), the action
 * (allow / deny / ask) and the tier (T0-T3). Rules are tried in order: the first matching rule with
 * an action decides the action, the first with a tier decides the tier. Without a tier rule, the
 * tier comes from the tool's annotations (readOnlyHint T0, destructiveHint T2, otherwise T1;
 * resources/read and prompts/get are T0). Pure: no I/O, no clock.
 */
import type { GovernedMethod, PolicyAction, PolicyConfig, PolicyRule, Tier } from '../config/types.js';
import { anyGlobMatch, globMatch } from './glob.js';

export const GOVERNED: ReadonlySet<string> = new Set<GovernedMethod>([
  'tools/call',
  'resources/read',
  'prompts/get',
]);

export interface CallSubject {
  readonly upstream: string;
  readonly method: GovernedMethod;
  /** Tool name, prompt name or resource URI, as the upstream knows it. */
  readonly target: string;
  readonly principal: string;
  readonly roles: readonly string[];
}

/** What the tool says of itself (MCP `ToolAnnotations`), as far as tiers care. */
export interface ToolHints {
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
}

export interface PolicyDecision {
  readonly action: PolicyAction;
  readonly tier: Tier;
  /** The rule that decided the action (absent: the default action). */
  readonly rule?: string;
}

const TIER_RANK: Readonly<Record<Tier, number>> = { T0: 0, T1: 1, T2: 2, T3: 3 };

export function tierAtLeast(tier: Tier, floor: Tier): boolean {
  return TIER_RANK[tier] >= TIER_RANK[floor];
}

/** The tier a tool's annotations imply (MCP hints are advisory; the configuration overrides). */
export function tierFromHints(method: GovernedMethod, hints: ToolHints | undefined): Tier {
  if (method !== 'tools/call') return 'T0';
  if (hints?.readOnlyHint === true) return 'T0';
  if (hints?.destructiveHint === true) return 'T2';
  return 'T1';
}

function matches(rule: PolicyRule, subject: CallSubject): boolean {
  if (rule.upstream !== undefined && !globMatch(rule.upstream, subject.upstream)) return false;
  if (rule.target !== undefined && !globMatch(rule.target, subject.target)) return false;
  if (rule.methods !== undefined && !rule.methods.includes(subject.method)) return false;
  if (rule.principals !== undefined && !anyGlobMatch(rule.principals, [subject.principal])) return false;
  if (rule.roles !== undefined && !anyGlobMatch(rule.roles, subject.roles)) return false;
  return true;
}

export class PolicyEngine {
  readonly #config: PolicyConfig;

  constructor(config: PolicyConfig) {
    this.#config = config;
  }

  get config(): PolicyConfig {
    return this.#config;
  }

  decide(subject: CallSubject, hints?: ToolHints): PolicyDecision {
    let action: PolicyAction | undefined;
    let rule: string | undefined;
    let tier: Tier | undefined;
    for (const r of this.#config.rules) {
      if (action !== undefined && tier !== undefined) break;
      if (!matches(r, subject)) continue;
      if (action === undefined && r.action !== undefined) {
        action = r.action;
        rule = r.id;
      }
      if (tier === undefined && r.tier !== undefined) tier = r.tier;
    }
    const decision = {
      action: action ?? this.#config.default,
      tier: tier ?? tierFromHints(subject.method, hints),
    };
    return rule === undefined ? decision : { ...decision, rule };
  }

  /** Whether a principal may approve or reject held calls. */
  isApprover(roles: readonly string[]): boolean {
    return roles.some((r) => this.#config.approvals.approverRoles.includes(r));
  }
}
