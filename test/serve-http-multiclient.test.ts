/**
 * Several MCP SDK clients (v1 `Client` over `StreamableHTTPClientTransport`) at once on one
 * `switchboard serve`, with server-everything behind it over stdio as one shared upstream:
 * colliding request ids and progress tokens, sampling routed to the session whose call caused it,
 * log levels and resource subscriptions per session, cancellation of one client's call; then the
 * aggregated endpoint with two upstreams (server-everything shared, the conformance fixture per
 * session), and sampling with a per-session upstream.
 */
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  CreateMessageRequestSchema,
  type LoggingLevel,
  LoggingMessageNotificationSchema,
  type Progress,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING, jsonLines, runCli } from './support/cli.js';
import { FIXTURES } from './support/peers.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { sleep, waitUntil } from './support/sse-client.js';

const LEVELS: readonly LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];
const rank = (level: string) => LEVELS.indexOf(level as LoggingLevel);

const ARCH = 'demo://resource/static/document/architecture.md';
const FEAT = 'demo://resource/static/document/features.md';

interface TestClient {
  readonly name: string;
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  /** Every message the client sent, in order. */
  readonly sent: JSONRPCMessage[];
  readonly logs: { level: string; data: string }[];
  readonly updates: string[];
  readonly errors: Error[];
  /** How many sampling requests reached this client. */
  sampled: number;
  /** Resolves once the client's standalone GET stream is open. */
  readonly getStreamOpen: Promise<void>;
  disconnect(): Promise<void>;
}

/** Connects an SDK client; with `sampling`, it declares sampling and answers with its own name. */
async function connect(url: string, name: string, options: { sampling?: boolean } = {}): Promise<TestClient> {
  const client = new Client(
    { name: `switchboard-it-${name}`, version: '1.0.0' },
    { capabilities: options.sampling ? { sampling: {} } : {} },
  );
  // Knowing when the SDK's GET stream is open lets a test wait for it instead of guessing.
  let markOpen: () => void = () => {};
  const getStreamOpen = new Promise<void>((resolve) => {
    markOpen = resolve;
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      if ((init?.method ?? 'GET') === 'GET' && response.ok) markOpen();
      return response;
    },
  });
  const sent: JSONRPCMessage[] = [];
  const send = transport.send.bind(transport);
  transport.send = (message, sendOptions) => {
    if (Array.isArray(message)) sent.push(...message);
    else sent.push(message);
    return send(message, sendOptions);
  };
  const result: TestClient = {
    name,
    client,
    transport,
    sent,
    logs: [],
    updates: [],
    errors: [],
    sampled: 0,
    getStreamOpen,
    async disconnect() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
  client.onerror = (error) => {
    result.errors.push(error);
  };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    result.logs.push({ level: n.params.level, data: String(n.params.data) });
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    result.updates.push(n.params.uri);
  });
  if (options.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      result.sampled++;
      return {
        role: 'assistant',
        model: `model-of-${name}`,
        content: { type: 'text', text: `sampled by ${name}` },
      };
    });
  }
  await client.connect(transport);
  return result;
}

/** An envelope as `switchboard trace show --json` prints it (the fields used here). */
interface TraceEnvelope {
  readonly kind: string;
  readonly from: string;
  readonly payload: { id?: string | number; method?: string; params?: { requestId?: string | number } };
}

/** The text of a tool result's content. */
function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

function sentCall(c: TestClient, method: string): { id: unknown; token: unknown } {
  const message = c.sent.find((m) => 'method' in m && m.method === method && 'id' in m) as
    | { id: unknown; params?: { _meta?: { progressToken?: unknown } } }
    | undefined;
  return { id: message?.id, token: message?.params?._meta?.progressToken };
}

/** Waits until the SDK clients have opened their GET streams (they do so after `initialized`). */
async function settle(...clients: TestClient[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.all(clients.map((c) => c.getStreamOpen)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the GET streams did not open')), 10_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

let shared: RunningServe;
let perSession: RunningServe;
let everythingUrl: string;
const open: TestClient[] = [];

async function client(url: string, name: string, options: { sampling?: boolean } = {}): Promise<TestClient> {
  const c = await connect(url, name, options);
  open.push(c);
  return c;
}

async function disconnectAll(): Promise<void> {
  await Promise.all(open.splice(0).map((c) => c.disconnect().catch(() => undefined)));
}

beforeAll(async () => {
  [shared, perSession] = await Promise.all([
    startServe({
      configYaml: stdioUpstreamConfig({
        everything: { script: EVERYTHING, args: ['stdio'], sharing: 'shared' },
        conformance: { script: FIXTURES.conformanceServer, args: ['stdio'], sharing: 'per-session' },
      }),
    }),
    startServe({
      configYaml: stdioUpstreamConfig({
        everything: { script: EVERYTHING, args: ['stdio'], sharing: 'per-session' },
      }),
    }),
  ]);
  everythingUrl = `${shared.base}/servers/everything/mcp`;
});

afterAll(async () => {
  await disconnectAll();
  await Promise.all([shared?.stop(), perSession?.stop()]);
});

describe('two clients on one shared upstream', () => {
  it('keeps colliding request ids and progress tokens apart: each client gets only its own progress and result', async () => {
    try {
      const a = await client(everythingUrl, 'A');
      const b = await client(everythingUrl, 'B');
      const progressA: Progress[] = [];
      const progressB: Progress[] = [];
      const [resultA, resultB] = await Promise.all([
        a.client.callTool(
          { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 3 } },
          undefined,
          { onprogress: (p) => progressA.push(p) },
        ),
        b.client.callTool(
          { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 5 } },
          undefined,
          { onprogress: (p) => progressB.push(p) },
        ),
      ]);
      // The ids and tokens really collided on the wire.
      const callA = sentCall(a, 'tools/call');
      const callB = sentCall(b, 'tools/call');
      expect(callA.id).toBeDefined();
      expect(callA.id).toEqual(callB.id);
      expect(callA.token).toBeDefined();
      expect(callA.token).toEqual(callB.token);

      expect(progressA.map((p) => [p.progress, p.total])).toEqual([
        [1, 3],
        [2, 3],
        [3, 3],
      ]);
      expect(progressB.map((p) => [p.progress, p.total])).toEqual([
        [1, 5],
        [2, 5],
        [3, 5],
        [4, 5],
        [5, 5],
      ]);
      expect(textOf(resultA)).toContain('Steps: 3.');
      expect(textOf(resultB)).toContain('Steps: 5.');
      await sleep(200);
      // No stray progress (e.g. for a token unknown to the client) or misdelivered responses.
      expect(a.errors).toEqual([]);
      expect(b.errors).toEqual([]);
    } finally {
      await disconnectAll();
    }
  });

  it("cancels one client's call without touching the other's call under the same id", async () => {
    try {
      const a = await client(everythingUrl, 'A');
      const b = await client(everythingUrl, 'B');
      const abort = new AbortController();
      const progressB: Progress[] = [];
      const callA = a.client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 3 } },
        undefined,
        { signal: abort.signal, onprogress: () => abort.abort('the user changed their mind') },
      );
      const callB = b.client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 1.2, steps: 3 } },
        undefined,
        // A cancellation sent upstream under B's id would leave B unanswered: fail fast then.
        { onprogress: (p) => progressB.push(p), timeout: 10_000 },
      );
      await expect(callA).rejects.toThrow();
      expect(a.sent.some((m) => 'method' in m && m.method === 'notifications/cancelled')).toBe(true);
      const resultB = await callB;
      expect(textOf(resultB)).toContain('Steps: 3.');
      expect(progressB.map((p) => p.progress)).toEqual([1, 2, 3]);
      expect(sentCall(a, 'tools/call').id).toEqual(sentCall(b, 'tools/call').id);
      // A goes on working after its cancellation.
      expect(textOf(await a.client.callTool({ name: 'echo', arguments: { message: 'after' } }))).toBe(
        'Echo: after',
      );

      // The trace shows what went upstream: A's cancellation names the upstream id of A's call.
      // (The trace is written by a worker in batches: read it until both calls and A's cancel are in.)
      const upstreamCall = async (c: TestClient) => {
        // After "--": a session id may start with "-".
        const shown = await runCli([
          'trace',
          'show',
          '--json',
          '--data-dir',
          shared.dataDir,
          '--',
          c.transport.sessionId!,
        ]);
        expect(shown.code, shown.stderr).toBe(0);
        const envelopes = jsonLines<TraceEnvelope>(shown.stdout);
        const call = envelopes.find(
          (e) => e.from === 'gateway' && e.kind === 'mcp/request' && e.payload.method === 'tools/call',
        );
        const cancel = envelopes.find(
          (e) => e.from === 'gateway' && e.payload.method === 'notifications/cancelled',
        );
        return { id: call?.payload.id, cancelled: cancel?.payload.params?.requestId };
      };
      type Seen = Awaited<ReturnType<typeof upstreamCall>>;
      let seen: { a: Seen; b: Seen } | undefined;
      await waitUntil(
        async () => {
          seen = { a: await upstreamCall(a), b: await upstreamCall(b) };
          return seen.a.id !== undefined && seen.a.cancelled !== undefined && seen.b.id !== undefined;
        },
        20_000,
        'both calls and the cancellation in the trace',
        100,
      );
      const { a: upA, b: upB } = seen!;
      expect(upA.id).toBeDefined();
      expect(upB.id).toBeDefined();
      expect(upA.id).not.toEqual(upB.id);
      expect(upA.cancelled).toEqual(upA.id);
      expect(upB.cancelled).toBeUndefined();
    } finally {
      await disconnectAll();
    }
  });

  it('routes sampling to the client whose call caused it (calls one after the other)', async () => {
    try {
      const a = await client(everythingUrl, 'A', { sampling: true });
      const b = await client(everythingUrl, 'B', { sampling: true });
      const resultA = await a.client.callTool({
        name: 'trigger-sampling-request',
        arguments: { prompt: 'a', maxTokens: 5 },
      });
      const resultB = await b.client.callTool({
        name: 'trigger-sampling-request',
        arguments: { prompt: 'b', maxTokens: 5 },
      });
      expect(textOf(resultA)).toContain('sampled by A');
      expect(textOf(resultB)).toContain('sampled by B');
      expect([a.sampled, b.sampled]).toEqual([1, 1]);
    } finally {
      await disconnectAll();
    }
  });

  it('answers the server with a clear error when it cannot tell whose call a sampling request belongs to', async () => {
    try {
      const a = await client(everythingUrl, 'A', { sampling: true });
      const b = await client(everythingUrl, 'B', { sampling: true });
      // B has a call in flight on the same upstream (its first progress proves it; the second
      // comes a second later) while A's call asks for sampling.
      let progressed: () => void = () => {};
      const inFlight = new Promise<void>((resolve) => {
        progressed = resolve;
      });
      const busy = b.client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } },
        undefined,
        { onprogress: () => progressed() },
      );
      await inFlight;
      const result = await a.client.callTool({
        name: 'trigger-sampling-request',
        arguments: { prompt: 'a', maxTokens: 5 },
      });
      expect((result as { isError?: boolean }).isError).toBe(true);
      expect(textOf(result)).toMatch(/cannot tell which client session/);
      expect(textOf(result)).toMatch(/per-session/);
      // Nobody was asked: no client got a sampling request meant for someone else.
      expect([a.sampled, b.sampled]).toEqual([0, 0]);
      expect(textOf(await busy)).toContain('Steps: 2.');
    } finally {
      await disconnectAll();
    }
  });

  it("never gives one client another's sampling answer when both ask at once", async () => {
    try {
      const a = await client(everythingUrl, 'A', { sampling: true });
      const b = await client(everythingUrl, 'B', { sampling: true });
      for (let round = 0; round < 3; round++) {
        const [resultA, resultB] = await Promise.all([
          a.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'a', maxTokens: 5 } }),
          b.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'b', maxTokens: 5 } }),
        ]);
        expect(textOf(resultA)).not.toContain('sampled by B');
        expect(textOf(resultB)).not.toContain('sampled by A');
        for (const [result, own] of [
          [resultA, 'sampled by A'],
          [resultB, 'sampled by B'],
        ] as const) {
          const text = textOf(result);
          expect(text.includes(own) || /cannot tell which client session/.test(text), text).toBe(true);
        }
      }
    } finally {
      await disconnectAll();
    }
  });

  it('filters log messages per session: level error gets only errors and above, level debug gets all', async () => {
    try {
      const a = await client(everythingUrl, 'A');
      const b = await client(everythingUrl, 'B');
      await a.client.setLoggingLevel('error');
      await b.client.setLoggingLevel('debug');
      await settle(a, b);
      // Each toggle on makes server-everything send one log message of a random level at once.
      let toggledOn = 0;
      const hasBoth = () =>
        b.logs.some((l) => rank(l.level) < rank('error')) &&
        b.logs.some((l) => rank(l.level) >= rank('error'));
      while ((toggledOn < 8 || !hasBoth()) && toggledOn < 60) {
        await b.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
        toggledOn++;
        await b.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
        await waitUntil(() => b.logs.length >= toggledOn, 5000, 'the log message of this toggle');
      }
      await sleep(300);
      expect(hasBoth()).toBe(true);
      expect(a.logs.length).toBeGreaterThan(0);
      expect(a.logs.every((l) => rank(l.level) >= rank('error'))).toBe(true);
      expect(a.logs).toEqual(b.logs.filter((l) => rank(l.level) >= rank('error')));
    } finally {
      await disconnectAll();
    }
  });

  it("does not let one session's log level silence messages for a session that set none", async () => {
    try {
      const a = await client(everythingUrl, 'A');
      const c = await client(everythingUrl, 'C');
      await a.client.setLoggingLevel('error');
      await settle(a, c);
      for (let i = 0; i < 15; i++) {
        await a.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
        await a.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      }
      await sleep(500);
      expect(a.logs.every((l) => rank(l.level) >= rank('error'))).toBe(true);
      // 15 messages of random levels: C (no level set) should see some below error.
      expect(
        c.logs.some((l) => rank(l.level) < rank('error')),
        JSON.stringify(c.logs),
      ).toBe(true);
    } finally {
      await disconnectAll();
    }
  });

  it('delivers resources/updated only to the sessions subscribed to that resource', async () => {
    try {
      const a = await client(everythingUrl, 'A');
      const b = await client(everythingUrl, 'B');
      const c = await client(everythingUrl, 'C');
      await a.client.subscribeResource({ uri: ARCH });
      await b.client.subscribeResource({ uri: FEAT });
      await settle(a, b, c);
      // Toggling on sends an update for every subscribed resource at once (then every 5 s).
      await c.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await waitUntil(() => a.updates.includes(ARCH) && b.updates.includes(FEAT), 8000, 'both updates');
      await c.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await sleep(300);
      expect(new Set(a.updates)).toEqual(new Set([ARCH]));
      expect(new Set(b.updates)).toEqual(new Set([FEAT]));
      expect(c.updates).toEqual([]);

      // B subscribes to ARCH too, then A leaves it: the subscription upstream stays for B only.
      await b.client.subscribeResource({ uri: ARCH });
      await a.client.unsubscribeResource({ uri: ARCH });
      const aBefore = a.updates.length;
      b.updates.length = 0;
      await c.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await waitUntil(() => b.updates.includes(ARCH) && b.updates.includes(FEAT), 8000, 'B updates');
      await c.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      await sleep(300);
      expect(a.updates.length).toBe(aBefore);
      expect(c.updates).toEqual([]);
      await b.client.unsubscribeResource({ uri: ARCH });
      await b.client.unsubscribeResource({ uri: FEAT });
    } finally {
      await disconnectAll();
    }
  });
});

describe('the aggregated endpoint: server-everything (shared) and the conformance fixture (per session)', () => {
  it('merges capabilities in initialize and names its own server', async () => {
    try {
      const x = await client(shared.url, 'X');
      const caps = x.client.getServerCapabilities();
      expect(caps?.tools).toBeDefined();
      expect(caps?.prompts).toBeDefined();
      expect(caps?.resources).toMatchObject({ subscribe: true });
      expect(caps?.logging).toBeDefined();
      expect(caps?.completions).toBeDefined();
      expect(x.client.getServerVersion()?.name).toBe('switchboard');
      const instructions = x.client.getInstructions() ?? '';
      expect(instructions).toContain('## everything');
      expect(instructions).toContain('## conformance');
    } finally {
      await disconnectAll();
    }
  });

  it('lists the tools of both upstreams, namespaced, as one list built from the two', async () => {
    try {
      const x = await client(shared.url, 'X');
      const e = await client(everythingUrl, 'E');
      const f = await client(`${shared.base}/servers/conformance/mcp`, 'F');
      const aggregated = (await x.client.listTools()).tools.map((t) => t.name);
      const fromEverything = (await e.client.listTools()).tools.map((t) => `everything__${t.name}`);
      const fromConformance = (await f.client.listTools()).tools.map((t) => `conformance__${t.name}`);
      expect(fromEverything.length).toBeGreaterThan(5);
      expect(fromConformance.length).toBeGreaterThan(5);
      expect([...aggregated].sort()).toEqual([...fromEverything, ...fromConformance].sort());
      expect(aggregated).toContain('everything__echo');
      expect(aggregated).toContain('conformance__test_simple_text');
    } finally {
      await disconnectAll();
    }
  });

  it('routes each call, prompt and resource read to its upstream', async () => {
    try {
      const x = await client(shared.url, 'X');
      expect(
        textOf(await x.client.callTool({ name: 'everything__echo', arguments: { message: 'agg' } })),
      ).toBe('Echo: agg');
      expect(textOf(await x.client.callTool({ name: 'conformance__test_simple_text', arguments: {} }))).toBe(
        'This is a simple text response for testing.',
      );
      await expect(x.client.callTool({ name: 'nobody__echo', arguments: {} })).rejects.toThrow(
        /Unknown tool/,
      );

      const prompts = (await x.client.listPrompts()).prompts.map((p) => p.name);
      expect(prompts).toContain('everything__simple-prompt');
      expect(prompts).toContain('conformance__test_simple_prompt');
      expect(prompts.every((p) => p.startsWith('everything__') || p.startsWith('conformance__'))).toBe(true);
      const simple = await x.client.getPrompt({ name: 'everything__simple-prompt' });
      expect(simple.messages.length).toBeGreaterThan(0);
      const conformancePrompt = await x.client.getPrompt({ name: 'conformance__test_simple_prompt' });
      expect(conformancePrompt.messages.length).toBeGreaterThan(0);

      const resources = (await x.client.listResources()).resources.map((r) => r.uri);
      expect(resources).toContain(ARCH);
      expect(resources).toContain('test://static-text');
      const arch = await x.client.readResource({ uri: ARCH });
      expect(arch.contents[0]?.uri).toBe(ARCH);
      const staticText = await x.client.readResource({ uri: 'test://static-text' });
      expect(staticText.contents[0]?.uri).toBe('test://static-text');
    } finally {
      await disconnectAll();
    }
  });
});

describe('resources reached through the aggregated endpoint without listing them first', () => {
  it('reads a resource link returned by a tool of the same endpoint', async () => {
    try {
      const x = await client(shared.url, 'X');
      const result = await x.client.callTool({
        name: 'everything__get-resource-links',
        arguments: { count: 2 },
      });
      const links = ((result as { content?: { type: string; uri?: string }[] }).content ?? []).filter(
        (c) => c.type === 'resource_link',
      );
      expect(links.length).toBe(2);
      for (const link of links) {
        const read = await x.client.readResource({ uri: link.uri! });
        expect(read.contents[0]?.uri).toBe(link.uri);
      }
    } finally {
      await disconnectAll();
    }
  });
});

describe('sampling with a per-session upstream', () => {
  it('routes concurrent sampling requests each to its own client', async () => {
    try {
      const a = await client(perSession.url, 'A', { sampling: true });
      const b = await client(perSession.url, 'B', { sampling: true });
      const [resultA, resultB] = await Promise.all([
        a.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'a', maxTokens: 5 } }),
        b.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'b', maxTokens: 5 } }),
      ]);
      expect(textOf(resultA)).toContain('sampled by A');
      expect(textOf(resultB)).toContain('sampled by B');
      expect([a.sampled, b.sampled]).toEqual([1, 1]);
    } finally {
      await disconnectAll();
    }
  });
});

/** Pids of the live processes whose parent is `parent` and whose command line contains `match`. */
function childrenOf(parent: number, match: string): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' }).split('\n');
  const pids: number[] = [];
  for (const row of rows) {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(row);
    if (m && Number(m[2]) === parent && m[3]!.includes(match)) pids.push(Number(m[1]));
  }
  return pids;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(process.platform === 'win32')('shutdown with per-session upstreams', () => {
  it('stops every per-session upstream process before it exits', async () => {
    const gateway = await startServe({
      configYaml: stdioUpstreamConfig({
        everything: { script: EVERYTHING, args: ['stdio'], sharing: 'per-session' },
      }),
    });
    const pid = gateway.process.child.pid!;
    let upstreams: number[] = [];
    try {
      const a = await connect(gateway.url, 'A');
      // A timer in the server keeps it alive when its stdin closes.
      await a.client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      upstreams = childrenOf(pid, 'server-everything');
      expect(upstreams).toHaveLength(1);
      const exited = new Promise<void>((resolve) => gateway.process.child.once('close', () => resolve()));
      process.kill(pid, 'SIGTERM'); // the gateway only, as a service manager would
      await Promise.race([exited, sleep(15_000)]);
      await a.client.close().catch(() => undefined);
      expect(alive(pid)).toBe(false);
      await waitUntil(
        () => upstreams.every((p) => !alive(p)),
        3000,
        'the upstream processes to be gone',
      ).catch(() => undefined);
      expect(upstreams.filter(alive)).toEqual([]);
    } finally {
      for (const p of upstreams) if (alive(p)) process.kill(p, 'SIGKILL');
      await gateway.stop();
    }
  });
});
