/**
 * Issue 19: an HTTP upstream that speaks both eras (test/fixtures/dual-era-server.mjs, a v2-SDK
 * server whose 2025 code pushes sampling and elicitation requests, offers `resources/subscribe`
 * and announces changes on its 2025 sessions only, and answers `input_required` on 2026-07-28 for
 * `ask_name`) behind `switchboard serve` with `era: auto`. The gateway must speak to it in each
 * client's own era, so that:
 *
 * - a 2025 client (the v1 SDK client, with sampling and elicitation handlers) gets the server's
 *   sampling and elicitation requests during its calls, subscribes natively, and hears
 *   `resources/updated` and `tools/list_changed` on its GET stream;
 * - a 2026-07-28 client (raw stateless POSTs) at the same time gets the server's own
 *   `input_required` (its input key `user_name`, its `requestState`) and completes the round trip,
 *   and hears the list change on its `subscriptions/listen` stream;
 *
 * through a shared upstream (one link multiplexing every session) and a per-session one. Then the
 * conformance suite's scenarios for those features, through the gateway in front of the same
 * server: they pass with `era: auto`, and fail with `era: modern` (the bridge, which is what `auto`
 * chose before), which shows what the fixture holds is what the bridge loses.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPeer, type StartedProcess, startHttpFixture } from './support/peers.js';
import { type RunningServe, startServe } from './support/serve.js';
import { messagesOf, openSse, post, waitUntil } from './support/sse-client.js';

type Json = Record<string, unknown>;

const MODERN = '2026-07-28';
const WATCHED = 'test://watched';

/** A v1 (2025-11-25) client that answers sampling and elicitation and records notifications. */
async function legacyClient(url: string, name: string) {
  const client = new Client({ name, version: '1' }, { capabilities: { sampling: {}, elicitation: {} } });
  const seen = {
    sampling: [] as Json[],
    elicitation: [] as Json[],
    updates: [] as string[],
    toolsChanged: 0,
  };
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    seen.sampling.push(request.params as Json);
    return {
      role: 'assistant',
      model: `model-of-${name}`,
      content: { type: 'text', text: `sampled by ${name}` },
    };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    seen.elicitation.push(request.params as Json);
    return { action: 'accept', content: { username: name, email: `${name}@example.com`, name } };
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    seen.updates.push(n.params.uri);
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    seen.toolsChanged += 1;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, seen };
}

function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

const modernMeta = (capabilities: Json = { elicitation: {} }): Json => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': capabilities,
});

/** One 2026-07-28 request, with the headers such a client sends; resolves with its result. */
async function modernCall(url: string, id: number, method: string, params: Json): Promise<Json> {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  const response = await post(
    url,
    { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } },
    { 'mcp-protocol-version': MODERN, 'mcp-method': method, ...name },
  );
  const answer = messagesOf(response).find((m) => m.id === id);
  expect(answer, response.text).toBeDefined();
  expect(answer?.error, response.text).toBeUndefined();
  return answer?.result as Json;
}

describe('serve in front of an upstream of both eras (era: auto)', () => {
  let fixture: StartedProcess & { readonly url: string };
  let serve: RunningServe;

  beforeAll(async () => {
    fixture = await startHttpFixture('dualEraServer');
    serve = await startServe({
      configYaml: [
        'upstreams:',
        '  shared:',
        `    url: ${fixture.url}`,
        '  solo:',
        `    url: ${fixture.url}`,
        '    sharing: per-session',
        '',
      ].join('\n'),
    });
  }, 60_000);
  afterAll(async () => {
    await serve?.stop();
    await fixture?.stop();
  });

  it.each(['shared', 'solo'])(
    'serves 2025 and 2026-07-28 clients at once in their own eras (%s)',
    async (upstream) => {
      const url = `${serve.base}/servers/${upstream}/mcp`;
      const [ada, bob] = await Promise.all([legacyClient(url, 'ada'), legacyClient(url, 'bob')]);
      const listen = await openSse(
        url,
        'POST',
        {
          'content-type': 'application/json',
          'mcp-protocol-version': MODERN,
          'mcp-method': 'subscriptions/listen',
        },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'subscriptions/listen',
          params: { notifications: { toolsListChanged: true }, _meta: modernMeta() },
        }),
      );
      try {
        await listen.waitFor((_e, m) => m?.method === 'notifications/subscriptions/acknowledged');

        // Each era reaches the server in its own era.
        const [adaWho, modernWho] = await Promise.all([
          ada.client.callTool({ name: 'whoami', arguments: {} }),
          modernCall(url, 2, 'tools/call', { name: 'whoami', arguments: {} }),
        ]);
        expect(textOf(adaWho)).toMatch(/^2025 session /);
        expect(textOf(modernWho)).toBe('2026-07-28 request');

        // Sampling and elicitation during calls while a 2026-07-28 client's call is in flight on
        // the same link (the server sends its requests on the session's GET stream, unrelated to
        // any call, so the gateway must not count that call as a candidate). On a per-session
        // upstream each 2025 client has its own link, so both ask at once; on a shared one their
        // two unrelated requests at once could not be told apart, so they take turns.
        const slow = modernCall(url, 5, 'tools/call', { name: 'slow', arguments: { ms: 1500 } });
        await new Promise((resolve) => setTimeout(resolve, 200));
        const sample = () =>
          ada.client.callTool({ name: 'test_sampling', arguments: { prompt: 'what is six times seven?' } });
        const elicit = () =>
          bob.client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
        const [adaSampled, bobElicited] =
          upstream === 'solo' ? await Promise.all([sample(), elicit()]) : [await sample(), await elicit()];
        expect(textOf(await slow)).toBe('slept 1500 ms');
        const first = await modernCall(url, 3, 'tools/call', { name: 'ask_name', arguments: {} });
        expect(textOf(adaSampled)).toBe('LLM response: sampled by ada');
        expect(ada.seen.sampling).toHaveLength(1);
        expect(textOf(bobElicited)).toBe(
          'User response: action=accept, content={"username":"bob","email":"bob@example.com","name":"bob"}',
        );
        expect(bob.seen.elicitation).toHaveLength(1);
        expect(bob.seen.sampling).toHaveLength(0);
        expect(first.resultType).toBe('input_required');
        expect(Object.keys(first.inputRequests as Json)).toEqual(['user_name']);
        expect(typeof first.requestState).toBe('string');
        const done = await modernCall(url, 4, 'tools/call', {
          name: 'ask_name',
          arguments: {},
          inputResponses: { user_name: { action: 'accept', content: { name: 'Cy' } } },
          requestState: first.requestState,
        });
        expect(textOf(done)).toBe('Hello, Cy (asked by input_required, its own state back)');
        // And a 2025 client's call of the same tool is asked on its session.
        expect(textOf(await ada.client.callTool({ name: 'ask_name', arguments: {} }))).toBe(
          'Hello, ada (asked by elicitation/create on a 2025 session)',
        );

        // Subscriptions: native on the session; only the subscriber hears the update.
        await ada.client.subscribeResource({ uri: WATCHED });
        await bob.client.callTool({ name: 'update_resource', arguments: {} });
        await waitUntil(() => ada.seen.updates.length === 1, 5000, 'the resource update');
        expect(ada.seen.updates).toEqual([WATCHED]);
        await ada.client.unsubscribeResource({ uri: WATCHED });

        // List changes reach the 2025 clients' GET streams and the 2026-07-28 client's listen stream.
        await ada.client.callTool({ name: 'trigger_tools_changed', arguments: {} });
        await waitUntil(
          () => ada.seen.toolsChanged > 0 && bob.seen.toolsChanged > 0,
          5000,
          'the list changes',
        );
        await listen.waitFor((_e, m) => m?.method === 'notifications/tools/list_changed', 5000);

        // Unsubscribed: the next update goes nowhere.
        await bob.client.callTool({ name: 'update_resource', arguments: {} });
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(ada.seen.updates).toEqual([WATCHED]);
        expect(bob.seen.updates).toEqual([]);
      } finally {
        listen.abort();
        await Promise.all([ada.client.close(), bob.client.close()]);
      }
    },
    60_000,
  );
});

/** The conformance scenarios of issue 19, each through `serve` with the given era. */
const SCENARIOS = [
  'tools-call-sampling',
  'tools-call-elicitation',
  'elicitation-sep1034-defaults',
  'elicitation-sep1330-enums',
  'resources-subscribe',
  'resources-unsubscribe',
];

describe.each(['auto', 'modern'])('conformance scenarios through serve (era: %s) in front of it', (era) => {
  let fixture: StartedProcess & { readonly url: string };
  let serve: RunningServe;

  beforeAll(async () => {
    fixture = await startHttpFixture('dualEraServer');
    serve = await startServe({
      configYaml: `upstreams:\n  dual:\n    url: ${fixture.url}\n    era: ${era}\n`,
    });
  }, 60_000);
  afterAll(async () => {
    await serve?.stop();
    await fixture?.stop();
  });

  it.each(SCENARIOS)(
    era === 'auto' ? 'passes %s' : 'fails %s (what the bridge loses)',
    async (scenario) => {
      const result = await runPeer('conformance', ['server', '--url', serve.url, '--scenario', scenario], {
        timeoutMs: 60_000,
      });
      const output = `${result.stdout}\n${result.stderr}`;
      if (era === 'auto') {
        expect(result.exitCode, output).toBe(0);
        expect(output).toMatch(/Passed: \d+\/\d+, 0 failed/);
      } else {
        expect(output).toMatch(/Passed: \d+\/\d+, [1-9]\d* failed/);
      }
    },
    90_000,
  );
});
