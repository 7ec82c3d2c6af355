/**
 * Issue 19, four eyes: an approver may not approve a call it made itself, over the HTTP approvals
 * API (403 `SB_SELF_APPROVAL`) nor in the space (`system/error` `self_approval`), while another
 * approver may, and the ledger names caller and decider. `policy.approvals.allowSelfApproval: true`
 * lets the same principal decide, and the ledger then names it as both; without authentication
 * (the one user `local`) it is allowed as before. Real `switchboard serve` processes, the official
 * SDK client over HTTP, real WebSockets.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { ECHO_SERVER } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { Participant, spaceUrlOf, type Wire } from './support/space.js';
import { jsonOf, type RawResponse, send, waitUntil } from './support/sse-client.js';

const sha = (token: string) => createHash('sha256').update(token).digest('hex');
const ALICE = 'sbt_alice_approver_four_eyes_000000001';
const CAROL = 'sbt_carol_approver_four_eyes_000000002';

const config = (approvals: string) => `auth:
  tokens:
    - { principal: alice, sha256: ${sha(ALICE)}, roles: [approver] }
    - { principal: carol, sha256: ${sha(CAROL)}, roles: [approver] }
policy:
  rules:
    - { id: echo-asks, target: echo, action: ask }
${approvals}space:
  participants:
    alice:
      capabilities: [{ kind: "**" }]
`;

interface LedgerRecord {
  method: string;
  client_id?: string;
  decision: string;
  decided_by?: string;
  rule?: string;
}

function ledger(dataDir: string): LedgerRecord[] {
  const dir = join(dataDir, 'audit');
  return readdirSync(dir)
    .filter((f) => /^ledger-\d+\.jsonl$/.test(f))
    .sort()
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((l) => l.length > 0),
    )
    .map((l) => JSON.parse(l) as LedgerRecord)
    .filter((r) => r.method === 'tools/call');
}

async function mcpClient(serve: RunningServe, token?: string): Promise<Client> {
  const client = new Client({ name: 'four-eyes', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      new URL(serve.url),
      token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } },
    ),
  );
  return client;
}

const bearer = (token?: string): Record<string, string> =>
  token === undefined ? {} : { authorization: `Bearer ${token}` };

/** The id of the held call with this message, once GET /approvals lists it. */
async function heldId(serve: RunningServe, token: string | undefined, message: string): Promise<string> {
  let id = '';
  await waitUntil(
    async () => {
      const listed = jsonOf<{ approvals: { id: string; args?: { message?: string } }[] }>(
        await send(`${serve.base}/approvals`, 'GET', bearer(token)),
      ).approvals;
      id = listed.find((a) => a.args?.message === message)?.id ?? '';
      return id !== '';
    },
    10_000,
    `the held call ${message} in GET /approvals`,
  );
  return id;
}

function decide(
  serve: RunningServe,
  token: string | undefined,
  id: string,
  decision: string,
): Promise<RawResponse> {
  return send(
    `${serve.base}/approvals/${id}`,
    'POST',
    { ...bearer(token), 'content-type': 'application/json' },
    JSON.stringify({ decision }),
  );
}

const echo = (message: string) => ({ name: 'echo', arguments: { message } });

describe('four eyes (authentication configured, the default)', () => {
  it('refuses a principal approving its own call over HTTP and in the space; another approver may; the ledger names both', async () => {
    const serve = await startServe({
      configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, config('')),
    });
    const alice = await mcpClient(serve, ALICE);
    const inSpace = await Participant.connect(spaceUrlOf(serve.base), { token: ALICE });
    try {
      const held = alice.callTool(echo('mine'));
      const id = await heldId(serve, ALICE, 'mine');

      const refused = await decide(serve, ALICE, id, 'approve');
      expect(refused.status).toBe(403);
      expect(jsonOf(refused)).toMatchObject({
        code: 'SB_SELF_APPROVAL',
        error: expect.stringMatching(/principal alice made this call.*four eyes.*allowSelfApproval/),
      });
      expect(jsonOf(await send(`${serve.base}/approvals/${id}`, 'GET', bearer(CAROL)))).toMatchObject({
        status: 'pending',
        principal: 'alice',
      });

      // The same principal in the space: the proposal is there, its fulfilment is refused.
      const proposal = await inSpace.next((e) => e.kind === 'mcp/proposal' && e.id === id);
      const fulfil = inSpace.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [proposal.id],
        payload: { method: 'tools/call', params: echo('mine') },
      });
      const error = await inSpace.reply(fulfil.id, 'system/error');
      expect(error.payload).toMatchObject({ error: 'self_approval', proposals: [id] });
      expect(String((error.payload as Wire).message)).toMatch(/alice made this call/);

      // Four eyes: carol approves it, and alice gets her result.
      const approved = await decide(serve, CAROL, id, 'approve');
      expect(approved.status, approved.text).toBe(200);
      expect((await held).content).toEqual([{ type: 'text', text: 'mine' }]);

      // Rejecting one's own call is not approving it: allowed.
      const second = alice.callTool(echo('withdrawn by me'));
      const secondId = await heldId(serve, ALICE, 'withdrawn by me');
      expect((await decide(serve, ALICE, secondId, 'reject')).status).toBe(200);
      await expect(second).rejects.toMatchObject({ code: -32004 });
    } finally {
      await inSpace.close();
      await alice.close();
      await serve.stop();
    }
    expect(ledger(serve.dataDir).map((r) => [r.client_id, r.decision, r.decided_by])).toEqual([
      ['alice', 'approved', 'carol'],
      ['alice', 'rejected', 'alice'],
    ]);
  });
});

describe('policy.approvals.allowSelfApproval: true', () => {
  it('lets the same principal approve its own call, over HTTP and in the space; the ledger names it as caller and decider', async () => {
    const serve = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        config('  approvals:\n    allowSelfApproval: true\n'),
      ),
    });
    const alice = await mcpClient(serve, ALICE);
    const inSpace = await Participant.connect(spaceUrlOf(serve.base), { token: ALICE });
    try {
      const overHttp = alice.callTool(echo('self over http'));
      const id = await heldId(serve, ALICE, 'self over http');
      const approved = await decide(serve, ALICE, id, 'approve');
      expect(approved.status, approved.text).toBe(200);
      expect(jsonOf(approved)).toMatchObject({ status: 'approved', decidedBy: 'alice' });
      expect((await overHttp).content).toEqual([{ type: 'text', text: 'self over http' }]);

      const inTheSpace = alice.callTool(echo('self in the space'));
      const spaceId = await heldId(serve, ALICE, 'self in the space');
      const fulfil = inSpace.send({
        kind: 'mcp/request',
        to: ['server-echo'],
        correlation_id: [spaceId],
        payload: { method: 'tools/call', params: echo('self in the space') },
      });
      expect((await inSpace.reply(fulfil.id, 'mcp/response')).payload).toMatchObject({
        result: { content: [{ text: 'self in the space' }] },
      });
      expect((await inTheSpace).content).toEqual([{ type: 'text', text: 'self in the space' }]);
      expect(inSpace.ofKind('system/error')).toEqual([]);
    } finally {
      await inSpace.close();
      await alice.close();
      await serve.stop();
    }
    expect(ledger(serve.dataDir).map((r) => [r.client_id, r.decision, r.decided_by, r.rule])).toEqual([
      ['alice', 'approved', 'alice', 'echo-asks'],
      ['alice', 'approved', 'alice', 'echo-asks'],
    ]);
  });
});

describe('without authentication (the one local user)', () => {
  it('lets local approve its own call, as before', async () => {
    const serve = await startServe({
      configYaml: stdioUpstreamConfig(
        { echo: { script: ECHO_SERVER } },
        'policy:\n  rules:\n    - { id: echo-asks, target: echo, action: ask }\n',
      ),
    });
    const local = await mcpClient(serve);
    try {
      const held = local.callTool(echo('local'));
      const id = await heldId(serve, undefined, 'local');
      const approved = await decide(serve, undefined, id, 'approve');
      expect(approved.status, approved.text).toBe(200);
      expect(jsonOf(approved)).toMatchObject({ decidedBy: 'local' });
      expect((await held).content).toEqual([{ type: 'text', text: 'local' }]);
    } finally {
      await local.close();
      await serve.stop();
    }
    expect(ledger(serve.dataDir).map((r) => [r.decision, r.decided_by])).toEqual([['approved', 'local']]);
  });
});
