/**
 * How a trace store keeps an envelope's payload: the JSON text of that hop's JSON-RPC message,
 * or a small marker in its place when the message is too large (or cannot be serialized). Both
 * built-in stores use these helpers so that they keep byte-for-byte the same thing.
 */
import { createHash } from 'node:crypto';
import type { TraceRecord } from './types.js';

/** Payloads above this many UTF-8 bytes are replaced by a {@link TruncatedPayload} marker. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

/**
 * What a store keeps instead of a payload larger than its limit: the size and digest of the JSON
 * text, so that the trace still proves which message passed without holding megabytes per hop.
 */
export interface TruncatedPayload {
  readonly _truncated: true;
  /** UTF-8 length of the payload's JSON text. */
  readonly bytes: number;
  /** Lower-case hex SHA-256 of that JSON text. */
  readonly sha256: string;
}

/** True when a stored payload is the truncation marker rather than a JSON-RPC message. */
export function isTruncatedPayload(payload: unknown): payload is TruncatedPayload {
  return (
    typeof payload === 'object' &&
    payload !== null &&
    (payload as Record<string, unknown>)._truncated === true &&
    typeof (payload as Record<string, unknown>).bytes === 'number'
  );
}

/**
 * The JSON text a store keeps for `record`'s payload, and whether it is a marker in place of the
 * payload (`replaced`).
 *
 * The text is `record.payloadJson` when the transport supplied it (no second stringify on the
 * gateway's event loop), else `JSON.stringify(payload)`. When it is longer than `maxBytes` UTF-8
 * bytes it becomes the {@link TruncatedPayload} marker. A payload that cannot be serialized (a
 * BigInt, a cycle) becomes an `_unserializable` marker instead of throwing, so one bad message can
 * never fail the batch it travels in.
 */
export function storedPayload(record: TraceRecord, maxBytes: number): { text: string; replaced: boolean } {
  return storedPayloadText(record.envelope.payload, record.payloadJson, maxBytes);
}

/** {@link storedPayload} for a payload and its JSON text, when known, outside a record. */
export function storedPayloadText(
  payload: unknown,
  payloadJson: string | undefined,
  maxBytes: number,
): { text: string; replaced: boolean } {
  let text = payloadJson;
  if (text === undefined) {
    try {
      text = JSON.stringify(payload) as string | undefined;
    } catch (err) {
      return unserializable(err instanceof Error ? err.message : String(err));
    }
    if (text === undefined) return unserializable('payload is not a JSON value');
  }
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short strings need no byte count at all.
  if (text.length * 3 <= maxBytes) return { text, replaced: false };
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return { text, replaced: false };
  const marker: TruncatedPayload = {
    _truncated: true,
    bytes,
    sha256: createHash('sha256').update(text, 'utf8').digest('hex'),
  };
  return { text: JSON.stringify(marker), replaced: true };
}

function unserializable(error: string): { text: string; replaced: boolean } {
  return { text: JSON.stringify({ _unserializable: true, error }), replaced: true };
}

/**
 * The JSON-RPC method and id of a payload, for display and indexing: `rpcId` is the id as JSON
 * text (`7` and `"7"` stay distinct; `null` for an error answering an unreadable request).
 */
export function rpcSummary(payload: unknown): { method?: string; rpcId?: string } {
  if (typeof payload !== 'object' || payload === null) return {};
  const message = payload as Record<string, unknown>;
  const out: { method?: string; rpcId?: string } = {};
  if (typeof message.method === 'string') out.method = message.method;
  const rpcId = rpcIdText(message.id);
  if (rpcId !== undefined) out.rpcId = rpcId;
  return out;
}

/** The JSON text of a JSON-RPC id (a string, a finite number or null); undefined for anything else. */
export function rpcIdText(id: unknown): string | undefined {
  if (typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) || id === null) {
    return JSON.stringify(id);
  }
  return undefined;
}
