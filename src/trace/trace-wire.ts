/**
 * How a batch of trace hops crosses to the trace worker: one flat array, {@link HOP_STRIDE} slots
 * per hop, because the structured clone of `postMessage` costs per value and a flat array of
 * strings and numbers is the cheapest shape to copy. The message itself crosses only when the
 * transport had no JSON text for it (the worker stringifies it); otherwise only its text, method
 * and id. The worker turns each hop into the row the SQLite store writes, building there the
 * envelope's ISO timestamp and the stored payload.
 */
import { MEUP_PROTOCOL } from '../meup/types.js';
import type { EnvelopeParams, StoredEnvelope } from './sqlite-trace-store.js';
import { rpcIdText, storedPayloadText } from './stored-payload.js';
import type { TraceHop } from './trace-hop.js';

/** Slots per hop in an encoded batch. */
export const HOP_STRIDE = 18;

/** Appends the slots of `hops` to `out` (a fresh array by default) and returns it. */
export function encodeHops(hops: readonly TraceHop[], out: unknown[] = []): unknown[] {
  for (const h of hops) {
    const json = h.payloadJson;
    const to = h.to;
    out.push(
      h.id,
      h.session,
      h.kind,
      h.from,
      to === undefined ? undefined : to.length === 1 ? to[0] : to,
      h.correlationId,
      h.context,
      json,
    );
    if (json === undefined) out.push(h.payload, undefined, undefined);
    else {
      const method = h.payload.method;
      const id = h.payload.id;
      out.push(
        undefined,
        typeof method === 'string' ? method : undefined,
        typeof id === 'string' || typeof id === 'number' || id === null ? id : undefined,
      );
    }
    out.push(h.direction, h.transport, h.upstream, h.receivedAt, h.sentAt, h.ts, h.protocol);
  }
  return out;
}

/**
 * The hops of a batch whose message cannot be cloned (a function or a symbol in it: never a
 * parsed message), with the message replaced by its JSON text or a marker, so the batch can go.
 */
export function cloneSafeHops(hops: readonly TraceHop[], maxPayloadBytes: number): TraceHop[] {
  return hops.map((h) => {
    if (h.payloadJson !== undefined) return h;
    const { text } = storedPayloadText(h.payload, undefined, maxPayloadBytes);
    const summary: Record<string, unknown> = {};
    if (typeof h.payload.method === 'string') summary.method = h.payload.method;
    if ('id' in h.payload) summary.id = h.payload.id;
    return { ...h, payload: summary, payloadJson: text };
  });
}

function text(value: unknown): string {
  return value as string;
}

function optionalText(value: unknown): string | null {
  return value === undefined ? null : (value as string);
}

/** The rows of an encoded batch, as the SQLite store writes them. */
export function decodeHops(slots: readonly unknown[], maxPayloadBytes: number): StoredEnvelope[] {
  const rows: StoredEnvelope[] = [];
  for (let k = 0; k + HOP_STRIDE <= slots.length; k += HOP_STRIDE) {
    const to = slots[k + 4] as string | readonly string[] | undefined;
    const targets = slots[k + 5] as readonly string[] | undefined;
    const json = slots[k + 7] as string | undefined;
    const payload = slots[k + 8];
    let method: string | null;
    let rpcId: string | null;
    if (json === undefined) {
      const message = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<
        string,
        unknown
      >;
      method = typeof message.method === 'string' ? message.method : null;
      rpcId = rpcIdText(message.id) ?? null;
    } else {
      method = optionalText(slots[k + 9]);
      rpcId = rpcIdText(slots[k + 10]) ?? null;
    }
    const receivedAt = slots[k + 14] as number;
    const sentAt = slots[k + 15] as number | undefined;
    const ts = slots[k + 16] as string | undefined;
    const params: EnvelopeParams = [
      text(slots[k]),
      text(slots[k + 1]),
      (slots[k + 17] as string | undefined) ?? MEUP_PROTOCOL,
      ts ?? new Date(sentAt ?? receivedAt).toISOString(),
      text(slots[k + 2]),
      text(slots[k + 3]),
      to === undefined ? null : JSON.stringify(typeof to === 'string' ? [to] : to),
      targets === undefined ? null : JSON.stringify(targets),
      optionalText(slots[k + 6]),
      method,
      rpcId,
      text(slots[k + 11]),
      text(slots[k + 12]),
      optionalText(slots[k + 13]),
      receivedAt,
      sentAt ?? null,
      storedPayloadText(payload, json, maxPayloadBytes).text,
    ];
    rows.push({ params, targets });
  }
  return rows;
}
