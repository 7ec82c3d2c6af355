import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ReadinessSnapshot,
  readinessOf,
  TRACE_FAILURE_HOLD_MS,
  type UpstreamReadyState,
  type UpstreamStatus,
} from './readiness.js';

const NOW = Date.parse('2026-11-28T12:00:00Z');

function upstream(
  name: string,
  state: UpstreamReadyState,
  extra: Partial<UpstreamStatus> = {},
): UpstreamStatus {
  return { name, state, required: false, restarts: 0, ...extra };
}

function snapshot(extra: Partial<ReadinessSnapshot> = {}): ReadinessSnapshot {
  return { now: NOW, draining: false, upstreams: [upstream('a', 'ready'), upstream('b', 'ready')], ...extra };
}

describe('readinessOf', () => {
  it('is ready when every part is: upstreams ready, ledger and trace healthy, not draining', () => {
    const r = readinessOf(
      snapshot({ ledger: { healthy: true }, trace: { consecutiveFailures: 0, overflowing: false } }),
    );
    expect(r).toEqual({
      status: 'ready',
      problems: [],
      degraded: [],
      upstreams: { serving: 2, total: 2 },
      ledger: 'ok',
      trace: 'ok',
    });
  });

  it('is degraded, not unready, when an upstream that is not required is restarting and another serves', () => {
    const since = NOW - 4_000;
    const r = readinessOf(
      snapshot({
        upstreams: [
          upstream('a', 'ready'),
          upstream('b', 'restarting', { since, lastError: 'exited with code 1', era: 'legacy', restarts: 2 }),
        ],
      }),
    );
    expect(r.status).toBe('degraded');
    expect(r.problems).toEqual([]);
    expect(r.degraded).toEqual([
      {
        name: 'b',
        state: 'restarting',
        required: false,
        era: 'legacy',
        since: new Date(since).toISOString(),
        lastError: 'exited with code 1',
        restarts: 2,
      },
    ]);
  });

  it('is not ready when a required upstream cannot serve, naming it', () => {
    const r = readinessOf(
      snapshot({
        upstreams: [upstream('a', 'ready'), upstream('b', 'down', { required: true, lastError: 'gone' })],
      }),
    );
    expect(r.status).toBe('not_ready');
    expect(r.problems).toEqual([
      { check: 'upstream', upstream: 'b', message: 'required upstream b is down: gone' },
    ]);
    expect(r.degraded.map((d) => d.name)).toEqual(['b']);
  });

  it('is not ready when no upstream can serve, required or not', () => {
    const r = readinessOf(snapshot({ upstreams: [upstream('a', 'restarting'), upstream('b', 'starting')] }));
    expect(r.status).toBe('not_ready');
    expect(r.problems).toEqual([
      { check: 'upstreams', message: 'no upstream can serve (a: restarting, b: starting)' },
    ]);
  });

  it('counts an idle upstream (per-session, nothing running) as able to serve', () => {
    const r = readinessOf(snapshot({ upstreams: [upstream('a', 'idle', { required: true })] }));
    expect(r.status).toBe('ready');
    expect(r.upstreams).toEqual({ serving: 1, total: 1 });
  });

  it('is not ready while the ledger fails closed, with its reason', () => {
    const r = readinessOf(snapshot({ ledger: { healthy: false, reason: 'low-space' } }));
    expect(r.status).toBe('not_ready');
    expect(r.ledger).toBe('failing_closed');
    expect(r.problems).toEqual([
      {
        check: 'ledger',
        message: 'the audit ledger fails closed (low-space): calls of tier T1 and above are refused',
      },
    ]);
  });

  it('is not ready while draining, whatever else holds', () => {
    const r = readinessOf(snapshot({ draining: true }));
    expect(r.status).toBe('not_ready');
    expect(r.problems[0]?.check).toBe('draining');
  });

  it('holds a failed trace write against readiness for a bounded time only', () => {
    const failing = (ago: number) =>
      readinessOf(
        snapshot({ trace: { consecutiveFailures: 3, lastFailureAt: NOW - ago, overflowing: false } }),
      );
    expect(failing(0).status).toBe('not_ready');
    expect(failing(0).trace).toBe('failing');
    expect(failing(TRACE_FAILURE_HOLD_MS - 1).status).toBe('not_ready');
    expect(failing(TRACE_FAILURE_HOLD_MS).status).toBe('ready');
    // A success since (no failure in a row) is healthy however recent the failure was.
    expect(
      readinessOf(snapshot({ trace: { consecutiveFailures: 0, lastFailureAt: NOW, overflowing: false } }))
        .trace,
    ).toBe('ok');
  });

  it('is degraded while the trace drops records for a full buffer', () => {
    const r = readinessOf(snapshot({ trace: { consecutiveFailures: 0, overflowing: true } }));
    expect(r.status).toBe('degraded');
    expect(r.trace).toBe('dropping');
  });

  it('reports off for a ledger and a trace the configuration turned off', () => {
    const r = readinessOf(snapshot());
    expect([r.ledger, r.trace]).toEqual(['off', 'off']);
  });

  it('bounds a long last error', () => {
    const r = readinessOf(
      snapshot({
        upstreams: [upstream('a', 'ready'), upstream('b', 'down', { lastError: 'x'.repeat(5000) })],
      }),
    );
    expect(r.degraded[0]?.lastError?.length).toBeLessThanOrEqual(301);
  });

  it('is not_ready exactly when it names a problem, and lists every upstream that cannot serve', () => {
    const state = fc.constantFrom<UpstreamReadyState>('ready', 'starting', 'restarting', 'down', 'idle');
    const arbitrary = fc.record({
      draining: fc.boolean(),
      upstreams: fc.uniqueArray(
        fc.record({ name: fc.string({ minLength: 1 }), state, required: fc.boolean() }),
        { selector: (u) => u.name, maxLength: 5 },
      ),
      ledgerHealthy: fc.option(fc.boolean()),
    });
    fc.assert(
      fc.property(arbitrary, (s) => {
        const r = readinessOf({
          now: NOW,
          draining: s.draining,
          upstreams: s.upstreams.map((u) => ({ ...u, restarts: 0 })),
          ...(s.ledgerHealthy === null ? {} : { ledger: { healthy: s.ledgerHealthy } }),
        });
        expect(r.status === 'not_ready').toBe(r.problems.length > 0);
        const unable = s.upstreams.filter((u) => u.state !== 'ready' && u.state !== 'idle');
        expect(r.degraded.map((d) => d.name)).toEqual(unable.map((u) => u.name));
        const expectNotReady =
          s.draining ||
          s.ledgerHealthy === false ||
          unable.some((u) => u.required) ||
          (s.upstreams.length > 0 && unable.length === s.upstreams.length);
        expect(r.status === 'not_ready').toBe(expectNotReady);
        if (!expectNotReady) expect(r.status).toBe(unable.length > 0 ? 'degraded' : 'ready');
      }),
    );
  });
});
