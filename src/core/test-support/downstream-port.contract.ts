/**
 * The contract every `DownstreamPort` keeps (`core/ports.ts`), written once and run against each
 * client-facing transport with a real client of its kind (a child process on the other end of the
 * pipes, an HTTP client over loopback): `downstreamPortContract('StdioDownstream', open)`.
 *
 * It checks only what the port promises, whatever the wire:
 * - every request the client sends is handed on, and the response the router sends for it reaches
 *   that client, a huge one included;
 * - `send` never throws: for a request it does not know, after the client has gone, while the
 *   client does not read, after the session ended;
 * - `dropped` (where present) never throws, whatever it is told and whenever, and settles what
 *   waits for the dropped request: a batch is answered without it, a POST that waited for it ends.
 *
 * Where messages go (streams, resumption, batches' shapes) is each transport's own, tested beside it.
 */
import { describe, expect, it } from 'vitest';
import { isObject } from '../../protocol/jsonrpc/json-object.js';
import type { JsonRpcMessage, RequestId } from '../../protocol/jsonrpc/types.js';
import type { Delivery, DownstreamPort } from '../ports.js';

/** A started transport and the real client on its other end. */
export interface DownstreamClient {
  /** The transport's port for the client's session: what the suite sends through and tests. */
  readonly port: DownstreamPort;
  /**
   * The client sends request `id` (method `contract/call`) on its own (one line, one POST);
   * resolves once the transport has handed it on, as it hands a request to the router.
   */
  call(id: number): Promise<void>;
  /** The client sends these requests as one batch; absent where the transport takes no batches. */
  batch?(ids: readonly number[]): Promise<void>;
  /** The id the router knows client request `id` by (the transport may give it its own). */
  routerId(id: number): RequestId;
  /** Every message the client received so far, parsed; a batch is an array. */
  received(): unknown[];
  /**
   * Whether the client's wait for request `id` is over (its POST's answer ended); absent where a
   * request has nothing that waits (a pipe).
   */
  settled?(id: number): boolean;
  /** The client stops reading (its socket or pipe fills up), and stays connected. */
  stopReading(): void;
  /** The client goes away at once (its process killed, its connections cut). */
  kill(): Promise<void>;
  /** The transport's own end of the session (it closes it, or the client ends its input). */
  end(): Promise<void>;
  /** Releases whatever is left. */
  dispose(): Promise<void>;
}

/** Starts a fresh transport and its client for one test; the suite disposes of it after. */
export type OpenDownstreamClient = () => Promise<DownstreamClient>;

async function until<T>(check: () => T | undefined | false, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The client's responses to `id`, alone or in a batch. */
function responsesTo(client: DownstreamClient, id: number): Record<string, unknown>[] {
  return client
    .received()
    .flatMap((m) => (Array.isArray(m) ? m : [m]))
    .filter((m): m is Record<string, unknown> => isObject(m) && m.id === id && !('method' in m));
}

/** Sends `message` through the port; says whether it threw. */
function sendThrows(port: DownstreamPort, message: JsonRpcMessage, delivery: Delivery): unknown {
  try {
    port.send(JSON.stringify(message), message, delivery);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** Runs the shared `DownstreamPort` suite against transports built by `open`. */
export function downstreamPortContract(name: string, open: OpenDownstreamClient): void {
  describe(`${name} (DownstreamPort contract)`, () => {
    async function withClient(body: (client: DownstreamClient) => Promise<void>): Promise<void> {
      const client = await open();
      try {
        await body(client);
      } finally {
        await client.dispose();
      }
    }

    /** Everything the router may send toward request `id` of `client`, each kind once. */
    function everything(client: DownstreamClient, id: number, result: unknown = { ok: id }): unknown[] {
      const routerId = client.routerId(id);
      const port = client.port;
      const thrown: unknown[] = [];
      const progress: JsonRpcMessage = {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: `t${id}`, progress: 1 },
      };
      const ask: JsonRpcMessage = {
        jsonrpc: '2.0',
        id: `srv-${id}`,
        method: 'sampling/createMessage',
        params: {},
      };
      const changed: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
      const response: JsonRpcMessage = { jsonrpc: '2.0', id: routerId, result };
      thrown.push(sendThrows(port, progress, { kind: 'related', request: routerId }));
      thrown.push(sendThrows(port, ask, { kind: 'related', request: routerId }));
      thrown.push(sendThrows(port, changed, { kind: 'unrelated' }));
      thrown.push(sendThrows(port, ask, { kind: 'unrelated' }));
      thrown.push(sendThrows(port, response, { kind: 'response', request: routerId }));
      return thrown.filter((t) => t !== undefined);
    }

    const respond = (client: DownstreamClient, id: number, result: unknown = { ok: id }) => {
      const message: JsonRpcMessage = { jsonrpc: '2.0', id: client.routerId(id), result };
      client.port.send(JSON.stringify(message), message, { kind: 'response', request: client.routerId(id) });
    };

    it('hands on every request, and the response reaches the client that asked', () =>
      withClient(async (client) => {
        await Promise.all([1, 2, 3, 4, 5].map((id) => client.call(id)));
        for (const id of [3, 1, 5, 2, 4]) respond(client, id);
        await until(
          () => [1, 2, 3, 4, 5].every((id) => responsesTo(client, id).length > 0),
          'every response',
        );
        for (const id of [1, 2, 3, 4, 5]) {
          expect(responsesTo(client, id)).toHaveLength(1);
          // A transport may add to a result (a 2026-07-28 client's gets `resultType`); never take away.
          expect(responsesTo(client, id)[0]?.result).toMatchObject({ ok: id });
        }
      }));

    it('send never throws for a request it does not know', () =>
      withClient(async (client) => {
        expect(everything(client, 42)).toEqual([]);
        await client.call(1);
        respond(client, 1);
        await until(() => responsesTo(client, 1).length > 0, 'the response to 1');
        // Answered already: a second response has nowhere to go, and does not throw either.
        expect(everything(client, 1)).toEqual([]);
      }));

    it('send never throws after the client has gone', () =>
      withClient(async (client) => {
        await client.call(1);
        await client.call(2);
        respond(client, 1);
        await client.kill();
        expect(everything(client, 2)).toEqual([]);
        await pause(100);
        // Late enough for the transport to have seen the client go (EPIPE, a closed socket).
        expect(everything(client, 3)).toEqual([]);
        expect(() => client.port.dropped?.(2)).not.toThrow();
      }));

    it('send never throws for a huge message, and the client gets it', () =>
      withClient(async (client) => {
        await client.call(1);
        const blob = 'z'.repeat(8 * 1024 * 1024);
        const changed: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/message', params: { blob } };
        expect(sendThrows(client.port, changed, { kind: 'unrelated' })).toBeUndefined();
        expect(() => respond(client, 1, { blob })).not.toThrow();
        await until(() => responsesTo(client, 1).length > 0, 'the huge response', 20_000);
        expect(responsesTo(client, 1)[0]?.result).toMatchObject({ blob });
      }));

    it('send never throws while the client does not read', () =>
      withClient(async (client) => {
        await client.call(1);
        await client.call(2);
        client.stopReading();
        const chunk = 'w'.repeat(64 * 1024);
        for (let i = 0; i < 300; i++) {
          const thrown = sendThrows(
            client.port,
            { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: chunk } },
            i % 2 === 0 ? { kind: 'related', request: client.routerId(1) } : { kind: 'unrelated' },
          );
          expect(thrown).toBeUndefined();
        }
        expect(everything(client, 1)).toEqual([]);
        expect(everything(client, 2, { big: chunk.repeat(16) })).toEqual([]);
      }));

    it('send and dropped never throw after the session ended', () =>
      withClient(async (client) => {
        await client.call(1);
        await client.call(2);
        await client.end();
        expect(everything(client, 1)).toEqual([]);
        expect(() => client.port.dropped?.(2)).not.toThrow();
        await pause(50);
        expect(everything(client, 2)).toEqual([]);
      }));

    it('dropped never throws, whatever it is told', () =>
      withClient(async (client) => {
        const dropped = client.port.dropped?.bind(client.port);
        if (dropped === undefined) return;
        expect(() => dropped(42)).not.toThrow();
        expect(() => dropped('unknown')).not.toThrow();
        await client.call(1);
        respond(client, 1);
        expect(() => dropped(client.routerId(1))).not.toThrow();
        await client.call(2);
        expect(() => dropped(client.routerId(2))).not.toThrow();
        expect(() => dropped(client.routerId(2))).not.toThrow();
        // Nothing more for 2, and the response to it (late, as after a cancellation) throws nothing.
        expect(everything(client, 2)).toEqual([]);
      }));

    it('dropped settles a batch waiting for the dropped request: answered without it', () =>
      withClient(async (client) => {
        const batch = client.batch?.bind(client);
        if (client.port.dropped === undefined || batch === undefined) return;
        await batch([1, 2, 3]);
        respond(client, 1);
        client.port.dropped(client.routerId(2));
        respond(client, 3);
        const answer = await until(
          () => client.received().find((m): m is unknown[] => Array.isArray(m)),
          'the batch answer',
        );
        expect(answer.map((m) => (isObject(m) ? m.id : undefined)).sort()).toEqual([1, 3]);
        // A batch of only dropped requests is answered with nothing, and ends.
        await batch([4, 5]);
        client.port.dropped(client.routerId(4));
        client.port.dropped(client.routerId(5));
        if (client.settled)
          await until(() => client.settled?.(4) && client.settled(5), 'the empty batch ending');
      }));

    it('dropped settles a request waiting alone', () =>
      withClient(async (client) => {
        const settled = client.settled?.bind(client);
        if (client.port.dropped === undefined || settled === undefined) return;
        await client.call(1);
        expect(settled(1)).toBe(false);
        client.port.dropped(client.routerId(1));
        await until(() => settled(1), 'the request settled');
      }));
  });
}
