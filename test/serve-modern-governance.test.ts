/**
 * Issue 6: "the ledger and policy work the same" for 2026-07-28 clients, which have no session.
 * A modern client authenticated as bob calls tools of server-everything over raw HTTP: policy
 * allows one tool, denies another (-32003, and the tool is missing from bob's tools/list); after
 * shutdown the ledger names bob as client_id and each call's JSON-RPC id as request_id.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVERYTHING, makeToken, tempDir } from './support/cli.js';
import { startServe, stdioUpstreamConfig } from './support/serve.js';
import { messagesOf, post } from './support/sse-client.js';

const MODERN = '2026-07-28';

function modernCall(id: number, method: string, params: Record<string, unknown>, name?: string) {
  const headers: Record<string, string> = { 'mcp-protocol-version': MODERN, 'mcp-method': method };
  if (name !== undefined) headers['mcp-name'] = name;
  const body = {
    jsonrpc: '2.0',
    id,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };
  return { headers, body };
}

describe('policy and the ledger for 2026-07-28 clients', () => {
  it('decide and record modern calls by principal and JSON-RPC id, as for sessions', async () => {
    const bob = await makeToken('bob');
    const dataDir = tempDir('switchboard-modern-governance-');
    const extra = [
      'auth:',
      '  tokens:',
      bob.yaml,
      'policy:',
      '  rules:',
      '    - { id: no-sums, upstream: everything, tool: get-sum, principals: [bob], action: deny }',
      '',
    ].join('\n');
    const serve = await startServe({
      dataDir,
      configYaml: stdioUpstreamConfig({ everything: { script: EVERYTHING, args: ['stdio'] } }, extra),
    });
    const auth = { authorization: `Bearer ${bob.token}` };
    const call = async (id: number, method: string, params: Record<string, unknown>, name?: string) => {
      const { headers, body } = modernCall(id, method, params, name);
      const response = await post(serve.url, body, { ...auth, ...headers });
      expect(response.status, response.text).toBe(200);
      return messagesOf(response).find((m) => m.id === id) as Record<string, unknown>;
    };
    try {
      const listed = (await call(7, 'tools/list', {})).result as { tools: { name: string }[] };
      expect(listed.tools.map((t) => t.name)).toContain('echo');
      expect(listed.tools.map((t) => t.name)).not.toContain('get-sum');
      const echoed = await call(8, 'tools/call', { name: 'echo', arguments: { message: 'hi' } }, 'echo');
      expect(echoed.result).toMatchObject({ content: [{ type: 'text', text: 'Echo: hi' }] });
      const denied = await call(9, 'tools/call', { name: 'get-sum', arguments: { a: 1, b: 2 } }, 'get-sum');
      expect(denied.error).toMatchObject({ code: -32003 });
    } finally {
      await serve.stop();
    }
    const ledger = join(dataDir, 'audit');
    const records = readdirSync(ledger)
      .filter((f) => /^ledger-\d+\.jsonl$/.test(f))
      .flatMap((f) => readFileSync(join(ledger, f), 'utf8').split('\n').filter(Boolean))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((r) => r.method === 'tools/call');
    expect(records.map((r) => [r.client_id, r.request_id, r.target, r.decision, r.rule])).toEqual([
      ['bob', '8', 'echo', 'allowed', undefined],
      ['bob', '9', 'get-sum', 'denied', 'no-sums'],
    ]);
  });
});
