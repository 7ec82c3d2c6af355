/**
 * Issue 23, `switchboard tape replay`: a session with server-everything is recorded with
 * `switchboard tape record` (tools, a long call with progress, a resource read, a prompt, a
 * sampling request the client answers); then the official SDK clients run the same session against
 * `tape replay` over stdio and over Streamable HTTP (a 2025 session client, and a 2026-07-28
 * client), and must see what they saw live: the same results, the same progress, the same sampling
 * request. A request the tape does not hold gets -32011 naming the closest recorded request.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdioTransport } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, EVERYTHING, ROOT, runCli, tempDir } from './support/cli.js';
import {
  answerSampling,
  runScenario,
  SAMPLING_ANSWER,
  type ScenarioOutcome,
  wireProgress,
} from './support/tape-scenario.js';

function newClient(): { client: Client; asked: unknown[] } {
  const client = new Client({ name: 'tape-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
  return { client, asked: answerSampling(client) };
}

function replayOverStdio(tape: string, options: readonly string[] = []): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'tape', 'replay', tape, '--speed', '0', ...options],
    env: process.env as Record<string, string>,
    stderr: 'pipe',
  });
}

/** Starts `tape replay --http --port 0` and resolves with its URL once it listens. */
function replayOverHttp(
  tape: string,
  options: readonly string[] = [],
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    [CLI, 'tape', 'replay', tape, '--http', '--port', '0', '--speed', '0', ...options],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      const found = /serving .* on (http:\/\/\S+\/mcp)/.exec(err);
      if (found) resolve({ url: found[1] as string, child });
    });
    child.on('exit', (code) => reject(new Error(`replay exited ${code}: ${err}`)));
  });
}

let dir: string;
let tape: string;
let live: ScenarioOutcome;

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

beforeAll(async () => {
  dir = tempDir('switchboard-tape-replay-');
  tape = join(dir, 'everything.tape.jsonl');
  const { client, asked } = newClient();
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'tape', 'record', '-o', tape, '--', process.execPath, EVERYTHING, 'stdio'],
      env: process.env as Record<string, string>,
      stderr: 'pipe',
    }),
  );
  live = await runScenario(client, asked);
  await client.close();
  // The recorder writes the tape when its client has gone.
  for (let i = 0; i < 100; i++) {
    try {
      if (readFileSync(tape, 'utf8').includes('"kind":"end"')) break;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}, 60_000);

describe('tape replay', () => {
  it('the recorded session is what the test needs (progress and a sampling request)', () => {
    expect(live.progress.length).toBe(3);
    expect(live.samplingRequests.length).toBe(1);
  });

  it('over stdio, the v1 SDK client sees what it saw live', async () => {
    const { client, asked } = newClient();
    await client.connect(replayOverStdio(tape));
    const replayed = await runScenario(client, asked);
    await client.close();
    expect(replayed).toEqual(live);
  });

  it('over Streamable HTTP, a 2025 session client sees what it saw live', async () => {
    const { url, child } = await replayOverHttp(tape);
    try {
      const { client, asked } = newClient();
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      const replayed = await runScenario(client, asked);
      await client.close();
      expect(replayed).toEqual(live);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('over Streamable HTTP, a 2026-07-28 client gets the same results and progress', async () => {
    const { url, child } = await replayOverHttp(tape);
    try {
      const client = new ModernClient(
        { name: 'tape-modern', version: '1.0.0' },
        { capabilities: { sampling: {} }, versionNegotiation: { mode: 'auto' } },
      );
      const asked: unknown[] = [];
      client.setRequestHandler('sampling/createMessage', async (request) => {
        asked.push(request.params);
        return SAMPLING_ANSWER;
      });
      const transport = new ModernTransport(new URL(url));
      await client.connect(transport);
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello tape' } });
      expect(echo.content).toEqual((live.echo as { content: unknown }).content);
      const progress = wireProgress(transport);
      const long = await client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
        { onprogress: () => {} },
      );
      expect(long.content).toEqual((live.long as { content: unknown }).content);
      expect(progress).toEqual(live.progress);
      const resource = await client.readResource({ uri: 'demo://resource/static/document/architecture.md' });
      expect(resource.contents).toEqual((live.resource as { contents: unknown }).contents);
      // The recorded sampling request comes as input_required; the SDK answers it and retries.
      const sampling = await client.callTool({
        name: 'trigger-sampling-request',
        arguments: { prompt: 'six times seven?' },
      });
      expect(sampling.content).toEqual((live.sampling as { content: unknown }).content);
      expect(asked.map((p) => ({ ...(p as object), _meta: undefined }))).toEqual(
        live.samplingRequests.map((p) => ({ ...(p as object), _meta: undefined })),
      );
      await client.close();
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('over stdio, a v2 SDK client (era auto) falls back to the recorded session era and gets the same answers', async () => {
    const client = new ModernClient(
      { name: 'tape-modern-stdio', version: '1.0.0' },
      { capabilities: { sampling: {} }, versionNegotiation: { mode: 'auto' } },
    );
    const asked: unknown[] = [];
    client.setRequestHandler('sampling/createMessage', async (request) => {
      asked.push(request.params);
      return SAMPLING_ANSWER;
    });
    const transport = new ModernStdioTransport({
      command: process.execPath,
      args: [CLI, 'tape', 'replay', tape, '--speed', '0'],
      env: process.env as Record<string, string>,
      stderr: 'pipe',
    });
    await client.connect(transport);
    try {
      // The tape's server spoke a session-era revision: discover is refused as it refused it.
      expect(client.getNegotiatedProtocolVersion()).not.toBe('2026-07-28');
      const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello tape' } });
      expect(echo.content).toEqual((live.echo as { content: unknown }).content);
      const sampling = await client.callTool({
        name: 'trigger-sampling-request',
        arguments: { prompt: 'six times seven?' },
      });
      expect(sampling.content).toEqual((live.sampling as { content: unknown }).content);
      expect(asked).toEqual(live.samplingRequests);
    } finally {
      await client.close();
    }
  });

  it('over HTTP, each session has its own replay: an answer used in one is still there for the next', async () => {
    const { url, child } = await replayOverHttp(tape);
    try {
      const echo = { name: 'echo', arguments: { message: 'hello tape' } };
      const first = newClient().client;
      await first.connect(new StreamableHTTPClientTransport(new URL(url)));
      expect((await first.callTool(echo)).content).toEqual((live.echo as { content: unknown }).content);
      // The tape holds one such call: mode match answers it once per replay.
      await expect(first.callTool(echo)).rejects.toMatchObject({ code: -32011 });
      const second = newClient().client;
      await second.connect(new StreamableHTTPClientTransport(new URL(url)));
      expect((await second.callTool(echo)).content).toEqual((live.echo as { content: unknown }).content);
      await Promise.all([first.close(), second.close()]);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('over the 2024-11-05 HTTP+SSE transport, the v1 SDK client sees what it saw live', async () => {
    const { url, child } = await replayOverHttp(tape);
    try {
      const { client, asked } = newClient();
      await client.connect(new SSEClientTransport(new URL(url.replace(/\/mcp$/, '/sse'))));
      const replayed = await runScenario(client, asked);
      await client.close();
      expect(replayed).toEqual(live);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('over stdio, answers the calls asked before the client closed stdin', async () => {
    const small = join(ROOT, 'test/fixtures/tapes/small.tape.jsonl');
    const input = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } },
    ]
      .map((m) => `${JSON.stringify(m)}\n`)
      .join('');
    const result = await runCli(['tape', 'replay', small, '--speed', '0'], { input });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"id":2,"result":{"content":[{"type":"text","text":"Echo: hi"}]}');
  });

  it('refuses a tape it cannot read, naming the line (exit 2)', async () => {
    const bad = join(dir, 'bad.tape.jsonl');
    writeFileSync(bad, '{"tape":1,"kind":"header"\n');
    const result = await runCli(['tape', 'replay', bad]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/bad\.tape\.jsonl:1: /);
  });

  it('a request the tape does not hold gets -32011 naming the closest recorded request', async () => {
    const { client } = newClient();
    await client.connect(replayOverStdio(tape));
    const error = await client.callTool({ name: 'echo', arguments: { message: 'not on the tape' } }).then(
      () => undefined,
      (e: unknown) => e as { code: number; message: string; data: unknown },
    );
    await client.close();
    expect(error?.code).toBe(-32011);
    expect(error?.message).toContain('closest recorded request: #');
    expect(error?.message).toContain('$.arguments.message: recorded "hello tape", got "not on the tape"');
    expect(error?.data).toMatchObject({
      code: 'SB_TAPE_NO_MATCH',
      reason: 'not-recorded',
      closest: { method: 'tools/call' },
    });
  });
});
