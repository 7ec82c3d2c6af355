/**
 * One MCP session against server-everything, the same for the live server and its replay, so a
 * test can record it once and compare what the client saw each time: the tool list, plain calls, a
 * long call with progress, a resource read, a prompt, and a sampling request the client answers.
 */
import type { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export const SAMPLING_ANSWER = {
  model: 'replay-test-model',
  role: 'assistant',
  content: { type: 'text', text: 'forty-two' },
} as const;

/** What the client saw during the scenario. */
export interface ScenarioOutcome {
  readonly tools: readonly string[];
  readonly echo: unknown;
  readonly sum: unknown;
  readonly long: unknown;
  readonly progress: readonly { progress: number; total?: number }[];
  readonly resource: unknown;
  readonly prompt: unknown;
  readonly sampling: unknown;
  readonly samplingRequests: readonly unknown[];
}

interface WireTransport {
  onmessage?: ((message: never, extra?: never) => void) | undefined;
}

/**
 * The progress notifications that reach `transport` from now on, as they came on the wire: the SDK's
 * `onprogress` can miss the last one when it lands in the same tick as the response, which would
 * make a comparison flaky, so the tests compare what crossed.
 */
export function wireProgress(transport: unknown): { progress: number; total?: number }[] {
  const seen: { progress: number; total?: number }[] = [];
  const t = transport as WireTransport;
  const inner = t.onmessage as ((message: unknown, extra?: unknown) => void) | undefined;
  (t as { onmessage?: (message: unknown, extra?: unknown) => void }).onmessage = (message, extra) => {
    const m = message as { method?: string; params?: { progress: number; total?: number } };
    if (m.method === 'notifications/progress' && m.params)
      seen.push({
        progress: m.params.progress,
        ...(m.params.total === undefined ? {} : { total: m.params.total }),
      });
    inner?.(message, extra);
  };
  return seen;
}

/** Lets `client` (not yet connected) answer sampling requests; returns what it was asked. */
export function answerSampling(client: LegacyClient): unknown[] {
  const asked: unknown[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push(request.params);
    return SAMPLING_ANSWER;
  });
  return asked;
}

/** Runs the scenario on a connected v1 client made with `sampling` capability and `answerSampling`. */
export async function runScenario(client: LegacyClient, asked: unknown[]): Promise<ScenarioOutcome> {
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello tape' } });
  const sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
  const progress = wireProgress(client.transport);
  const long = await client.callTool(
    { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
    undefined,
    // A progress token is sent only with a handler; what arrives is counted on the wire.
    { onprogress: () => {} },
  );
  const resource = await client.readResource({ uri: 'demo://resource/static/document/architecture.md' });
  const prompt = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lyon' } });
  const sampling = await client.callTool({
    name: 'trigger-sampling-request',
    arguments: { prompt: 'six times seven?' },
  });
  return { tools, echo, sum, long, progress, resource, prompt, sampling, samplingRequests: [...asked] };
}
