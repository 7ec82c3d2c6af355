/**
 * The `UpstreamTransport` contract run against `TapeUpstream`, whose peer is a replay of a tape in
 * the same process: a tape holding `initialize` and one `contract/echo` call answered
 * `{echo: "contract/echo"}`, replayed in mode `loose` (so every `contract/echo`, whatever its
 * params, gets that answer). The peer's time is a scheduler the test controls: it hangs by never
 * firing again, and misbehaves by firing every timer twice (each answer sent twice, the second a
 * response to an id the gateway no longer waits for). A replay has no life of its own apart from
 * its owner, so it dies by ending (`close`), the one way it can.
 */
import { upstreamTransportContract } from '../../core/test-support/upstream-transport.contract.js';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { TAPE_VERSION, type Tape } from '../tape-format.js';
import { buildScript } from './replay-script.js';
import { realScheduler, type Scheduler } from './replay-session.js';
import { TapeUpstream } from './tape-upstream.js';

const line = (seq: number, t: number, dir: 'c2s' | 's2c', message: JsonRpcMessage, re?: number) => ({
  kind: 'message' as const,
  seq,
  t,
  dir,
  message,
  ...(re === undefined ? {} : { re }),
});

const INITIALIZE_RESULT = {
  protocolVersion: '2025-11-25',
  capabilities: {},
  serverInfo: { name: 'peer', version: '1' },
};

const TAPE: Tape = {
  header: {
    tape: TAPE_VERSION,
    kind: 'header',
    recordedAt: '2026-11-28T10:00:00.000Z',
    source: { via: 'record', gateway: 'switchboard test' },
    protocolVersion: '2025-11-25',
    server: { initialize: INITIALIZE_RESULT },
    redactions: [],
    incomplete: [],
  },
  messages: [
    line(1, 0, 'c2s', { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} }),
    line(2, 1, 's2c', { jsonrpc: '2.0', id: 0, result: INITIALIZE_RESULT }, 1),
    line(3, 2, 'c2s', { jsonrpc: '2.0', id: 1, method: 'contract/echo', params: {} }),
    line(4, 3, 's2c', { jsonrpc: '2.0', id: 1, result: { echo: 'contract/echo' } }, 3),
  ],
};

/** Real timers, until the test says the peer hangs or misbehaves. */
class PeerClock implements Scheduler {
  mode: 'normal' | 'hung' | 'double' = 'normal';
  setTimeout(fn: () => void, ms: number): unknown {
    if (this.mode === 'hung') return undefined;
    if (this.mode === 'double') realScheduler.setTimeout(fn, ms);
    return realScheduler.setTimeout(fn, ms);
  }
  clearTimeout(handle: unknown): void {
    if (handle !== undefined) realScheduler.clearTimeout(handle);
  }
}

upstreamTransportContract('TapeUpstream', async () => {
  const clock = new PeerClock();
  const received: string[] = [];
  const transport = new TapeUpstream({
    script: buildScript(TAPE),
    mode: 'loose',
    speed: 0,
    scheduler: clock,
  });
  const send = transport.send.bind(transport);
  // The peer's record of what reached it: every message the transport hands to the replay.
  transport.send = (json, message) => {
    if ('method' in message) received.push(message.method);
    return send(json, message);
  };
  return {
    transport,
    received: () => [...received],
    kill: () => transport.close(),
    hang: () => {
      clock.mode = 'hung';
    },
    misbehave: () => {
      clock.mode = 'double';
    },
    dispose: async () => {},
  };
});
