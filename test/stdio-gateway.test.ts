/**
 * The stdio gateway against real peers: the official MCP SDK client drives
 * `switchboard stdio -- mcp-server-everything stdio` (the reference server from npm). Then the
 * trace of that run is read back with the `switchboard trace` commands and its correlation links
 * are asserted.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateMessageRequestSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingThroughStdio, jsonLines, runCli, tempDir } from './support/cli.js';

interface WireEnvelope {
  id: string;
  kind: string;
  from: string;
  to?: string[];
  context?: string;
  correlation_id?: string[];
  payload: {
    id?: string | number;
    method?: string;
    params?: Record<string, unknown>;
    result?: unknown;
    error?: { code: number; message: string };
  };
}

describe('switchboard stdio in front of server-everything', () => {
  const dataDir = tempDir();
  let transport: StdioClientTransport;
  let client: Client;
  let stderr = '';
  let sampled = 0;

  beforeAll(async () => {
    transport = everythingThroughStdio(dataDir);
    transport.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    client = new Client({ name: 'switchboard-it', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      sampled++;
      const first = request.params.messages[0]?.content;
      const text = first && 'text' in first ? String(first.text) : '';
      return {
        role: 'assistant',
        model: 'test-model',
        content: { type: 'text', text: `sampled(${text.length})` },
      };
    });
    await client.connect(transport);
  });

  afterAll(async () => {
    await client.close().catch(() => {});
  });

  it("initializes through the gateway with the server's own identity", () => {
    expect(client.getServerVersion()?.name).toBe('mcp-servers/everything');
    expect(client.getServerCapabilities()?.tools).toBeDefined();
  });

  it('lists tools, including the ones the server adds for a sampling client', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('echo');
    expect(names).toContain('trigger-long-running-operation');
    expect(names).toContain('trigger-sampling-request');
  });

  it('calls echo', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { message: 'through the gateway' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: through the gateway' }]);
  });

  it('relays progress of a long-running operation to the caller', async () => {
    const progress: Progress[] = [];
    const result = await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    expect(JSON.stringify(result.content)).toContain('Long running operation completed');
    // The SDK client handles notifications a microtask later than responses, so a last progress
    // that arrives in the same read as the response is dropped by the client itself (with or
    // without a gateway). The trace test below checks that all three reached the client first.
    expect(progress.map((p) => p.progress).slice(0, 2)).toEqual([1, 2]);
    expect(progress.every((p) => p.total === 3)).toBe(true);
  });

  it('forwards a cancellation and the client gets no late answer', async () => {
    const controller = new AbortController();
    const call = client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
      undefined,
      { signal: controller.signal, onprogress: () => {} },
    );
    setTimeout(() => controller.abort('changed my mind'), 300);
    await expect(call).rejects.toThrow();
    // Give the server time to finish; nothing for the cancelled request may reach the client.
    await new Promise((r) => setTimeout(r, 2200));
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'still alive' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'Echo: still alive' }]);
  });

  it('routes a sampling request from the server to the client and its answer back', async () => {
    const result = await client.callTool({
      name: 'trigger-sampling-request',
      arguments: { prompt: 'hello', maxTokens: 10 },
    });
    expect(sampled).toBe(1);
    expect(JSON.stringify(result.content)).toContain('sampled(');
  });

  it('answers every in-flight request with an error within a second when the server crashes, then exits', async () => {
    const started = jsonLines<{ msg: string; pid?: number }>(stderr).find(
      (l) => l.msg === 'upstream started',
    );
    const pid = started?.pid ?? 0;
    expect(pid).toBeGreaterThan(0);
    const call = client.callTool({
      name: 'trigger-long-running-operation',
      arguments: { duration: 5, steps: 5 },
    });
    await new Promise((r) => setTimeout(r, 200));
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    await expect(call).rejects.toThrow(/upstream everything closed/);
    expect(Date.now() - killedAt).toBeLessThan(1000);
    // The gateway exits with the child's status (killed: 1) and the client sees the pipe close.
    await new Promise<void>((resolve) => {
      if (transport.pid === null) resolve();
      transport.onclose = () => resolve();
      setTimeout(resolve, 5000);
    });
  });

  describe('the trace of that run, read back with the trace commands', () => {
    let session: string;
    let envelopes: WireEnvelope[];

    beforeAll(async () => {
      const sessions = await runCli(['trace', 'sessions', '--json', '--data-dir', dataDir]);
      expect(sessions.code).toBe(0);
      const summaries = jsonLines<{
        key: string;
        transport: string;
        upstreams: string[];
        envelopes: number;
        endedAt?: number;
      }>(sessions.stdout);
      // The client's session; late progress of the cancelled call stays in it (no gateway-level traffic here).
      expect(summaries).toHaveLength(1);
      expect(summaries[0]).toMatchObject({ transport: 'stdio', upstreams: ['everything'] });
      expect(summaries[0]!.endedAt).toBeGreaterThan(0);
      session = summaries[0]!.key;
      const shown = await runCli(['trace', 'show', '--json', '--data-dir', dataDir, '--', session]);
      expect(shown.code).toBe(0);
      envelopes = jsonLines<WireEnvelope>(shown.stdout);
    });

    const byId = (id: string) => envelopes.find((e) => e.id === id);
    const requestsOf = (method: string, from: string) =>
      envelopes.filter((e) => e.kind === 'mcp/request' && e.payload.method === method && e.from === from);

    it('records each hop of a call: client request, upstream copy, upstream response, client response', () => {
      const echoCalls = requestsOf('tools/call', `client-${session}`).filter((e) =>
        JSON.stringify(e.payload).includes('through the gateway'),
      );
      expect(echoCalls).toHaveLength(1);
      const down = echoCalls[0]!;
      expect(down.context).toBe(`${session}/${down.id}`);
      const up = envelopes.find(
        (e) => e.kind === 'mcp/request' && e.from === 'gateway' && e.correlation_id?.includes(down.id),
      );
      expect(up?.to).toEqual(['server-everything']);
      expect(up?.context).toBe(down.context);
      const upResponse = envelopes.find(
        (e) =>
          e.kind === 'mcp/response' && e.from === 'server-everything' && e.correlation_id?.includes(up!.id),
      );
      expect(upResponse?.payload.id).toBe(up?.payload.id);
      const downResponse = envelopes.find(
        (e) =>
          e.kind === 'mcp/response' &&
          e.to?.[0] === `client-${session}` &&
          e.correlation_id?.includes(down.id),
      );
      expect(downResponse?.correlation_id).toEqual(expect.arrayContaining([down.id, upResponse!.id]));
      expect(downResponse?.payload.id).toBe(down.payload.id);
    });

    it('correlates progress to the request that carried its token, inside its context', () => {
      const long = requestsOf('tools/call', `client-${session}`).find((e) =>
        JSON.stringify(e.payload).includes('"steps":3'),
      )!;
      const progress = envelopes.filter(
        (e) =>
          e.payload.method === 'notifications/progress' &&
          e.to?.[0] === `client-${session}` &&
          e.correlation_id?.includes(long.id),
      );
      expect(progress.map((p) => p.payload.params?.progress)).toEqual([1, 2, 3]);
      for (const p of progress) expect(p.context).toBe(long.context);
      // All of them went out before the response.
      const response = envelopes.find(
        (e) =>
          e.kind === 'mcp/response' &&
          e.to?.[0] === `client-${session}` &&
          e.correlation_id?.includes(long.id),
      )!;
      expect(envelopes.indexOf(response)).toBeGreaterThan(envelopes.indexOf(progress[2]!));
    });

    it('maps the cancellation to the upstream id of the cancelled request', () => {
      const cancels = envelopes.filter((e) => e.payload.method === 'notifications/cancelled');
      const fromClient = cancels.find((e) => e.from === `client-${session}`)!;
      const toServer = cancels.find(
        (e) => e.from === 'gateway' && e.correlation_id?.includes(fromClient.id),
      )!;
      const cancelled = byId(fromClient.correlation_id![0]!)!;
      const upstreamCopy = envelopes.find(
        (e) => e.from === 'gateway' && e.kind === 'mcp/request' && e.correlation_id?.includes(cancelled.id),
      )!;
      expect(toServer.payload.params?.requestId).toBe(upstreamCopy.payload.id);
      // No response for the cancelled request reached the client.
      const answered = envelopes.filter(
        (e) =>
          e.kind === 'mcp/response' &&
          e.to?.[0] === `client-${session}` &&
          e.correlation_id?.includes(cancelled.id),
      );
      expect(answered).toHaveLength(0);
    });

    it('places the sampling request under the tool call that caused it, and follows its correlation both ways', async () => {
      const call = requestsOf('tools/call', `client-${session}`).find((e) =>
        JSON.stringify(e.payload).includes('trigger-sampling-request'),
      )!;
      const sampling = envelopes.find(
        (e) => e.payload.method === 'sampling/createMessage' && e.to?.[0] === `client-${session}`,
      )!;
      expect(sampling.context?.startsWith(`${call.context}/`)).toBe(true);
      const followed = await runCli(['trace', 'follow', sampling.id, '--json', '--data-dir', dataDir]);
      expect(followed.code).toBe(0);
      const graph = jsonLines<WireEnvelope>(followed.stdout);
      // What it answers: the server's own request; what answers it: the client's response.
      expect(
        graph.some((e) => e.from === 'server-everything' && e.payload.method === 'sampling/createMessage'),
      ).toBe(true);
      expect(graph.some((e) => e.kind === 'mcp/response' && e.from === `client-${session}`)).toBe(true);
      const tree = await runCli(['trace', 'tree', '--json', '--data-dir', dataDir, '--', call.context!]);
      const subtree = jsonLines<WireEnvelope>(tree.stdout);
      expect(subtree.some((e) => e.id === sampling.id)).toBe(true);
      expect(
        subtree.every((e) => e.context === call.context || e.context?.startsWith(`${call.context}/`)),
      ).toBe(true);
    });

    it("records the gateway's error answer to the request cut short by the crash", () => {
      const errors = envelopes.filter(
        (e) => e.kind === 'mcp/response' && e.payload.error?.message.includes('upstream everything closed'),
      );
      expect(errors).toHaveLength(1);
      expect(errors[0]!.from).toBe('gateway');
    });
  });
});

describe("switchboard stdio gives the server an explicit environment, never the gateway's own", () => {
  it('passes the minimal set, --env and --pass-env, and nothing else the gateway has', async () => {
    const dataDir = tempDir();
    const secret = 'sb-it-gateway-secret-0a9f';
    const transport = everythingThroughStdio(
      dataDir,
      [
        '--env',
        'SB_IT_CONFIGURED=configured-value',
        '--pass-env',
        'SB_IT_PASSED',
        '--no-trace',
        '--no-audit',
      ],
      { SB_IT_GATEWAY_SECRET: secret, SB_IT_PASSED: 'passed-value' },
    );
    const client = new Client({ name: 'switchboard-env-it', version: '1.0.0' });
    try {
      await client.connect(transport);
      const result = await client.callTool({ name: 'get-env', arguments: {} });
      const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
      const env = JSON.parse(text) as Record<string, string>;
      expect(env.SB_IT_CONFIGURED).toBe('configured-value');
      expect(env.SB_IT_PASSED).toBe('passed-value');
      expect(env.PATH).toBe(process.env.PATH);
      expect(env.SB_IT_GATEWAY_SECRET).toBeUndefined();
      expect(text).not.toContain(secret);
    } finally {
      await client.close().catch(() => {});
    }
  });
});
