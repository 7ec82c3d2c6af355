/**
 * The one-line bridges, end to end with the official SDK clients against the built CLI:
 * - `switchboard serve -- <command> [args...]`: one stdio server over Streamable HTTP, no YAML;
 * - `switchboard stdio --url <url>`: a remote server for a stdio-only client, its headers from the
 *   environment, recorded in the trace and the audit ledger like a wrapped command;
 * - the 2024-11-05 HTTP+SSE transport on `/sse` for old clients.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, EVERYTHING, makeToken, runCli, tempDir } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { traceSessions, traceShow } from './support/trace.js';

/** The text of an echo tool's answer. */
function echoed(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as { type: string; text?: string }[];
  return content.map((c) => c.text ?? '').join('');
}

describe('switchboard serve -- <command>', () => {
  let serve: RunningServe;

  beforeAll(async () => {
    serve = await startServe({ args: ['--', process.execPath, EVERYTHING, 'stdio'] });
  }, 90_000);

  afterAll(async () => {
    await serve?.stop();
  });

  it('serves the one server, named after its package, to the SDK Streamable HTTP client', async () => {
    // Alone on /mcp, its tools keep their own names (no `<server>__` prefix), as on its own endpoint.
    expect(serve.stderr()).toContain('(upstreams: server-everything)');
    for (const url of [serve.url, `${serve.base}/servers/server-everything/mcp`]) {
      const client = new Client({ name: 'bridge-it', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      try {
        const tools = (await client.listTools()).tools.map((t) => t.name);
        expect(tools).toContain('echo');
        const result = await client.callTool({ name: 'echo', arguments: { message: 'over http' } });
        expect(echoed(result)).toContain('over http');
      } finally {
        await client.close();
      }
    }
  });

  it('takes --name, and refuses a command together with --config with a clear error', async () => {
    const both = await runCli([
      'serve',
      '--port',
      '0',
      '--data-dir',
      tempDir('switchboard-bridge-both-'),
      '--config',
      'switchboard.yaml',
      '--',
      process.execPath,
      EVERYTHING,
    ]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/were both given: either serve one command with the defaults/);

    const named = await startServe({ args: ['--name', 'ev', '--', process.execPath, EVERYTHING, 'stdio'] });
    try {
      expect(named.stderr()).toContain('(upstreams: ev)');
      const client = new Client({ name: 'bridge-it', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(named.url)));
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
      await client.close();
      const perServer = new Client({ name: 'bridge-it', version: '1' });
      await perServer.connect(new StreamableHTTPClientTransport(new URL(`${named.base}/servers/ev/mcp`)));
      expect((await perServer.listTools()).tools.length).toBeGreaterThan(0);
      await perServer.close();
    } finally {
      await named.stop();
    }
  }, 90_000);
});

describe('switchboard stdio --url', () => {
  let remote: RunningServe;
  let token: string;

  beforeAll(async () => {
    // The remote server: a gateway that requires a bearer token on every request.
    const made = await makeToken('bridge');
    token = made.token;
    remote = await startServe({
      configYaml: stdioUpstreamConfig(
        { everything: { script: EVERYTHING, args: ['stdio'] } },
        ['auth:', '  tokens:', made.yaml, ''].join('\n'),
      ),
    });
  }, 90_000);

  afterAll(async () => {
    await remote?.stop();
  });

  function bridge(dataDir: string, env: Record<string, string>): StdioClientTransport {
    return new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'stdio',
        '--data-dir',
        dataDir,
        '--url',
        `${remote.base}/servers/everything/mcp`,
        '--header',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the option's own syntax, read from env.
        'Authorization: Bearer ${env:BRIDGE_TOKEN}',
      ],
      env: { ...process.env, ...env } as Record<string, string>,
      stderr: 'pipe',
    });
  }

  it('relays the SDK stdio client to the remote server with the header from the environment, recorded', async () => {
    const dataDir = tempDir('switchboard-bridge-url-');
    const client = new Client({ name: 'remote-it', version: '1' });
    await client.connect(bridge(dataDir, { BRIDGE_TOKEN: token }));
    try {
      const result = await client.callTool({ name: 'echo', arguments: { message: 'from afar' } });
      expect(echoed(result)).toContain('from afar');
    } finally {
      await client.close();
    }
    // The trace: one stdio session, its upstream named after the host, the call in it.
    const sessions = await traceSessions(dataDir);
    const session = sessions.find((s) => s.transport === 'stdio');
    expect(session?.upstreams).toEqual(['127-0-0-1']);
    const hops = await traceShow(session!.key, dataDir);
    expect(hops.filter((h) => h.payload.method === 'tools/call').length).toBeGreaterThanOrEqual(2);
    // The ledger: the call has its record, like a wrapped command's.
    const ledger = readFileSync(join(dataDir, 'audit', 'stdio', '127-0-0-1', 'ledger-000001.jsonl'), 'utf8');
    expect(ledger).toContain('"echo"');
  }, 60_000);

  it('refuses to start when a header names a variable that is not set, naming it', async () => {
    const env = { ...process.env };
    delete env.BRIDGE_TOKEN;
    const result = await runCli(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the option's own syntax.
      ['stdio', '--url', remote.url, '--header', 'Authorization: Bearer ${env:BRIDGE_TOKEN}'],
      { env },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('BRIDGE_TOKEN');
    expect(result.stderr).toMatch(/not set/);
  });

  it("fails to start, with the server's 401 on stderr, when the remote server refuses the credentials", async () => {
    const dataDir = tempDir('switchboard-bridge-url-bad-');
    const client = new Client({ name: 'remote-it', version: '1' });
    const transport = bridge(dataDir, { BRIDGE_TOKEN: 'sbt_wrong' });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
    });
    await expect(client.connect(transport)).rejects.toThrow();
    await exited;
    expect(stderr).toMatch(/401/);
    await client.close().catch(() => undefined);
  }, 60_000);
});

describe('switchboard stdio --url when the remote server ends the session', () => {
  let remote: RunningServe;

  beforeAll(async () => {
    // Every session of the remote ends after 2 s, whatever it is doing. (The sweep used to run every
    // idleTimeout/4, at most 30 s, whatever maxAge was: these sessions then lived up to 30 s.)
    remote = await startServe({
      configYaml: stdioUpstreamConfig(
        { everything: { script: EVERYTHING, args: ['stdio'] } },
        'sessions:\n  maxAge: 2s\n',
      ),
    });
  }, 90_000);

  afterAll(async () => {
    await remote?.stop();
  });

  function bridge(options: readonly string[]): StdioClientTransport {
    return new StdioClientTransport({
      command: process.execPath,
      args: [
        CLI,
        'stdio',
        '--data-dir',
        tempDir('switchboard-bridge-restart-'),
        '--no-audit',
        ...options,
        '--url',
        `${remote.base}/servers/everything/mcp`,
      ],
      stderr: 'pipe',
    });
  }

  it("with --restart, opens a new session, replays the client's initialize, and the client carries on", async () => {
    const transport = bridge(['--restart', '--era', 'legacy']);
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const client = new Client({ name: 'remote-restart', version: '1' });
    await client.connect(transport);
    try {
      expect(echoed(await client.callTool({ name: 'echo', arguments: { message: 'one' } }))).toContain('one');
      await expect.poll(() => /re-initialized/.test(stderr), { timeout: 15_000 }).toBe(true);
      expect(echoed(await client.callTool({ name: 'echo', arguments: { message: 'two' } }))).toContain('two');
    } finally {
      await client.close();
    }
  }, 60_000);

  it('without --restart, exits 1', async () => {
    const transport = bridge(['--era', 'legacy']);
    const client = new Client({ name: 'remote-once', version: '1' });
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
    });
    await client.connect(transport);
    // The SDK does not expose the exit status: read from its child (a private field, checked here).
    const child = (transport as unknown as { _process?: import('node:child_process').ChildProcess })._process;
    expect(child).toBeDefined();
    const exited = new Promise<number | null>((resolve) => {
      if (child!.exitCode !== null) resolve(child!.exitCode);
      else child!.once('exit', (code) => resolve(code));
    });
    await closed;
    expect(await exited).toBe(1);
  }, 60_000);
});

describe('the 2024-11-05 HTTP+SSE transport on /sse', () => {
  let serve: RunningServe;

  beforeAll(async () => {
    serve = await startServe({
      configYaml: stdioUpstreamConfig({ everything: { script: EVERYTHING, args: ['stdio'] } }),
    });
  }, 90_000);

  afterAll(async () => {
    await serve?.stop();
  });

  it('serves the SDK SSE client on the aggregated and the per-server endpoint, with progress', async () => {
    expect(serve.stderr()).toContain(`clients of the 2024-11-05 HTTP+SSE transport: ${serve.base}/sse`);
    for (const [url, echo] of [
      // Alone on the aggregated endpoint, the upstream's tools keep their own names.
      [`${serve.base}/sse`, 'echo'],
      [`${serve.base}/servers/everything/sse`, 'echo'],
    ] as const) {
      const client = new Client({ name: 'old-client', version: '1' });
      await client.connect(new SSEClientTransport(new URL(url)));
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toContain(echo);
        const result = await client.callTool({ name: echo, arguments: { message: 'down the stream' } });
        expect(echoed(result)).toContain('down the stream');
        const progress: number[] = [];
        const long = url.endsWith('/servers/everything/sse') ? 'trigger-long-running-operation' : undefined;
        if (long) {
          await client.callTool({ name: long, arguments: { duration: 0.3, steps: 3 } }, undefined, {
            onprogress: (p) => progress.push(p.progress),
          });
          expect(progress.length).toBeGreaterThanOrEqual(1);
        }
      } finally {
        await client.close();
      }
    }
  }, 60_000);

  it('records the session in the trace, and ends it when the stream closes', async () => {
    const client = new Client({ name: 'old-client-traced', version: '1' });
    await client.connect(new SSEClientTransport(new URL(`${serve.base}/sse`)));
    const result = await client.callTool({ name: 'echo', arguments: { message: 'traced' } });
    expect(echoed(result)).toContain('traced');
    await client.close();
    await expect
      .poll(
        async () => ((await (await fetch(`${serve.base}/health`)).json()) as { sessions: number }).sessions,
        {
          timeout: 5000,
        },
      )
      .toBe(0);
    const sessions = await traceSessions(serve.dataDir);
    const traced = sessions.find((s) => s.clientInfo?.name === 'old-client-traced');
    expect(traced?.transport).toBe('http');
    const hops = await traceShow(traced!.key, serve.dataDir);
    expect(hops.some((h) => h.payload.method === 'tools/call')).toBe(true);
  }, 60_000);
});
