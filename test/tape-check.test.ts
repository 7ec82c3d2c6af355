/**
 * `switchboard tape check` (issue 23) end to end, with the built CLI: a tape of a real session
 * with server-everything (tools, a long call with progress, a resource read, a prompt, a sampling
 * request the client answers) passes against server-everything over stdio and over Streamable
 * HTTP, and fails with a readable diff against a server that answers one tool differently;
 * `--update` writes the live answers as a tape that then passes; a 2026-07-28 server is checked
 * through `--url` too; a broken tape is a usage error naming its line.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTape } from '../src/tape/tape-reader.js';
import { CLI, EVERYTHING, ROOT, runCli, tempDir } from './support/cli.js';
import { type StartedProcess, startHttpFixture, startProcess } from './support/peers.js';

const ALTERED = join(ROOT, 'test/fixtures/altered-everything.mjs');
const SERVER = [process.execPath, EVERYTHING, 'stdio'];
const SECRET = 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123';

/**
 * Records the session the checks replay with `switchboard tape record`, driven by the official SDK
 * client: every kind of exchange the checker must play (a list, tools, a long call with progress,
 * a resource read, a prompt, a sampling request the client answers, a secret the recorder cuts).
 */
async function record(output: string): Promise<void> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'tape', 'record', '-o', output, '--', ...SERVER],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'tape-check-it', version: '1.0.0' }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    model: 'test-model',
    content: { type: 'text', text: 'a sampled reply' },
  }));
  await client.connect(transport);
  await client.listTools();
  await client.callTool({ name: 'echo', arguments: { message: 'hello tape' } });
  await client.callTool({ name: 'echo', arguments: { message: SECRET } });
  await client.callTool(
    { name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
    undefined,
    { onprogress: () => undefined },
  );
  await client.readResource({ uri: 'demo://resource/static/document/features.md' });
  await client.getPrompt({ name: 'simple-prompt' });
  await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } });
  await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
  await client.close();
  const until = Date.now() + 15_000;
  while (!existsSync(output)) {
    if (Date.now() > until) throw new Error(`${output} was not written`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

let dir: string;
let tapeFile: string;

beforeAll(async () => {
  dir = tempDir('switchboard-tape-check-');
  tapeFile = join(dir, 'everything.tape.jsonl');
  await record(tapeFile);
});

describe('tape check against a stdio server', () => {
  it('passes against the server the tape was recorded from', async () => {
    const r = await runCli(['tape', 'check', tapeFile, '--verbose', '--', ...SERVER]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('same  answer to tools/call trigger-sampling-request');
    expect(r.stdout).toContain('same  server request sampling/createMessage');
    expect(r.stdout).toContain('same  progress of tools/call trigger-long-running-operation (seq');
    expect(r.stdout).toContain(': 3 recorded, 3 live');
    expect(r.stdout).toMatch(
      /^ok: 11 compared \(9 answers, 1 server requests, 1 progress sequences\), none differs$/m,
    );
  });

  it('fails with a readable diff against a server that answers one tool differently', async () => {
    const r = await runCli(['tape', 'check', tapeFile, '--', process.execPath, ALTERED]);
    expect(r.code, r.stderr).toBe(1);
    // Only the first echo differs: the second's text holds a secret the recorder cut, and a cut
    // value is not compared (the live side has it whole).
    expect(r.stdout).toMatch(
      new RegExp(
        [
          'DIFFERS  answer to tools/call echo \\(seq \\d+\\)',
          '    /result/content/0/text',
          '      recorded: "Echo: hello tape"',
          '      live:     "Echo \\(v2\\): hello tape"',
          '',
        ].join('\n'),
      ),
    );
    expect(r.stdout).toMatch(
      /^FAILED: 1 of 11 differ \(9 answers, 1 server requests, 1 progress sequences\)$/m,
    );
  });

  it('ignores what --ignore names, and says so in --json', async () => {
    const r = await runCli([
      'tape',
      'check',
      tapeFile,
      '--json',
      '--ignore',
      '/result/content/*/text',
      '--',
      process.execPath,
      ALTERED,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { ok: boolean; compared: number; items: { status: string }[] };
    expect(report.ok).toBe(true);
    expect(report.compared).toBe(11);
    expect(report.items.every((i) => i.status === 'same')).toBe(true);
  });

  it('scopes an --ignore to a method with METHOD:POINTER', async () => {
    const scoped = await runCli([
      'tape',
      'check',
      tapeFile,
      '--ignore',
      'tools/call:/result/content/*/text',
      '--',
      process.execPath,
      ALTERED,
    ]);
    expect(scoped.code, scoped.stdout + scoped.stderr).toBe(0);
    const elsewhere = await runCli([
      'tape',
      'check',
      tapeFile,
      '--ignore',
      'prompts/get:/result/content/*/text',
      '--',
      process.execPath,
      ALTERED,
    ]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stdout).toContain('DIFFERS  answer to tools/call');
  });

  it('--update writes the live answers as a tape that then passes, and never overwrites without --force', async () => {
    const updated = join(dir, 'everything.tape.updated.jsonl');
    const first = await runCli(['tape', 'check', tapeFile, '--update', '--', process.execPath, ALTERED]);
    expect(first.code).toBe(1);
    expect(first.stderr).toContain(`wrote ${updated}`);
    const tape = readTape(readFileSync(updated), updated);
    expect(tape.header.client?.initialize).toEqual(
      readTape(readFileSync(tapeFile)).header.client?.initialize,
    );
    expect(JSON.stringify(tape.messages)).toContain('Echo (v2): hello tape');
    const again = await runCli(['tape', 'check', updated, '--', process.execPath, ALTERED]);
    expect(again.code, again.stdout).toBe(0);
    const old = await runCli(['tape', 'check', updated, '--', ...SERVER]);
    expect(old.code).toBe(1);
    const refused = await runCli(['tape', 'check', tapeFile, '--update', '--', ...SERVER]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('exists (--force overwrites it)');
    const forced = await runCli(['tape', 'check', tapeFile, '--update', '--force', '--', ...SERVER]);
    expect(forced.code).toBe(0);
    expect(readFileSync(updated, 'utf8')).toContain('"Echo: hello tape"');
  });

  it('reports every answer missing, with the reason, when the server exits or never answers', async () => {
    const gone = await runCli(['tape', 'check', tapeFile, '--', process.execPath, '-e', 'process.exit(3)']);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toMatch(/^MISSING {2}answer to initialize \(seq 1\): the server went away \(.*\)$/m);
    expect(gone.stdout).toMatch(/^the server went away before the end: .*$/m);
    // A call without its answer is one finding; its progress is not judged on its own.
    expect(gone.stdout).toMatch(/^FAILED: 10 of 10 differ \(9 answers, 1 server requests, 0 progress/m);
    const silent = await runCli([
      'tape',
      'check',
      tapeFile,
      '--timeout',
      '300',
      '--',
      process.execPath,
      '-e',
      'process.stdin.resume()',
    ]);
    expect(silent.code).toBe(1);
    expect(silent.stdout).toMatch(
      /^MISSING {2}answer to initialize \(seq 1\): no answer within the timeout$/m,
    );
  });

  it('refuses a tape cut short, naming its last line, and checks its complete lines with --allow-truncated', async () => {
    const lines = readFileSync(tapeFile, 'utf8').split('\n');
    const cut = join(dir, 'cut.tape.jsonl.partial');
    // As a killed recording leaves it: the first 8 lines whole, the 9th half written.
    writeFileSync(cut, `${lines.slice(0, 8).join('\n')}\n${(lines[8] as string).slice(0, 30)}`);
    const refused = await runCli(['tape', 'check', cut, '--', ...SERVER]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cut.tape.jsonl.partial:9: truncated (the last line has no end;');
    expect(refused.stderr).toContain('--allow-truncated');
    const r = await runCli(['tape', 'check', cut, '--allow-truncated', '--', ...SERVER]);
    expect(r.stderr).toContain('has no end line (cut short): checking its 7 complete messages');
    expect(r.code).toBe(0);
  });

  it('refuses a broken tape, naming its line, with exit 2', async () => {
    const lines = readFileSync(tapeFile, 'utf8').split('\n');
    const broken = join(dir, 'broken.tape.jsonl');
    writeFileSync(broken, [...lines.slice(0, 4), '{"kind":"message", nope', ...lines.slice(5)].join('\n'));
    const r = await runCli(['tape', 'check', broken, '--', ...SERVER]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/broken\.tape\.jsonl:5: not JSON/);
    const usage = await runCli(['tape', 'check', tapeFile]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('give the server to run after --');
  });
});

describe('tape check --url', () => {
  let everything: StartedProcess | undefined;
  let modern: (StartedProcess & { url: string }) | undefined;

  afterAll(async () => {
    await everything?.stop();
    await modern?.stop();
  });

  it('passes against server-everything over Streamable HTTP (2025 era)', async () => {
    const port = await freePort();
    everything = await startProcess(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      readyStream: 'stderr',
      readyPattern: /listening on port/i,
    });
    const r = await runCli(['tape', 'check', tapeFile, '--url', `http://127.0.0.1:${port}/mcp`]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('none differs');
  });

  it('passes against server-everything over 2024-11-05 HTTP+SSE (the fallback, handshake pipelined)', async () => {
    const port = await freePort();
    const sse = await startProcess(process.execPath, [EVERYTHING, 'sse'], {
      env: { ...process.env, PORT: String(port) },
      readyStream: 'stderr',
      readyPattern: /running on port/i,
    });
    try {
      const r = await runCli(['tape', 'check', tapeFile, '--url', `http://127.0.0.1:${port}/sse`]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain('none differs');
    } finally {
      await sse.stop();
    }
  });

  it('passes against the 2026-07-28 server a tape was recorded from through tape record --url', async () => {
    modern ??= await startHttpFixture('modernServer');
    const recorded = join(dir, 'modern.recorded.tape.jsonl');
    const session = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } },
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'modern' } },
      },
    ];
    const rec = await runCli(['tape', 'record', '-o', recorded, '--url', modern.url], {
      input: session.map((m) => `${JSON.stringify(m)}\n`).join(''),
    });
    expect(rec.code, rec.stderr).toBe(0);
    // The tape holds the requests as the server got them, with the 2026-07-28 envelope the
    // gateway's transport added; the checker sends them as the 2025 client did.
    expect(readFileSync(recorded, 'utf8')).toContain('io.modelcontextprotocol/protocolVersion');
    const r = await runCli(['tape', 'check', recorded, '--url', modern.url, '--verbose']);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(
      /^ok: 3 compared \(3 answers, 0 server requests, 0 progress sequences\), none differs$/m,
    );
  });

  it('checks a 2026-07-28 server: differences first, then the updated tape passes', async () => {
    modern ??= await startHttpFixture('modernServer');
    const handWritten = join(dir, 'modern.tape.jsonl');
    const init = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } };
    const serverInit = {
      protocolVersion: '2025-11-25',
      capabilities: { tools: {} },
      serverInfo: { name: 'old', version: '0' },
    };
    const messages = [
      { dir: 'c2s', message: { jsonrpc: '2.0', id: 1, method: 'initialize', params: init } },
      { dir: 's2c', message: { jsonrpc: '2.0', id: 1, result: serverInit }, re: 1 },
      { dir: 'c2s', message: { jsonrpc: '2.0', method: 'notifications/initialized' } },
      {
        dir: 'c2s',
        message: {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'add', arguments: { a: 1, b: 2 } },
        },
      },
      {
        dir: 's2c',
        message: { jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: '4' }] } },
        re: 4,
      },
    ].map((m, i) => ({ kind: 'message', seq: i + 1, t: i, ...m }));
    const header = {
      tape: 1,
      kind: 'header',
      recordedAt: '2026-11-28T10:00:00.000Z',
      source: { via: 'record', gateway: 'hand' },
      protocolVersion: '2025-11-25',
      server: { initialize: serverInit },
      client: { initialize: init },
      redactions: [],
      incomplete: [],
    };
    writeFileSync(
      handWritten,
      `${[header, ...messages, { kind: 'end', messages: messages.length }].map((l) => JSON.stringify(l)).join('\n')}\n`,
    );
    const first = await runCli([
      'tape',
      'check',
      handWritten,
      '--url',
      modern.url,
      '--update',
      '-o',
      join(dir, 'modern.new.jsonl'),
    ]);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain('DIFFERS  answer to tools/call add (seq 4)');
    expect(first.stdout).toContain('      recorded: "4"\n      live:     "3"');
    const second = await runCli(['tape', 'check', join(dir, 'modern.new.jsonl'), '--url', modern.url]);
    expect(second.code, second.stdout).toBe(0);
  });
});
