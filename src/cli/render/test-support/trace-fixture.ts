/**
 * A small, deterministic trace for the renderer and command tests: session `s1` with an
 * `initialized` notification and one `tools/call` through upstream `a`, during which the server
 * sends a nested `sampling/createMessage` request (its own sub-context inside the call's).
 */
import { toolCallChain, traceRecord } from '../../../trace/trace-store.contract.js';
import type { TraceRecord, TraceSessionInfo } from '../../../trace/types.js';

/** Envelope ids `01JD0000000000000000000001`, `…02`, … in order of creation. */
export function fixedIds(): () => string {
  let n = 0;
  return () => `01JD${String(++n).padStart(22, '0')}`;
}

/** The records in the order the gateway would see them, and the chain's ids by role. */
export function sampleTrace() {
  const next = fixedIds();
  const chain = toolCallChain(next);
  const S = next();
  const N = next();
  const [D, U, P, UR, R] = chain.records;
  const nested = traceRecord({
    id: S,
    context: `s1/${chain.D}/${S}`,
    from: 'server-a',
    direction: 'server->client',
    upstream: 'a',
    payload: { jsonrpc: '2.0', id: 0, method: 'sampling/createMessage' },
    receivedAt: (P?.receivedAt ?? 0) + 1,
  });
  const initialized = traceRecord({
    id: N,
    context: 's1',
    kind: 'mcp/notification',
    to: ['gateway'],
    payload: { jsonrpc: '2.0', method: 'notifications/initialized' },
  });
  const records = [initialized, D, U, P, nested, UR, R].filter((r): r is TraceRecord => r !== undefined);
  const session: TraceSessionInfo = {
    key: 's1',
    mcpSessionId: 'c0ffee-mcp',
    transport: 'http',
    upstreams: ['a', 'b'],
    startedAt: initialized.receivedAt,
    clientInfo: { name: 'inspector', version: '0.9' },
  };
  return { ...chain, S, N, records, session };
}
