/**
 * The `space` section: the MEUP space on `switchboard serve` (WebSocket `/meup`). Who may join and
 * with which capabilities, who observes the MCP traffic, which protocol strings and correlation /
 * context rules apply, and the limits of a connection. See docs/space.md.
 */
import { MEUP_PROTOCOLS, type MeupProtocol } from '../../meup/types.js';
import { type CapabilityPattern, parseCapability } from '../../space/capability-pattern.js';
import { participantIdProblem } from '../../space/participant-id.js';
import { type Checker, type ConfigPath, describeValue, entriesOf } from '../checker.js';
import type { AuthConfig } from '../types.js';

/** A participant the configuration names. */
export interface SpaceParticipantConfig {
  readonly id: string;
  /** What it may send; undefined: `space.defaults.capabilities`. */
  readonly capabilities?: readonly CapabilityPattern[];
  /** Whether it receives every MCP message through the gateway; undefined: `space.defaults.observe`. */
  readonly observe?: boolean;
  /** Roles added to those its authentication gives (approvers: `policy.approvals.approverRoles`). */
  readonly roles: readonly string[];
  /** Space-only bearer tokens, as the sha256 of each (like `auth.tokens`). */
  readonly tokens: readonly { readonly sha256: string }[];
}

export interface SpaceConfig {
  readonly enabled: boolean;
  /** The space's name: a MEW join frame naming another space is refused. */
  readonly name: string;
  /** Protocol strings accepted on envelopes (`meup/v0.2` canonical; `mew/v0.3`, `mew/v0.4` dialects). */
  readonly protocols: readonly MeupProtocol[];
  /** A string `correlation_id`: `accept` (converted, deprecation warning) or `strict` (refused). */
  readonly correlation: 'accept' | 'strict';
  readonly context: {
    readonly mode: 'reject' | 'warn';
    readonly maxDepth: number;
    readonly maxLength: number;
  };
  readonly maxFrameBytes: number;
  /** Unsent bytes a connection may have queued before it is closed as a slow consumer. */
  readonly maxBufferedBytes: number;
  /** Ping interval; a connection that has not answered the previous ping is closed. 0: off. */
  readonly heartbeatMs: number;
  /** How long a connection without credentials on the upgrade has to send its join frame. */
  readonly joinTimeoutMs: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerParticipant: number;
  /** Proposals tracked at once (open or recently closed); the oldest closed go first. */
  readonly maxProposals: number;
  /** The envelopes kept for late joiners: at most this many, and this many bytes of JSON. */
  readonly history: { readonly maxEnvelopes: number; readonly maxBytes: number; readonly maxResults: number };
  readonly defaults: { readonly capabilities: readonly CapabilityPattern[]; readonly observe: boolean };
  readonly participants: readonly SpaceParticipantConfig[];
}

export const SPACE_KEYS = [
  'enabled',
  'name',
  'protocols',
  'correlation',
  'context',
  'maxFrameBytes',
  'maxBufferedBytes',
  'heartbeat',
  'joinTimeout',
  'maxConnections',
  'maxConnectionsPerParticipant',
  'maxProposals',
  'history',
  'defaults',
  'participants',
] as const;
export const CONTEXT_KEYS = ['mode', 'maxDepth', 'maxLength'] as const;
export const HISTORY_KEYS = ['maxEnvelopes', 'maxBytes', 'maxResults'] as const;
export const DEFAULTS_KEYS = ['capabilities', 'observe'] as const;
export const PARTICIPANT_KEYS = ['capabilities', 'observe', 'roles', 'tokens'] as const;
const TOKEN_KEYS = ['sha256'] as const;
const SHA256_HEX = /^[0-9a-f]{64}$/i;
const ROLE = /^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/;
const SPACE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * What a participant may send when the configuration says nothing: talk (chat, reasoning), ask
 * (propose MCP calls, withdraw its proposals), answer requests addressed to it (`mcp/response`, as
 * the MEW gateway grants everyone), acknowledge grants, and read the history.
 */
export const DEFAULT_SPACE_CAPABILITIES: readonly CapabilityPattern[] = [
  { kind: 'chat' },
  { kind: 'chat/*' },
  { kind: 'reasoning/*' },
  { kind: 'mcp/proposal' },
  { kind: 'mcp/withdraw' },
  { kind: 'mcp/response' },
  { kind: 'capability/grant-ack' },
  { kind: 'space/history' },
];

export const SPACE_DEFAULTS: SpaceConfig = {
  enabled: true,
  name: 'switchboard',
  protocols: MEUP_PROTOCOLS,
  correlation: 'accept',
  context: { mode: 'reject', maxDepth: 5, maxLength: 255 },
  maxFrameBytes: 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  heartbeatMs: 30_000,
  joinTimeoutMs: 10_000,
  maxConnections: 1000,
  maxConnectionsPerParticipant: 16,
  maxProposals: 10_000,
  history: { maxEnvelopes: 10_000, maxBytes: 64 * 1024 * 1024, maxResults: 1000 },
  defaults: { capabilities: DEFAULT_SPACE_CAPABILITIES, observe: false },
  participants: [],
};

/**
 * The YAML value as plain JSON (the loader gives `Map`s), every string through `${env:NAME}`;
 * undefined (after an issue) when something in it is not JSON.
 */
function plain(c: Checker, value: unknown, path: ConfigPath): unknown {
  if (typeof value === 'string') return c.text(value, path);
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map((v: unknown, i) => plain(c, v, [...path, i]));
  const entries = entriesOf(value);
  if (entries === undefined) {
    c.issue(path, describeValue(value), 'a JSON value (string, number, boolean, null, list or map)');
    return undefined;
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, plain(c, v, [...path, k])]));
}

function capabilities(c: Checker, raw: unknown, path: ConfigPath): readonly CapabilityPattern[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) {
    c.issue(path, describeValue(raw), 'a list of capabilities, e.g. [{kind: chat}, {kind: "mcp/*"}]');
    return undefined;
  }
  const out: CapabilityPattern[] = [];
  raw.forEach((item: unknown, i) => {
    const at = [...path, i];
    const before = c.errors.length;
    const value = plain(c, item, at);
    if (c.errors.length > before) return;
    const parsed = parseCapability(value, { allowRegex: true });
    if (parsed.ok) out.push(parsed.capability);
    else {
      const where = parsed.error.path === '' ? at : [...at, ...parsed.error.path.split('.')];
      c.issue(
        where,
        describeValue(item),
        `a capability {kind, payload?} (see docs/space.md): ${parsed.error.problem}`,
      );
    }
  });
  return out;
}

function role(c: Checker, value: unknown, path: ConfigPath): string | undefined {
  const expected = 'a role name of letters, digits and . _ @ : - (at most 128 characters)';
  const text = c.text(value, path, expected);
  if (text !== undefined && !ROLE.test(text)) {
    c.issue(path, describeValue(text), expected);
    return undefined;
  }
  return text;
}

function token(c: Checker, value: unknown, path: ConfigPath): { sha256: string } | undefined {
  const tokenExpected = 'a map with sha256 (the hash of the token, never the token)';
  if (typeof value === 'string') {
    // Never echo it: a string here is most likely a token pasted where its hash belongs.
    c.issue(path, `a string of ${value.length} characters (not shown)`, tokenExpected);
    return undefined;
  }
  const t = c.section(value, path, TOKEN_KEYS, tokenExpected);
  const raw = t.get('sha256');
  const expected = 'the sha256 of the token, 64 hex digits (switchboard auth token prints it)';
  if (raw === undefined) {
    c.issue([...path, 'sha256'], 'nothing', expected, 'key');
    return undefined;
  }
  const text = c.text(raw, [...path, 'sha256']);
  if (text === undefined) return undefined;
  if (!SHA256_HEX.test(text)) {
    // Never echo the value: it may be a token pasted by mistake.
    c.issue([...path, 'sha256'], `a value of ${text.length} characters that is not 64 hex digits`, expected);
    return undefined;
  }
  return { sha256: text.toLowerCase() };
}

function protocols(c: Checker, f: Map<string, unknown>, p: ConfigPath): readonly MeupProtocol[] {
  const raw = f.get('protocols');
  if (raw === undefined) return SPACE_DEFAULTS.protocols;
  const expected = `a non-empty list of ${MEUP_PROTOCOLS.join(', ')}`;
  if (Array.isArray(raw) && raw.length === 0) {
    c.issue([...p, 'protocols'], 'an empty list', expected);
    return SPACE_DEFAULTS.protocols;
  }
  const list = c.list(f, p, 'protocols', SPACE_DEFAULTS.protocols, (v, at) => {
    const text = c.text(v, at, expected);
    if (text !== undefined && !(MEUP_PROTOCOLS as readonly string[]).includes(text)) {
      c.issue(at, describeValue(text), `one of ${MEUP_PROTOCOLS.join(', ')} (exactly)`);
      return undefined;
    }
    return text as MeupProtocol | undefined;
  });
  return [...new Set(list)];
}

function participant(
  c: Checker,
  id: string,
  raw: unknown,
  p: ConfigPath,
): SpaceParticipantConfig | undefined {
  const problem = participantIdProblem(id);
  if (problem !== undefined) c.issue(p, `the participant id ${JSON.stringify(id)}`, problem, 'key');
  const f = c.section(raw, p, PARTICIPANT_KEYS);
  const caps = capabilities(c, f.get('capabilities'), [...p, 'capabilities']);
  const observe = f.has('observe') ? c.boolean(f, p, 'observe', false) : undefined;
  return {
    id,
    ...(caps === undefined ? {} : { capabilities: caps }),
    ...(observe === undefined ? {} : { observe }),
    roles: c.list(f, p, 'roles', [], (v, at) => role(c, v, at)),
    tokens: c.list(f, p, 'tokens', [], (v, at) => token(c, v, at)),
  };
}

/**
 * Reads `space`. Absent: the defaults (the space is on). `auth` is the validated auth section: a
 * space token must not also be one of its tokens (one token, one identity).
 */
export function readSpace(c: Checker, raw: unknown, auth: AuthConfig | undefined): SpaceConfig {
  const p = ['space'];
  const f = c.section(raw, p, SPACE_KEYS);
  const d = SPACE_DEFAULTS;
  const name = f.has('name') ? (c.text(f.get('name'), [...p, 'name']) ?? d.name) : d.name;
  if (!SPACE_NAME.test(name))
    c.issue(
      [...p, 'name'],
      describeValue(name),
      'a name of letters, digits and . _ - (at most 64 characters)',
    );
  const cp = [...p, 'context'];
  const cf = c.section(f.get('context'), cp, CONTEXT_KEYS);
  const hp = [...p, 'history'];
  const hf = c.section(f.get('history'), hp, HISTORY_KEYS);
  const history = {
    maxEnvelopes: c.integer(hf, hp, 'maxEnvelopes', { min: 0, fallback: d.history.maxEnvelopes }),
    maxBytes: c.size(hf, hp, 'maxBytes', d.history.maxBytes, false),
    maxResults: c.integer(hf, hp, 'maxResults', { min: 1, fallback: d.history.maxResults }),
  };
  const dp = [...p, 'defaults'];
  const df = c.section(f.get('defaults'), dp, DEFAULTS_KEYS);
  const defaults = {
    capabilities: capabilities(c, df.get('capabilities'), [...dp, 'capabilities']) ?? d.defaults.capabilities,
    observe: c.boolean(df, dp, 'observe', d.defaults.observe),
  };
  const participants: SpaceParticipantConfig[] = [];
  const rawParticipants = f.get('participants');
  if (rawParticipants !== undefined && rawParticipants !== null) {
    const entries = entriesOf(rawParticipants);
    if (entries === undefined)
      c.issue(
        [...p, 'participants'],
        describeValue(rawParticipants),
        'a map from participant id to its settings',
      );
    for (const [id, value] of entries ?? []) {
      const one = participant(c, id, value, [...p, 'participants', id]);
      if (one) participants.push(one);
    }
  }
  checkTokens(c, participants, auth);
  const maxFrameBytes = c.size(f, p, 'maxFrameBytes', d.maxFrameBytes, false);
  return {
    enabled: c.boolean(f, p, 'enabled', d.enabled),
    name,
    protocols: protocols(c, f, p),
    correlation: c.choice(f, p, 'correlation', ['accept', 'strict'], d.correlation),
    context: {
      mode: c.choice(cf, cp, 'mode', ['reject', 'warn'], d.context.mode),
      maxDepth: c.integer(cf, cp, 'maxDepth', { min: 1, max: 64, fallback: d.context.maxDepth }),
      maxLength: c.integer(cf, cp, 'maxLength', { min: 1, max: 65_536, fallback: d.context.maxLength }),
    },
    maxFrameBytes,
    maxBufferedBytes: c.size(f, p, 'maxBufferedBytes', d.maxBufferedBytes, false),
    heartbeatMs: c.duration(f, p, 'heartbeat', d.heartbeatMs, true),
    joinTimeoutMs: c.duration(f, p, 'joinTimeout', d.joinTimeoutMs, false),
    maxConnections: c.integer(f, p, 'maxConnections', { min: 1, fallback: d.maxConnections }),
    maxConnectionsPerParticipant: c.integer(f, p, 'maxConnectionsPerParticipant', {
      min: 1,
      fallback: d.maxConnectionsPerParticipant,
    }),
    maxProposals: c.integer(f, p, 'maxProposals', { min: 1, fallback: d.maxProposals }),
    history,
    defaults,
    participants,
  };
}

/** Every space token is distinct, and none is also a gateway token (one token, one identity). */
function checkTokens(
  c: Checker,
  participants: readonly SpaceParticipantConfig[],
  auth: AuthConfig | undefined,
) {
  const seen = new Map<string, string>();
  const gateway = new Set((auth?.tokens ?? []).map((t) => t.sha256));
  for (const participant of participants) {
    participant.tokens.forEach((t, i) => {
      const at = ['space', 'participants', participant.id, 'tokens', i, 'sha256'];
      const other = seen.get(t.sha256);
      if (other !== undefined)
        c.issue(at, `the same hash as a token of ${other}`, 'a different token for every entry');
      else if (gateway.has(t.sha256))
        c.issue(at, 'the hash of one of auth.tokens', 'a token that is not also a gateway token');
      seen.set(t.sha256, participant.id);
    });
  }
}
