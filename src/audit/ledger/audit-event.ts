/**
 * What the governance layer hands the ledger when an audited call completes (`tools/call`,
 * `resources/read`, `prompts/get`, or a policy denial), and what a stored record looks like.
 *
 * The event is raw: the ledger bounds the ids, redacts `args`, `target` and `error`, hashes and
 * measures `output` (the body itself is never stored) before anything is hashed or written, so the
 * caller never has to remember a hygiene step.
 */
import type { Tier } from '../../config/types.js';

export type { Tier };

/** How an audited call ended. `approved`/`rejected` are the outcomes of a policy "ask". */
export type Decision = 'allowed' | 'denied' | 'approved' | 'rejected' | 'error';

/**
 * The `error` of the record of a call the client cancelled (`decision: 'error'`, since the format's
 * decisions say how a call ended, not why): readers show such a record as cancelled.
 */
export const CANCELLED_BY_CLIENT = 'cancelled by the client';

/** Every {@link Decision}, for validation. */
export const DECISIONS: readonly Decision[] = ['allowed', 'denied', 'approved', 'rejected', 'error'];

/** Every {@link Tier}, for validation. */
export const TIERS: readonly Tier[] = ['T0', 'T1', 'T2', 'T3'];

/** One completed audited call, as the governance layer reports it to `AuditLedger.append`. */
export interface AuditEvent {
  /** The gateway session; bounded like the ids below. */
  readonly session_id?: string;
  /** The authenticated principal (ADR-0038: absent for the single-client stdio gateway). */
  readonly client_id?: string;
  /** The JSON-RPC request id as the client sent it (any type): the ledger bounds it (`boundId`). */
  readonly request_id?: unknown;
  /** The upstream server the call went to. */
  readonly upstream?: string;
  /** `tools/call`, `resources/read`, `prompts/get`... */
  readonly method: string;
  /** The tool or prompt name, or the resource URI (redacted: a URI may carry a password). */
  readonly target?: string;
  readonly tier: Tier;
  readonly decision: Decision;
  /** Raw arguments: the ledger repairs them to JSON and redacts them, depth-capped. */
  readonly args?: unknown;
  /** The result exactly as returned to the client (JSON text): hashed and measured, never stored. */
  readonly output?: string;
  /**
   * The result as a JSON value, when `output` is absent: the ledger serialises it with
   * `JSON.stringify` (the text a transport sends) when the event is appended, and keeps only that
   * text, so changing the result afterwards changes nothing.
   */
  readonly result?: unknown;
  /** An error message: redacted and cut to `maxErrorLength` by the ledger. */
  readonly error?: string;
  /** Wall time of the call in milliseconds (stored with microsecond precision). */
  readonly duration_ms: number;
  /** The MEUP envelope id of the client's request in the trace. */
  readonly trace_id?: string;
  /** Who approved or rejected the call (policy "ask"). */
  readonly decided_by?: string;
  /** The policy rule that decided. */
  readonly rule?: string;
}

/**
 * A stored record (schema `v: 1`). Optional members are absent, never `null`: the hash covers the
 * members present, so a record written before an optional member existed still verifies.
 */
export interface AuditRecord {
  readonly v: 1;
  /** 1 for the first record, then +1 per record across every ledger file. */
  readonly seq: number;
  /** When the ledger accepted the record: RFC 3339 UTC with milliseconds. */
  readonly ts: string;
  readonly session_id?: string;
  readonly client_id?: string;
  readonly request_id?: string;
  readonly upstream?: string;
  readonly method: string;
  readonly target?: string;
  readonly tier: Tier;
  readonly decision: Decision;
  readonly args?: unknown;
  /** SHA-256 (hex) of the UTF-8 bytes of the output; present together with `output_len`. */
  readonly output_sha256?: string;
  /** Byte length of the UTF-8 output. */
  readonly output_len?: number;
  readonly error?: string;
  readonly duration_ms: number;
  readonly trace_id?: string;
  readonly decided_by?: string;
  readonly rule?: string;
  /** The previous record's `entry_hash`; 64 zeros for seq 1. */
  readonly prev_hash: string;
  /** SHA-256 (hex) of the domain tag and the canonical record without this member. */
  readonly entry_hash: string;
}
