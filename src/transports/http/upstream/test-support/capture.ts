/**
 * Records what an upstream transport hands its owner (messages, closes, errors), with waits for a
 * given response, for the transports' tests.
 */
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../../../core/ports.js';
import { isObject } from '../../../../protocol/jsonrpc/json-object.js';
import type { RequestId } from '../../../../protocol/jsonrpc/types.js';
import { eventually } from './scripted-server.js';

/** One message handed to `onmessage`, parsed. */
export interface Captured {
  readonly text: string;
  readonly value: Record<string, unknown> | unknown[];
  readonly meta: InboundMeta;
}

/** Everything a transport handed its owner, with waits. */
export interface Capture {
  readonly messages: Captured[];
  readonly closes: UpstreamClose[];
  readonly errors: Error[];
  /** The first message that is a response to `id` (a batch counts when it contains one). */
  response(id: RequestId, timeoutMs?: number): Promise<Captured & { value: Record<string, unknown> }>;
  /** The first notification with this method. */
  notification(method: string, timeoutMs?: number): Promise<Captured & { value: Record<string, unknown> }>;
}

/** Installs the callbacks on `transport` (before `start()`, as the port asks). */
export function capture(transport: UpstreamTransport): Capture {
  const messages: Captured[] = [];
  const closes: UpstreamClose[] = [];
  const errors: Error[] = [];
  transport.onmessage = (text, meta) =>
    messages.push({ text, value: JSON.parse(text) as Captured['value'], meta });
  transport.onclose = (close) => closes.push(close);
  transport.onerror = (error) => errors.push(error);
  return {
    messages,
    closes,
    errors,
    response: (id, timeoutMs) =>
      eventually(
        () =>
          messages.find(
            (m): m is Captured & { value: Record<string, unknown> } =>
              isObject(m.value) && m.value.id === id && !('method' in m.value),
          ),
        timeoutMs,
        `the response to ${String(id)}`,
      ),
    notification: (method, timeoutMs) =>
      eventually(
        () =>
          messages.find(
            (m): m is Captured & { value: Record<string, unknown> } =>
              isObject(m.value) && m.value.method === method && !('id' in m.value),
          ),
        timeoutMs,
        `a ${method} notification`,
      ),
  };
}
