/**
 * A real session with a stdio MCP server, written as a tape with the project's own tape builder:
 * the client side of `tape check`'s integration tests. It speaks to the server directly (no
 * gateway in between), sending each request once the previous one is answered and answering
 * `sampling/createMessage` with a fixed reply, so the tape is what a live client and server said.
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { JsonObject, JsonRpcMessage } from '../../src/protocol/jsonrpc/types.js';
import type { Tape } from '../../src/tape/tape-format.js';
import { TapeBuilder } from '../../src/tape/tape-writer.js';

/** One step of the client's script: a request (answered before the next step) or a notification. */
export type ScriptStep =
  | { readonly request: string; readonly params?: JsonObject }
  | { readonly notify: string; readonly params?: JsonObject };

export const CLIENT_INITIALIZE: JsonObject = {
  protocolVersion: '2025-06-18',
  capabilities: { sampling: {} },
  clientInfo: { name: 'tape-check-test', version: '1.0.0' },
};

/** The client's answer to every `sampling/createMessage`. */
export const SAMPLING_ANSWER: JsonObject = {
  model: 'test-model',
  role: 'assistant',
  content: { type: 'text', text: 'a sampled reply' },
  stopReason: 'endTurn',
};

/** Runs `command args` as a stdio server, plays `script` after the handshake, returns the tape. */
export async function recordSession(
  command: string,
  args: readonly string[],
  script: readonly ScriptStep[],
): Promise<Tape> {
  const child = spawn(command, [...args], { stdio: ['pipe', 'pipe', 'ignore'] });
  const builder = new TapeBuilder();
  let buffer = '';
  let waiting: { id: number; resolve: (m: JsonObject) => void } | undefined;
  let initialize: JsonObject | undefined;
  const send = (message: JsonRpcMessage): void => {
    builder.add({ dir: 'c2s', message, at: performance.now() });
    child.stdin.write(`${JSON.stringify(message)}\n`);
  };
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim() === '') continue;
      const message = JSON.parse(line) as JsonRpcMessage;
      builder.add({ dir: 's2c', message, at: performance.now() });
      if ('method' in message && 'id' in message) {
        if (message.method === 'sampling/createMessage')
          send({ jsonrpc: '2.0', id: message.id, result: SAMPLING_ANSWER });
        else send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'not supported' } });
      } else if (!('method' in message) && waiting !== undefined && message.id === waiting.id) {
        const w = waiting;
        waiting = undefined;
        w.resolve(message as unknown as JsonObject);
      }
    }
  });
  let next = 1;
  const ask = (method: string, params?: JsonObject): Promise<JsonObject> =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => reject(new Error(`no answer to ${method}`)), 20_000);
      waiting = {
        id,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    });
  try {
    const init = await ask('initialize', CLIENT_INITIALIZE);
    initialize = init.result as JsonObject;
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    for (const step of script) {
      if ('request' in step) await ask(step.request, step.params);
      else
        send({
          jsonrpc: '2.0',
          method: step.notify,
          ...(step.params === undefined ? {} : { params: step.params }),
        });
    }
  } finally {
    child.stdin.end();
    child.kill();
  }
  return builder.tape({
    tape: 1,
    kind: 'header',
    recordedAt: new Date().toISOString(),
    source: { via: 'record', command: [command, ...args], gateway: 'switchboard test' },
    protocolVersion: String(initialize.protocolVersion),
    server: { initialize },
    client: { initialize: CLIENT_INITIALIZE },
    redactions: [],
    incomplete: [],
  });
}
