/**
 * Issue 19, "server requests behind a shared stdio upstream, several clients at once": the
 * built-in configuration (server-everything, now `sharing: pooled`) with three MCP SDK clients that
 * each run, at the same time, a long call with progress, twenty echo calls and a sampling call.
 * Every sampling request reaches its own client and none is refused with -32008.
 *
 * The same scenario against server-everything `sharing: shared` is kept beside it: there the
 * gateway cannot tell whose call a sampling request belongs to (calls of several sessions overlap on
 * one child), and it still says so honestly (-32008). That second case is also what this test's
 * first case looked like before pooling (the built-in configuration used `shared`).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  type Progress,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { waitUntil } from './support/sse-client.js';

interface TestClient {
  readonly name: string;
  readonly client: Client;
  /** Sampling requests that reached this client. */
  sampled: number;
  /** URIs of the `notifications/resources/updated` it received. */
  readonly updates: string[];
  close(): Promise<void>;
}

/** An SDK client declaring sampling, answering every sampling request with its own name. */
async function connect(url: string, name: string): Promise<TestClient> {
  const client = new Client(
    { name: `pooled-it-${name}`, version: '1.0.0' },
    { capabilities: { sampling: {} } },
  );
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const result: TestClient = {
    name,
    client,
    sampled: 0,
    updates: [],
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close().catch(() => undefined);
    },
  };
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    result.sampled++;
    return {
      role: 'assistant',
      model: `model-of-${name}`,
      content: { type: 'text', text: `sampled by ${name}` },
    };
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    result.updates.push(n.params.uri);
  });
  await client.connect(transport);
  return result;
}

function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

interface Outcome {
  readonly name: string;
  readonly progress: number;
  readonly long: string;
  readonly echoes: readonly string[];
  readonly sampling: string;
  readonly sampled: number;
}

/**
 * The scenario on the aggregated endpoint: each client's long call is in flight (its first
 * progress seen) before anyone's echo and sampling calls start, so calls of all three sessions
 * overlap while the sampling requests are made.
 */
async function scenario(url: string, prefix: string): Promise<Outcome[]> {
  const clients = await Promise.all(['A', 'B', 'C'].map((name) => connect(url, name)));
  try {
    const progress = clients.map(() => [] as Progress[]);
    const longs = clients.map((c, i) =>
      c.client.callTool(
        { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 4, steps: 8 } },
        undefined,
        { onprogress: (p) => progress[i]!.push(p), timeout: 30_000 },
      ),
    );
    await waitUntil(() => progress.every((p) => p.length > 0), 10_000, 'every long call reported progress');
    const rest = clients.map(async (c) => {
      const echoes = Array.from({ length: 20 }, (_, k) =>
        c.client.callTool({ name: `${prefix}echo`, arguments: { message: `${c.name}-${k}` } }),
      );
      const sampling = c.client.callTool({
        name: `${prefix}trigger-sampling-request`,
        arguments: { prompt: c.name, maxTokens: 5 },
      });
      return { echoes: (await Promise.all(echoes)).map(textOf), sampling: textOf(await sampling) };
    });
    const [longResults, restResults] = await Promise.all([Promise.all(longs), Promise.all(rest)]);
    return clients.map((c, i) => ({
      name: c.name,
      progress: progress[i]!.length,
      long: textOf(longResults[i]),
      echoes: restResults[i]!.echoes,
      sampling: restResults[i]!.sampling,
      sampled: c.sampled,
    }));
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
}

let builtIn: RunningServe;
let shared: RunningServe;

beforeAll(async () => {
  [builtIn, shared] = await Promise.all([
    // No --config: the built-in configuration of the Quick start.
    startServe(),
    startServe({
      configYaml: stdioUpstreamConfig({
        everything: { script: EVERYTHING, args: ['stdio'], sharing: 'shared' },
      }),
    }),
  ]);
});

afterAll(async () => {
  await Promise.all([builtIn?.stop(), shared?.stop()]);
});

describe('three clients at once on server-everything', () => {
  it('built-in configuration (pooled): every sampling request reaches its own client, none is refused', async () => {
    const outcomes = await scenario(builtIn.url, 'everything__');
    for (const o of outcomes) {
      expect(o.sampling, `sampling of ${o.name}`).toContain(`sampled by ${o.name}`);
      expect(o.sampling).not.toContain('-32008');
      expect(o.sampled, `sampling requests that reached ${o.name}`).toBe(1);
      expect(o.progress).toBeGreaterThan(1);
      expect(o.long).toContain('Long running operation completed');
      expect(o.echoes).toEqual(Array.from({ length: 20 }, (_, k) => `Echo: ${o.name}-${k}`));
    }
    expect(builtIn.stderr()).not.toContain('cannot tell which client session');
  });

  it('shared: the calls of several sessions overlap on one child, and sampling is refused with -32008', async () => {
    // One upstream: `/mcp` is that upstream's endpoint, its tools not prefixed.
    const outcomes = await scenario(`${shared.base}/mcp`, '');
    // Each sampling request came while other sessions' calls were in flight on the same child.
    for (const o of outcomes) {
      expect(o.sampling, `sampling of ${o.name}`).toContain('-32008');
      expect(o.sampled).toBe(0);
      expect(o.echoes).toEqual(Array.from({ length: 20 }, (_, k) => `Echo: ${o.name}-${k}`));
    }
  });

  it("pooled: subscriptions are the gateway's, held on the first child, and updates reach only their subscribers", async () => {
    const ARCH = 'demo://resource/static/document/architecture.md';
    const FEAT = 'demo://resource/static/document/features.md';
    const [a, b, c] = (await Promise.all(['A', 'B', 'C'].map((name) => connect(builtIn.url, name)))) as [
      TestClient,
      TestClient,
      TestClient,
    ];
    try {
      await a.client.subscribeResource({ uri: ARCH });
      await b.client.subscribeResource({ uri: FEAT });
      // Nothing else in flight: C's call runs on the first free child, the anchor, which holds the
      // subscriptions (toggling on sends an update for each at once, then every 5 s).
      await c.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
      await waitUntil(() => a.updates.includes(ARCH) && b.updates.includes(FEAT), 8000, 'both updates');
      await c.client.callTool({ name: 'everything__toggle-subscriber-updates', arguments: {} });
      expect(new Set(a.updates)).toEqual(new Set([ARCH]));
      expect(new Set(b.updates)).toEqual(new Set([FEAT]));
      expect(c.updates).toEqual([]);
    } finally {
      await Promise.all([a, b, c].map((t) => t.close()));
    }
  });
});
