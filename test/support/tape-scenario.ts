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
  const progress: { progress: number; total?: number }[] = [];
  const long = await client.callTool(
    { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
    undefined,
    {
      onprogress: (p) =>
        progress.push({ progress: p.progress, ...(p.total === undefined ? {} : { total: p.total }) }),
    },
  );
  const resource = await client.readResource({ uri: 'demo://resource/static/document/architecture.md' });
  const prompt = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lyon' } });
  const sampling = await client.callTool({
    name: 'trigger-sampling-request',
    arguments: { prompt: 'six times seven?' },
  });
  return { tools, echo, sum, long, progress, resource, prompt, sampling, samplingRequests: [...asked] };
}
