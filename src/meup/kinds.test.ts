import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isKnownKind,
  isSystemKind,
  isValidKind,
  KINDS_REQUIRING_CORRELATION,
  KINDS_REQUIRING_METHOD,
  KNOWN_KINDS,
  kindSyntaxProblem,
  MEUP_V02_KINDS,
  MEW_ADDED_KINDS,
  MEW_IMPLEMENTATION_KINDS,
  requiresCorrelation,
} from './kinds.js';

describe('kind vocabulary', () => {
  it('lists the v0.2 kinds, the later MEW additions and the implementation-only kinds', () => {
    expect(MEUP_V02_KINDS).toContain('capability/grant-ack');
    expect(MEUP_V02_KINDS).toContain('chat');
    expect(MEW_ADDED_KINDS).toContain('participant/compact-done');
    expect(MEW_ADDED_KINDS).toContain('stream/ownership-transferred');
    expect(MEW_IMPLEMENTATION_KINDS).toEqual(['system/heartbeat', 'mcp/notification']);
    expect(KNOWN_KINDS.size).toBe(
      MEUP_V02_KINDS.length + MEW_ADDED_KINDS.length + MEW_IMPLEMENTATION_KINDS.length,
    );
  });

  it('has no join kind: joining is implementation-defined', () => {
    expect(isKnownKind('space/join')).toBe(false);
    expect(isKnownKind('system/join')).toBe(false);
  });

  it('every known kind is syntactically valid (meup.md requirement 4)', () => {
    for (const kind of KNOWN_KINDS) expect(isValidKind(kind), kind).toBe(true);
  });

  it('names the six kinds that MUST carry a correlation (requirement 14)', () => {
    expect([...KINDS_REQUIRING_CORRELATION].sort()).toEqual([
      'chat/acknowledge',
      'chat/cancel',
      'mcp/reject',
      'mcp/response',
      'mcp/withdraw',
      'participant/compact-done',
    ]);
    expect(requiresCorrelation('mcp/request')).toBe(false);
    expect(requiresCorrelation('capability/grant-ack')).toBe(false);
  });

  it('requires a method only for mcp/request and mcp/proposal', () => {
    expect([...KINDS_REQUIRING_METHOD].sort()).toEqual(['mcp/proposal', 'mcp/request']);
  });
});

describe('isSystemKind (requirement 7: system/* is reserved to the gateway)', () => {
  it('matches the system namespace and nothing that merely starts with the letters', () => {
    expect(isSystemKind('system/error')).toBe(true);
    expect(isSystemKind('system/register')).toBe(true);
    expect(isSystemKind('system')).toBe(true);
    expect(isSystemKind('systems/x')).toBe(false);
    expect(isSystemKind('chat')).toBe(false);
    expect(isSystemKind('mcp/system')).toBe(false);
  });
});

describe('kind syntax (requirement 4: slash-separated, not dotted)', () => {
  it.each(['chat', 'mcp/request', 'capability/grant-ack', 'workflow/complete', 'a1/b2-c3'])(
    'accepts %s',
    (kind) => {
      expect(isValidKind(kind)).toBe(true);
    },
  );

  it.each([
    ['', /empty/],
    ['mcp.request', /dotted/],
    ['meup.grant-ack', /dotted/],
    ['/chat', /empty segment/],
    ['chat/', /empty segment/],
    ['mcp//request', /empty segment/],
    ['MCP/request', /lower-case/],
    ['mcp/request:tools/call', /lower-case/],
    ['mcp/re quest', /lower-case/],
    ['mcp/-request', /lower-case/],
    ['mcp/request-', /lower-case/],
    ['mcp/grant--ack', /lower-case/],
    ['1mcp/request', /lower-case/],
    ['mcp/request.v2', /lower-case/],
  ])('rejects %j', (kind, reason) => {
    expect(isValidKind(kind)).toBe(false);
    expect(kindSyntaxProblem(kind)).toMatch(reason);
  });

  it('never accepts a kind containing a dot, a colon or an upper-case letter', () => {
    fc.assert(
      fc.property(fc.string(), (kind) => {
        if (/[.:A-Z]/.test(kind)) expect(isValidKind(kind)).toBe(false);
      }),
    );
  });
});
