import { describe, expect, it } from 'vitest';
import { isReservedParticipantId, participantIdProblem } from './participant-id.js';

describe('participant ids', () => {
  it('accepts principals, JWT subjects included', () => {
    for (const id of ['alice', 'auth0|12345', 'bot-7@example.com', 'x'.repeat(256)])
      expect(participantIdProblem(id)).toBeUndefined();
  });

  it('refuses empty, long, spaced and control-character ids', () => {
    for (const id of ['', 'x'.repeat(257), 'a b', 'a\tb', 'a\u0000b'])
      expect(participantIdProblem(id)).toMatch(/1 to 256/);
  });

  it("reserves the gateway's own participants, in any case", () => {
    for (const id of ['gateway', 'GATEWAY', 'system', 'system:gateway', 'server-everything', 'Client-abc'])
      expect(isReservedParticipantId(id)).toBe(true);
    expect(participantIdProblem('server-x')).toMatch(/reserved/);
    expect(isReservedParticipantId('servers')).toBe(false);
  });
});
