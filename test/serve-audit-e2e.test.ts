/**
 * Policy, approvals, authentication and the audit ledger together, end to end over HTTP with the
 * official SDK client: two principals (tokens made by `switchboard auth token`) call tools of
 * server-everything; one is allowed a tool the other is denied (and does not even see in its
 * `tools/list`); a call the policy holds ("ask") is approved by the approver through the HTTP
 * approvals API. After shutdown the ledger names every principal, request id and decision, and
 * verifies intact against its anchor; then copies of it are tampered four ways (edited, deleted, swapped, truncated) and
 * `switchboard audit verify` names each break with its reason code.
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { EVERYTHING, makeToken, runCli, tempDir } from './support/cli.js';
import { startServe, stdioUpstreamConfig } from './support/serve.js';
import { jsonOf, send, waitUntil } from './support/sse-client.js';

async function connect(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'e2e', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

interface LedgerRecord {
  seq: number;
  client_id?: string;
  request_id?: string;
  method: string;
  target?: string;
  decision: string;
  decided_by?: string;
  rule?: string;
  tier: string;
}

function ledgerLines(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /^ledger-\d+\.jsonl$/.test(f))
    .sort()
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((l) => l.length > 0),
    );
}

async function verify(
  ledger: string,
  anchor: string,
): Promise<{ code: number; report: Record<string, unknown> }> {
  const run = await runCli(['audit', 'verify', '--ledger', ledger, '--anchor', anchor, '--json']);
  return { code: run.code ?? -1, report: JSON.parse(run.stdout) as Record<string, unknown> };
}

describe('policy, approvals and the ledger, end to end', () => {
  it('allows, denies, holds for approval, records it all, and catches tampering', async () => {
    const alice = await makeToken('alice', ['approver']);
    const bob = await makeToken('bob', []);
    const dataDir = tempDir('switchboard-audit-e2e-');
    const anchor = join(dataDir, 'anchor.jsonl');
    const extra = [
      'auth:',
      '  tokens:',
      alice.yaml,
      bob.yaml,
      'policy:',
      '  rules:',
      '    - id: no-sums-for-bob',
      '      upstream: everything',
      '      tool: get-sum',
      '      principals: [bob]',
      '      action: deny',
      '    - id: echo-needs-approval',
      '      upstream: everything',
      '      tool: echo',
      '      principals: [bob]',
      '      action: ask',
      'audit:',
      `  anchor: { path: ${JSON.stringify(anchor)} }`,
      '',
    ].join('\n');
    const serve = await startServe({
      dataDir,
      configYaml: stdioUpstreamConfig({ everything: { script: EVERYTHING, args: ['stdio'] } }, extra),
    });
    const a = await connect(serve.url, alice.token);
    const b = await connect(serve.url, bob.token);
    try {
      // One upstream behind /mcp: the tools keep their own names.
      const sum = await a.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
      expect(sum.content).toEqual([{ type: 'text', text: 'The sum of 2 and 3 is 5.' }]);
      await expect(b.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } })).rejects.toMatchObject({
        code: -32003,
      });
      const bobsTools = (await b.listTools()).tools.map((t) => t.name);
      expect(bobsTools).not.toContain('get-sum');
      expect(bobsTools).toContain('echo');
      expect((await a.listTools()).tools.map((t) => t.name)).toContain('get-sum');

      // Bob's echo waits for a decision; Alice approves it through the HTTP API.
      const held = b.callTool({ name: 'echo', arguments: { message: 'approve me' } });
      let id = '';
      await waitUntil(
        async () => {
          const listed = await send(`${serve.base}/approvals`, 'GET', {
            authorization: `Bearer ${alice.token}`,
          });
          const pending = jsonOf<{ approvals: { id: string; principal: string; target: string }[] }>(
            listed,
          ).approvals;
          id = pending.find((p) => p.principal === 'bob' && p.target === 'echo')?.id ?? '';
          return id !== '';
        },
        10_000,
        "bob's call in GET /approvals",
      );
      // Bob may not decide it himself.
      const self = await send(
        `${serve.base}/approvals/${id}`,
        'POST',
        { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
        JSON.stringify({ decision: 'approve' }),
      );
      expect(self.status).toBe(403);
      const approved = await send(
        `${serve.base}/approvals/${id}`,
        'POST',
        { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
        JSON.stringify({ decision: 'approve', reason: 'looks fine' }),
      );
      expect(approved.status, approved.text).toBe(200);
      expect((await held).content).toEqual([{ type: 'text', text: 'Echo: approve me' }]);
    } finally {
      await a.close();
      await b.close();
      await serve.stop();
    }

    const ledger = join(dataDir, 'audit');
    const records = ledgerLines(ledger).map((line) => JSON.parse(line) as LedgerRecord);
    const calls = records.filter((r) => r.method === 'tools/call');
    expect(calls.map((r) => [r.client_id, r.target, r.decision])).toEqual([
      ['alice', 'get-sum', 'allowed'],
      ['bob', 'get-sum', 'denied'],
      ['bob', 'echo', 'approved'],
    ]);
    expect(calls[1]?.rule).toBe('no-sums-for-bob');
    expect(calls[2]).toMatchObject({ decided_by: 'alice', rule: 'echo-needs-approval' });
    for (const r of calls) expect(r.request_id).toMatch(/^\d+$/);

    const intact = await verify(ledger, anchor);
    expect(intact.code, JSON.stringify(intact.report)).toBe(0);
    expect(intact.report.status).toBe('intact');

    // Four tamperings, each on its own copy, each caught with its reason (three different ones).
    const tampered = (name: string, edit: (lines: string[]) => string[]) => {
      const copy = join(dataDir, `tampered-${name}`);
      cpSync(ledger, copy, { recursive: true });
      const file = join(copy, 'ledger-000001.jsonl');
      const lines = readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.length > 0);
      writeFileSync(file, `${edit(lines).join('\n')}\n`);
      return copy;
    };
    const cases: [string, (lines: string[]) => string[], string, number][] = [
      // Rewrite history: bob's denial becomes an approval.
      [
        'edited',
        (l) => l.map((x, i) => (i === 1 ? x.replace('"decision":"denied"', '"decision":"allowed"') : x)),
        'hash_mismatch',
        2,
      ],
      // Remove the evidence: bob's denial is deleted.
      ['deleted', (l) => l.filter((_, i) => i !== 1), 'seq_gap', 2],
      // Reorder: the approval is moved before the denial.
      ['swapped', (l) => [l[0]!, l[2]!, l[1]!, ...l.slice(3)], 'seq_gap', 2],
      // Cut off the end: the last record is gone, which only the checkpoints can tell.
      ['truncated', (l) => l.slice(0, -1), 'cp_root', 3],
    ];
    for (const [name, edit, reason, seq] of cases) {
      const result = await verify(tampered(name, edit), anchor);
      expect(result.code, `${name}: ${JSON.stringify(result.report)}`).toBe(1);
      expect(result.report, name).toMatchObject({ status: 'tampered', firstBreak: { reason, seq } });
    }
  }, 180_000);
});
