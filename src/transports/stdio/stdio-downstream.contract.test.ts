/**
 * The `DownstreamPort` contract run against `StdioDownstream`, whose client is a real child
 * process on the other end of the pipes (its stdout is the gateway's input, its stdin the
 * gateway's output), driven over an IPC channel: it writes the lines it is told to, reports every
 * line it reads, stops reading its stdin when told (the pipe fills), and dies by SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { downstreamPortContract } from '../../core/test-support/downstream-port.contract.js';
import { silentLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { idKey, type JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { StdioDownstream } from './stdio-downstream.js';

const CLIENT = `
process.on('message', (m) => {
  if (m.write !== undefined) process.stdout.write(m.write + '\\n');
  if (m.stop) process.stdin.pause();
  if (m.end) process.stdout.end();
});
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let i;
  while ((i = pending.indexOf('\\n')) >= 0) {
    process.send({ line: pending.slice(0, i) });
    pending = pending.slice(i + 1);
  }
});
`;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

downstreamPortContract('StdioDownstream', async () => {
  const child = spawn(process.execPath, ['-e', CLIENT], { stdio: ['pipe', 'pipe', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const received: unknown[] = [];
  child.on('message', (m: { line?: string }) => {
    if (m.line !== undefined) received.push(JSON.parse(m.line));
  });
  const handed = new Set<string>();
  const downstream = new StdioDownstream({
    input: child.stdout as Readable,
    output: child.stdin as Writable,
    maxMessageBytes: 64 * 1024,
    logger: silentLogger,
    metrics: new Metrics(),
    revision: () => '2025-03-26',
    onmessage: (message: JsonRpcMessage) => {
      if ('id' in message && 'method' in message) handed.add(idKey(message.id));
    },
    onend: () => {},
  });
  downstream.start();
  const tell = (m: Record<string, unknown>) => {
    if (child.connected) child.send(m);
  };
  const request = (id: number) => ({ jsonrpc: '2.0', id, method: 'contract/call', params: {} });
  const waitHanded = async (ids: readonly number[]) => {
    const deadline = performance.now() + 5000;
    while (!ids.every((id) => handed.has(idKey(id)))) {
      if (performance.now() > deadline) throw new Error(`requests ${ids.join(', ')} were not handed on`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return {
    port: downstream,
    call: async (id) => {
      tell({ write: JSON.stringify(request(id)) });
      await waitHanded([id]);
    },
    batch: async (ids) => {
      tell({ write: JSON.stringify(ids.map(request)) });
      await waitHanded(ids);
    },
    routerId: (id) => id,
    received: () => received,
    stopReading: () => tell({ stop: true }),
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    end: async () => tell({ end: true }),
    dispose: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
  };
});
