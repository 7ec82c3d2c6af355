/**
 * How a batch of trace hops crosses to the trace worker: one flat array, {@link HOP_STRIDE} slots
 * per hop, because the structured clone of `postMessage` costs per value and a flat array of
 * strings and numbers is the cheapest shape to copy; a string that repeats within the batch
 * crosses once (see `encodeHops`). The message itself crosses only when the
 * transport had no JSON text for it (the worker stringifies it); otherwise only its text, method
 * and id. The worker turns each hop into the row the SQLite store writes, building there the
 * envelope's ISO timestamp and the stored payload.
 */

import { isoTimestamp } from '../meup/iso-timestamp.js';
import { MEUP_PROTOCOL } from '../meup/types.js';
import type { DeliveredResult, GuardedHop, PayloadGuard } from './payload-guard.js';
import type { EnvelopeParams, StoredEnvelope } from './sqlite-trace-store.js';
import { rpcIdText, storedPayloadText } from './stored-payload.js';
import type { TraceHop } from './trace-hop.js';

/** Slots per hop in an encoded batch. */
export const HOP_STRIDE = 20;

/**
 * The slots of `hops`. The fields that repeat from hop to hop (session, kind, participants,
 * context, method, direction, transport, upstream, protocol) cross once per batch: a later
 * occurrence is the number of the string in the batch's order of first occurrences, which the
 * worker reads back with the same table. A number copies and decodes far more cheaply than a string.
 */
export function encodeHops(hops: readonly TraceHop[]): unknown[] {
  const out: unknown[] = [];
  const seen = new Map<string, number>();
  const word = (value: string | undefined): string | number | undefined => {
    if (value === undefined) return undefined;
    const known = seen.get(value);
    if (known !== undefined) return known;
    seen.set(value, seen.size);
    return value;
  };
  for (const h of hops) {
    const json = h.payloadJson;
    const to = h.to;
    out.push(
      h.id,
      word(h.session),
      word(h.kind),
      word(h.from),
      to === undefined ? undefined : to.length === 1 ? word(to[0]) : to,
      h.correlationId,
      word(h.context),
      json,
    );
    if (json === undefined) out.push(h.payload, undefined, undefined);
    else {
      const method = h.payload.method;
      const id = h.payload.id;
      out.push(
        undefined,
        typeof method === 'string' ? word(method) : undefined,
        typeof id === 'string' || typeof id === 'number' || id === null ? id : undefined,
      );
    }
    out.push(
      word(h.direction),
      word(h.transport),
      word(h.upstream),
      h.receivedAt,
      h.sentAt,
      h.ts,
      word(h.protocol),
      // Where the result starts in the JSON text, negated for a tool failure (it is never 0).
      h.resultAt === undefined || json === undefined
        ? undefined
        : h.resultIsError === true
          ? -h.resultAt
          : h.resultAt,
      // A call's ids repeat on each of its hops: one string, numbered like the others.
      h.otel === undefined ? undefined : word(`${h.otel.traceId}-${h.otel.spanId}`),
    );
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

/** Strings that JSON writes as they are, between quotes (ids, participant names, most contexts). */
const PLAIN = /^[0-9A-Za-z_.:/+=-]*$/;

/** `JSON.stringify` of an array of strings, without its generic path for the common plain case. */
function stringArrayJson(values: readonly string[]): string {
  if (values.length === 1) {
    const only = values[0] as string;
    if (PLAIN.test(only)) return `["${only}"]`;
  }
  return JSON.stringify(values);
}

/**
 * The rows of an encoded batch, as the SQLite store writes them, appended to `rows`; `payloads`
 * decides each stored payload (and must see every batch of its store, in order).
 */
export function decodeHops(
  slots: readonly unknown[],
  payloads: PayloadGuard,
  rows: StoredEnvelope[] = [],
): StoredEnvelope[] {
  // The batch's strings in order of first occurrence (see `encodeHops`).
  const words: string[] = [];
  const word = (value: unknown): string | undefined => {
    if (typeof value === 'number') return words[value];
    if (typeof value === 'string') words.push(value);
    return value as string | undefined;
  };
  const answers = deliveredAnswers(slots);
  for (let k = 0; k + HOP_STRIDE <= slots.length; k += HOP_STRIDE) {
    // In slot order, as they were numbered.
    const session = word(slots[k + 1]);
    const kind = word(slots[k + 2]);
    const from = word(slots[k + 3]);
    const toSlot = slots[k + 4];
    const to = Array.isArray(toSlot) ? (toSlot as readonly string[]) : word(toSlot);
    const targets = slots[k + 5] as readonly string[] | undefined;
    const context = word(slots[k + 6]);
    const json = slots[k + 7] as string | undefined;
    const payload = slots[k + 8];
    const methodSlot = word(slots[k + 9]);
    const direction = word(slots[k + 11]);
    const transport = word(slots[k + 12]);
    const upstream = word(slots[k + 13]);
    const protocol = word(slots[k + 17]);
    const otel = word(slots[k + 19]);
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
      method = methodSlot ?? null;
      rpcId = rpcIdText(slots[k + 10]) ?? null;
    }
    const receivedAt = slots[k + 14] as number;
    const sentAt = slots[k + 15] as number | undefined;
    const ts = slots[k + 16] as string | undefined;
    const guarded: { -readonly [K in keyof GuardedHop]: GuardedHop[K] } = {
      payload,
      json,
      kind: text(kind),
      method,
      context: context ?? null,
      to,
    };
    if (json !== undefined) {
      const result = resultOf(slots[k + 18], json);
      if (result !== undefined) {
        guarded.resultAt = result.resultAt;
        guarded.resultIsError = result.resultIsError;
      }
      const answer = answers?.get(slots[k] as string);
      if (answer !== undefined) {
        guarded.rpcId = slots[k + 10];
        guarded.sameResultAs = answer;
      }
    }
    const params: EnvelopeParams = [
      text(slots[k]),
      text(session),
      protocol ?? MEUP_PROTOCOL,
      ts ?? isoTimestamp(sentAt ?? receivedAt),
      text(kind),
      text(from),
      to === undefined ? null : stringArrayJson(typeof to === 'string' ? [to] : to),
      targets === undefined ? null : stringArrayJson(targets),
      context ?? null,
      method,
      rpcId,
      text(direction),
      text(transport),
      upstream ?? null,
      receivedAt,
      sentAt ?? null,
      payloads.text(guarded),
      otel === undefined ? null : otel.slice(0, 32),
      otel === undefined ? null : otel.slice(33),
    ];
    rows.push({ params, targets });
  }
  return rows;
}

/** The result slot of a hop (see `encodeHops`) as an offset and a failure flag. */
function resultOf(slot: unknown, json: string): DeliveredResult | undefined {
  if (typeof slot !== 'number' || slot === 0) return undefined;
  return { json, resultAt: Math.abs(slot), resultIsError: slot < 0 };
}

/**
 * The answers of this batch that the gateway delivered with their result's place known, by the
 * envelope ids they name (`correlation_id`): an upstream's response is named by the answer built
 * from it, which carries the same result, so its digest can be taken from there.
 */
function deliveredAnswers(slots: readonly unknown[]): Map<string, DeliveredResult> | undefined {
  let answers: Map<string, DeliveredResult> | undefined;
  for (let k = 0; k + HOP_STRIDE <= slots.length; k += HOP_STRIDE) {
    const json = slots[k + 7];
    if (typeof json !== 'string') continue;
    const result = resultOf(slots[k + 18], json);
    const named = slots[k + 5] as readonly string[] | undefined;
    if (result === undefined || named === undefined) continue;
    answers ??= new Map();
    for (const id of named) answers.set(id, result);
  }
  return answers;
}
