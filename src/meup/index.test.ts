import { describe, expect, it } from 'vitest';
import * as meup from './index.js';

describe('the meup barrel', () => {
  it('exports the codec, the correlation and context rules, the kinds, the ids and the types', () => {
    expect(Object.keys(meup).sort()).toEqual(
      [
        // codec.ts
        'DEFAULT_MEUP_CODEC_OPTIONS',
        'ENVELOPE_FIELDS',
        'MAX_ENVELOPE_ID_LENGTH',
        'MeupErrorCode',
        'MeupWarningCode',
        'SNAKE_CASE_KEY',
        'decodeMeupEnvelope',
        'encodeMeupEnvelope',
        'isRfc3339Timestamp',
        'parseMeupEnvelope',
        'serializeMeupEnvelope',
        // context-path.ts
        'ContextIssueCode',
        'DEFAULT_CONTEXT_LIMITS',
        'childContext',
        'contextDepth',
        'contextParent',
        'contextRoot',
        'directChildren',
        'isAncestorContext',
        'isInSubtree',
        'isNestedContext',
        'isValidContext',
        'isValidContextSegment',
        'mainContextOnly',
        'rootContexts',
        'subtree',
        'validateContext',
        // correlation.ts
        'CORRELATION_STRING_COUNTER',
        'CorrelationErrorCode',
        'CorrelationMigration',
        'DEFAULT_CORRELATION_MODE',
        'MAX_CORRELATION_ELEMENT_LENGTH',
        'getSingleCorrelation',
        'mergeCorrelation',
        'normalizeCorrelation',
        'sameCorrelationSet',
        // ids.ts
        'createIdGenerator',
        'idTime',
        'newEnvelopeId',
        // kinds.ts
        'KINDS_REQUIRING_CORRELATION',
        'KINDS_REQUIRING_METHOD',
        'KNOWN_KINDS',
        'MEUP_V02_KINDS',
        'MEW_ADDED_KINDS',
        'MEW_IMPLEMENTATION_KINDS',
        'isKnownKind',
        'isSystemKind',
        'isValidKind',
        'kindSyntaxProblem',
        'requiresCorrelation',
        // types.ts
        'MEUP_PROTOCOL',
        'MEUP_PROTOCOLS',
        'MEW_DIALECTS',
        // wire.ts
        'toWire',
      ].sort(),
    );
  });

  it('decodes what it encodes through the public surface', () => {
    const env: meup.MeupEnvelope = {
      protocol: meup.MEUP_PROTOCOL,
      id: meup.newEnvelopeId(),
      ts: new Date(0).toISOString(),
      from: 'gateway',
      kind: 'chat',
      payload: { text: 'hi' },
    };
    expect(meup.parseMeupEnvelope(meup.serializeMeupEnvelope(env))).toEqual({
      ok: true,
      envelope: env,
      warnings: [],
    });
  });
});
