import { describe, expect, it } from 'vitest';
import { readJoinFrame } from './join-frame.js';

describe('readJoinFrame', () => {
  it("reads the MEW client's join frame", () => {
    expect(
      readJoinFrame({
        type: 'join',
        space: 'dev',
        token: 't',
        participantId: 'alice',
        capabilities: [{ kind: 'chat' }],
      }),
    ).toEqual({ kind: 'join', join: { space: 'dev', token: 't', participantId: 'alice' } });
    expect(readJoinFrame({ type: 'join' })).toEqual({ kind: 'join', join: {} });
    expect(readJoinFrame({ type: 'join', token: '', participantId: null })).toEqual({
      kind: 'join',
      join: {},
    });
  });

  it('tells other frames apart and refuses ill-typed fields', () => {
    expect(readJoinFrame({ kind: 'chat' })).toEqual({ kind: 'other' });
    expect(readJoinFrame([1])).toEqual({ kind: 'other' });
    expect(readJoinFrame({ type: 'join', token: 5 })).toMatchObject({ kind: 'invalid' });
    expect(readJoinFrame({ type: 'join', capabilities: 'all' })).toMatchObject({ kind: 'invalid' });
  });
});
