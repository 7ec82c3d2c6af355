/**
 * The link record driven by a real router: the supervisors' calls (`addLink`, `setLinkReady`,
 * `linkClosed`) reach it as the router's link changes, each transition noted with its time; it
 * turns no per-request observation on.
 */
import { describe, expect, it } from 'vitest';
import type { UpstreamTransport } from '../../core/ports.js';
import { Router } from '../../core/router.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { LinkStates } from './link-states.js';

class Upstream implements UpstreamTransport {
  onmessage?: UpstreamTransport['onmessage'];
  async start(): Promise<void> {}
  send(): undefined {
    return undefined;
  }
  async close(): Promise<void> {}
}

function setup(now: () => number) {
  const states = new LinkStates(now);
  const router = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'up' }),
      notificationLinks: () => [],
      sessionsFor: () => [],
      notificationTargets: () => [],
    },
    logger: new MemoryLogger(),
    metrics: new Metrics(),
    observers: [states],
  });
  const add = (id: string) =>
    router.addLink({
      id,
      name: id,
      transport: new Upstream(),
      transportContext: { kind: 'memory' },
      state: 'starting',
    });
  return { states, router, add };
}

describe('LinkStates', () => {
  it('notes each transition the router reports, with its time, and leaves the per-request path off', () => {
    let now = 1_000;
    const { states, router, add } = setup(() => now);
    expect(router.observations.active).toBe(false);
    states.starting('up');
    expect(states.get('up')).toEqual({ phase: 'starting', since: 1_000, restarts: 0 });
    now = 1_100;
    add('up');
    expect(states.get('up')?.since).toBe(1_000);
    now = 1_200;
    router.setLinkReady('up');
    expect(states.get('up')).toEqual({ phase: 'ready', since: 1_200, restarts: 0 });
    expect(router.linkState('up')).toBe('ready');
    now = 2_000;
    router.linkClosed('up', { reason: 'exited with code 3', code: 3 }, { restarting: true });
    expect(states.get('up')).toEqual({
      phase: 'restarting',
      since: 2_000,
      lastError: 'exited with code 3',
      restarts: 0,
    });
    // A restart that fails before its handshake closes it again: still restarting, since the first close.
    now = 2_500;
    add('up');
    router.linkClosed('up', { reason: 'restart failed: boom' }, { restarting: true });
    expect(states.get('up')).toMatchObject({
      phase: 'restarting',
      since: 2_000,
      lastError: 'restart failed: boom',
    });
    now = 3_000;
    add('up');
    router.setLinkReady('up');
    expect(states.get('up')).toEqual({
      phase: 'ready',
      since: 3_000,
      lastError: 'restart failed: boom',
      restarts: 2,
    });
    expect(router.linkState('up')).toBe('ready');
  });

  it('keeps a link that went down down, as the router does, and forgets on request', () => {
    let now = 0;
    const { states, router, add } = setup(() => now);
    add('x');
    now = 5;
    router.linkClosed('x', { reason: 'gone' });
    router.setLinkReady('x');
    expect(router.linkState('x')).toBe('down');
    expect(states.get('x')).toMatchObject({ phase: 'down', since: 5, lastError: 'gone' });
    states.stopped('x', 'stopped again');
    expect(states.get('x')?.lastError).toBe('gone');
    states.forget('x');
    expect(states.get('x')).toBeUndefined();
    states.stopped('y', 'could not start: ENOENT');
    expect(states.get('y')).toMatchObject({ phase: 'down', lastError: 'could not start: ENOENT' });
  });

  it('a link attached ready (no handshake) is ready at once', () => {
    const { states, router } = setup(() => 7);
    router.addLink({ id: 'r', name: 'r', transport: new Upstream(), transportContext: { kind: 'memory' } });
    expect(states.get('r')).toEqual({ phase: 'ready', since: 7, restarts: 0 });
  });
});
