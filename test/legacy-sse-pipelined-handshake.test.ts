/**
 * A client that pipelines its handshake (`initialize`, `notifications/initialized` and its first
 * request written at once) through `switchboard stdio --url` to a 2024-11-05 HTTP+SSE server
 * (server-everything in `sse` mode): the gateway first tries Streamable HTTP, falls back to
 * HTTP+SSE, and every message reaches the server in order, the request answered. Before the fix
 * what was sent behind the `initialize` was lost with the refused Streamable HTTP attempt: the
 * server saw one message and `tools/list` was never answered. The same pipelined handshake to a
 * Streamable HTTP server with sessions got 400: what followed `initialize` went without its
 * session id.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING, jsonLines, runCli } from './support/cli.js';
import { type StartedProcess, startProcess } from './support/peers.js';

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

const HANDSHAKE = [
  {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2024-11-05',
      capabilities: {},
      clientInfo: { name: 'pipelined', version: '1' },
    },
  },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
]
  .map((m) => JSON.stringify(m))
  .join('\n');

describe('switchboard stdio --url to a 2024-11-05 HTTP+SSE server, handshake pipelined', () => {
  let everything: StartedProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    everything = await startProcess(process.execPath, [EVERYTHING, 'sse'], {
      env: { ...process.env, PORT: String(port) },
      readyStream: 'stderr',
      readyPattern: /running on port/i,
    });
    url = `http://127.0.0.1:${port}/sse`;
  });

  afterAll(async () => {
    await everything?.stop();
  });

  it('answers the request written right after initialize, and the server gets every message', async () => {
    // stdin ends at once: the gateway drains, answering what is in flight before it exits.
    const r = await runCli(['stdio', '--url', url], { input: `${HANDSHAKE}\n` });
    expect(r.code, r.stderr).toBe(0);
    const answers = jsonLines<{ id?: number; result?: { tools?: unknown[] }; error?: unknown }>(r.stdout);
    const list = answers.find((m) => m.id === 2);
    expect(list?.error, r.stdout).toBeUndefined();
    expect(list?.result?.tools?.length).toBeGreaterThan(0);
    expect(r.stderr).toContain('falling back to the 2024-11-05 HTTP+SSE transport');
    expect(everything.stderr().match(/Client Message from/g)).toHaveLength(3);
  });
});

describe('switchboard stdio --url to a Streamable HTTP server with sessions, handshake pipelined', () => {
  let everything: StartedProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    everything = await startProcess(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      readyStream: 'stderr',
      readyPattern: /listening on port/i,
    });
    url = `http://127.0.0.1:${port}/mcp`;
  });

  afterAll(async () => {
    await everything?.stop();
  });

  it('sends what follows initialize with the session id it set (before, 400 "Server not initialized")', async () => {
    const r = await runCli(['stdio', '--url', url], { input: `${HANDSHAKE}\n` });
    expect(r.code, r.stderr).toBe(0);
    const answers = jsonLines<{ id?: number; result?: { tools?: unknown[] }; error?: unknown }>(r.stdout);
    const list = answers.find((m) => m.id === 2);
    expect(list?.error, r.stdout).toBeUndefined();
    expect(list?.result?.tools?.length).toBeGreaterThan(0);
  });
});
