/**
 * The traffic metrics: a `CallObserver` (core/observations.ts) that counts and times every client
 * call and every request the gateway sends upstream, by upstream, method, target and outcome, and
 * records the four duration histograms of the OpenTelemetry semantic conventions for MCP under
 * their Prometheus names (`mcp.server.operation.duration` → `mcp_server_operation_duration_seconds`,
 * attribute `gen_ai.tool.name` → label `gen_ai_tool_name`, and so on).
 *
 * Every label value is bounded (`label-bounds.ts`): a tool or prompt name the upstream never
 * listed is `other`, so a client inventing names cannot grow the series. Resource URIs are never a
 * label value (the conventions keep them out of span names for the same reason).
 */
import type { Registry } from 'prom-client';
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
import { requestTarget } from '../../core/observations.js';
import type { JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import {
  boundErrorCode,
  boundMethod,
  boundProtocolVersion,
  KnownTargets,
  OTHER,
  PrincipalLabels,
} from './label-bounds.js';
import { CounterFamily, HistogramFamily, type LabelValues } from './series.js';

/** The bucket advice of the semantic conventions for all four MCP duration histograms (seconds). */
export const SEMCONV_BUCKETS: readonly number[] = [
  0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
];

export interface CallMetricsOptions {
  readonly registry: Registry;
  /** Count calls by principal too (`principal` on `switchboard_calls_total`), the first `max` by name. */
  readonly principals?: { readonly max: number };
}

type Labels = Record<string, string>;

/** Joins label values into a series key (a NUL inside a listed tool name could at worst merge two series). */
const SEP = '\u0000';

/** `network.transport` of a transport kind: `pipe` for stdio, `tcp` for HTTP, SSE and WebSocket. */
function networkTransport(kind: string): string | undefined {
  if (kind === 'stdio') return 'pipe';
  if (kind === 'http' || kind === 'sse' || kind === 'websocket') return 'tcp';
  return undefined;
}

export class CallMetrics implements CallObserver {
  readonly name = 'prometheus';
  readonly #targets = new KnownTargets();
  readonly #principals: PrincipalLabels | undefined;
  readonly #calls: CounterFamily;
  readonly #callDuration: HistogramFamily;
  readonly #upstreamRequests: CounterFamily;
  readonly #serverOperation: HistogramFamily;
  readonly #clientOperation: HistogramFamily;
  readonly #serverSession: HistogramFamily;
  readonly #clientSession: HistogramFamily;
  /** Each link's transport and the protocol version its `initialize` agreed, for the client-side labels. */
  readonly #links = new Map<string, { transport?: string; version?: string }>();

  constructor(options: CallMetricsOptions) {
    const r = options.registry;
    this.#principals = options.principals ? new PrincipalLabels(options.principals.max) : undefined;
    this.#calls = new CounterFamily(
      'switchboard_calls_total',
      'Client requests the gateway handled, by upstream ("" for its own answers), method, target (a tool or prompt the upstream listed, "other", or "") and outcome (ok, tool_error, error, refused, cancelled).',
      r,
    );
    this.#callDuration = new HistogramFamily(
      'switchboard_call_duration_seconds',
      'Time from a client request reaching the gateway to its answer being written (or given up), by upstream, method, target and outcome.',
      r,
      SEMCONV_BUCKETS,
    );
    this.#upstreamRequests = new CounterFamily(
      'switchboard_upstream_requests_total',
      'Requests the gateway sent to upstreams (forwarded calls, one per upstream of a fan-out, its own), by upstream, method, target and outcome.',
      r,
    );
    this.#serverOperation = new HistogramFamily(
      'mcp_server_operation_duration_seconds',
      'mcp.server.operation.duration of the OpenTelemetry semantic conventions: the gateway as the server of its clients.',
      r,
      SEMCONV_BUCKETS,
    );
    this.#clientOperation = new HistogramFamily(
      'mcp_client_operation_duration_seconds',
      'mcp.client.operation.duration of the OpenTelemetry semantic conventions: the gateway as the client of its upstreams.',
      r,
      SEMCONV_BUCKETS,
    );
    this.#serverSession = new HistogramFamily(
      'mcp_server_session_duration_seconds',
      'mcp.server.session.duration of the OpenTelemetry semantic conventions: client sessions with the gateway, once ended.',
      r,
      SEMCONV_BUCKETS,
    );
    this.#clientSession = new HistogramFamily(
      'mcp_client_session_duration_seconds',
      "mcp.client.session.duration of the OpenTelemetry semantic conventions: the gateway's sessions with its upstreams (a connection from ready to closed).",
      r,
      SEMCONV_BUCKETS,
    );
  }

  /** The tool and prompt names the upstreams listed (the bound on `target`). */
  get targets(): KnownTargets {
    return this.#targets;
  }

  callEnded(call: ObservedCall, end: CallEnd): void {
    const seconds = end.durationMs / 1000;
    const method = boundMethod(call.request.method);
    const upstream = end.upstream ?? '';
    const target = this.#target(upstream, end.routed ?? call.request);
    const outcome = end.outcome;
    const key = `${upstream}${SEP}${method}${SEP}${target}${SEP}${outcome}`;
    this.#callDuration.cell(key, () => ({ upstream, method, target, outcome })).observe(seconds);
    if (this.#principals === undefined) {
      this.#calls.cell(key, () => ({ upstream, method, target, outcome })).inc();
    } else {
      const principal = this.#principals.label(call.session.principal);
      this.#calls
        .cell(`${key}${SEP}${principal}`, () => ({ upstream, method, target, outcome, principal }))
        .inc();
    }
    // The conventions' view: the names as the client used them, when the upstream's are known.
    const known = target !== OTHER && target !== '';
    const version = boundProtocolVersion(call.session.protocolVersion);
    const transport = networkTransport(call.session.transport);
    this.#operation(
      this.#serverOperation,
      method,
      call.request,
      known,
      end,
      version,
      transport,
      undefined,
    ).observe(seconds);
  }

  upstreamEnded(request: ObservedUpstreamRequest, end: UpstreamEnd): void {
    const method = boundMethod(request.method);
    const result = end.response !== undefined && 'result' in end.response ? end.response.result : undefined;
    if (result !== undefined) this.#learn(request, result);
    const upstream = request.upstream;
    const target = this.#target(upstream, request.request);
    const outcome = end.outcome;
    this.#upstreamRequests
      .cell(`${upstream}${SEP}${method}${SEP}${target}${SEP}${outcome}`, () => ({
        upstream,
        method,
        target,
        outcome,
      }))
      .inc();
    const link = this.#links.get(request.link);
    const known = target !== OTHER && target !== '';
    const version = boundProtocolVersion(link?.version);
    this.#operation(
      this.#clientOperation,
      method,
      request.request,
      known,
      end,
      version,
      link?.transport,
      upstream,
    ).observe(end.durationMs / 1000);
  }

  sessionClosed(session: ObservedSession, end: SessionEnd): void {
    if (end.durationMs === undefined) return;
    const version = boundProtocolVersion(end.protocolVersion);
    const transport = networkTransport(session.transport);
    this.#serverSession
      .cell(`${version}${SEP}${transport}`, () =>
        defined({ mcp_protocol_version: version, network_transport: transport }),
      )
      .observe(end.durationMs / 1000);
  }

  linkChanged(link: ObservedLink, change: LinkChange): void {
    let known = this.#links.get(link.link);
    if (known === undefined) {
      known = {};
      const transport = networkTransport(link.transport);
      if (transport !== undefined) known.transport = transport;
      this.#links.set(link.link, known);
    }
    if (change.readyMs !== undefined) {
      const version = boundProtocolVersion(known.version);
      const transport = known.transport;
      const upstream = link.upstream;
      this.#clientSession
        .cell(`${version}${SEP}${transport}${SEP}${upstream}`, () =>
          defined({
            mcp_protocol_version: version,
            network_transport: transport,
            switchboard_upstream: upstream,
          }),
        )
        .observe(change.readyMs / 1000);
    }
    // A link that is down for good is forgotten; a restarting one keeps its place.
    if (change.phase === 'down') this.#links.delete(link.link);
  }

  /** What an upstream's answer teaches: the names it lists, the version its `initialize` agreed. */
  #learn(request: ObservedUpstreamRequest, result: unknown): void {
    if (request.method === 'tools/list') this.#targets.learn(request.upstream, 'tool', result);
    else if (request.method === 'prompts/list') this.#targets.learn(request.upstream, 'prompt', result);
    else if (request.method === 'initialize') {
      const version = (result as { protocolVersion?: unknown } | null)?.protocolVersion;
      const link = this.#links.get(request.link);
      if (typeof version === 'string' && link !== undefined) link.version = version;
    }
  }

  /** The `target` label: a tool or prompt name its upstream listed, `other`, or "" for none. */
  #target(upstream: string, request: JsonRpcRequest | undefined): string {
    const target = requestTarget(request);
    if (target === undefined || target.kind === 'resource') return '';
    return upstream !== '' && this.#targets.knows(upstream, target.kind, target.name) ? target.name : OTHER;
  }

  /**
   * The series of an operation histogram, labelled with the conventions' attributes: its method,
   * the tool or prompt name as `name` carries it (when `known`, else `other`), `execute_tool` for
   * a tool call, how it failed, the protocol version and network transport, and for the client
   * side the upstream. Absent attributes are absent labels.
   */
  #operation(
    family: HistogramFamily,
    method: string,
    request: JsonRpcRequest | undefined,
    known: boolean,
    end: { readonly outcome: string; readonly errorCode?: number },
    version: string | undefined,
    transport: string | undefined,
    upstream: string | undefined,
  ) {
    const target = requestTarget(request);
    const name = target === undefined || target.kind === 'resource' ? undefined : known ? target.name : OTHER;
    const code = end.errorCode === undefined ? undefined : boundErrorCode(end.errorCode);
    const errorType =
      code ?? (end.outcome === 'tool_error' || end.outcome === 'cancelled' ? end.outcome : undefined);
    const key = `${method}${SEP}${target?.kind}${SEP}${name}${SEP}${errorType}${SEP}${code}${SEP}${version}${SEP}${transport}${SEP}${upstream}`;
    return family.cell(key, () =>
      defined({
        mcp_method_name: method,
        gen_ai_tool_name: target?.kind === 'tool' ? name : undefined,
        gen_ai_prompt_name: target?.kind === 'prompt' ? name : undefined,
        gen_ai_operation_name: target?.kind === 'tool' ? 'execute_tool' : undefined,
        error_type: errorType,
        rpc_response_status_code: code,
        mcp_protocol_version: version,
        network_transport: transport,
        switchboard_upstream: upstream,
      }),
    );
  }
}

/** The labels whose value is defined (an absent attribute is an absent label). */
function defined(labels: Record<string, string | undefined>): LabelValues {
  const out: Labels = {};
  for (const key in labels) {
    const value = labels[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}
