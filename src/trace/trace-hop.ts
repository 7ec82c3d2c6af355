/**
 * What the gateway hands the trace for one hop: the fields of a `TraceRecord` before the store
 * derives the rest. The forwarding path only copies references into a `TraceHop`; the MEUP
 * envelope's `ts` (ISO 8601 of `sentAt ?? receivedAt`) and the payload's stored JSON text are built
 * by the store, in the trace worker when there is one.
 */
import type { Direction } from '../envelope/direction.js';
import type { TransportKind } from '../envelope/message-context.js';
import { MEUP_PROTOCOL, type MeupEnvelope, type MeupProtocol } from '../meup/types.js';
import type { OtelIds, TraceRecord } from './types.js';

export interface TraceHop {
  readonly id: string;
  readonly session: string;
  readonly kind: string;
  readonly from: string;
  readonly to?: readonly string[];
  readonly correlationId?: readonly string[];
  readonly context?: string;
  /** The JSON-RPC message: the envelope's payload. */
  readonly payload: Readonly<Record<string, unknown>>;
  /** Exactly `JSON.stringify(payload)`, when the transport had it. */
  readonly payloadJson?: string;
  /** See `HopEvent.resultAt`: where the result's own JSON text starts in `payloadJson`. */
  readonly resultAt?: number;
  /** With `resultAt`: the result says `isError: true`. */
  readonly resultIsError?: boolean;
  readonly direction: Direction;
  readonly transport: TransportKind;
  readonly upstream?: string;
  readonly receivedAt: number;
  readonly sentAt?: number;
  /** The envelope's timestamp when it is already known; else derived from `sentAt ?? receivedAt`. */
  readonly ts?: string;
  /** Default: the MEUP protocol this gateway writes. */
  readonly protocol?: MeupProtocol;
  /** See `TraceRecord.otel`. */
  readonly otel?: OtelIds;
}

/** The hop of a complete record (nothing is derived later: `ts` and `protocol` are kept). */
export function traceHopOf(record: TraceRecord): TraceHop {
  const e = record.envelope;
  const hop: { -readonly [K in keyof TraceHop]: TraceHop[K] } = {
    id: e.id,
    session: record.session,
    kind: e.kind,
    from: e.from,
    payload: e.payload,
    direction: record.direction,
    transport: record.transport,
    receivedAt: record.receivedAt,
    ts: e.ts,
    protocol: e.protocol,
  };
  if (e.to !== undefined) hop.to = e.to;
  if (e.correlationId !== undefined) hop.correlationId = e.correlationId;
  if (e.context !== undefined) hop.context = e.context;
  if (record.payloadJson !== undefined) hop.payloadJson = record.payloadJson;
  if (record.upstream !== undefined) hop.upstream = record.upstream;
  if (record.sentAt !== undefined) hop.sentAt = record.sentAt;
  if (record.otel !== undefined) hop.otel = record.otel;
  return hop;
}

/** The envelope timestamp of a hop: its own, or the ISO 8601 time it was sent (else received). */
export function hopTs(hop: Pick<TraceHop, 'ts' | 'sentAt' | 'receivedAt'>): string {
  return hop.ts ?? new Date(hop.sentAt ?? hop.receivedAt).toISOString();
}

/** The complete record of a hop, deriving what it lacks. */
export function traceRecordOf(hop: TraceHop): TraceRecord {
  const envelope: { -readonly [K in keyof MeupEnvelope]: MeupEnvelope[K] } = {
    protocol: hop.protocol ?? MEUP_PROTOCOL,
    id: hop.id,
    ts: hopTs(hop),
    from: hop.from,
    kind: hop.kind,
    payload: hop.payload,
  };
  if (hop.to !== undefined) envelope.to = hop.to;
  if (hop.correlationId !== undefined) envelope.correlationId = hop.correlationId;
  if (hop.context !== undefined) envelope.context = hop.context;
  const record: { -readonly [K in keyof TraceRecord]: TraceRecord[K] } = {
    envelope,
    session: hop.session,
    direction: hop.direction,
    transport: hop.transport,
    receivedAt: hop.receivedAt,
  };
  if (hop.upstream !== undefined) record.upstream = hop.upstream;
  if (hop.sentAt !== undefined) record.sentAt = hop.sentAt;
  if (hop.payloadJson !== undefined) record.payloadJson = hop.payloadJson;
  if (hop.otel !== undefined) record.otel = hop.otel;
  return record;
}
