/**
 * Issue 22: the audit commands read by a person, against a real `switchboard stdio` run in front
 * of server-everything. The wrapper writes its ledger to `<data-dir>/audit/stdio/everything`, and
 * `audit tail` finds it from the data directory alone; a call the client cancels shows as
 * `cancelled` with its upstream.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING, everythingThroughStdio, jsonLines, runCli, tempDir } from './support/cli.js';

describe('audit commands on a stdio wrapper’s ledger (issue 22)', () => {
  const dataDir = tempDir('sb-issue22-audit-');
  let stderr = '';

  beforeAll(async () => {
    const transport = everythingThroughStdio(dataDir, ['--no-trace']);
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const client = new Client({ name: 'issue-22-audit', version: '1.0.0' });
    await client.connect(transport);
    await client.callTool({ name: 'echo', arguments: { message: 'kept' } });
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
      undefined,
      { signal: controller.signal, onprogress: () => {} },
    );
    setTimeout(() => controller.abort('changed my mind'), 300);
    await expect(call).rejects.toThrow();
    await client.close();
  }, 30_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('audit tail finds the ledger from the data directory and shows upstream and cancellation', async () => {
    const tail = await runCli(['audit', 'tail', '--data-dir', dataDir]);
    expect(tail.code, tail.stderr).toBe(0);
    expect(tail.stderr).toBe(
      `switchboard: reading the ledger of the stdio wrapper at ${join(dataDir, 'audit', 'stdio', 'everything')}\n`,
    );
    const lines = tail.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SEQ\s+TIME \(UTC\)\s+CLIENT\s+UPSTREAM\s+METHOD\s+TARGET\s+TIER\s+DECISION/);
    const echo = lines.find((l) => l.includes(' echo '));
    const cancelled = lines.find((l) => l.includes('trigger-long-running-operation'));
    expect(echo).toMatch(/\severything\s+tools\/call\s+echo\s+T\d\s+allowed\s/);
    expect(cancelled).toMatch(
      /\severything\s+tools\/call\s+trigger-long-running-operation\s+T\d\s+cancelled\s/,
    );
    const json = jsonLines<{ decision: string; error?: string; upstream?: string }>(
      (await runCli(['audit', 'tail', '--json', '--data-dir', dataDir])).stdout,
    );
    expect(json.at(-1)).toMatchObject({
      decision: 'error',
      error: 'cancelled by the client',
      upstream: 'everything',
    });
  });

  it('left no "state.json is missing" warning in the wrapper’s log', () => {
    expect(stderr).not.toContain('state.json');
  });
});

describe('a clean run without calls (issue 22)', () => {
  it('leaves nothing for the next start to warn about', async () => {
    const dataDir = tempDir('sb-issue22-nocalls-');
    try {
      const initialize = `${JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      })}\n`;
      const args = [
        'stdio',
        '--data-dir',
        dataDir,
        '--name',
        'everything',
        '--',
        process.execPath,
        EVERYTHING,
        'stdio',
      ];
      for (const run of [1, 2]) {
        const r = await runCli(args, { input: initialize });
        expect(r.code, `run ${run}: ${r.stderr}`).toBe(0);
        expect(r.stderr).not.toContain('state.json');
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
