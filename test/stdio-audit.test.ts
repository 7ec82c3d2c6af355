/**
 * The audit ledger of `switchboard stdio`, on by default: the official SDK client calls tools of
 * server-everything through the wrapper; every call leaves one record with the JSON-RPC id as
 * `request_id` (and no `client_id`: one client), tiered by the tools' annotations; the ledger
 * verifies with `switchboard audit verify`, and a second wrapper of the same server running at the
 * same time writes its own ledger instead of corrupting the first.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { everythingThroughStdio, runCli, tempDir } from './support/cli.js';

interface LedgerRecord {
  seq: number;
  request_id?: string;
  client_id?: string;
  session_id?: string;
  method: string;
  target?: string;
  tier: string;
  decision: string;
  output_sha256?: string;
  output_len?: number;
  args?: unknown;
}

/** The records of a ledger directory, from its JSONL files. */
function records(dir: string): LedgerRecord[] {
  const text = readFileSync(join(dir, 'ledger-000001.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as LedgerRecord);
}

describe('switchboard stdio writes the audit ledger', () => {
  it('records each call with its JSON-RPC id, and the ledger verifies', async () => {
    const dataDir = tempDir('switchboard-stdio-audit-');
    const first = new Client({ name: 'audit-it', version: '1' });
    const second = new Client({ name: 'audit-it-2', version: '1' });
    await first.connect(everythingThroughStdio(dataDir));
    // A second wrapper of the same server, at the same time: its own ledger directory.
    await second.connect(everythingThroughStdio(dataDir));
    const echoed = await first.callTool({ name: 'echo', arguments: { message: 'sentinel-in-args' } });
    expect(echoed.content).toEqual([{ type: 'text', text: 'Echo: sentinel-in-args' }]);
    await first.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    await first
      .readResource({ uri: 'demo://resource/static/document/architecture.md' })
      .catch(() => undefined);
    await second.callTool({ name: 'echo', arguments: { message: 'second' } });
    await first.close();
    await second.close();

    const dir = join(dataDir, 'audit', 'stdio', 'everything');
    const mine = records(dir);
    const calls = mine.filter((r) => r.method === 'tools/call');
    expect(calls.map((r) => r.target)).toEqual(['echo', 'get-sum']);
    for (const r of calls) {
      // The SDK numbers its requests; the ledger keeps the id as the client sent it, bounded to text.
      expect(r.request_id).toMatch(/^\d+$/);
      expect(r.client_id).toBeUndefined();
      expect(r.decision).toBe('allowed');
      expect(r.output_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(r.output_len).toBeGreaterThan(0);
    }
    // server-everything marks echo read-only: tier T0.
    expect(calls[0]?.tier).toBe('T0');
    expect(new Set(calls.map((r) => r.request_id)).size).toBe(2);
    const theirs = records(`${dir}-2`);
    expect(theirs.map((r) => r.target)).toEqual(['echo']);

    for (const ledger of [dir, `${dir}-2`]) {
      const verified = await runCli(['audit', 'verify', '--ledger', ledger, '--json']);
      // 3: intact, but no anchor was configured to prove it was not truncated.
      expect(verified.code, verified.stdout + verified.stderr).toBe(3);
      expect(JSON.parse(verified.stdout)).toMatchObject({ status: 'unanchored', checkpoints: 1 });
    }
  }, 90_000);

  it('records resources/read and prompts/get too, each with its target, tier and output hash', async () => {
    const dataDir = tempDir('switchboard-stdio-audit-read-');
    const client = new Client({ name: 'audit-it', version: '1' });
    await client.connect(everythingThroughStdio(dataDir));
    const uri = 'demo://resource/static/document/architecture.md';
    const read = await client.readResource({ uri });
    expect(read.contents[0]?.uri).toBe(uri);
    const prompt = await client.getPrompt({ name: 'simple-prompt' });
    expect(prompt.messages.length).toBeGreaterThan(0);
    await client.close();

    const governed = records(join(dataDir, 'audit', 'stdio', 'everything')).filter(
      (r) => r.method === 'resources/read' || r.method === 'prompts/get',
    );
    expect(governed.map((r) => [r.method, r.target, r.decision])).toEqual([
      ['resources/read', uri, 'allowed'],
      ['prompts/get', 'simple-prompt', 'allowed'],
    ]);
    for (const r of governed) {
      expect(r.request_id).toMatch(/^\d+$/);
      expect(r.output_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(r.output_len).toBeGreaterThan(0);
    }
    // Reading is T0: neither a resource nor a prompt changes anything.
    expect(governed.map((r) => r.tier)).toEqual(['T0', 'T0']);
  }, 60_000);

  it('writes nothing with --no-audit', async () => {
    const dataDir = tempDir('switchboard-stdio-noaudit-');
    const client = new Client({ name: 'audit-it', version: '1' });
    await client.connect(everythingThroughStdio(dataDir, ['--no-audit']));
    await client.callTool({ name: 'echo', arguments: { message: 'x' } });
    await client.close();
    const listed = await runCli([
      'audit',
      'verify',
      '--ledger',
      join(dataDir, 'audit', 'stdio', 'everything'),
    ]);
    expect(listed.code).toBe(2);
  }, 60_000);
});
