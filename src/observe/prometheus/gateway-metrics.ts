/**
 * Everything `GET /metrics` exports, in one registry: the traffic metrics (`call-metrics.ts`, fed
 * by the router's observers), gauges that read the gateway's state when scraped (`GatewaySources`:
 * nothing is kept up to date between scrapes), the counters of `Metrics` (`counter-bridge.ts`), and
 * the process and garbage-collection metrics of prom-client (`collectDefaultMetrics`).
 *
 * docs/observability.md ("Metrics") lists every metric with its labels; `metrics-doc.test.ts`
 * holds that table to what is registered here and to every counter the code keeps.
 */
import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { SessionKey } from '../../core/correlation-table.js';
import type { CallObserver, ObservedSession, SessionEnd } from '../../core/observations.js';
import { eraOf } from '../../protocol/mcp/revisions.js';
import type { Metrics } from '../metrics.js';
import { CallMetrics } from './call-metrics.js';
import { counterFamilies } from './counter-bridge.js';
import {
  expose,
  type Family,
  negotiateFormat,
  OPENMETRICS_CONTENT_TYPE,
  PROMETHEUS_CONTENT_TYPE,
} from './exposition.js';
import { UPSTREAM_STATES, type UpstreamState } from './upstream-states.js';

/** An upstream as the state gauges see it. */
export interface UpstreamSample {
  readonly name: string;
  /** The protocol version its last `initialize` agreed, once known. */
  readonly protocolVersion?: string;
  /**
   * Its state as the composition knows it (`serve`: the upstream manager's, from the one link
   * record `/ready` reports, `gateways/serve/link-states.ts`). The registry keeps no record of its own.
   */
  readonly state: UpstreamState;
}

/**
 * Where the gauges read the gateway's state, each when scraped; every source optional (a gateway
 * without a ledger has no ledger gauges). All must be cheap and must not throw.
 */
export interface GatewaySources {
  /** Client requests received and not yet answered (`Router.callsInFlight`). */
  readonly callsInFlight?: () => number;
  /** Requests to upstreams awaiting their answer (`Router.pendingRequests`). */
  readonly upstreamRequestsPending?: () => number;
  /** A session's negotiated protocol version (`Router.sessionProtocol`). */
  readonly sessionProtocol?: (key: SessionKey) => string | undefined;
  readonly upstreams?: () => readonly UpstreamSample[];
  /** Open HTTP streams (SSE GET streams and POSTs still answering), by era. */
  readonly httpStreams?: () => Readonly<Record<'legacy' | 'modern', number>>;
  /** What the event store holds for resumption. */
  readonly resumption?: () => { readonly events: number; readonly bytes: number; readonly streams: number };
  /** Trace records waiting to be written. */
  readonly traceQueue?: () => number;
  /** The ledger: records waiting to be written, and why it fails closed (undefined while healthy). */
  readonly ledger?: () => { readonly queued: number; readonly failingClosed?: string };
  readonly approvalsPending?: () => number;
  readonly spaceParticipants?: () => number;
}

export interface GatewayMetricsOptions {
  readonly metrics: Metrics;
  readonly sources?: GatewaySources;
  readonly version: string;
  /** Count calls by principal (at most `max` by name, the rest `other`). */
  readonly principals?: { readonly max: number };
  /** Process and GC metrics (default true; tests that build many registries turn them off). */
  readonly processMetrics?: boolean;
}

/** Why the ledger may fail closed (`AuditLedger.unavailable.reason`). */
export const LEDGER_FAIL_REASONS = ['write-failed', 'backlog', 'low-space'] as const;

/** How long approvals wait, in seconds: people take seconds to hours. */
export const APPROVAL_BUCKETS: readonly number[] = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** The client sessions open, by transport (their era is read when scraped). */
class OpenSessions implements CallObserver {
  readonly name = 'prometheus-sessions';
  readonly open = new Map<SessionKey, string>();

  sessionOpened(session: ObservedSession): void {
    this.open.set(session.key, session.transport);
  }

  sessionClosed(session: ObservedSession, _end: SessionEnd): void {
    this.open.delete(session.key);
  }
}

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly calls: CallMetrics;
  readonly #metrics: Metrics;
  readonly #sessions = new OpenSessions();
  readonly #approvalWait: Histogram<string>;

  constructor(options: GatewayMetricsOptions) {
    this.#metrics = options.metrics;
    const registers = [this.registry];
    this.calls = new CallMetrics({
      registry: this.registry,
      ...(options.principals ? { principals: options.principals } : {}),
    });
    this.#approvalWait = new Histogram({
      name: 'switchboard_approval_wait_seconds',
      help: 'How long held calls waited for a decision, by outcome (approved, rejected, timeout, withdrawn, overloaded).',
      labelNames: ['outcome'],
      buckets: [...APPROVAL_BUCKETS],
      registers,
    });
    new Gauge({
      name: 'switchboard_build_info',
      help: 'The running gateway: 1, with its version.',
      labelNames: ['version'],
      registers,
    }).set({ version: options.version }, 1);
    this.#gauges(options.sources ?? {});
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** What the router must be told to observe (`Router.observations.add` each). */
  get observers(): readonly CallObserver[] {
    return [this.calls, this.#sessions];
  }

  /** A held call was decided after `waitedMs` (the approvals book's `decided`). */
  approvalDecided(outcome: string, waitedMs: number): void {
    this.#approvalWait.observe({ outcome }, Math.max(0, waitedMs) / 1000);
  }

  /**
   * The scrape: every family, in the format `accept` asks for (OpenMetrics or the Prometheus
   * text format), with its content type.
   */
  async render(accept: string | undefined): Promise<{ readonly contentType: string; readonly body: string }> {
    const own = (await this.registry.getMetricsAsJSON()) as unknown as Family[];
    const taken = new Set(own.map((f) => f.name));
    const families = [...own, ...counterFamilies(this.#metrics, taken)];
    const format = negotiateFormat(accept);
    return {
      contentType: format === 'openmetrics' ? OPENMETRICS_CONTENT_TYPE : PROMETHEUS_CONTENT_TYPE,
      body: expose(families, format),
    };
  }

  /** The gauges that read state when scraped. */
  #gauges(s: GatewaySources): void {
    const registers = [this.registry];
    const scalar = (name: string, help: string, read: (() => number) | undefined): void => {
      if (read === undefined) return;
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    };
    scalar('switchboard_calls_in_flight', 'Client requests received and not yet answered.', s.callsInFlight);
    scalar(
      'switchboard_upstream_requests_pending',
      'Requests to upstreams awaiting their answer (cancelled ones waiting for a late answer too).',
      s.upstreamRequestsPending,
    );
    const sessions = this.#sessions.open;
    const protocol = s.sessionProtocol;
    new Gauge({
      name: 'switchboard_sessions',
      help: 'Client sessions open, by era (legacy: up to 2025-11-25, modern: 2026-07-28) and transport.',
      labelNames: ['era', 'transport'],
      registers,
      collect() {
        this.reset();
        const counts = new Map<string, { era: string; transport: string; n: number }>();
        for (const [key, transport] of sessions) {
          const version = protocol?.(key);
          const era = version === undefined ? 'legacy' : eraOf(version);
          const id = `${era}/${transport}`;
          const entry = counts.get(id);
          if (entry) entry.n++;
          else counts.set(id, { era, transport, n: 1 });
        }
        for (const { era, transport, n } of counts.values()) this.set({ era, transport }, n);
      },
    });
    const streams = s.httpStreams;
    if (streams)
      new Gauge({
        name: 'switchboard_http_streams',
        help: 'Open HTTP streams of client sessions (SSE GET streams and POSTs still answering), by era.',
        labelNames: ['era'],
        registers,
        collect() {
          const counts = streams();
          this.set({ era: 'legacy' }, counts.legacy);
          this.set({ era: 'modern' }, counts.modern);
        },
      });
    const resumption = s.resumption;
    if (resumption) {
      scalar(
        'switchboard_resumption_events',
        'Events held for stream resumption (Last-Event-ID).',
        () => resumption().events,
      );
      scalar(
        'switchboard_resumption_bytes',
        'Bytes of the events held for stream resumption.',
        () => resumption().bytes,
      );
      scalar(
        'switchboard_resumption_streams',
        'Streams whose events are held for resumption.',
        () => resumption().streams,
      );
    }
    const upstreams = s.upstreams;
    if (upstreams) {
      new Gauge({
        name: 'switchboard_upstream_state',
        help: "Each upstream's state: 1 for the state it is in (ready, starting, restarting, down, idle), 0 for the others.",
        labelNames: ['upstream', 'state'],
        registers,
        collect() {
          this.reset();
          for (const upstream of upstreams()) {
            for (const state of UPSTREAM_STATES)
              this.set({ upstream: upstream.name, state }, state === upstream.state ? 1 : 0);
          }
        },
      });
      new Gauge({
        name: 'switchboard_upstream_info',
        help: 'Each upstream whose initialize has been answered: 1, with the protocol version it agreed and its era.',
        labelNames: ['upstream', 'protocol_version', 'era'],
        registers,
        collect() {
          this.reset();
          for (const upstream of upstreams()) {
            const version = upstream.protocolVersion;
            if (version === undefined) continue;
            this.set({ upstream: upstream.name, protocol_version: version, era: eraOf(version) }, 1);
          }
        },
      });
    }
    scalar(
      'switchboard_trace_queue_records',
      'Trace records waiting to be written to the trace store.',
      s.traceQueue,
    );
    const ledger = s.ledger;
    if (ledger) {
      scalar(
        'switchboard_audit_queue_records',
        'Audit records waiting to be written to the ledger.',
        () => ledger().queued,
      );
      new Gauge({
        name: 'switchboard_audit_failing_closed',
        help: 'Whether the audit ledger fails closed (calls of tier T1 and above refused), by reason: 1 for the reason that holds.',
        labelNames: ['reason'],
        registers,
        collect() {
          const why = ledger().failingClosed;
          for (const reason of LEDGER_FAIL_REASONS) this.set({ reason }, reason === why ? 1 : 0);
        },
      });
    }
    scalar(
      'switchboard_approvals_pending',
      'Calls held for an approval, waiting for a decision.',
      s.approvalsPending,
    );
    scalar('switchboard_space_participants', 'Participants present in the MEUP space.', s.spaceParticipants);
  }
}
