import { describe, expect, it } from 'vitest';
import { errorForLegacyClient, errorObjectOf, isModernErrorSignal } from './modern-errors.js';

describe('isModernErrorSignal', () => {
  it('recognises the modern codes in any status, and -32601 only with 404', () => {
    expect(isModernErrorSignal(-32020, 400)).toBe(true);
    expect(isModernErrorSignal(-32021, 400)).toBe(true);
    expect(isModernErrorSignal(-32022, 400)).toBe(true);
    expect(isModernErrorSignal(-32601, 404)).toBe(true);
    expect(isModernErrorSignal(-32601, 200)).toBe(false);
    expect(isModernErrorSignal(-32000, 400)).toBe(false);
    expect(isModernErrorSignal(-32001, 404)).toBe(false);
  });
});

describe('errorObjectOf', () => {
  it('reads error responses only', () => {
    expect(errorObjectOf({ id: 1, error: { code: -1, message: 'm', data: { x: 1 } } })).toEqual({
      code: -1,
      message: 'm',
      data: { x: 1 },
    });
    expect(errorObjectOf({ error: { code: 1.5, message: 'm' } })).toBeUndefined();
    expect(errorObjectOf({ result: {} })).toBeUndefined();
    expect(errorObjectOf('x')).toBeUndefined();
  });
});

describe('errorForLegacyClient', () => {
  it('maps a resource not found back to -32002', () => {
    const error = { code: -32602, message: 'Resource not found', data: { uri: 'test://x' } };
    expect(errorForLegacyClient('resources/read', error, 'up')).toEqual({ ...error, code: -32002 });
    expect(errorForLegacyClient('tools/call', error, 'up')).toBe(error);
    const plain = { code: -32602, message: 'Invalid params' };
    expect(errorForLegacyClient('resources/read', plain, 'up')).toBe(plain);
  });

  it('says what a missing capability, an unsupported version and a header mismatch mean', () => {
    expect(
      errorForLegacyClient(
        'tools/call',
        { code: -32021, message: 'Missing', data: { requiredCapabilities: { sampling: {} } } },
        'up',
      ),
    ).toEqual({
      code: -32021,
      message:
        'upstream up needs the client capabilities sampling, which this session did not declare in initialize (Missing)',
      data: { requiredCapabilities: { sampling: {} } },
    });
    expect(
      errorForLegacyClient(
        'tools/list',
        { code: -32022, message: 'no', data: { supported: ['2027-01-01'] } },
        'up',
      ).message,
    ).toBe(
      'upstream up does not accept protocol 2026-07-28, the version the gateway speaks to modern servers (it supports: 2027-01-01)',
    );
    expect(errorForLegacyClient('tools/call', { code: -32020, message: 'bad' }, 'up').message).toBe(
      "upstream up refused the request's HTTP headers: bad",
    );
  });

  it('passes everything else through, e.g. a legacy-only method the upstream lacks', () => {
    const error = { code: -32601, message: 'Method not found' };
    expect(errorForLegacyClient('completion/complete', error, 'up')).toBe(error);
  });
});
