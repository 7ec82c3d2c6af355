/**
 * The four duration histograms of the MCP semantic conventions, recorded from the router's
 * observations (`core/observations.ts`, the hook the Prometheus exporter uses too), so both views
 * count the same calls, the same way:
 *
 * - `mcp.server.operation.duration`: a client's call, from its arrival to its end (answered,
 *   refused, failed or cancelled);
 * - `mcp.client.operation.duration`: a request the gateway sent an upstream, one per upstream of a
 *   fan-out, until its answer (or its failure, timeout or cancellation);
 * - `mcp.server.session.duration`: a client's session with the gateway;
 * - `mcp.client.session.duration`: the gateway's session with an upstream (a link, from ready
 *   until it stops being ready).
 *
 * Attributes are those of the conventions that stay bounded: the method, the tool or prompt name,
 * `gen_ai.operation.name`, `error.type`, `rpc.response.status_code`, `mcp.protocol.version`,
 * `network.transport`, and for the gateway's side as a client the upstream's configured name and
 * address. Never a session id, a request id or a resource URI.
 */
import type { Histogram } from '@opentelemetry/api';
import type {
  CallEnd,
  CallObserver,
  LinkChange,
  ObservedCall,
  ObservedLink,
  ObservedSession,
  ObservedUpstreamRequest,
  SessionEnd,
  UpstreamEnd,
} from '../../core/observations.js';
import type { JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import {
  ATTR,
  type Attributes,
  networkTransport,
  requestMetricAttributes,
  TOOL_ERROR,
} from './mcp-attributes.js';

export interface McpMetricsOptions {
  readonly serverOperation: Histogram;
  readonly clientOperation: Histogram;
  readonly serverSession: Histogram;
  readonly clientSession: Histogram;
  /** `server.address`/`server.port` of an HTTP upstream, by its name. */
  readonly upstreamAddress?: (name: string) => { address: string; port: number } | undefined;
}

/** The bounded attributes of a request: its method, and its tool or prompt (never its id or URI). */
function operationAttributes(method: string, request: JsonRpcRequest | undefined): Attributes {
  return request === undefined ? { [ATTR.methodName]: method } : requestMetricAttributes(request);
}

function outcomeAttributes(out: Attributes, end: CallEnd | UpstreamEnd): void {
  if (end.errorCode !== undefined) {
    out[ATTR.errorType] = String(end.errorCode);
    out[ATTR.statusCode] = String(end.errorCode);
  } else if (end.outcome === 'tool_error') out[ATTR.errorType] = TOOL_ERROR;
  else if (end.outcome !== 'ok') out[ATTR.errorType] = end.outcome;
}

export class McpMetrics implements CallObserver {
  readonly name = 'otel-metrics';
  readonly #o: McpMetricsOptions;

  constructor(options: McpMetricsOptions) {
    this.#o = options;
  }

  callEnded(call: ObservedCall, end: CallEnd): void {
    const out = operationAttributes(call.request.method, call.request);
    outcomeAttributes(out, end);
    out[ATTR.protocolVersion] = call.session.protocolVersion;
    const network = networkTransport(call.session.transport);
    if (network !== undefined) out[ATTR.networkTransport] = network;
    this.#o.serverOperation.record(end.durationMs / 1000, out);
  }

  upstreamEnded(request: ObservedUpstreamRequest, end: UpstreamEnd): void {
    const out = operationAttributes(request.method, request.request);
    outcomeAttributes(out, end);
    this.#upstream(out, request.upstream);
    this.#o.clientOperation.record(end.durationMs / 1000, out);
  }

  sessionClosed(session: ObservedSession, end: SessionEnd): void {
    if (end.durationMs === undefined) return;
    const out: Attributes = { [ATTR.protocolVersion]: end.protocolVersion };
    const network = networkTransport(session.transport);
    if (network !== undefined) out[ATTR.networkTransport] = network;
    this.#o.serverSession.record(end.durationMs / 1000, out);
  }

  linkChanged(link: ObservedLink, change: LinkChange): void {
    if (change.readyMs === undefined) return;
    const out: Attributes = {};
    this.#upstream(out, link.upstream, link.transport);
    this.#o.clientSession.record(change.readyMs / 1000, out);
  }

  #upstream(out: Attributes, name: string, transport?: string): void {
    out[ATTR.upstream] = name;
    const address = this.#o.upstreamAddress?.(name);
    if (address) {
      out[ATTR.serverAddress] = address.address;
      out[ATTR.serverPort] = address.port;
      out[ATTR.networkTransport] = 'tcp';
    } else {
      const network = transport === undefined ? 'pipe' : networkTransport(transport);
      if (network !== undefined) out[ATTR.networkTransport] = network;
    }
  }
}
