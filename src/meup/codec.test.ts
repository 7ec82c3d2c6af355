import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import {
  DEFAULT_MEUP_CODEC_OPTIONS,
  decodeMeupEnvelope,
  ENVELOPE_FIELDS,
  encodeMeupEnvelope,
  isRfc3339Timestamp,
  type MeupCodecError,
  type MeupCodecOptions,
  MeupErrorCode,
  MeupWarningCode,
  parseMeupEnvelope,
  SNAKE_CASE_KEY,
  serializeMeupEnvelope,
} from './codec.js';
import {
  CORRELATION_STRING_COUNTER,
  CorrelationMigration,
  getSingleCorrelation,
  sameCorrelationSet,
} from './correlation.js';
import { KINDS_REQUIRING_CORRELATION } from './kinds.js';
import { MEUP_PROTOCOLS, type MeupEnvelope } from './types.js';
import { toWire } from './wire.js';

type Wire = Record<string, unknown>;

const idArb = fc.stringMatching(/^[A-Za-z0-9_:.-]{1,24}$/);
const segmentArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,10}$/);
const contextArb = fc.array(segmentArb, { minLength: 1, maxLength: 5 }).map((s) => s.join('/'));

/** Valid wire envelopes of every dialect, with and without each optional field. */
const validWire: fc.Arbitrary<Wire> = fc
  .record(
    {
      protocol: fc.constantFrom(...MEUP_PROTOCOLS),
      id: idArb,
      ts: fc
        .date({
          min: new Date('1970-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59Z'),
          noInvalidDate: true,
        })
        .map((d) => d.toISOString()),
      from: idArb,
      to: fc.array(idArb, { maxLength: 3 }),
      kind: fc.constantFrom(
        'chat',
        'reasoning/thought',
        'capability/grant',
        'workflow/complete',
        'mcp/response',
      ),
      correlation_id: fc.array(fc.constantFrom('a', 'b', 'c', 'env-1'), { minLength: 1, maxLength: 5 }),
      context: contextArb,
      payload: fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }),
    },
    { requiredKeys: ['protocol', 'id', 'ts', 'from', 'kind', 'payload', 'correlation_id'] },
  )
  .map((w) => JSON.parse(JSON.stringify(w)) as Wire);

/** A valid v0.2 chat envelope, with `over` merged in; `undefined` in `over` removes a field. */
function wire(over: Wire = {}): Wire {
  const out: Wire = {
    protocol: 'meup/v0.2',
    id: 'env-1',
    ts: '2025-09-03T10:00:00Z',
    from: 'robot-alpha',
    kind: 'chat',
    payload: { text: 'hello', format: 'plain' },
  };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) delete out[key];
    else out[key] = value;
  }
  return out;
}

function envelopeOf(value: unknown, options?: MeupCodecOptions): MeupEnvelope {
  const result = decodeMeupEnvelope(value, options);
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.error)}`);
  return result.envelope;
}

function warningsOf(value: unknown, options?: MeupCodecOptions) {
  const result = decodeMeupEnvelope(value, options);
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.error)}`);
  return result.warnings;
}

function errorOf(value: unknown, options?: MeupCodecOptions): MeupCodecError {
  const result = decodeMeupEnvelope(value, options);
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.envelope)}`);
  return result.error;
}

describe('requirement 1: a single JSON object with the required fields', () => {
  it('decodes a complete envelope into the typed form', () => {
    const env = envelopeOf(
      wire({ to: ['coordinator'], correlation_id: ['env-0'], context: 'workflow-123/step-1' }),
    );
    expect(env).toEqual({
      protocol: 'meup/v0.2',
      id: 'env-1',
      ts: '2025-09-03T10:00:00Z',
      from: 'robot-alpha',
      to: ['coordinator'],
      kind: 'chat',
      correlationId: ['env-0'],
      context: 'workflow-123/step-1',
      payload: { text: 'hello', format: 'plain' },
    });
    expect(warningsOf(wire())).toEqual([]);
  });

  it('leaves the optional fields absent when they are absent', () => {
    const env = envelopeOf(wire());
    expect('to' in env).toBe(false);
    expect('correlationId' in env).toBe(false);
    expect('context' in env).toBe(false);
  });

  it.each([
    [null, 'null'],
    [[wire()], 'an array'],
    ['{"kind":"chat"}', 'a string'],
    [42, 'a number'],
    [undefined, 'undefined'],
  ])('refuses the non-object %j', (value, got) => {
    const error = errorOf(value);
    expect(error.code).toBe(MeupErrorCode.NotAnObject);
    expect(error.message).toContain(got);
    expect(error.envelopeId).toBeUndefined();
  });

  it.each(['protocol', 'id', 'ts', 'from', 'kind', 'payload'])('refuses a missing %s', (field) => {
    const error = errorOf(wire({ [field]: undefined }));
    expect(error).toMatchObject({ code: MeupErrorCode.MissingField, field });
  });

  it('treats an explicit undefined like a missing field (objects built in code)', () => {
    expect(errorOf({ ...wire(), kind: undefined })).toMatchObject({ code: 'missing_field', field: 'kind' });
  });

  it.each([
    ['protocol', 2],
    ['id', 7],
    ['ts', 1_700_000_000],
    ['from', null],
    ['kind', ['chat']],
  ])('refuses %s of the wrong type', (field, value) => {
    expect(errorOf(wire({ [field]: value }))).toMatchObject({ code: MeupErrorCode.InvalidFieldType, field });
  });

  it('names the envelope id in every error once the id is readable', () => {
    expect(errorOf(wire({ kind: undefined })).envelopeId).toBe('env-1');
    expect(errorOf(wire({ protocol: 'meup/v0.1' })).envelopeId).toBe('env-1');
    expect(errorOf(wire({ kind: 'mcp/response' })).envelopeId).toBe('env-1');
    expect(errorOf(wire({ correlationId: ['x'] })).envelopeId).toBe('env-1');
    expect(errorOf(wire({ id: undefined, kind: undefined })).envelopeId).toBeUndefined();
    expect(errorOf(wire({ id: 5, kind: undefined })).envelopeId).toBeUndefined();
    expect(errorOf(wire({ id: 'x'.repeat(300), kind: undefined })).envelopeId).toBeUndefined();
  });

  it('parses text, refusing text that is not JSON with invalid_json', () => {
    const ok = parseMeupEnvelope(JSON.stringify(wire()));
    expect(ok.ok).toBe(true);
    for (const text of ['', '{', '{"protocol":', 'not json', "{'a':1}"]) {
      const result = parseMeupEnvelope(text);
      expect(result).toMatchObject({ ok: false, error: { code: MeupErrorCode.InvalidJson } });
    }
    expect(parseMeupEnvelope('[1]')).toMatchObject({ ok: false, error: { code: 'not_an_object' } });
    expect(parseMeupEnvelope('null')).toMatchObject({ ok: false, error: { code: 'not_an_object' } });
  });

  it('never throws, whatever the value (property)', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const result = decodeMeupEnvelope(value);
        expect(typeof result.ok).toBe('boolean');
      }),
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(typeof parseMeupEnvelope(text).ok).toBe('boolean');
      }),
    );
  });

  it('never throws on near-valid envelopes with one field replaced by anything (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ENVELOPE_FIELDS, 'correlationId'), fc.anything(), (field, value) => {
        const result = decodeMeupEnvelope(wire({ [field]: value }), { acceptCamelCase: true });
        if (!result.ok) expect(Object.values(MeupErrorCode)).toContain(result.error.code);
      }),
    );
  });

  it('does not throw on a hostile object whose getters throw', () => {
    const hostile = new Proxy(wire(), {
      get() {
        throw new Error('boom');
      },
    });
    expect(errorOf(hostile).code).toBe(MeupErrorCode.NotAnObject);
  });
});

describe('requirement 2: the protocol string must match exactly', () => {
  it('accepts only meup/v0.2 by default', () => {
    expect(DEFAULT_MEUP_CODEC_OPTIONS.protocols).toEqual(['meup/v0.2']);
    expect(envelopeOf(wire()).protocol).toBe('meup/v0.2');
  });

  it.each(['meup/v0.1', 'mew/v0.4', 'mew/v0.3', 'MEUP/v0.2', 'meup/v0.2 ', 'meup/v0.20', 'mcpx/v0.1', ''])(
    'refuses %j with a message naming it and the accepted versions',
    (protocol) => {
      const error = errorOf(wire({ protocol }));
      expect(error).toMatchObject({
        code: MeupErrorCode.InvalidProtocol,
        field: 'protocol',
        envelopeId: 'env-1',
      });
      expect(error.message).toContain(JSON.stringify(protocol));
      expect(error.message).toContain('accepted: meup/v0.2');
    },
  );

  it('accepts the MEW dialects when the gateway lists them', () => {
    const options = { protocols: MEUP_PROTOCOLS };
    for (const protocol of ['meup/v0.2', 'mew/v0.3', 'mew/v0.4']) {
      expect(envelopeOf(wire({ protocol }), options).protocol).toBe(protocol);
    }
    const error = errorOf(wire({ protocol: 'mew/v0.5' }), options);
    expect(error.message).toContain('accepted: meup/v0.2, mew/v0.3, mew/v0.4');
  });

  it('truncates a hostile protocol in the message', () => {
    const error = errorOf(wire({ protocol: 'x'.repeat(10_000) }));
    expect(error.message.length).toBeLessThan(200);
  });
});

describe('requirement 3: to is an array of participant ids', () => {
  it('accepts absent, [] (broadcast) and a list', () => {
    expect(envelopeOf(wire()).to).toBeUndefined();
    expect(envelopeOf(wire({ to: [] })).to).toEqual([]);
    expect(envelopeOf(wire({ to: ['a', 'b'] })).to).toEqual(['a', 'b']);
  });

  it('refuses a bare string or another non-array', () => {
    expect(errorOf(wire({ to: 'coordinator' }))).toMatchObject({
      code: MeupErrorCode.InvalidFieldType,
      field: 'to',
    });
    expect(errorOf(wire({ to: null }))).toMatchObject({ code: 'invalid_field_type', field: 'to' });
    expect(errorOf(wire({ to: { 0: 'a' } }))).toMatchObject({ code: 'invalid_field_type', field: 'to' });
  });

  it('refuses elements that are not non-empty strings', () => {
    expect(errorOf(wire({ to: ['a', 1] }))).toMatchObject({ code: MeupErrorCode.InvalidTo, field: 'to' });
    expect(errorOf(wire({ to: [''] })).message).toMatch(/to\[0\].*empty string/);
    expect(errorOf(wire({ to: [null] })).message).toMatch(/to\[0\].*null/);
  });
});

describe('requirement 4: slash-separated kinds', () => {
  it('accepts known and well-formed unknown kinds', () => {
    expect(envelopeOf(wire({ kind: 'capability/grant-ack', correlation_id: ['g1'], payload: {} })).kind).toBe(
      'capability/grant-ack',
    );
    expect(envelopeOf(wire({ kind: 'workflow/complete' })).kind).toBe('workflow/complete');
  });

  it.each(['mcp.request', 'meup.grant-ack', 'Chat', 'mcp/request:tools/call', '', 'chat/'])(
    'refuses %j',
    (kind) => {
      expect(errorOf(wire({ kind }))).toMatchObject({ code: MeupErrorCode.InvalidKind, field: 'kind' });
    },
  );

  it('points dotted kinds to the slash form', () => {
    expect(errorOf(wire({ kind: 'mcp.response' })).message).toMatch(/dotted.*mcp\/request/);
  });

  it('leaves system/* to the gateway, which knows the sender (requirement 7)', () => {
    expect(envelopeOf(wire({ kind: 'system/error', from: 'system:gateway' })).kind).toBe('system/error');
  });
});

describe('requirement 5: snake_case wire keys and the camelCase shim', () => {
  it('refuses correlationId by default, explaining the shim', () => {
    const error = errorOf(wire({ correlationId: ['env-0'] }));
    expect(error).toMatchObject({
      code: MeupErrorCode.CamelCaseField,
      field: 'correlationId',
      envelopeId: 'env-1',
    });
    expect(error.message).toMatch(/correlation_id.*acceptCamelCase/);
  });

  it('refuses correlationId even when correlation_id is also present', () => {
    expect(errorOf(wire({ correlationId: ['a'], correlation_id: ['a'] })).code).toBe('camel_case_field');
  });

  it('reads correlationId as correlation_id through the shim, with a warning', () => {
    const result = decodeMeupEnvelope(wire({ correlationId: ['a', 'a', 'b'] }), { acceptCamelCase: true });
    expect(result).toMatchObject({
      ok: true,
      envelope: { correlationId: ['a', 'b'] },
      warnings: [{ code: MeupWarningCode.CamelCaseAccepted, field: 'correlationId' }],
    });
  });

  it('counts a shimmed string correlation once, even when both spellings carry it', () => {
    const metrics = new Metrics();
    const options: MeupCodecOptions = {
      acceptCamelCase: true,
      migration: new CorrelationMigration({ metrics }),
    };
    decodeMeupEnvelope(wire({ correlationId: 'a' }), options);
    decodeMeupEnvelope(wire({ correlation_id: 'a', correlationId: 'a' }), options);
    expect(metrics.get(CORRELATION_STRING_COUNTER, { sender: 'robot-alpha' })).toBe(2);
  });

  it('applies the correlation mode to the shimmed key too', () => {
    const options: MeupCodecOptions = { acceptCamelCase: true, correlation: 'strict' };
    expect(errorOf(wire({ correlationId: 'a' }), options)).toMatchObject({
      code: 'correlation_string_rejected',
      field: 'correlationId',
    });
    expect(envelopeOf(wire({ correlationId: 'a' }), { acceptCamelCase: true }).correlationId).toEqual(['a']);
  });

  it('accepts both spellings when they name the same set, and refuses them when they differ', () => {
    const options = { acceptCamelCase: true };
    expect(
      envelopeOf(wire({ correlation_id: ['a', 'b'], correlationId: ['b', 'a'] }), options).correlationId,
    ).toEqual(['a', 'b']);
    expect(envelopeOf(wire({ correlation_id: 'a', correlationId: ['a'] }), options).correlationId).toEqual([
      'a',
    ]);
    expect(errorOf(wire({ correlation_id: ['a'], correlationId: ['b'] }), options)).toMatchObject({
      code: MeupErrorCode.CorrelationConflict,
      envelopeId: 'env-1',
    });
    expect(errorOf(wire({ correlation_id: ['a'], correlationId: [1] }), options)).toMatchObject({
      code: 'invalid_correlation_id',
      field: 'correlationId',
    });
  });

  it('drops unknown keys with a warning that says whether they are snake_case', () => {
    const result = decodeMeupEnvelope(
      wire({ priority: 'high', attemptedKind: 'x', Kind: 'chat', _meta: {} }),
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.warnings).toEqual([
      expect.objectContaining({ code: MeupWarningCode.UnknownField, field: 'priority' }),
      expect.objectContaining({ code: MeupWarningCode.NonSnakeCaseField, field: 'attemptedKind' }),
      expect.objectContaining({ code: 'non_snake_case_field', field: 'Kind' }),
      expect.objectContaining({ code: 'non_snake_case_field', field: '_meta' }),
    ]);
    expect(Object.keys(encodeMeupEnvelope(result.envelope))).not.toContain('priority');
  });

  it('summarises a flood of unknown keys in one warning', () => {
    const extra = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`x_${i}`, i]));
    const warnings = warningsOf(wire(extra));
    expect(warnings).toHaveLength(11);
    expect(warnings[10]?.message).toBe('990 more unknown fields dropped');
  });

  it('does not let __proto__ through', () => {
    const env = envelopeOf(
      JSON.parse(
        '{"__proto__":{"polluted":1},"protocol":"meup/v0.2","id":"i","ts":"2025-01-01T00:00:00Z","from":"f","kind":"chat","payload":{}}',
      ),
    );
    expect(Object.hasOwn(encodeMeupEnvelope(env), '__proto__')).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('encodes only snake_case keys (property)', () => {
    fc.assert(
      fc.property(validWire, (w) => {
        const encoded = encodeMeupEnvelope(envelopeOf(w, { protocols: MEUP_PROTOCOLS }));
        for (const key of Object.keys(encoded)) expect(key).toMatch(SNAKE_CASE_KEY);
      }),
    );
  });
});

describe('id, ts, from and payload', () => {
  it('bounds the id to 1..256 characters', () => {
    expect(envelopeOf(wire({ id: 'x'.repeat(256) })).id).toHaveLength(256);
    expect(errorOf(wire({ id: '' }))).toMatchObject({ code: MeupErrorCode.InvalidId, field: 'id' });
    expect(errorOf(wire({ id: 'x'.repeat(257) }))).toMatchObject({ code: 'invalid_id' });
  });

  it('requires an RFC 3339 ts', () => {
    expect(errorOf(wire({ ts: '2025-09-03' }))).toMatchObject({ code: MeupErrorCode.InvalidTs, field: 'ts' });
    expect(envelopeOf(wire({ ts: '2025-09-03T10:00:00.123+02:00' })).ts).toBe(
      '2025-09-03T10:00:00.123+02:00',
    );
  });

  it('requires a non-empty from', () => {
    expect(errorOf(wire({ from: '' }))).toMatchObject({ code: MeupErrorCode.InvalidFrom, field: 'from' });
  });

  it.each([
    [null, 'null'],
    [[], 'an array'],
    ['text', 'a string'],
    [3, 'a number'],
  ])('refuses the payload %j', (payload, got) => {
    const error = errorOf(wire({ payload }));
    expect(error).toMatchObject({ code: MeupErrorCode.InvalidFieldType, field: 'payload' });
    expect(error.message).toContain(got);
  });

  it('keeps the payload as it is, without checking its shape', () => {
    const payload = { anything: [1, { nested: true }], method: 3 };
    expect(envelopeOf(wire({ payload })).payload).toEqual(payload);
    expect(envelopeOf(wire({ payload: {} })).payload).toEqual({});
  });

  it.each(['mcp/request', 'mcp/proposal'])('requires a string payload.method for %s', (kind) => {
    const good = wire({ kind, payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} } });
    expect(envelopeOf(good).payload.method).toBe('tools/call');
    for (const payload of [{}, { method: 3 }, { method: '' }, { method: null }]) {
      expect(errorOf(wire({ kind, payload }))).toMatchObject({
        code: MeupErrorCode.InvalidPayload,
        field: 'payload.method',
        envelopeId: 'env-1',
      });
    }
  });
});

describe('isRfc3339Timestamp', () => {
  it.each([
    '2025-09-03T10:00:00Z',
    '2025-09-03t10:00:00z',
    '2025-09-03T10:00:00.5Z',
    '2025-09-03T10:00:00.123456789Z',
    '2025-09-03T10:00:00+05:30',
    '2025-09-03T10:00:00-00:00',
    '2024-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '1990-12-31T23:59:60Z',
    '0000-01-01T00:00:00Z',
  ])('accepts %s', (ts) => {
    expect(isRfc3339Timestamp(ts)).toBe(true);
  });

  it.each([
    '2025-09-03',
    '2025-09-03T10:00:00',
    '2025-09-03 10:00:00Z',
    '2025-09-03T10:00Z',
    '2025-13-01T00:00:00Z',
    '2025-00-01T00:00:00Z',
    '2025-04-31T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2025-09-03T24:00:00Z',
    '2025-09-03T10:60:00Z',
    '2025-09-03T10:00:61Z',
    '2025-09-03T10:00:00+24:00',
    '2025-09-03T10:00:00+05:60',
    '2025-09-03T10:00:00+0530',
    '2025-09-03T10:00:00.Z',
    '+12025-09-03T10:00:00Z',
    '1756893600',
    '',
  ])('refuses %s', (ts) => {
    expect(isRfc3339Timestamp(ts)).toBe(false);
  });

  it('accepts every Date.toISOString() output of years 0..9999 (property)', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('0000-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59Z'),
          noInvalidDate: true,
        }),
        (date) => {
          expect(isRfc3339Timestamp(date.toISOString())).toBe(true);
        },
      ),
    );
  });
});

describe('requirements 9-12: correlation_id through the codec', () => {
  it('accepts absent, [], one and several ids (requirement 9)', () => {
    expect(envelopeOf(wire()).correlationId).toBeUndefined();
    expect(envelopeOf(wire({ correlation_id: [] })).correlationId).toEqual([]);
    expect(envelopeOf(wire({ correlation_id: ['a'] })).correlationId).toEqual(['a']);
    expect(envelopeOf(wire({ correlation_id: ['a', 'b'] })).correlationId).toEqual(['a', 'b']);
  });

  it('converts a string in accept mode, warns, counts and logs once per sender (requirement 10)', () => {
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const options: MeupCodecOptions = { migration: new CorrelationMigration({ logger, metrics }) };
    const result = decodeMeupEnvelope(wire({ correlation_id: 'env-0' }), options);
    expect(result).toMatchObject({
      ok: true,
      envelope: { correlationId: ['env-0'] },
      warnings: [{ code: MeupWarningCode.CorrelationStringAccepted, field: 'correlation_id' }],
    });
    decodeMeupEnvelope(wire({ correlation_id: 'env-2' }), options);
    decodeMeupEnvelope(wire({ from: 'robot-beta', correlation_id: 'env-3' }), options);
    expect(metrics.get(CORRELATION_STRING_COUNTER, { sender: 'robot-alpha' })).toBe(2);
    expect(metrics.get(CORRELATION_STRING_COUNTER, { sender: 'robot-beta' })).toBe(1);
    expect(logger.entries.map((e) => e.fields.sender)).toEqual(['robot-alpha', 'robot-beta']);
    expect(logger.entries.every((e) => e.level === 'warn' && /deprecated/.test(e.message))).toBe(true);
  });

  it('counts nothing when the envelope carrying a string correlation is refused for any other reason', () => {
    const metrics = new Metrics();
    const options: MeupCodecOptions = { migration: new CorrelationMigration({ metrics }) };
    decodeMeupEnvelope(wire({ correlation_id: 'env-0', kind: 'Bad' }), options);
    decodeMeupEnvelope(wire({ correlation_id: 'env-0', context: '/late' }), options);
    decodeMeupEnvelope(wire({ correlation_id: 'env-0', payload: null }), options);
    expect(metrics.total(CORRELATION_STRING_COUNTER)).toBe(0);
  });

  it('refuses a string in strict mode with a clear error (requirement 10)', () => {
    const error = errorOf(wire({ correlation_id: 'env-0' }), { correlation: 'strict' });
    expect(error).toMatchObject({
      code: MeupErrorCode.CorrelationStringRejected,
      field: 'correlation_id',
      envelopeId: 'env-1',
    });
    expect(error.message).toMatch(/array/);
  });

  it.each([[[1]], [['a', null]], [['a', { id: 'b' }]], [[['a']]], [42], [{ id: 'a' }], [null], [true]])(
    'refuses %j (requirement 11)',
    (correlation_id) => {
      for (const correlation of ['accept', 'strict'] as const) {
        expect(errorOf(wire({ correlation_id }), { correlation })).toMatchObject({
          code: MeupErrorCode.InvalidCorrelationId,
          field: 'correlation_id',
          envelopeId: 'env-1',
        });
      }
    },
  );

  it('deduplicates, so tests compare as sets (requirement 12)', () => {
    const env = envelopeOf(wire({ correlation_id: ['b', 'a', 'b', 'a'] }));
    expect(env.correlationId).toHaveLength(2);
    expect(sameCorrelationSet(env.correlationId, ['a', 'b'])).toBe(true);
  });

  it('keeps every correlation, not only the first (requirement 15)', () => {
    const env = envelopeOf(
      wire({ kind: 'mcp/response', correlation_id: ['r1', 'r2'], payload: { result: {} } }),
    );
    expect(new Set(env.correlationId)).toEqual(new Set(['r1', 'r2']));
    expect(getSingleCorrelation(env)).toBe('r1');
  });

  it('offers getSingleCorrelation on decoded envelopes (requirement 16)', () => {
    expect(getSingleCorrelation(envelopeOf(wire({ correlation_id: ['x'] })))).toBe('x');
    expect(getSingleCorrelation(envelopeOf(wire({ correlation_id: [] })))).toBeUndefined();
    expect(getSingleCorrelation(envelopeOf(wire()))).toBeUndefined();
  });
});

describe('requirement 13: correlation_id is preserved through decode and encode', () => {
  it('round-trips the set (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9-]{1,12}$/), { maxLength: 6 }), (ids) => {
        const out = encodeMeupEnvelope(envelopeOf(wire({ correlation_id: ids })));
        expect(sameCorrelationSet(out.correlation_id, ids)).toBe(true);
        expect(new Set(out.correlation_id).size).toBe(out.correlation_id?.length);
      }),
    );
  });
});

describe('requirement 14: kinds that MUST carry a correlation', () => {
  it.each([...KINDS_REQUIRING_CORRELATION])('refuses %s without one or with []', (kind) => {
    for (const correlation_id of [undefined, []]) {
      const error = errorOf(wire({ kind, correlation_id, payload: {} }));
      expect(error).toMatchObject({
        code: MeupErrorCode.CorrelationRequired,
        field: 'correlation_id',
        envelopeId: 'env-1',
      });
      expect(error.message).toContain(kind);
    }
    expect(envelopeOf(wire({ kind, correlation_id: ['p1'], payload: {} })).correlationId).toEqual(['p1']);
  });

  it('does not require a correlation of other kinds', () => {
    for (const kind of ['chat', 'capability/grant', 'reasoning/thought', 'mcp/proposal']) {
      expect(decodeMeupEnvelope(wire({ kind, payload: { method: 'tools/call' } })).ok).toBe(true);
    }
  });
});

describe('requirements 19-21 and 24: context through the codec', () => {
  it('accepts absent and valid contexts, unchanged', () => {
    expect(envelopeOf(wire()).context).toBeUndefined();
    expect(envelopeOf(wire({ context: 'reason-789/security-check' })).context).toBe(
      'reason-789/security-check',
    );
  });

  it.each([[{ id: 'ctx' }], [['a']], [null], [5]])(
    'refuses the non-string %j in both modes (requirement 19)',
    (context) => {
      for (const mode of ['reject', 'warn'] as const) {
        expect(errorOf(wire({ context }), { context: { mode } })).toMatchObject({
          code: MeupErrorCode.ContextNotString,
          field: 'context',
          envelopeId: 'env-1',
        });
      }
    },
  );

  it.each([
    ['/a', MeupErrorCode.ContextLeadingSlash],
    ['a/', MeupErrorCode.ContextTrailingSlash],
    ['a//b', MeupErrorCode.ContextEmptySegment],
    ['', MeupErrorCode.ContextEmptySegment],
    ['a/b c', MeupErrorCode.ContextInvalidSegment],
    ['a/b/c/d/e/f', MeupErrorCode.ContextTooDeep],
    ['x'.repeat(256), MeupErrorCode.ContextTooLong],
  ])('refuses %j with %s by default (requirements 20, 21)', (context, code) => {
    expect(DEFAULT_MEUP_CODEC_OPTIONS.context.mode).toBe('reject');
    expect(errorOf(wire({ context }))).toMatchObject({ code, field: 'context', envelopeId: 'env-1' });
  });

  it('reports the first violation as the error when there are several', () => {
    expect(errorOf(wire({ context: '/a b' })).code).toBe('context_leading_slash');
  });

  it('keeps an invalid context byte for byte in warn mode, with one warning per violation (requirement 24)', () => {
    const context = '/a//b c/';
    const result = decodeMeupEnvelope(wire({ context }), { context: { mode: 'warn' } });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.envelope.context).toBe(context);
    expect(encodeMeupEnvelope(result.envelope).context).toBe(context);
    expect(result.warnings.map((w) => w.code)).toEqual([
      MeupWarningCode.ContextLeadingSlash,
      MeupWarningCode.ContextTrailingSlash,
      MeupWarningCode.ContextEmptySegment,
      MeupWarningCode.ContextInvalidSegment,
    ]);
    expect(result.warnings.every((w) => w.field === 'context')).toBe(true);
  });

  it('takes the depth and length limits from the options, keeping defaults for what is omitted', () => {
    expect(errorOf(wire({ context: 'a/b/c' }), { context: { maxDepth: 2 } }).code).toBe('context_too_deep');
    expect(envelopeOf(wire({ context: 'a/b/c/d/e/f' }), { context: { maxDepth: 6 } }).context).toBe(
      'a/b/c/d/e/f',
    );
    expect(errorOf(wire({ context: 'abcdef' }), { context: { maxLength: 5 } }).code).toBe('context_too_long');
    expect(errorOf(wire({ context: 'a/b/c/d/e/f' }), { context: { maxLength: 500 } }).code).toBe(
      'context_too_deep',
    );
    expect(warningsOf(wire({ context: 'a/b/c' }), { context: { mode: 'warn', maxDepth: 2 } })).toMatchObject([
      { code: 'context_too_deep' },
    ]);
  });

  it('preserves every context string exactly in warn mode (property, requirement 24)', () => {
    fc.assert(
      fc.property(fc.string(), (context) => {
        const result = decodeMeupEnvelope(wire({ context }), { context: { mode: 'warn' } });
        expect(result.ok).toBe(true);
        if (result.ok)
          expect(serializeMeupEnvelope(result.envelope)).toContain(`"context":${JSON.stringify(context)}`);
      }),
    );
  });
});

describe('requirement 26: reasoning envelopes carry context and correlation independently', () => {
  it('decodes a reasoning flow', () => {
    const start = envelopeOf(
      wire({
        id: 'reason-1',
        kind: 'reasoning/start',
        correlation_id: ['req-9'],
        payload: { message: 'go' },
      }),
    );
    const thought = envelopeOf(
      wire({ id: 'thought-1', kind: 'reasoning/thought', context: start.id, payload: { message: 'hmm' } }),
    );
    const cancel = envelopeOf(
      wire({
        id: 'cancel-1',
        kind: 'reasoning/cancel',
        context: start.id,
        correlation_id: ['thought-1'],
        payload: { reason: 'interrupted' },
      }),
    );
    expect(start).toMatchObject({ correlationId: ['req-9'] });
    expect(start.context).toBeUndefined();
    expect(thought).toMatchObject({ context: 'reason-1' });
    expect(thought.correlationId).toBeUndefined();
    expect(cancel).toMatchObject({ context: 'reason-1', correlationId: ['thought-1'] });
  });
});

describe('encoding', () => {
  const env: MeupEnvelope = {
    protocol: 'meup/v0.2',
    id: 'env-1',
    ts: '2025-09-03T10:00:00Z',
    from: 'robot-alpha',
    to: ['coordinator'],
    kind: 'mcp/response',
    correlationId: ['r1', 'r1', 'r2'],
    context: 'workflow-123/step-1',
    payload: { jsonrpc: '2.0', id: 1, result: {} },
  };

  it('writes snake_case keys in the specification order, deduplicating correlation_id', () => {
    const out = encodeMeupEnvelope(env);
    expect(Object.keys(out)).toEqual([...ENVELOPE_FIELDS]);
    expect(out.correlation_id).toEqual(['r1', 'r2']);
    expect('correlationId' in out).toBe(false);
  });

  it('omits absent optional fields and keeps [] as an array', () => {
    const { to: _to, correlationId: _c, context: _x, ...bare } = env;
    expect(Object.keys(encodeMeupEnvelope(bare))).toEqual([
      'protocol',
      'id',
      'ts',
      'from',
      'kind',
      'payload',
    ]);
    expect(encodeMeupEnvelope({ ...bare, correlationId: [] }).correlation_id).toEqual([]);
  });

  it('agrees with toWire apart from key order and deduplication', () => {
    const unique = { ...env, correlationId: ['r1', 'r2'] };
    expect(encodeMeupEnvelope(unique)).toEqual(toWire(unique));
  });

  it('does not share arrays with the envelope', () => {
    const out = encodeMeupEnvelope(env);
    expect(out.to).not.toBe(env.to);
    expect(out.correlation_id).not.toBe(env.correlationId);
  });

  it('serializes to text that parses back to the same envelope', () => {
    const text = serializeMeupEnvelope(env);
    expect(text.startsWith('{"protocol":"meup/v0.2","id":"env-1"')).toBe(true);
    const back = parseMeupEnvelope(text);
    expect(back).toMatchObject({ ok: true, warnings: [] });
    if (back.ok) expect(back.envelope).toEqual({ ...env, correlationId: ['r1', 'r2'] });
  });

  it('round-trips every valid wire envelope (property)', () => {
    fc.assert(
      fc.property(validWire, (w) => {
        const text = JSON.stringify(w);
        const parsed = parseMeupEnvelope(text, { protocols: MEUP_PROTOCOLS });
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const expected = JSON.parse(text) as Wire;
        if (Array.isArray(expected.correlation_id))
          expected.correlation_id = [...new Set(expected.correlation_id)];
        expect(encodeMeupEnvelope(parsed.envelope)).toEqual(expected);
        expect(
          parseMeupEnvelope(serializeMeupEnvelope(parsed.envelope), { protocols: MEUP_PROTOCOLS }),
        ).toEqual(parsed);
      }),
    );
  });
});

describe('error codes', () => {
  const codes = Object.values(MeupErrorCode);
  const warningCodes = Object.values(MeupWarningCode);

  it('are unique snake_case strings', () => {
    expect(new Set(codes).size).toBe(codes.length);
    expect(new Set(warningCodes).size).toBe(warningCodes.length);
    for (const code of [...codes, ...warningCodes]) expect(code).toMatch(/^[a-z]+(?:_[a-z]+)*$/);
  });

  it('include the codes the gateway relies on', () => {
    expect(codes).toEqual(
      expect.arrayContaining([
        'invalid_json',
        'not_an_object',
        'missing_field',
        'invalid_field_type',
        'invalid_protocol',
        'invalid_kind',
        'invalid_to',
        'invalid_ts',
        'invalid_payload',
        'invalid_correlation_id',
        'correlation_string_rejected',
        'correlation_required',
        'camel_case_field',
        'context_not_string',
        'context_leading_slash',
        'context_trailing_slash',
        'context_empty_segment',
        'context_invalid_segment',
        'context_too_deep',
        'context_too_long',
      ]),
    );
  });

  it('are each documented in docs/meup-codec.md', () => {
    const doc = readFileSync(new URL('../../docs/meup-codec.md', import.meta.url), 'utf8');
    for (const code of [...codes, ...warningCodes]) expect(doc, code).toContain(`\`${code}\``);
  });
});
