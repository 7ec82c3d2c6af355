import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../config/defaults.js';
import type { SessionsConfig } from '../../../config/types.js';
import { isIdle, type RegisteredSession, SessionRegistry } from './session-registry.js';

/** A session as the registry reads it; the tests change its activity as a real one would. */
interface TestSession extends RegisteredSession {
  lastActivity: number;
  busy: boolean;
  openStreams: number;
}

let counter = 0;
function session(principal: string, state: Partial<TestSession> = {}): TestSession {
  counter++;
  return {
    principal,
    mcpSessionId: `s${counter}`,
    createdAt: 0,
    lastActivity: 0,
    busy: false,
    openStreams: 0,
    ...state,
  };
}

function config(maxSessions: number, maxSessionsPerPrincipal: number): SessionsConfig {
  return { ...DEFAULTS.sessions, mode: 'lenient', maxSessions, maxSessionsPerPrincipal };
}

describe('SessionRegistry at its limits', () => {
  it('makes room by naming the principal’s least recently active idle session', () => {
    const registry = new SessionRegistry<TestSession>(config(100, 3));
    const streaming = session('local', { lastActivity: 1, openStreams: 1 });
    const calling = session('local', { lastActivity: 2, busy: true });
    const idle = session('local', { lastActivity: 5 });
    for (const s of [streaming, calling, idle]) registry.add(s);
    expect(registry.admit('local')).toEqual({ ok: true, evict: idle, limit: 'principal' });
    // Another principal is not affected by local's limit.
    expect(registry.admit('alice')).toEqual({ ok: true });
  });

  it('refuses when every session of the principal is busy or streaming', () => {
    const registry = new SessionRegistry<TestSession>(config(100, 2));
    registry.add(session('local', { busy: true }));
    registry.add(session('local', { openStreams: 2 }));
    expect(registry.admit('local')).toMatchObject({ ok: false, status: 429, limit: 'principal' });
  });

  it('at the gateway’s total, evicts only the asking principal’s own idle sessions', () => {
    const registry = new SessionRegistry<TestSession>(config(2, 10));
    const alices = session('alice', { lastActivity: 1 });
    const bobs = session('bob', { lastActivity: 9 });
    registry.add(alices);
    registry.add(bobs);
    expect(registry.admit('bob')).toEqual({ ok: true, evict: bobs, limit: 'gateway' });
    expect(registry.admit('carol')).toMatchObject({ ok: false, status: 503, limit: 'gateway' });
  });

  it('counts per principal as sessions come and go', () => {
    const registry = new SessionRegistry<TestSession>(config(10, 10));
    const a = session('local');
    const b = session('local');
    registry.add(a);
    registry.add(b);
    expect(registry.countOf('local')).toBe(2);
    registry.remove(a);
    registry.remove(a);
    expect(registry.countOf('local')).toBe(1);
    expect(registry.wasEnded('local', a.mcpSessionId)).toBe(true);
  });
});

type Op =
  | { kind: 'open'; principal: string; busy: boolean; streams: number; at: number }
  | { kind: 'change'; pick: number; busy: boolean; streams: number; at: number }
  | { kind: 'end'; pick: number };

const principal = fc.constantFrom('local', 'alice', 'bob');
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('open' as const),
      principal,
      busy: fc.boolean(),
      streams: fc.integer({ min: 0, max: 2 }),
      at: fc.nat(1000),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('change' as const),
      pick: fc.nat(),
      busy: fc.boolean(),
      streams: fc.integer({ min: 0, max: 2 }),
      at: fc.nat(1000),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ kind: fc.constant('end' as const), pick: fc.nat() }), weight: 1 },
);

describe('SessionRegistry against a model (property)', () => {
  it('never exceeds a limit, evicts only idle sessions of the asker (the least recently active), and refuses only when it has none', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(op, { maxLength: 80 }),
        (maxSessions, perPrincipal, ops) => {
          const registry = new SessionRegistry<TestSession>(config(maxSessions, perPrincipal));
          const model: TestSession[] = [];
          for (const o of ops) {
            if (o.kind === 'end' || o.kind === 'change') {
              const s = model[o.pick % Math.max(1, model.length)];
              if (s === undefined) continue;
              if (o.kind === 'end') {
                registry.remove(s);
                model.splice(model.indexOf(s), 1);
              } else Object.assign(s, { busy: o.busy, openStreams: o.streams, lastActivity: o.at });
              continue;
            }
            const own = model.filter((s) => s.principal === o.principal);
            const atLimit = own.length >= perPrincipal || model.length >= maxSessions;
            const idle = own.filter(isIdle);
            const verdict = registry.admit(o.principal);
            if (!atLimit) expect(verdict).toEqual({ ok: true });
            else if (idle.length === 0) expect(verdict.ok).toBe(false);
            else {
              if (!verdict.ok || !('evict' in verdict)) throw new Error('expected an eviction');
              expect(verdict.evict.principal).toBe(o.principal);
              expect(isIdle(verdict.evict)).toBe(true);
              expect(verdict.evict.lastActivity).toBe(Math.min(...idle.map((s) => s.lastActivity)));
              registry.remove(verdict.evict);
              model.splice(model.indexOf(verdict.evict), 1);
            }
            if (verdict.ok) {
              const opened = session(o.principal, {
                busy: o.busy,
                openStreams: o.streams,
                lastActivity: o.at,
              });
              registry.add(opened);
              model.push(opened);
            }
            expect(registry.size).toBe(model.length);
            expect(registry.size).toBeLessThanOrEqual(maxSessions);
            for (const p of ['local', 'alice', 'bob']) {
              const count = model.filter((s) => s.principal === p).length;
              expect(registry.countOf(p)).toBe(count);
              expect(count).toBeLessThanOrEqual(perPrincipal);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
