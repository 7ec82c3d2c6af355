import { describe, expect, it } from 'vitest';
import type { AddLink, LinkHost } from '../../core/ports.js';
import { LinkStates } from './link-states.js';

/** A host that records what reaches it, to hold `observe` to passing everything on unchanged. */
function recordingHost() {
  const calls: unknown[][] = [];
  const host: LinkHost = {
    addLink: (params) => calls.push(['addLink', params.id]),
    setLinkReady: (id) => calls.push(['setLinkReady', id]),
    linkClosed: (id, close, options) => calls.push(['linkClosed', id, close, options]),
  };
  return { host, calls };
}

const add = (id: string) => ({ id, name: id }) as unknown as AddLink;

describe('LinkStates', () => {
  it('passes every call on, in order, and notes each transition with its time', () => {
    let now = 1_000;
    const states = new LinkStates(() => now);
    const { host, calls } = recordingHost();
    const observed = states.observe(host);
    states.starting('up');
    expect(states.get('up')).toEqual({ phase: 'starting', since: 1_000, restarts: 0 });
    now = 1_100;
    observed.addLink(add('up'));
    expect(states.get('up')?.since).toBe(1_000);
    now = 1_200;
    observed.setLinkReady('up');
    expect(states.get('up')).toEqual({ phase: 'ready', since: 1_200, restarts: 0 });
    now = 2_000;
    observed.linkClosed('up', { reason: 'exited with code 3', code: 3 }, { restarting: true });
    expect(states.get('up')).toEqual({
      phase: 'restarting',
      since: 2_000,
      lastError: 'exited with code 3',
      restarts: 0,
    });
    // A restart that fails before its handshake closes it again: still restarting, since the first close.
    now = 2_500;
    observed.addLink(add('up'));
    observed.linkClosed('up', { reason: 'restart failed: boom' }, { restarting: true });
    expect(states.get('up')).toMatchObject({
      phase: 'restarting',
      since: 2_000,
      lastError: 'restart failed: boom',
    });
    now = 3_000;
    observed.addLink(add('up'));
    observed.setLinkReady('up');
    expect(states.get('up')).toEqual({
      phase: 'ready',
      since: 3_000,
      lastError: 'restart failed: boom',
      restarts: 2,
    });
    expect(calls.map((c) => c[0])).toEqual([
      'addLink',
      'setLinkReady',
      'linkClosed',
      'addLink',
      'linkClosed',
      'addLink',
      'setLinkReady',
    ]);
    expect(calls[2]).toEqual([
      'linkClosed',
      'up',
      { reason: 'exited with code 3', code: 3 },
      { restarting: true },
    ]);
  });

  it('keeps a link that went down down, as the router does, and forgets on request', () => {
    let now = 0;
    const states = new LinkStates(() => now);
    const observed = states.observe(recordingHost().host);
    observed.addLink(add('x'));
    now = 5;
    observed.linkClosed('x', { reason: 'gone' });
    observed.setLinkReady('x');
    expect(states.get('x')).toMatchObject({ phase: 'down', since: 5, lastError: 'gone' });
    states.stopped('x', 'stopped again');
    expect(states.get('x')?.lastError).toBe('gone');
    states.forget('x');
    expect(states.get('x')).toBeUndefined();
    states.stopped('y', 'could not start: ENOENT');
    expect(states.get('y')).toMatchObject({ phase: 'down', lastError: 'could not start: ENOENT' });
  });
});
