/**
 * Reads a `switchboard serve` trace back through the CLI (`switchboard trace sessions|show --json`),
 * as a user would, and finds the hops one client call caused.
 */
import { jsonLines, runCli } from './cli.js';

/** A session summary as `switchboard trace sessions --json` prints it (the fields tests use). */
export interface TraceSession {
  readonly key: string;
  readonly transport: string;
  readonly upstreams: readonly string[];
  readonly principal?: string;
  readonly protocolVersion?: string;
  readonly mcpSessionId?: string;
  readonly clientInfo?: Readonly<Record<string, unknown>>;
  readonly startedAt: number;
  readonly endedAt?: number;
  readonly envelopes: number;
}

/** A MEUP envelope as `switchboard trace show --json` prints it (the fields tests use). */
export interface TraceEnvelope {
  readonly id: string;
  readonly kind: string;
  readonly from: string;
  readonly to?: readonly string[];
  readonly context?: string;
  readonly correlation_id?: readonly string[];
  readonly payload: {
    readonly id?: string | number;
    readonly method?: string;
    readonly params?: Record<string, unknown>;
    readonly result?: unknown;
    readonly error?: unknown;
  };
}

export async function traceSessions(dataDir: string): Promise<TraceSession[]> {
  const listed = await runCli(['trace', 'sessions', '--json', '--limit', '1000', '--data-dir', dataDir]);
  if (listed.code !== 0) throw new Error(`switchboard trace sessions failed: ${listed.stderr}`);
  return jsonLines<TraceSession>(listed.stdout);
}

/** Every envelope of a session (its key or its `Mcp-Session-Id`), in the order they were recorded. */
export async function traceShow(session: string, dataDir: string): Promise<TraceEnvelope[]> {
  const shown = await runCli(['trace', 'show', '--json', '--data-dir', dataDir, '--', session]);
  if (shown.code !== 0) throw new Error(`switchboard trace show ${session} failed: ${shown.stderr}`);
  return jsonLines<TraceEnvelope>(shown.stdout);
}

/** The hops of one client request: everything in its context, split by who sent it to whom. */
export interface TracedCall {
  /** The client's request as the gateway received it. */
  readonly request: TraceEnvelope;
  /** Every envelope in the request's context, in order (the request first). */
  readonly hops: readonly TraceEnvelope[];
  /** The gateway's copy of the request to the upstream `server-<name>`, when it was sent. */
  readonly upstreamRequest: TraceEnvelope | undefined;
}

/**
 * Finds the call a client made (`match` picks its request among the client->gateway requests) and
 * every envelope in its context; undefined while the trace does not show it yet.
 */
export function tracedCall(
  envelopes: readonly TraceEnvelope[],
  upstream: string,
  match: (request: TraceEnvelope) => boolean,
): TracedCall | undefined {
  const request = envelopes.find((e) => e.kind === 'mcp/request' && e.from.startsWith('client-') && match(e));
  if (request?.context === undefined) return undefined;
  const hops = envelopes.filter((e) => e.context === request.context);
  const upstreamRequest = hops.find(
    (e) => e.kind === 'mcp/request' && e.from === 'gateway' && e.to?.includes(`server-${upstream}`),
  );
  return { request, hops, upstreamRequest };
}
