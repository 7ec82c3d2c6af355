/**
 * The MCP semantic conventions of OpenTelemetry (`docs/gen-ai/mcp.md` in
 * open-telemetry/semantic-conventions-genai, status Development) as pure functions of a message:
 * a span's name and the attributes a request or its response decides. Attribute names are written
 * out here, not imported, so that this file loads nothing and a rename upstream is one diff.
 */
import type { JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc/types.js';

export const ATTR = {
  methodName: 'mcp.method.name',
  sessionId: 'mcp.session.id',
  protocolVersion: 'mcp.protocol.version',
  resourceUri: 'mcp.resource.uri',
  requestId: 'jsonrpc.request.id',
  jsonrpcVersion: 'jsonrpc.protocol.version',
  toolName: 'gen_ai.tool.name',
  promptName: 'gen_ai.prompt.name',
  operationName: 'gen_ai.operation.name',
  errorType: 'error.type',
  statusCode: 'rpc.response.status_code',
  networkTransport: 'network.transport',
  networkProtocolName: 'network.protocol.name',
  clientAddress: 'client.address',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  /** The MEUP envelope id of the client request a span belongs to (`switchboard trace follow <id>`). */
  envelopeId: 'switchboard.envelope.id',
  /** The configured name of the upstream a CLIENT span went to. */
  upstream: 'switchboard.upstream',
} as const;

/** `error.type` of a tool result with `isError: true` (the conventions' own value). */
export const TOOL_ERROR = 'tool_error';

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

/** What a request names: a tool, a prompt (both in the span name) or a resource (an attribute only). */
interface Target {
  readonly attribute: string;
  readonly value: string;
  readonly inName: boolean;
}

function targetOf(request: JsonRpcRequest): Target | undefined {
  const params = request.params as Record<string, unknown> | undefined;
  if (params === undefined || params === null || typeof params !== 'object') return undefined;
  switch (request.method) {
    case 'tools/call':
      return typeof params.name === 'string'
        ? { attribute: ATTR.toolName, value: params.name, inName: true }
        : undefined;
    case 'prompts/get':
      return typeof params.name === 'string'
        ? { attribute: ATTR.promptName, value: params.name, inName: true }
        : undefined;
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      // A URI is unbounded and may be sensitive: an attribute, in the name only on request.
      return typeof params.uri === 'string'
        ? { attribute: ATTR.resourceUri, value: params.uri, inName: false }
        : undefined;
    default:
      return undefined;
  }
}

/**
 * `{mcp.method.name} {target}`, the target being the tool's or the prompt's name, else the method.
 * All a span needs before the sampler decides (the attributes follow only if it records).
 */
export function spanName(request: JsonRpcRequest): string {
  const method = request.method;
  if (method !== 'tools/call' && method !== 'prompts/get') return method;
  const params = request.params as Record<string, unknown> | undefined;
  const name =
    params !== undefined && params !== null && typeof params === 'object' ? params.name : undefined;
  return typeof name === 'string' ? `${method} ${name}` : method;
}

/**
 * What the request alone says, for its span (and, without the id, its duration metric): a fresh
 * object the caller owns and adds its own keys to.
 */
export function requestAttributes(request: JsonRpcRequest): Attributes {
  const attributes: Attributes = {
    [ATTR.methodName]: request.method,
    [ATTR.requestId]: String(request.id),
    [ATTR.jsonrpcVersion]: '2.0',
  };
  const target = targetOf(request);
  if (target) attributes[target.attribute] = target.value;
  if (request.method === 'tools/call') attributes[ATTR.operationName] = 'execute_tool';
  return attributes;
}

/**
 * The bounded attributes a request gives an operation-duration metric: its method, its tool or
 * prompt, `gen_ai.operation.name`; never its id or resource URI (unbounded). Built directly, not
 * by filtering `requestAttributes`': it runs for every call and upstream request.
 */
export function requestMetricAttributes(request: JsonRpcRequest): Attributes {
  const out: Attributes = { [ATTR.methodName]: request.method };
  const target = targetOf(request);
  if (target?.inName) out[target.attribute] = target.value;
  if (request.method === 'tools/call') out[ATTR.operationName] = 'execute_tool';
  return out;
}

/** How a response ended, for `error.type` and `rpc.response.status_code`; empty for a success. */
export function responseOutcome(response: JsonRpcResponse): { errorType?: string; statusCode?: string } {
  if ('error' in response) {
    const code = String(response.error.code);
    return { errorType: code, statusCode: code };
  }
  const result = response.result as { isError?: unknown } | null;
  if (result !== null && typeof result === 'object' && result.isError === true)
    return { errorType: TOOL_ERROR };
  return {};
}

/** `network.transport` of a hop's transport: `pipe` for stdio, `tcp` for HTTP and WebSocket. */
export function networkTransport(kind: string): string | undefined {
  switch (kind) {
    case 'stdio':
      return 'pipe';
    case 'http':
    case 'sse':
    case 'websocket':
      return 'tcp';
    default:
      return undefined;
  }
}
