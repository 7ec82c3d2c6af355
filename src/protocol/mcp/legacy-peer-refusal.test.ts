import { describe, expect, it } from 'vitest';
import type { JsonRpcRequest } from '../jsonrpc/types.js';
import { legacyPeerRefusal } from './legacy-peer-refusal.js';

/** What a 2026-07-28 client puts in every request's `_meta`. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
};

describe('legacyPeerRefusal', () => {
  const retry = (params: Record<string, unknown>): JsonRpcRequest => ({
    jsonrpc: '2.0',
    id: 9,
    method: 'tools/call',
    params: { name: 'echo', ...params, _meta: ENVELOPE },
  });

  it('refuses a requestState with -32602, naming the upstream', () => {
    const refusal = legacyPeerRefusal(retry({ requestState: 'theirs', inputResponses: {} }), 'files');
    expect(refusal).toMatchObject({ code: -32602, data: { upstream: 'files' } });
    expect(refusal?.message).toMatch(/^Invalid or expired requestState: upstream files /);
    // Whatever its type: a state is a claim to resume a call either way.
    expect(legacyPeerRefusal(retry({ requestState: 42 }), 'files')?.code).toBe(-32602);
  });

  it('lets everything else through, inputResponses alone included', () => {
    expect(legacyPeerRefusal(retry({ inputResponses: { a: {} } }), 'files')).toBeUndefined();
    expect(legacyPeerRefusal(retry({}), 'files')).toBeUndefined();
    expect(legacyPeerRefusal({ jsonrpc: '2.0', id: 1, method: 'ping' }, 'files')).toBeUndefined();
  });

  it("never judges a 2025 client's request (no envelope): its params are its own", () => {
    const legacy: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: 10,
      method: 'acme/resume',
      params: { requestState: 'acme-1' },
    };
    expect(legacyPeerRefusal(legacy, 'files')).toBeUndefined();
  });
});
