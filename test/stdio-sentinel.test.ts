/**
 * Issue 4, "a sentinel secret placed in an output body never appears on disk", for the whole data
 * directory of a default `switchboard stdio` (trace and audit ledger both on): server-everything's
 * `get-env` returns its environment, which holds a secret the test handed the server through the
 * wrapper's environment (so not through any argument or file). The client gets the secret in the
 * body; afterwards no file under the data directory (the ledger, its checkpoints and key, the trace
 * database and its WAL) holds it, nor a secret-shaped token sent as a tool argument. The trace keeps
 * the output's size and SHA-256, which equal the ledger record's; `--trace-payloads full` shows the
 * scan can find the secret when it is there.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { everythingThroughStdio, tempDir } from './support/cli.js';
import { expectSecretsOffDisk, filesHolding, type SentinelRun } from './support/disk-scan.js';
import { traceSessions, traceShow } from './support/trace.js';

/** One client session through the wrapper: `get-env`, then `echo` with a token-shaped argument. */
async function run(options: readonly string[] = []): Promise<SentinelRun> {
  const dataDir = tempDir('switchboard-sentinel-');
  const secret = `S3NT1NEL-${randomBytes(12).toString('hex')}`;
  // A GitHub token's shape: the redactor knows it wherever it appears.
  const token = `ghp_${randomBytes(18).toString('hex')}`;
  const client = new Client({ name: 'sentinel-it', version: '1' });
  await client.connect(
    everythingThroughStdio(dataDir, ['--pass-env', 'SB_SENTINEL_SECRET', ...options], {
      SB_SENTINEL_SECRET: secret,
    }),
  );
  const env = await client.callTool({ name: 'get-env', arguments: {} });
  const body = JSON.stringify(env);
  const echoed = await client.callTool({ name: 'echo', arguments: { message: `use ${token} please` } });
  expect(JSON.stringify(echoed)).toContain(token);
  await client.close();
  return { dataDir, secret, token, body };
}

describe('no output body or secret on disk (issue 4 sentinel)', () => {
  it('keeps the secret a tool returned, and a token passed as an argument, off the disk', async () => {
    const sentinel = await run();
    expectSecretsOffDisk(sentinel);
    const { dataDir } = sentinel;

    // The trace shows the call with its output as size and digest, equal to the ledger's.
    const [session] = await traceSessions(dataDir);
    const envelopes = await traceShow(session?.key ?? '', dataDir);
    const request = envelopes.find((e) => e.kind === 'mcp/request' && e.payload.method === 'tools/call');
    expect(request?.payload.params).toMatchObject({ name: 'get-env' });
    const answers = envelopes.filter((e) => e.kind === 'mcp/response' && e.context === request?.context);
    expect(answers).toHaveLength(2);
    const ledgerLine = readFileSync(
      join(dataDir, 'audit', 'stdio', 'everything', 'ledger-000001.jsonl'),
      'utf8',
    )
      .split('\n')
      .find((line) => line.includes('"target":"get-env"'));
    const record = JSON.parse(ledgerLine ?? '{}') as { output_sha256?: string; output_len?: number };
    for (const answer of answers) {
      expect(answer.payload.result).toEqual({
        _omitted: 'output',
        bytes: record.output_len,
        sha256: record.output_sha256,
      });
    }
    const echo = envelopes.find((e) => e.kind === 'mcp/request' && e.payload.params?.name === 'echo');
    expect(echo?.payload.params?.arguments).toEqual({ message: 'use [REDACTED] please' });
  }, 90_000);

  it('writes both with --trace-payloads full (the scan finds what is there)', async () => {
    const { dataDir, secret, token } = await run(['--trace-payloads', 'full']);
    const holding = filesHolding(dataDir, secret).concat(filesHolding(dataDir, token));
    expect(holding.length).toBeGreaterThan(0);
    // Only the trace: the ledger never keeps an output body, and redacts its arguments.
    for (const path of holding) expect(path).toMatch(/trace\.db(-wal)?$/);
  }, 90_000);
});
