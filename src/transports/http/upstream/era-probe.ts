/**
 * Which era of MCP an HTTP upstream speaks, found the way the 2026-07-28 specification describes
 * ("Backward Compatibility"): send a modern request (`server/discover` with a full envelope and the
 * mirrored headers) and read the answer.
 *
 * - modern: a 2xx response carrying a `DiscoverResult` (`supportedVersions` is an array), or a
 *   recognised modern error in any status: -32020, -32021, -32022, or -32601 with HTTP 404.
 * - dual: modern, and the server speaks the 2025 handshake too: its `supportedVersions` lists a
 *   legacy revision, or else it accepts one `initialize` (`handshake-probe.ts`; the session that
 *   opens is deleted at once). Such a server is spoken to in each client's own era.
 * - legacy: anything else the server answered: a 4xx without such a body (a legacy server's 400
 *   "no session id", the 404/405 of a 2024-11-05 server), a 2xx that is not a discover result (a
 *   legacy server without sessions answering -32601 with 200).
 * - no verdict: the network failed, it timed out, or a 5xx came without a modern error. The probe
 *   rejects; the connection attempt fails and the supervisor tries again later. (A server that fails
 *   this way but speaks legacy can be configured with the era forced.)
 *
 * The answer is a property of the server, not of one request: callers cache it (`EraCache`).
 */
import type { Dispatcher } from 'undici';
import { SbErrorCode, SwitchboardError } from '../../../errors/switchboard-error.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import { eraOf, isKnownRevision, MODERN_REVISION } from '../../../protocol/mcp/revisions.js';
import { describeNetworkError } from './describe-error.js';
import { probeHandshake } from './handshake-probe.js';
import { HttpConnection } from './http-connection.js';
import { readProbeAnswer } from './modern-answer.js';
import { errorObjectOf, isModernErrorSignal } from './modern-errors.js';
import { modernRequestHeaders } from './modern-request-headers.js';
import { META } from './request-envelope.js';
import { configuredHeaders } from './request-headers.js';

/**
 * What an upstream speaks: the `initialize`-based era (2025-11-25 and earlier), the per-request
 * envelopes of 2026-07-28, or both (`dual`: each client is spoken to in its own era).
 */
export type UpstreamEra = 'modern' | 'legacy' | 'dual';

/** Where and how to probe. */
export interface EraProbeOptions {
  /** Names the upstream in errors. */
  readonly name: string;
  readonly url: URL;
  /** The configured headers (credentials the server may require even to answer). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The connections to use; never closed here. */
  readonly dispatcher: Dispatcher;
  /** Longest wait for the whole answer (default 10000 ms). */
  readonly timeoutMs?: number;
  /**
   * The caller was closed: the `initialize` question (after a modern answer) is not asked, or is
   * given up, and the verdict is `modern`. (The discover question still gets its answer.)
   */
  readonly signal?: AbortSignal;
}

/** What the probe found, with what it is based on (for logs). */
export interface EraVerdict {
  readonly era: UpstreamEra;
  readonly status: number;
  readonly reason: string;
}

const PROBE_ID = 'switchboard-era-probe';

function unavailable(name: string, message: string, status?: number): SwitchboardError {
  return new SwitchboardError(
    SbErrorCode.UpstreamUnavailable,
    `could not tell which MCP era upstream ${name} speaks: ${message}`,
    status === undefined ? undefined : { details: { status } },
  );
}

/** Probes the upstream's era (see the file comment). Rejects with a `SwitchboardError` without a verdict. */
export async function probeEra(options: EraProbeOptions): Promise<EraVerdict> {
  const verdict = await probeDiscover(options);
  if (verdict.era !== 'modern') return { era: verdict.era, status: verdict.status, reason: verdict.reason };
  const handshake = await probeHandshake({
    name: options.name,
    url: options.url,
    dispatcher: options.dispatcher,
    timeoutMs: options.timeoutMs ?? 10_000,
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return handshake.accepted
    ? { era: 'dual', status: verdict.status, reason: `${verdict.reason}; ${handshake.reason}` }
    : { era: 'modern', status: verdict.status, reason: `${verdict.reason}; ${handshake.reason}` };
}

/** The discover step: modern, legacy, or dual when `supportedVersions` names a legacy revision. */
async function probeDiscover(options: EraProbeOptions): Promise<EraVerdict> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const params: JsonObject = {
    _meta: {
      [META.protocolVersion]: MODERN_REVISION,
      [META.clientInfo]: { name: 'switchboard', version: '0' },
      [META.clientCapabilities]: {},
    },
  };
  const built = modernRequestHeaders({
    base: configuredHeaders(options.headers),
    version: MODERN_REVISION,
    method: 'server/discover',
    params,
  });
  if (!built.ok) throw unavailable(options.name, built.error.message);
  const http = new HttpConnection(options.url, options.dispatcher);
  const path = options.url.pathname + options.url.search;
  let response: Dispatcher.ResponseData;
  try {
    response = await http.request({
      method: 'POST',
      path,
      headers: built.headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: PROBE_ID, method: 'server/discover', params }),
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw unavailable(options.name, `server/discover failed: ${describeNetworkError(error)}`);
  }
  const status = response.statusCode;
  const answer = await readProbeAnswer(options.name, path, response, PROBE_ID);
  if (answer.kind === 'response' || answer.kind === 'refused') {
    const error = answer.kind === 'response' ? errorObjectOf(answer.response) : answer.error;
    if (error && isModernErrorSignal(error.code, status))
      return { era: 'modern', status, reason: `HTTP ${status} with the modern error ${error.code}` };
    if (answer.kind === 'response' && !error) {
      const result = answer.response.result;
      if (isObject(result) && Array.isArray(result.supportedVersions)) {
        const legacy = result.supportedVersions.filter((v) => isKnownRevision(v) && eraOf(v) === 'legacy');
        if (legacy.length > 0)
          return {
            era: 'dual',
            status,
            reason: `HTTP ${status} with a discover result listing ${legacy.join(', ')}`,
          };
        return { era: 'modern', status, reason: `HTTP ${status} with a discover result` };
      }
      return { era: 'legacy', status, reason: `HTTP ${status} with a result that is not a discover result` };
    }
    if (status >= 500) {
      const detail = error?.message ?? (answer.kind === 'refused' ? answer.detail : undefined);
      throw unavailable(
        options.name,
        `server/discover got HTTP ${status}${detail ? `: ${detail}` : ''}`,
        status,
      );
    }
    return {
      era: 'legacy',
      status,
      reason: error
        ? `HTTP ${status} with the error ${error.code}, which is not a modern one`
        : `HTTP ${status} without a modern error`,
    };
  }
  if (status >= 500 || answer.kind === 'oversized')
    throw unavailable(options.name, `server/discover got HTTP ${status}`, status);
  if (answer.kind === 'failed' && answer.broken) throw unavailable(options.name, answer.reason, status);
  return { era: 'legacy', status, reason: `HTTP ${status} without a readable answer` };
}
