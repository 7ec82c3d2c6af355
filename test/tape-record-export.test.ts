/**
 * Tapes from real sessions (issue 23): the official SDK client drives server-everything through
 * `switchboard tape record` (tools, a long call with progress, a resource read, a prompt, a
 * sampling request the client answers, a secret in a tool argument), and the same calls through
 * `switchboard serve` with a `full` trace, exported with `switchboard tape export`. The two tapes
 * must be the same conversation: `normaliseTape` says what may differ (timing, JSON-RPC ids and
 * progress tokens, which each gateway numbers its own way, envelope ids and contexts, the source,
 * the client's handshake — `serve` initializes its upstream itself).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTED } from '../src/audit/redaction.js';
import type { Tape } from '../src/tape/tape-format.js';
import { readTapeFile } from '../src/tape/tape-reader.js';
import { CLI, EVERYTHING, runCli, tempDir } from './support/cli.js';
import { isAlive } from './support/liveness.js';
import { type RunningServe, startServe } from './support/serve.js';
import { waitUntil } from './support/sse-client.js';
import { normaliseTape } from './support/tape-normalise.js';

const SECRET = 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123';

/** The scenario, the same for both gateways; returns what the client saw. */
async function drive(client: Client): Promise<{ progress: Progress[]; sampled: number; results: unknown[] }> {
  const results: unknown[] = [];
  const progress: Progress[] = [];
  results.push((await client.listTools()).tools.map((t) => t.name));
  results.push(await client.callTool({ name: 'echo', arguments: { message: 'hello tape' } }));
  results.push(await client.callTool({ name: 'echo', arguments: { message: SECRET } }));
  results.push(
    await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    ),
  );
  results.push(await client.readResource({ uri: 'demo://resource/static/document/features.md' }));
  results.push(await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lyon', state: 'ARA' } }));
  results.push(
    await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } }),
  );
  return { progress, sampled: sampledCount(client), results };
}

const sampledCounts = new WeakMap<Client, number>();
function sampledCount(client: Client): number {
  return sampledCounts.get(client) ?? 0;
}

function newClient(): Client {
  // The capabilities serve's gateway declares to its upstreams, so that server-everything offers
  // both clients the same tools.
  const client = new Client(
    { name: 'tape-it', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    sampledCounts.set(client, sampledCount(client) + 1);
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'sampled answer' } };
  });
  return client;
}

async function waitFor(path: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > until) throw new Error(`${path} was not written`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function recordTransport(output: string, extra: readonly string[] = []): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [
      CLI,
      'tape',
      'record',
      '-o',
      output,
      '--name',
      'everything',
      ...extra,
      '--',
      process.execPath,
      EVERYTHING,
      'stdio',
    ],
    stderr: 'pipe',
  });
}

describe('tape record and tape export of the same calls against server-everything', () => {
  const dir = tempDir('switchboard-tape-');
  const recorded = join(dir, 'recorded.tape.jsonl');
  const exported = join(dir, 'exported.tape.jsonl');
  let recordStderr = '';
  let live: Awaited<ReturnType<typeof drive>>;
  let viaServe: Awaited<ReturnType<typeof drive>>;
  let serve: RunningServe;
  let tape: Tape;

  beforeAll(async () => {
    const transport = recordTransport(recorded);
    transport.stderr?.on('data', (d: Buffer) => {
      recordStderr += d.toString();
    });
    const client = newClient();
    await client.connect(transport);
    live = await drive(client);
    await client.close(); // stdin EOF: the gateway drains, closes the server, writes the tape
    await waitFor(recorded);
    tape = readTapeFile(recorded);

    serve = await startServe({
      configYaml: [
        'upstreams:',
        '  everything:',
        '    transport: stdio',
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: ${JSON.stringify([EVERYTHING, 'stdio'])}`,
        'trace:',
        '  payloads: full',
        '',
      ].join('\n'),
    });
    const http = newClient();
    await http.connect(new StreamableHTTPClientTransport(new URL(serve.url)));
    viaServe = await drive(http);
    await http.close();
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it('records what the client saw: results, progress, the sampling request', () => {
    expect(live.sampled).toBe(1);
    expect(live.progress.map((p) => p.progress).slice(0, 2)).toEqual([1, 2]);
    expect(recordStderr).toMatch(
      /wrote \d+ messages to .*recorded\.tape\.jsonl \(\d+ secret-shaped values? cut/,
    );
  });

  it('holds the handshake, every call with its answer, progress tied to its call, the server’s sampling request', () => {
    expect(tape.header.source).toMatchObject({ via: 'record', upstream: 'everything' });
    expect(tape.header.server.initialize).toMatchObject({ serverInfo: { name: 'mcp-servers/everything' } });
    expect(tape.header.client?.initialize).toMatchObject({ clientInfo: { name: 'tape-it' } });
    expect(tape.header.protocolVersion).toBe(tape.header.server.initialize.protocolVersion);
    const methods = tape.messages
      .filter((m) => m.dir === 'c2s' && 'method' in m.message)
      .map((m) => (m.message as { method: string }).method);
    expect(methods).toEqual(
      expect.arrayContaining([
        'initialize',
        'notifications/initialized',
        'tools/list',
        'tools/call',
        'resources/read',
        'prompts/get',
      ]),
    );
    const long = tape.messages.find((m) => JSON.stringify(m.message).includes('"steps":3'));
    const progress = tape.messages.filter(
      (m) => 'method' in m.message && m.message.method === 'notifications/progress',
    );
    expect(progress.length).toBe(3);
    expect(progress.every((p) => p.re === long?.seq && p.dir === 's2c')).toBe(true);
    const sampling = tape.messages.find(
      (m) => 'method' in m.message && m.message.method === 'sampling/createMessage',
    );
    const samplingCall = tape.messages.find(
      (m) => JSON.stringify(m.message).includes('trigger-sampling-request') && m.dir === 'c2s',
    );
    expect(sampling?.dir).toBe('s2c');
    expect(sampling?.re).toBe(samplingCall?.seq);
    const answer = tape.messages.find((m) => m.dir === 'c2s' && m.re === sampling?.seq);
    expect(JSON.stringify(answer?.message)).toContain('sampled answer');
    // every request has exactly one response, tied to it
    for (const request of tape.messages.filter((m) => 'method' in m.message && 'id' in m.message)) {
      expect(tape.messages.filter((m) => m.re === request.seq && !('method' in m.message))).toHaveLength(1);
    }
  });

  it('cuts the secret, where it was, and says so in the header', () => {
    const text = readFileSync(recorded, 'utf8');
    expect(text).not.toContain('abcdefghijklmnopqrstuvwxyz0123');
    expect(text).toContain(REDACTED);
    expect(tape.header.redactions.length).toBeGreaterThanOrEqual(2); // the argument and the echo
    for (const cut of tape.header.redactions) {
      const line = tape.messages[cut.seq - 1];
      const value = cut.path
        .split('/')
        .slice(1)
        .reduce<unknown>(
          (v, k) => (v as Record<string, unknown>)[k.replaceAll('~1', '/').replaceAll('~0', '~')],
          line,
        );
      expect(String(value)).toContain(REDACTED);
    }
  });

  it('gets the same answers through serve', () => {
    expect(viaServe.sampled).toBe(1);
    expect(JSON.stringify(viaServe.results)).toBe(JSON.stringify(live.results));
  });

  it('exports from the serve trace the same tape as record (normalised)', async () => {
    const sessions = await runCli(['trace', 'sessions', '--json', '--data-dir', serve.dataDir]);
    const keys = sessions.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string; transport: string })
      .filter((s) => s.key !== 'gateway');
    expect(keys).toHaveLength(1);
    const r = await runCli(['tape', 'export', keys[0]!.key, '-o', exported, '--data-dir', serve.dataDir]);
    expect(r.stderr).toContain('wrote');
    expect(r.code).toBe(0);
    const other = readTapeFile(exported);
    expect(other.header.source).toMatchObject({
      via: 'export',
      upstream: 'everything',
      session: keys[0]!.key,
    });
    expect(other.header.incomplete).toEqual([]);
    expect(normaliseTape(other)).toEqual(normaliseTape(tape));
  });

  it('records a remote server with --url (here: serve, in front of server-everything)', async () => {
    const file = join(dir, 'remote.tape.jsonl');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'tape', 'record', '-o', file, '--url', serve.url],
      stderr: 'ignore',
    });
    const client = newClient();
    await client.connect(transport);
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'over http' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: over http' }]);
    await client.close();
    await waitFor(file);
    const remote = readTapeFile(file);
    expect(remote.header.source).toMatchObject({ via: 'record', url: serve.url });
    expect(remote.header.server.initialize).toHaveProperty('serverInfo');
    const methods = remote.messages.map((m) => ('method' in m.message ? m.message.method : 'answer'));
    expect(methods.slice(0, 3)).toEqual(['initialize', 'answer', 'notifications/initialized']);
    expect(JSON.stringify(remote.messages)).toContain('Echo: over http');
  });

  it('refuses to export a redacted trace, listing the incomplete calls, unless --allow-incomplete', async () => {
    const dataDir = tempDir('switchboard-tape-redacted-');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'stdio',
        '--no-audit',
        '--data-dir',
        dataDir,
        '--name',
        'everything',
        '--',
        process.execPath,
        EVERYTHING,
        'stdio',
      ],
      stderr: 'ignore',
    });
    const client = newClient();
    await client.connect(transport);
    await client.callTool({ name: 'echo', arguments: { message: 'one' } });
    await client.readResource({ uri: 'demo://resource/static/document/features.md' });
    const pid = transport.pid;
    expect(pid).toBeGreaterThan(0);
    await client.close();
    // The gateway writes the last of its trace as it exits: read the trace once it has.
    await waitUntil(() => !isAlive(pid!), 15_000, 'the stdio gateway to exit');
    const sessions = await runCli(['trace', 'sessions', '--json', '--data-dir', dataDir]);
    const key = (JSON.parse(sessions.stdout.trim().split('\n')[0]!) as { key: string }).key;
    const refused = await runCli(['tape', 'export', key, '--data-dir', dataDir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/cannot answer for 2 messages/);
    expect(refused.stderr).toContain('(tools/call)');
    expect(refused.stderr).toContain('(resources/read)');
    const file = join(dataDir, 'partial.tape.jsonl');
    const allowed = await runCli([
      'tape',
      'export',
      key,
      '--allow-incomplete',
      '-o',
      file,
      '--data-dir',
      dataDir,
    ]);
    expect(allowed.code).toBe(0);
    const partial = readTapeFile(file);
    expect(partial.header.incomplete.map((i) => i.method)).toEqual(['tools/call', 'resources/read']);
    expect(partial.header.server.initialize).toMatchObject({
      serverInfo: { name: 'mcp-servers/everything' },
    });
  });

  it('writes a complete tape when the gateway gets SIGTERM', async () => {
    const file = join(dir, 'sigterm.tape.jsonl');
    const transport = recordTransport(file);
    const client = newClient();
    await client.connect(transport);
    await client.callTool({ name: 'echo', arguments: { message: 'before the signal' } });
    process.kill(transport.pid!, 'SIGTERM');
    await waitFor(file);
    const t = readTapeFile(file);
    expect(JSON.stringify(t.messages)).toContain('Echo: before the signal');
    await client.close().catch(() => {});
  });
});
