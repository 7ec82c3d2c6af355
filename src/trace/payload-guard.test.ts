import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../audit/redaction.js';
import { resultTextOffset } from '../protocol/jsonrpc/result-text.js';
import { type GuardedHop, isOmittedOutput, PayloadGuard } from './payload-guard.js';

const hop = (over: Partial<GuardedHop> & { payload: unknown }): GuardedHop => ({
  json: undefined,
  kind: 'mcp/notification',
  method: null,
  context: null,
  to: undefined,
  ...over,
});

const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('PayloadGuard: output bodies', () => {
  const call = (method: string, context = 's/c1') =>
    hop({ payload: { jsonrpc: '2.0', id: 1, method }, kind: 'mcp/request', method, context });
  const answer = (result: unknown, to: string, context = 's/c1') =>
    hop({ payload: { jsonrpc: '2.0', id: 1, result }, kind: 'mcp/response', context, to: [to] });

  it.each(['tools/call', 'resources/read', 'prompts/get'])(
    'keeps the result of %s as its size and digest',
    (method) => {
      const guard = new PayloadGuard();
      const result = { contents: [{ uri: 'file:///x', text: 'body é' }] };
      guard.text(call(method));
      const body = JSON.stringify(result);
      const expected = {
        jsonrpc: '2.0',
        id: 1,
        result: { _omitted: 'output', bytes: Buffer.byteLength(body), sha256: sha(body) },
      };
      // Upstream to gateway, then gateway to client: both lose the body.
      expect(JSON.parse(guard.text(answer(result, 'gateway')))).toEqual(expected);
      expect(JSON.parse(guard.text(answer(result, 'client-s')))).toEqual(expected);
      // Answered: the context is forgotten.
      expect(JSON.parse(guard.text(answer(result, 'client-s')))).toEqual({ jsonrpc: '2.0', id: 1, result });
    },
  );

  it('keeps the result of other methods, and of other contexts, redacted only', () => {
    const guard = new PayloadGuard();
    guard.text(call('tools/list'));
    guard.text(call('tools/call', 's/other'));
    const result = { tools: [{ name: 'echo' }] };
    expect(JSON.parse(guard.text(answer(result, 'client-s')))).toEqual({ jsonrpc: '2.0', id: 1, result });
  });

  it('marks a tool failure, and redacts an error answer instead of omitting it', () => {
    const guard = new PayloadGuard();
    guard.text(call('tools/call'));
    const failed = JSON.parse(guard.text(answer({ content: [], isError: true }, 'gateway')));
    expect(isOmittedOutput(failed.result)).toBe(true);
    expect(failed.result.isError).toBe(true);
    const error = hop({
      payload: {
        jsonrpc: '2.0',
        id: 1,
        error: { code: -32000, message: 'denied: Bearer abcdefghijklmnopqrstu' },
      },
      kind: 'mcp/response',
      context: 's/c1',
      to: ['client-s'],
    });
    expect(JSON.parse(guard.text(error)).error.message).toBe('denied: Bearer [REDACTED]');
  });

  it('uses the JSON text the transport supplied, so the digest is of what passed', () => {
    const guard = new PayloadGuard();
    guard.text(call('tools/call'));
    const json = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}';
    const out = JSON.parse(guard.text({ ...answer(null, 'client-s'), json }));
    expect(out.result.sha256).toBe(sha('{"content":[{"type":"text","text":"x"}]}'));
  });

  it('keeps everything with mode full, and size markers either way', () => {
    const full = new PayloadGuard({ mode: 'full' });
    full.text(call('tools/call'));
    const result = { content: [{ type: 'text', text: 'body' }], token: 'x' };
    expect(JSON.parse(full.text(answer(result, 'client-s')))).toEqual({ jsonrpc: '2.0', id: 1, result });
    const small = new PayloadGuard({ maxPayloadBytes: 16 });
    expect(JSON.parse(small.text(hop({ payload: { password: 'a long enough secret' } })))).toMatchObject({
      _truncated: true,
    });
  });
});

describe('PayloadGuard: an answer whose result is at a known place', () => {
  const ids = fc.oneof(
    fc.integer(),
    fc.string(),
    fc.constantFrom('ghp_abcdefghijklmnopqrstuvwxyz0123456789'),
  );
  const results = fc.oneof(
    fc.jsonValue(),
    fc.record({
      content: fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), { maxLength: 3 }),
      isError: fc.boolean(),
    }),
    fc.constantFrom({ content: [], isError: true }, { token: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789' }),
  );
  /** What an upstream may have written for a response with this id and result. */
  const upstreamText = (id: unknown, result: unknown): fc.Arbitrary<string> =>
    fc.constantFrom(
      JSON.stringify({ jsonrpc: '2.0', id, result }),
      JSON.stringify({ result, jsonrpc: '2.0', id }),
      JSON.stringify({ jsonrpc: '2.0', id, result }, null, 1),
      JSON.stringify({ jsonrpc: '2.0', id, result, extra: 1 }),
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result, null, 1)}}`,
    );

  it('stores exactly what the general path stores, for both hops of the answer (property)', () => {
    fc.assert(
      fc.property(
        ids,
        ids,
        results,
        fc.boolean(),
        fc.integer({ min: 64, max: 4096 }),
        (clientId, upstreamId, result, operatorRule, maxPayloadBytes) => {
          const options = operatorRule
            ? { maxPayloadBytes, redact: { patterns: ['[0-9]{3}'] } }
            : { maxPayloadBytes };
          return fc.assert(
            fc.property(upstreamText(upstreamId, result), (upstreamJson) => {
              const clientResponse = { jsonrpc: '2.0', id: clientId, result };
              const clientJson = JSON.stringify(clientResponse);
              const resultAt = resultTextOffset(clientJson, clientResponse);
              expect(resultAt).toBeDefined();
              const resultIsError =
                typeof result === 'object' &&
                result !== null &&
                (result as { isError?: unknown }).isError === true;
              const delivered = { json: clientJson, resultAt: resultAt as number, resultIsError };
              const known = new PayloadGuard(options);
              const general = new PayloadGuard(options);
              const request = hop({
                payload: { jsonrpc: '2.0', id: clientId, method: 'tools/call' },
                kind: 'mcp/request',
                method: 'tools/call',
                context: 's/c1',
              });
              known.text(request);
              general.text(request);
              const upstream = {
                payload: JSON.parse(upstreamJson) as unknown,
                json: upstreamJson,
                kind: 'mcp/response',
                method: null,
                context: 's/c1',
                to: ['gateway'],
              };
              expect(known.text({ ...upstream, sameResultAs: delivered, rpcId: upstreamId })).toBe(
                general.text(upstream),
              );
              const answer = {
                payload: clientResponse,
                json: clientJson,
                kind: 'mcp/response',
                method: null,
                context: 's/c1',
                to: ['client-s'],
              };
              expect(known.text({ ...answer, resultAt, resultIsError })).toBe(general.text(answer));
            }),
            { numRuns: 5 },
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('digests the delivered result once for both hops, and never uses another result', () => {
    const guard = new PayloadGuard();
    guard.text(hop({ payload: {}, kind: 'mcp/request', method: 'tools/call', context: 's/c1' }));
    const clientJson = '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}]}}';
    const delivered = { json: clientJson, resultAt: 33, resultIsError: false };
    const other = '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"b"}]}}';
    const stored = JSON.parse(
      guard.text({
        payload: JSON.parse(other),
        json: other,
        kind: 'mcp/response',
        method: null,
        context: 's/c1',
        to: ['gateway'],
        sameResultAs: delivered,
        rpcId: 3,
      }),
    );
    // The upstream said "b", the delivered answer "a": the upstream hop's digest is of its own result.
    expect(stored.result.sha256).toBe(sha('{"content":[{"type":"text","text":"b"}]}'));
    expect(stored.id).toBe(3);
  });
});

describe('PayloadGuard: redaction', () => {
  it('writes exactly what the redactor makes of any message (its shortcut never skips a secret)', () => {
    const redactor = createRedactor({ keepKeys: ['progressToken'] });
    const names = fc.oneof(
      fc.constantFrom(
        'password',
        'api_key',
        'Authorization',
        'to-ken',
        'jwt',
        'progressToken',
        'name',
        'text',
        'se_cret',
      ),
      fc.string(),
    );
    const words = fc.oneof(
      fc.constantFrom(
        'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
        'Bearer abcdefghijklmnop',
        'postgres://u:pw@h/db',
        'plain words',
        'line\nbreak "quoted" \\ back',
      ),
      fc.string(),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        words,
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(names, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(fc.dictionary(names, value, { maxKeys: 5 }), fc.boolean(), (message, withJson) => {
        const guard = new PayloadGuard();
        const json = JSON.stringify(message);
        const stored = guard.text(hop({ payload: message, json: withJson ? json : undefined }));
        expect(JSON.parse(stored)).toEqual(redactor(message));
      }),
      { numRuns: 500 },
    );
  });

  it('writes a message with nothing secret-looking exactly as it came', () => {
    const guard = new PayloadGuard();
    const json =
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}';
    expect(
      guard.stored(hop({ payload: JSON.parse(json), json, kind: 'mcp/request', method: 'tools/call' })),
    ).toEqual({
      text: json,
      changed: false,
    });
  });

  it('applies the operator rules (audit.redact) to every message', () => {
    const guard = new PayloadGuard({ redact: { keys: ['internal_ref'], patterns: ['CASE-[0-9]{6}'] } });
    const out = JSON.parse(guard.text(hop({ payload: { internalRef: 'x', note: 'see CASE-123456' } })));
    expect(out).toEqual({ internalRef: '[REDACTED]', note: 'see [REDACTED]' });
  });

  it('redacts values kept beside payloads unless mode is full', () => {
    expect(new PayloadGuard().value({ name: 'c', token: 's' })).toEqual({ name: 'c', token: '[REDACTED]' });
    expect(new PayloadGuard({ mode: 'full' }).value({ token: 's' })).toEqual({ token: 's' });
  });
});
