import { describe, expect, it } from 'vitest';
import {
  envelopeVersion,
  hasModernEnvelope,
  prepareParams,
  type SessionEnvelope,
} from './request-envelope.js';

const SESSION: SessionEnvelope = {
  clientInfo: { name: 'gw', version: '1' },
  clientCapabilities: { sampling: {} },
  logLevel: 'warning',
};
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('prepareParams', () => {
  it('adds the session envelope to a legacy request, keeping its own _meta keys', () => {
    const params = { name: 't', _meta: { progressToken: 3 } };
    const prepared = prepareParams(params, SESSION);
    expect(prepared).toEqual({
      modern: false,
      params: {
        name: 't',
        _meta: {
          progressToken: 3,
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'gw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
          'io.modelcontextprotocol/logLevel': 'warning',
        },
      },
    });
    expect(params).toEqual({ name: 't', _meta: { progressToken: 3 } });
  });

  it('gives a request without params an envelope, and no clientInfo or level before they are known', () => {
    expect(prepareParams(undefined, { clientCapabilities: {} })).toEqual({
      modern: false,
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
  });

  it("keeps a modern request's own envelope, only taking out the forwarded headers", () => {
    const forwarded = { 'mcp-param-region': 'eu' };
    const prepared = prepareParams(
      { name: 't', _meta: { ...MODERN_META, 'switchboard.dev/forwardHeaders': forwarded } },
      SESSION,
    );
    expect(prepared).toEqual({ modern: true, forwarded, params: { name: 't', _meta: MODERN_META } });
  });

  it("takes every gateway member out of a modern request's body", () => {
    const prepared = prepareParams(
      { _meta: { ...MODERN_META, 'switchboard.dev/forwardHeaders': {}, 'Switchboard.dev/x': 1 } },
      SESSION,
    );
    expect(prepared).toEqual({ modern: true, forwarded: {}, params: { _meta: MODERN_META } });
  });

  it('drops the forward key of a legacy request unread: only the modern endpoint sets it, on modern ones', () => {
    const prepared = prepareParams(
      { _meta: { 'switchboard.dev/forwardHeaders': { 'mcp-param-a': '1' }, 'switchboard.dev/x': 1 } },
      SESSION,
    );
    expect(prepared).not.toHaveProperty('forwarded');
    expect(Object.keys(prepared?.params._meta as object).filter((k) => k.startsWith('switchboard'))).toEqual(
      [],
    );
  });

  it("gives a legacy request exactly the session's envelope, not 2026-07-28 members of its own", () => {
    const prepared = prepareParams(
      {
        _meta: {
          progressToken: 1,
          'io.modelcontextprotocol/clientInfo': { name: 'forged', version: '0' },
          'io.modelcontextprotocol/logLevel': 'debug',
        },
      },
      { clientCapabilities: {} },
    );
    expect(prepared?.params._meta).toEqual({
      progressToken: 1,
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    });
  });

  it('refuses array params', () => {
    expect(prepareParams([1], SESSION)).toBeUndefined();
  });
});

describe('envelope helpers', () => {
  it('tells modern requests and reads their version', () => {
    expect(hasModernEnvelope({ _meta: MODERN_META })).toBe(true);
    expect(hasModernEnvelope({ _meta: {} })).toBe(false);
    expect(hasModernEnvelope(undefined)).toBe(false);
    expect(envelopeVersion({ _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } })).toBe(
      '2099-01-01',
    );
    expect(envelopeVersion({})).toBe('2026-07-28');
  });
});
