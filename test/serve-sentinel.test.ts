/**
 * Issue 4, "a sentinel secret placed in an output body never appears on disk", for `switchboard
 * serve` (the stdio gateway has its own test, stdio-sentinel.test.ts): an SDK client over
 * Streamable HTTP calls server-everything's `get-env`, whose output holds a secret the upstream got
 * only through its environment (the configuration names the variable, `${env:...}`, never the
 * value). After a clean shutdown no file under the data directory (the configuration written there,
 * the audit ledger with its checkpoints and key, the trace database and its WAL) holds the secret,
 * nor a secret-shaped token sent as a tool argument. With `trace.payloads: full` the same scan finds
 * them, in the trace only, so the scan can fail.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { EVERYTHING } from './support/cli.js';
import { expectSecretsOffDisk, filesHolding, type SentinelRun } from './support/disk-scan.js';
import { startServe } from './support/serve.js';
import { traceSessions, traceShow } from './support/trace.js';

function config(payloads: 'redacted' | 'full'): string {
  return [
    'upstreams:',
    '  everything:',
    '    transport: stdio',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: ${JSON.stringify([EVERYTHING, 'stdio'])}`,
    '    env:',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own reference syntax
    '      SB_SENTINEL_SECRET: "${env:SB_SENTINEL_SECRET}"',
    'trace:',
    `  payloads: ${payloads}`,
    '',
  ].join('\n');
}

/** One client session through `switchboard serve`: `get-env`, then `echo` with a token-shaped argument. */
async function run(payloads: 'redacted' | 'full'): Promise<SentinelRun> {
  const secret = `S3NT1NEL-${randomBytes(12).toString('hex')}`;
  // A GitHub token's shape: the redactor knows it wherever it appears.
  const token = `ghp_${randomBytes(18).toString('hex')}`;
  const serve = await startServe({
    configYaml: config(payloads),
    env: { ...process.env, SB_SENTINEL_SECRET: secret },
  });
  try {
    const client = new Client({ name: 'sentinel-serve-it', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${serve.base}/servers/everything/mcp`)));
    const env = await client.callTool({ name: 'get-env', arguments: {} });
    const echoed = await client.callTool({ name: 'echo', arguments: { message: `use ${token} please` } });
    expect(JSON.stringify(echoed)).toContain(token);
    await client.close();
    return { dataDir: serve.dataDir, secret, token, body: JSON.stringify(env) };
  } finally {
    // A clean shutdown: the trace and the ledger write everything they hold before the scan.
    await serve.stop();
  }
}

/** The ledger record of the `get-env` call. */
function getEnvRecord(dataDir: string): { output_sha256?: string; output_len?: number } {
  const dir = join(dataDir, 'audit');
  const line = readdirSync(dir)
    .filter((name) => /^ledger-\d+\.jsonl$/.test(name))
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n'))
    .find((l) => l.includes('"target":"get-env"'));
  return JSON.parse(line ?? '{}') as { output_sha256?: string; output_len?: number };
}

describe('no output body or secret on disk through switchboard serve (issue 4 sentinel)', () => {
  it('keeps the secret a tool returned, and a token passed as an argument, off the disk', async () => {
    const sentinel = await run('redacted');
    expectSecretsOffDisk(sentinel);
    const { dataDir } = sentinel;

    // The trace keeps the output as size and digest, on every hop of the answer, equal to the ledger's.
    const record = getEnvRecord(dataDir);
    expect(record.output_len).toBeGreaterThan(0);
    const sessions = await traceSessions(dataDir);
    const envelopes = (await Promise.all(sessions.map((s) => traceShow(s.key, dataDir)))).flat();
    const request = envelopes.find(
      (e) =>
        e.kind === 'mcp/request' && e.payload.method === 'tools/call' && e.payload.params?.name === 'get-env',
    );
    expect(request).toBeDefined();
    const answers = envelopes.filter(
      (e) => e.kind === 'mcp/response' && e.correlation_id?.some((id) => id === request?.id),
    );
    expect(answers.length).toBeGreaterThan(0);
    for (const answer of answers)
      expect(answer.payload.result).toEqual({
        _omitted: 'output',
        bytes: record.output_len,
        sha256: record.output_sha256,
      });
  }, 120_000);

  it('writes both with trace.payloads: full, in the trace only (the scan finds what is there)', async () => {
    const { dataDir, secret, token } = await run('full');
    const holding = filesHolding(dataDir, secret).concat(filesHolding(dataDir, token));
    expect(holding.length).toBeGreaterThan(0);
    for (const path of holding) expect(path).toMatch(/trace\.db(-wal)?$/);
  }, 120_000);
});
