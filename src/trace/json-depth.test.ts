/**
 * Issue 18, item 1: the highest depth limit a configuration may set (`MAX_JSON_DEPTH_LIMIT`) is
 * one every walker of the gateway survives, with the envelopes a message travels in and from a
 * deep caller's stack: serialising and parsing it, cloning it to the trace worker, redacting it,
 * hashing it for the ledger, the trace's payload guard, the MEUP codec.
 */
import { describe, expect, it } from 'vitest';
import { canonicalize, toWellFormedJson } from '../audit/canonical-json.js';
import { createRedactedCanonicalJson } from '../audit/ledger/redacted-canonical-json.js';
import { redact } from '../audit/redaction.js';
import { meupEnvelope } from '../core/trace-mapping.js';
import { parseMeupEnvelope, serializeMeupEnvelope } from '../meup/codec.js';
import { MAX_JSON_DEPTH_LIMIT, parseJson } from '../protocol/jsonrpc/parse.js';
import type { JsonRpcRequest } from '../protocol/jsonrpc/types.js';
import { PayloadGuard } from './payload-guard.js';

/** Runs `work` below `frames` stack frames of ours, as on the gateway's hot path (and deeper). */
function atDepth<T>(frames: number, work: () => T): T {
  return frames === 0 ? work() : atDepth(frames - 1, work);
}

/** A tools/call nesting exactly `depth` levels, as a client may send at the limit. */
function callAtDepth(depth: number): { message: JsonRpcRequest; json: string } {
  const inner = depth - 3; // the message, params and arguments are three levels
  const text = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"v":${'['.repeat(inner)}"x"${']'.repeat(inner)},"token":"sk-abcdefghijklmnopqrstuvwx"}}}`;
  const parsed = parseJson(text, { maxDepth: depth });
  if (!parsed.ok) throw new Error(parsed.error.message);
  return { message: parsed.value as JsonRpcRequest, json: text };
}

describe('every walker survives the largest depth limit a configuration may set', () => {
  const { message, json } = callAtDepth(MAX_JSON_DEPTH_LIMIT);
  const envelope = meupEnvelope({
    id: 'e1',
    wall: Date.now(),
    from: 'client-a',
    to: 'gateway',
    message,
    context: 'session/e1',
  });
  const FRAMES = 2000;

  it('the limit parses and one more level is refused', () => {
    expect(parseJson(json, { maxDepth: MAX_JSON_DEPTH_LIMIT }).ok).toBe(true);
    expect(parseJson(json, { maxDepth: MAX_JSON_DEPTH_LIMIT - 1 }).ok).toBe(false);
  });

  it('JSON.stringify, JSON.parse and structuredClone (the trace worker’s postMessage)', () => {
    atDepth(FRAMES, () => {
      expect(JSON.stringify(message)).toBe(json);
      expect(JSON.parse(JSON.stringify({ hop: envelope }))).toEqual({
        hop: JSON.parse(JSON.stringify(envelope)),
      });
      expect(structuredClone({ hop: envelope, payload: message })).toEqual({
        hop: envelope,
        payload: message,
      });
    });
  });

  it('the redactor, the RFC 8785 encoder and the ledger’s redacted canonical encoder', () => {
    atDepth(FRAMES, () => {
      const redacted = JSON.stringify(redact(message));
      expect(redacted).not.toContain('sk-abcdefghijklmnopqrstuvwx');
      expect(canonicalize(toWellFormedJson(message, { maxDepth: MAX_JSON_DEPTH_LIMIT + 16 }))).toContain(
        '"t"',
      );
      expect(createRedactedCanonicalJson().encode(message.params)).not.toContain(
        'sk-abcdefghijklmnopqrstuvwx',
      );
    });
  });

  it('the trace’s payload guard and the MEUP codec', () => {
    atDepth(FRAMES, () => {
      const guard = new PayloadGuard();
      const stored = guard.stored({
        payload: message,
        json,
        kind: 'mcp/request',
        method: 'tools/call',
        context: 'session/e1',
        to: 'gateway',
      });
      expect(stored.text).not.toContain('sk-abcdefghijklmnopqrstuvwx');
      const text = serializeMeupEnvelope(envelope);
      const decoded = parseMeupEnvelope(text);
      expect(decoded.ok).toBe(true);
    });
  });
});
