/**
 * Readiness: whether the gateway can serve now, as a pure function of a snapshot of its parts
 * (`GET /ready`; `GET /health` is liveness only and never asks any of this). The gateway takes
 * the snapshot when `/ready` is asked; nothing here reads a clock, a socket or a file.
 *
 * The rule (docs/observability.md, "Health and readiness"):
 *
 * - **not ready** (503) while any of these holds, each named in `problems`:
 *   - the gateway drains (it is shutting down);
 *   - no upstream can serve (every upstream is down, starting or restarting);
 *   - an upstream configured `required: true` cannot serve;
 *   - the audit ledger fails closed (a write failed, its writes hang, or its disk is low on
 *     space: T1+ calls are refused);
 *   - the trace store's last write failed less than {@link TRACE_FAILURE_HOLD_MS} ago. The hold
 *     bounds the verdict: the trace writes only when traffic comes, and a gateway taken out of
 *     rotation gets none, so "failed until a write succeeds" could never end. Past the hold the
 *     gateway is ready again, the next traffic tries the store, and a store still broken makes it
 *     not ready at once.
 * - **degraded** (200) when none of that holds but an upstream that is not required cannot serve,
 *   or the trace buffer is full and dropping records: the gateway serves, partly.
 * - **ready** (200) otherwise.
 *
 * An upstream the gateway connects to on demand (`per-session`, or a pool with no child now) that
 * has nothing running is `idle`: that is no fault, and counts as able to serve. The states are the
 * same words as the `switchboard_upstream_state` gauge's on `/metrics`.
 */

/** How long a failed trace write keeps the gateway not ready (see the file comment). */
export const TRACE_FAILURE_HOLD_MS = 30_000;

/**
 * What an upstream is doing, as readiness sees it:
 * - `ready`: connected and initialized;
 * - `starting`: its first start or handshake is under way;
 * - `restarting`: its connection closed and the supervisor is starting a new one (backoff, then
 *   the handshake again);
 * - `down`: gone for good (restarts off or exhausted, or it could not start);
 * - `idle`: nothing is running, and the gateway starts it when a session needs it.
 */
export type UpstreamReadyState = 'ready' | 'starting' | 'restarting' | 'down' | 'idle';

/** One upstream in a snapshot. */
export interface UpstreamStatus {
  /** Its configured name. */
  readonly name: string;
  /** What it is doing now; `ready` and `idle` can serve. */
  readonly state: UpstreamReadyState;
  /** `upstreams.<name>.required`: whether the gateway is not ready without it. */
  readonly required: boolean;
  /** The protocol era it speaks, once known (`legacy`, `modern`, `dual`). */
  readonly era?: string | undefined;
  /** When it entered `state` (ms since the epoch); unknown for `idle`. */
  readonly since?: number | undefined;
  /** Why its last connection closed or failed to start, if one did. */
  readonly lastError?: string | undefined;
  /** Restarts of its current connection so far. */
  readonly restarts: number;
}

/** The audit ledger in a snapshot (absent when the ledger is off). */
export interface LedgerReadiness {
  /** Whether a record appended now could be written (false: T1+ calls are refused). */
  readonly healthy: boolean;
  /** Why not: `write-failed`, `backlog` or `low-space` (the ledger's own reasons). */
  readonly reason?: string | undefined;
}

/** The trace recorder in a snapshot (absent when the trace is off). */
export interface TraceReadiness {
  /** Failed writes in a row; 0 once a write succeeded. */
  readonly consecutiveFailures: number;
  /** When the last write failed (ms since the epoch). */
  readonly lastFailureAt?: number | undefined;
  /** Whether its buffer is full and records are dropped until the store catches up. */
  readonly overflowing: boolean;
}

/** Everything readiness is decided from. */
export interface ReadinessSnapshot {
  /** Now, in ms since the epoch (the `since` and `lastFailureAt` clock). */
  readonly now: number;
  /** Whether the gateway is shutting down (not ready, whatever else holds). */
  readonly draining: boolean;
  /** Every configured upstream; none at all is no problem. */
  readonly upstreams: readonly UpstreamStatus[];
  /** The audit ledger; absent when it is off. */
  readonly ledger?: LedgerReadiness | undefined;
  /** The trace recorder; absent when the trace is off. */
  readonly trace?: TraceReadiness | undefined;
}

/** What makes the gateway not ready: `check` names the part, `message` says what is wrong. */
export interface ReadinessProblem {
  /** The part at fault: `upstreams` when none can serve, `upstream` for one required one. */
  readonly check: 'draining' | 'upstreams' | 'upstream' | 'ledger' | 'trace';
  /** The upstream, for `check: 'upstream'`. */
  readonly upstream?: string;
  /** What is wrong, in a sentence for a person. */
  readonly message: string;
}

/** An upstream that cannot serve now, as `/ready` reports it. */
export interface DegradedUpstream {
  /** Its configured name. */
  readonly name: string;
  /** What it is doing (`starting`, `restarting` or `down`). */
  readonly state: UpstreamReadyState;
  /** Whether the gateway is not ready without it. */
  readonly required: boolean;
  /** The protocol era it speaks, once known. */
  readonly era?: string;
  /** When it entered `state`, ISO 8601. */
  readonly since?: string;
  /** Why its last connection closed or failed, cut to 300 characters. */
  readonly lastError?: string;
  /** Restarts of its current connection so far. */
  readonly restarts: number;
}

/** The verdict and the body of `/ready`. */
export interface Readiness {
  /** The verdict (the rule in the file comment): `not_ready` answers 503, the others 200. */
  readonly status: 'ready' | 'degraded' | 'not_ready';
  /** Why the gateway is not ready (empty unless `status` is `not_ready`). */
  readonly problems: readonly ReadinessProblem[];
  /** Every upstream that cannot serve now, required or not. */
  readonly degraded: readonly DegradedUpstream[];
  /** Upstreams that can serve (`ready` or `idle`), of how many. */
  readonly upstreams: { readonly serving: number; readonly total: number };
  /** The audit ledger: `failing_closed` refuses T1+ calls (and makes the gateway not ready). */
  readonly ledger: 'ok' | 'failing_closed' | 'off';
  /** The trace: `failing` within the hold after a failed write, `dropping` while its buffer is full. */
  readonly trace: 'ok' | 'failing' | 'dropping' | 'off';
}

/** Longest `lastError` in a report: it is for a person reading a probe's answer, not a log. */
const MAX_ERROR_CHARS = 300;

function canServe(state: UpstreamReadyState): boolean {
  return state === 'ready' || state === 'idle';
}

function degradedOf(u: UpstreamStatus): DegradedUpstream {
  const error =
    u.lastError !== undefined && u.lastError.length > MAX_ERROR_CHARS
      ? `${u.lastError.slice(0, MAX_ERROR_CHARS)}…`
      : u.lastError;
  return {
    name: u.name,
    state: u.state,
    required: u.required,
    ...(u.era === undefined ? {} : { era: u.era }),
    ...(u.since === undefined ? {} : { since: new Date(u.since).toISOString() }),
    ...(error === undefined ? {} : { lastError: error }),
    restarts: u.restarts,
  };
}

function upstreamProblem(u: UpstreamStatus): ReadinessProblem {
  const why = u.lastError === undefined ? '' : `: ${degradedOf(u).lastError}`;
  return { check: 'upstream', upstream: u.name, message: `required upstream ${u.name} is ${u.state}${why}` };
}

function traceState(trace: TraceReadiness | undefined, now: number): Readiness['trace'] {
  if (trace === undefined) return 'off';
  const recent =
    trace.consecutiveFailures > 0 &&
    trace.lastFailureAt !== undefined &&
    now - trace.lastFailureAt < TRACE_FAILURE_HOLD_MS;
  if (recent) return 'failing';
  return trace.overflowing ? 'dropping' : 'ok';
}

/** The readiness of a snapshot (see the file comment for the rule). */
export function readinessOf(snapshot: ReadinessSnapshot): Readiness {
  const problems: ReadinessProblem[] = [];
  if (snapshot.draining)
    problems.push({ check: 'draining', message: 'the gateway is shutting down (draining)' });
  const serving = snapshot.upstreams.filter((u) => canServe(u.state));
  if (snapshot.upstreams.length > 0 && serving.length === 0)
    problems.push({
      check: 'upstreams',
      message: `no upstream can serve (${snapshot.upstreams.map((u) => `${u.name}: ${u.state}`).join(', ')})`,
    });
  const down = snapshot.upstreams.filter((u) => !canServe(u.state));
  for (const u of down) if (u.required) problems.push(upstreamProblem(u));
  const ledger: Readiness['ledger'] =
    snapshot.ledger === undefined ? 'off' : snapshot.ledger.healthy ? 'ok' : 'failing_closed';
  if (ledger === 'failing_closed')
    problems.push({
      check: 'ledger',
      message: `the audit ledger fails closed (${snapshot.ledger?.reason ?? 'unavailable'}): calls of tier T1 and above are refused`,
    });
  const trace = traceState(snapshot.trace, snapshot.now);
  if (trace === 'failing')
    problems.push({ check: 'trace', message: 'the trace store is failing: its last write failed' });
  const status =
    problems.length > 0 ? 'not_ready' : down.length > 0 || trace === 'dropping' ? 'degraded' : 'ready';
  return {
    status,
    problems,
    degraded: down.map(degradedOf),
    upstreams: { serving: serving.length, total: snapshot.upstreams.length },
    ledger,
    trace,
  };
}
