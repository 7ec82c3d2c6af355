// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write ${env:NAME} references.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../load.js';
import type { GatewayConfig } from '../types.js';
import { type ConfigIssue, type ValidateOptions, validateConfig } from '../validate.js';
import { DEFAULT_SPACE_CAPABILITIES, SPACE_DEFAULTS } from './space.js';

const BASE: ValidateOptions = { baseDir: '/etc/switchboard', env: { BOT_HASH: 'b'.repeat(64) } };
const MINIMAL = { upstreams: { everything: { command: 'npx' } } };
const HASH = 'a'.repeat(64);

function valid(raw: unknown): GatewayConfig {
  const result = validateConfig(raw, BASE);
  if (!result.ok) throw new Error(JSON.stringify(result.errors, null, 2));
  return result.config;
}

function invalid(raw: unknown): ConfigIssue[] {
  const result = validateConfig(raw, BASE);
  if (result.ok) throw new Error('expected issues, the configuration is valid');
  return result.errors;
}

const withSpace = (space: unknown, extra: Record<string, unknown> = {}) => ({ ...MINIMAL, ...extra, space });

describe('the space section', () => {
  it('is on with the defaults when absent or empty', () => {
    expect(valid(MINIMAL).space).toEqual(SPACE_DEFAULTS);
    expect(valid(withSpace(null)).space).toEqual(SPACE_DEFAULTS);
    expect(SPACE_DEFAULTS.defaults.capabilities).toBe(DEFAULT_SPACE_CAPABILITIES);
    expect(SPACE_DEFAULTS.protocols).toEqual(['meup/v0.2', 'mew/v0.3', 'mew/v0.4']);
  });

  it('reads every key, in human units', () => {
    const space = valid(
      withSpace({
        enabled: false,
        name: 'team-1',
        protocols: ['meup/v0.2', 'mew/v0.4'],
        correlation: 'strict',
        context: { mode: 'warn', maxDepth: 3, maxLength: 100 },
        maxFrameBytes: '64KiB',
        maxBufferedBytes: '1MiB',
        heartbeat: '10s',
        joinTimeout: '2s',
        maxConnections: 10,
        maxConnectionsPerParticipant: 2,
        maxProposals: 50,
        history: { maxEnvelopes: 0, maxBytes: '1MiB', maxResults: 10 },
        defaults: { capabilities: ['chat'], observe: true },
        participants: {
          alice: {
            capabilities: [{ kind: 'mcp/*', payload: { method: 'tools/*' } }],
            observe: false,
            roles: ['approver'],
          },
          bot: { tokens: [{ sha256: '${env:BOT_HASH}' }] },
        },
      }),
    ).space;
    expect(space).toMatchObject({
      enabled: false,
      name: 'team-1',
      protocols: ['meup/v0.2', 'mew/v0.4'],
      correlation: 'strict',
      context: { mode: 'warn', maxDepth: 3, maxLength: 100 },
      maxFrameBytes: 65_536,
      maxBufferedBytes: 1_048_576,
      heartbeatMs: 10_000,
      joinTimeoutMs: 2000,
      maxConnections: 10,
      maxConnectionsPerParticipant: 2,
      maxProposals: 50,
      history: { maxEnvelopes: 0, maxBytes: 1_048_576, maxResults: 10 },
      defaults: { capabilities: [{ kind: 'chat' }], observe: true },
    });
    expect(space.participants).toEqual([
      {
        id: 'alice',
        capabilities: [{ kind: 'mcp/*', payload: { method: 'tools/*' } }],
        observe: false,
        roles: ['approver'],
        tokens: [],
      },
      { id: 'bot', roles: [], tokens: [{ sha256: 'b'.repeat(64) }] },
    ]);
  });

  it('reads capabilities from YAML (maps, not plain objects)', () => {
    const result = parseConfigText(
      [
        'upstreams: { everything: { command: npx } }',
        'space:',
        '  participants:',
        '    alice:',
        '      capabilities:',
        '        - kind: mcp/request',
        '          payload: { method: tools/call, params: { name: ["read_*", "list_*"] } }',
        '        - chat',
      ].join('\n'),
      { baseDir: '/', env: {} },
    );
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.config.space.participants[0]!.capabilities).toEqual([
      { kind: 'mcp/request', payload: { method: 'tools/call', params: { name: ['read_*', 'list_*'] } } },
      { kind: 'chat' },
    ]);
  });

  it('names what is wrong, where', () => {
    const paths = (space: unknown, extra?: Record<string, unknown>) =>
      invalid(withSpace(space, extra)).map((i) => i.path);
    expect(paths({ protocols: ['meup/v0.3'] })).toEqual(['space.protocols[0]']);
    expect(paths({ protocols: [] })).toEqual(['space.protocols']);
    expect(paths({ correlation: 'loose' })).toEqual(['space.correlation']);
    expect(paths({ context: { mode: 'ignore' } })).toEqual(['space.context.mode']);
    expect(paths({ maxFrameBytes: 0 })).toEqual(['space.maxFrameBytes']);
    expect(paths({ name: 'a b' })).toEqual(['space.name']);
    expect(paths({ participants: { 'server-x': {} } })).toEqual(['space.participants.server-x']);
    expect(paths({ participants: { alice: { capabilities: [{ kind: 'chat', extra: 1 }] } } })).toEqual([
      'space.participants.alice.capabilities[0].extra',
    ]);
    expect(paths({ defaults: { capabilities: [{ kind: '/(/' }] } })).toEqual([
      'space.defaults.capabilities[0].kind',
    ]);
    expect(paths({ participants: { alice: { tokens: [{ sha256: 'sbt_oops' }] } } })).toEqual([
      'space.participants.alice.tokens[0].sha256',
    ]);
    expect(paths({ participants: { alice: { observe: 'yes' } } })).toEqual([
      'space.participants.alice.observe',
    ]);
    expect(paths({ particpants: {} })).toEqual(['space.particpants']);
  });

  it('never echoes a token pasted instead of its hash', () => {
    const [issue] = invalid(
      withSpace({ participants: { alice: { tokens: [{ sha256: 'sbt_secret_value' }] } } }),
    );
    expect(JSON.stringify(issue)).not.toContain('sbt_secret_value');
    // The token itself where the map belongs: one issue, the value not shown.
    const [bare, ...others] = invalid(
      withSpace({ participants: { alice: { tokens: ['sbt_secret_value_pasted_as_is'] } } }),
    );
    expect(others).toEqual([]);
    expect(bare).toMatchObject({
      path: 'space.participants.alice.tokens[0]',
      found: 'a string of 29 characters (not shown)',
    });
    expect(JSON.stringify(bare)).not.toContain('sbt_secret');
  });

  it('wants one token per identity: no hash twice, none shared with auth.tokens', () => {
    const twice = invalid(
      withSpace({ participants: { a: { tokens: [{ sha256: HASH }] }, b: { tokens: [{ sha256: HASH }] } } }),
    );
    expect(twice.map((i) => i.path)).toEqual(['space.participants.b.tokens[0].sha256']);
    const shared = invalid(
      withSpace(
        { participants: { a: { tokens: [{ sha256: HASH }] } } },
        { auth: { tokens: [{ principal: 'p', sha256: HASH, roles: [] }] } },
      ),
    );
    expect(shared.map((i) => i.path)).toEqual(['space.participants.a.tokens[0].sha256']);
  });
});
