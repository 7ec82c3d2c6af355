/**
 * capability/grant, capability/revoke and capability/grant-ack through the space (ADR-g7r): who may
 * grant, what a grant changes (welcome again, then allowed), acknowledgements correlated to
 * grants (several at once), revocation by grant_id or by capabilities.
 */
import { describe, expect, it } from 'vitest';
import { errorsOf, makeSpace } from './test-support/space-kit.js';

function setup() {
  const kit = makeSpace({
    participants: [
      { id: 'admin', capabilities: [{ kind: 'capability/*' }, { kind: 'chat' }] },
      { id: 'bot', capabilities: [{ kind: 'chat' }] },
    ],
  });
  return { ...kit, admin: kit.join('admin'), bot: kit.join('bot') };
}

const grantOf = (to: string, capabilities: unknown[]) => ({
  kind: 'capability/grant',
  to: [to],
  payload: { recipient: to, capabilities, reason: 'test' },
});

describe('capability/grant', () => {
  it('stores the grant, delivers it, welcomes the recipient again, and the recipient may then send', () => {
    const { admin, bot, send } = setup();
    send(bot, { kind: 'reasoning/start', payload: {} });
    expect(errorsOf(bot).map((e) => e.code)).toEqual(['capability_violation']);
    const grant = send(admin, grantOf('bot', [{ kind: 'reasoning/*' }]));
    expect(bot.ofKind('capability/grant').map((e) => e.id)).toEqual([grant.id]);
    const welcomes = bot.ofKind('system/welcome');
    expect(welcomes).toHaveLength(2);
    expect((welcomes[1]!.payload as { you: { capabilities: unknown[] } }).you.capabilities).toEqual([
      { kind: 'chat' },
      { kind: 'reasoning/*' },
    ]);
    send(bot, { kind: 'reasoning/start', payload: {} });
    expect(errorsOf(bot)).toHaveLength(1);
    expect(admin.ofKind('reasoning/start')).toHaveLength(1);
  });

  it('is refused to those without a grant capability, and for invalid grants', () => {
    const { admin, bot, send } = setup();
    send(bot, grantOf('bot', [{ kind: '**' }]));
    send(admin, grantOf('nobody', [{ kind: 'chat' }]));
    send(admin, grantOf('server-everything', [{ kind: 'chat' }]));
    send(admin, grantOf('bot', [{ kind: 'chat', payload: { text: '/^a+$/' } }]));
    send(admin, grantOf('bot', [{ nope: 1 }]));
    send(admin, grantOf('bot', []));
    send(admin, { kind: 'capability/grant', payload: { capabilities: [{ kind: 'chat' }] } });
    expect(errorsOf(bot).map((e) => e.code)).toEqual(['capability_violation']);
    expect(errorsOf(admin).map((e) => e.code)).toEqual([
      'unknown_participant',
      'unknown_participant',
      'invalid_capability',
      'invalid_capability',
      'invalid_payload',
      'invalid_payload',
    ]);
  });

  it('never lets a grant open system/*', () => {
    const { admin, bot, send } = setup();
    send(admin, grantOf('bot', [{ kind: 'system/*' }]));
    send(bot, { kind: 'system/welcome' });
    expect(errorsOf(bot).map((e) => e.code)).toEqual(['reserved_kind']);
  });
});

describe('capability/grant-ack', () => {
  it('acknowledges one or several grants given to the sender, correlated to them, without a capability for it', () => {
    const { admin, bot, send } = setup();
    const g1 = send(admin, grantOf('bot', [{ kind: 'a' }]));
    const g2 = send(admin, grantOf('bot', [{ kind: 'b' }]));
    // bot's configured capabilities do not include capability/grant-ack: acknowledging its own grants is always allowed.
    send(bot, {
      kind: 'capability/grant-ack',
      to: ['admin'],
      correlation_id: [g1.id, g2.id],
      payload: { status: 'accepted' },
    });
    const ack = admin.ofKind('capability/grant-ack');
    expect(ack).toHaveLength(1);
    expect(new Set(ack[0]!.correlation_id as string[])).toEqual(new Set([g1.id, g2.id]));
    expect(ack[0]!.from).toBe('bot');
  });

  it('refuses acknowledging grants given to someone else, or none', () => {
    const kit = setup();
    const carol = kit.join('carol');
    const g = kit.send(kit.admin, grantOf('bot', [{ kind: 'a' }]));
    kit.send(carol, {
      kind: 'capability/grant-ack',
      correlation_id: [g.id],
      payload: { status: 'accepted' },
    });
    kit.send(kit.bot, { kind: 'capability/grant-ack', correlation_id: [g.id, 'other'], payload: {} });
    kit.send(kit.bot, { kind: 'capability/grant-ack', payload: {} });
    // carol holds capability/grant-ack (the defaults), bot does not (only its own grants).
    expect(errorsOf(carol).map((e) => e.code)).toEqual(['invalid_correlation']);
    expect(errorsOf(kit.bot).map((e) => e.code)).toEqual(['capability_violation', 'capability_violation']);
    const granted = makeSpace({ defaults: [{ kind: 'capability/grant-ack' }, { kind: 'capability/grant' }] });
    const a = granted.join('a');
    const b = granted.join('b');
    const g2 = granted.send(a, grantOf('a', [{ kind: 'x' }]));
    granted.send(b, { kind: 'capability/grant-ack', correlation_id: [g2.id], payload: {} });
    granted.send(b, { kind: 'capability/grant-ack', payload: {} });
    expect(errorsOf(b).map((e) => e.code)).toEqual(['invalid_correlation', 'invalid_correlation']);
  });
});

describe('capability/revoke', () => {
  it('removes a grant by grant_id and welcomes the recipient again', () => {
    const { admin, bot, send } = setup();
    const g = send(admin, grantOf('bot', [{ kind: 'reasoning/*' }]));
    send(admin, { kind: 'capability/revoke', to: ['bot'], payload: { recipient: 'bot', grant_id: g.id } });
    expect(bot.ofKind('system/welcome')).toHaveLength(3);
    send(bot, { kind: 'reasoning/start', payload: {} });
    expect(errorsOf(bot).map((e) => e.code)).toEqual(['capability_violation']);
    send(admin, { kind: 'capability/revoke', payload: { recipient: 'bot', grant_id: g.id } });
    expect(errorsOf(admin).map((e) => e.code)).toEqual(['unknown_grant']);
  });

  it('removes given capabilities from every grant; configured ones are not revocable', () => {
    const { admin, bot, send } = setup();
    send(admin, grantOf('bot', [{ kind: 'a' }, { kind: 'b', payload: { x: 1 } }]));
    send(admin, grantOf('bot', [{ payload: { x: 1 }, kind: 'b' }]));
    send(admin, {
      kind: 'capability/revoke',
      payload: { recipient: 'bot', capabilities: [{ kind: 'b', payload: { x: 1 } }] },
    });
    const you = (bot.ofKind('system/welcome').at(-1)!.payload as { you: { capabilities: unknown[] } }).you;
    expect(you.capabilities).toEqual([{ kind: 'chat' }, { kind: 'a' }]);
    send(admin, {
      kind: 'capability/revoke',
      payload: { recipient: 'bot', capabilities: [{ kind: 'chat' }] },
    });
    send(admin, { kind: 'capability/revoke', payload: { recipient: 'bot' } });
    send(admin, {
      kind: 'capability/revoke',
      payload: { recipient: 'bot', grant_id: 'x', capabilities: [] },
    });
    expect(errorsOf(admin).map((e) => e.code)).toEqual([
      'nothing_to_revoke',
      'invalid_payload',
      'invalid_payload',
    ]);
  });
});
