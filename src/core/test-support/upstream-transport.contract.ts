/**
 * The contract every `UpstreamTransport` keeps (`core/ports.ts`), written once and run against each
 * implementation with a real peer of its own kind (a child process, a local HTTP server), the way
 * the event and trace stores run theirs: `upstreamTransportContract('ChildProcessTransport', open)`.
 *
 * It checks only what the port promises, whatever the wire:
 * - callbacks set before `start()` get every message (a peer that speaks first included);
 * - `send` never throws: before `start()`, after `close()`, after the peer died, for a huge message,
 *   while the peer hangs;
 * - `refuse` never throws and never sends; what it returns is a JSON-RPC error object or nothing;
 * - `onclose` fires exactly once whether the peer dies, `close()` is called, or both (at once), and
 *   nothing (no `onmessage`, no `onerror`) reaches the owner after it;
 * - `close()` is idempotent and resolves, even while the peer hangs, before `start()` and while it
 *   runs (which then settles).
 *
 * What an implementation does beyond the port (its framing, its era, its errors) is tested beside it.
 */
import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import type { UpstreamClose, UpstreamTransport } from '../ports.js';

/**
 * A transport (not started, no callbacks set) connected to a fresh peer of its kind. The peer
 * answers `initialize` as its protocol does and every other request with a result of its own
 * (`{ echo: method }`), accepts notifications and responses, and records what it received.
 */
export interface UpstreamPeer {
  /** The transport under test, connected to the peer; the suite starts and closes it. */
  readonly transport: UpstreamTransport;
  /**
   * The method of a notification the peer sends as soon as a connection exists, before anything
   * is asked of it; absent where the protocol gives a server no way to speak first.
   */
  readonly greeting?: string;
  /** The JSON-RPC methods the peer has received so far, in order. */
  received(): readonly string[];
  /** The peer dies at once: its process is killed, or its server closed with every connection cut. */
  kill(): Promise<void>;
  /** The peer hangs: it answers nothing from now on (and, where it can, reads nothing more). */
  hang(): void;
  /**
   * The peer misbehaves from now on: it answers requests with what breaks its protocol (lines or
   * bodies that are not JSON, responses to ids never asked, messages over the limit, error
   * statuses, answers that end early), as a broken server does.
   */
  misbehave(): void;
  /** Releases what is left of the peer (the suite closes the transport first). */
  dispose(): Promise<void>;
}

/** Makes a fresh `UpstreamPeer` for one test; the suite disposes of it after. */
export type OpenUpstreamPeer = () => Promise<UpstreamPeer>;

/** What the owner saw, in order. */
interface Seen {
  readonly events: (
    | { kind: 'message'; text: string }
    | { kind: 'error'; error: Error }
    | { kind: 'close'; close: UpstreamClose }
  )[];
  /** Parsed messages. */
  messages(): Record<string, unknown>[];
  closes(): UpstreamClose[];
  /** Messages and errors handed over after the first `onclose`. */
  afterClose(): unknown[];
}

function record(transport: UpstreamTransport): Seen {
  const events: Seen['events'] = [];
  transport.onmessage = (text) => events.push({ kind: 'message', text });
  transport.onerror = (error) => events.push({ kind: 'error', error });
  transport.onclose = (close) => events.push({ kind: 'close', close });
  return {
    events,
    messages: () =>
      events.flatMap((e) => (e.kind === 'message' ? [JSON.parse(e.text) as Record<string, unknown>] : [])),
    closes: () => events.flatMap((e) => (e.kind === 'close' ? [e.close] : [])),
    afterClose: () => {
      const first = events.findIndex((e) => e.kind === 'close');
      return first < 0 ? [] : events.slice(first + 1).filter((e) => e.kind !== 'close');
    },
  };
}

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

function wire(message: JsonRpcMessage): [string, JsonRpcMessage] {
  return [JSON.stringify(message), message];
}

function request(
  id: number,
  method = 'contract/echo',
  params: Record<string, unknown> = {},
): [string, JsonRpcMessage] {
  return wire({ jsonrpc: '2.0', id, method, params });
}

const INITIALIZE = request(0, 'initialize', {
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'contract', version: '1' },
});
const INITIALIZED = wire({ jsonrpc: '2.0', method: 'notifications/initialized' });

/** A 2026-07-28 client's retry with a `requestState`: what a legacy peer's transport refuses. */
const RETRY_WITH_STATE: JsonRpcRequest = {
  jsonrpc: '2.0',
  id: 77,
  method: 'tools/call',
  params: {
    name: 'x',
    requestState: 'forged',
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
  },
};

const responseTo = (seen: Seen, id: number) => seen.messages().filter((m) => m.id === id && !('method' in m));

/** Starts the transport and goes through the handshake, as the owner of a link does. */
async function connect(transport: UpstreamTransport, seen: Seen): Promise<void> {
  await transport.start();
  transport.send(...INITIALIZE);
  await until(() => responseTo(seen, 0).length > 0, 'the initialize answer');
  transport.send(...INITIALIZED);
}

/** Runs the shared `UpstreamTransport` suite against transports built by `open`. */
export function upstreamTransportContract(name: string, open: OpenUpstreamPeer): void {
  describe(`${name} (UpstreamTransport contract)`, () => {
    /** Opens a peer, runs `body`, then closes the transport and releases the peer whatever happened. */
    async function withPeer(body: (peer: UpstreamPeer, seen: Seen) => Promise<void>): Promise<void> {
      const peer = await open();
      const seen = record(peer.transport);
      try {
        await body(peer, seen);
      } finally {
        await peer.transport.close();
        await peer.dispose();
      }
    }

    it('hands every message to callbacks set before start(), a greeting included', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        if (peer.greeting !== undefined) {
          const greeting = peer.greeting;
          expect(seen.messages().filter((m) => m.method === greeting)).toHaveLength(1);
        }
        for (let id = 1; id <= 20; id++) peer.transport.send(...request(id));
        await until(() => seen.messages().filter((m) => 'result' in m).length >= 21, 'every answer');
        for (let id = 1; id <= 20; id++) expect(responseTo(seen, id), `answer ${id}`).toHaveLength(1);
        expect(seen.closes()).toEqual([]);
      }));

    it('a handshake sent at once (initialize, initialized, a request) reaches the peer in order, and the request is answered', () =>
      withPeer(async (peer, seen) => {
        await peer.transport.start();
        // A client may pipeline its handshake: nothing may wait for the initialize answer first.
        peer.transport.send(...INITIALIZE);
        peer.transport.send(...INITIALIZED);
        peer.transport.send(...request(1));
        const [answer] = await until(() => {
          const answers = responseTo(seen, 1);
          return answers.length > 0 && answers;
        }, 'the answer to the request sent right after initialize');
        expect(answer).toMatchObject({ result: { echo: 'contract/echo' } });
        // A peer may take the notification in late: whatever it takes in later came after.
        await pause(100);
        const received = peer.received();
        const echo = received.lastIndexOf('contract/echo');
        expect(echo).toBeGreaterThan(received.lastIndexOf('initialize'));
        const initialized = received.lastIndexOf('notifications/initialized');
        if (initialized >= 0) expect(echo).toBeGreaterThan(initialized);
      }));

    it('send never throws before start(), and start() still works after it', () =>
      withPeer(async (peer, seen) => {
        expect(() => peer.transport.send(...request(1))).not.toThrow();
        expect(() => peer.transport.send(...INITIALIZED)).not.toThrow();
        await connect(peer.transport, seen);
      }));

    it('send never throws after close(), and nothing is delivered for it', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        await peer.transport.close();
        expect(() => peer.transport.send(...request(5))).not.toThrow();
        expect(() => peer.transport.send(...INITIALIZED)).not.toThrow();
        await pause(100);
        expect(seen.closes()).toHaveLength(1);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('send never throws after the peer died', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        await peer.kill();
        for (let id = 1; id <= 5; id++) expect(() => peer.transport.send(...request(id))).not.toThrow();
        expect(() => peer.transport.send(...INITIALIZED)).not.toThrow();
        await pause(100);
        expect(() => peer.transport.send(...request(6))).not.toThrow();
      }));

    it('send never throws for a huge message', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        const huge = request(1, 'contract/echo', { blob: 'x'.repeat(8 * 1024 * 1024) });
        expect(() => peer.transport.send(...huge)).not.toThrow();
        // The connection is still usable (or reported closed, never broken silently).
        peer.transport.send(...request(2));
        await until(() => responseTo(seen, 2).length > 0 || seen.closes().length > 0, 'the next answer');
      }));

    it('send never throws while the peer hangs, and close() still resolves', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        peer.hang();
        const chunk = 'y'.repeat(256 * 1024);
        for (let id = 1; id <= 40; id++)
          expect(() => peer.transport.send(...request(id, 'contract/echo', { chunk }))).not.toThrow();
        await peer.transport.close();
        expect(seen.closes()).toHaveLength(1);
        await pause(100);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('a misbehaving peer breaks none of the rules', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        peer.misbehave();
        for (let id = 1; id <= 10; id++) expect(() => peer.transport.send(...request(id))).not.toThrow();
        await pause(500);
        expect(() => peer.transport.send(...request(11))).not.toThrow();
        await peer.transport.close();
        await pause(100);
        expect(seen.closes()).toHaveLength(1);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('refuse never throws and never sends; it answers with a JSON-RPC error or nothing', () =>
      withPeer(async (peer, seen) => {
        const refuse = peer.transport.refuse?.bind(peer.transport);
        if (refuse === undefined) return;
        const plain = request(3)[1] as JsonRpcRequest;
        const judge = () => {
          for (const candidate of [RETRY_WITH_STATE, plain]) {
            const verdict = refuse(candidate);
            if (verdict !== undefined) {
              expect(typeof verdict.code).toBe('number');
              expect(typeof verdict.message).toBe('string');
            }
          }
        };
        expect(judge).not.toThrow();
        await connect(peer.transport, seen);
        // Once this is answered the peer has recorded everything sent before it.
        peer.transport.send(...request(4));
        await until(() => responseTo(seen, 4).length > 0, 'the answer to 4');
        const before = peer.received().length;
        expect(judge).not.toThrow();
        await pause(100);
        expect(peer.received().length).toBe(before);
        await peer.transport.close();
        expect(judge).not.toThrow();
      }));

    it('onclose fires once when close() is called, however often; close() resolves each time', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        await Promise.all([peer.transport.close(), peer.transport.close()]);
        await peer.transport.close();
        expect(seen.closes()).toHaveLength(1);
        expect(typeof seen.closes()[0]?.reason).toBe('string');
      }));

    it('onclose fires once when the peer dies and close() follows', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        peer.transport.send(...request(1));
        await peer.kill();
        await pause(300);
        expect(seen.closes().length).toBeLessThanOrEqual(1);
        await peer.transport.close();
        expect(seen.closes()).toHaveLength(1);
        await pause(100);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('onclose fires once when the peer dies while close() runs', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        for (let id = 1; id <= 5; id++) peer.transport.send(...request(id));
        await Promise.all([peer.kill(), peer.transport.close(), peer.transport.close()]);
        await pause(300);
        expect(seen.closes()).toHaveLength(1);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('nothing reaches the owner after onclose, even with requests in flight to a hung peer', () =>
      withPeer(async (peer, seen) => {
        await connect(peer.transport, seen);
        peer.hang();
        for (let id = 1; id <= 5; id++) peer.transport.send(...request(id));
        await peer.transport.close();
        peer.transport.send(...request(6));
        await pause(300);
        expect(seen.closes()).toHaveLength(1);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('close() while start() runs resolves, onclose fires once, and start() settles', () =>
      withPeer(async (peer, seen) => {
        const starting = peer.transport.start().then(
          () => 'started',
          () => 'refused',
        );
        await peer.transport.close();
        expect(await starting).toMatch(/^(started|refused)$/);
        expect(() => peer.transport.send(...request(1))).not.toThrow();
        await pause(200);
        expect(seen.closes()).toHaveLength(1);
        expect(seen.afterClose()).toEqual([]);
      }));

    it('close() before start() resolves, and onclose fires once', () =>
      withPeer(async (peer, seen) => {
        await peer.transport.close();
        await peer.transport.close();
        expect(() => peer.transport.send(...request(1))).not.toThrow();
        await pause(50);
        expect(seen.closes()).toHaveLength(1);
        expect(seen.afterClose()).toEqual([]);
      }));
  });
}
