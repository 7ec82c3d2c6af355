// A minimal MCP client over a child's stdio: newline-delimited JSON-RPC, one request in flight at a
// time. It measures from the write of a request to the parse of its response line with
// process.hrtime, so the client's own cost is identical for a direct server and for the gateway.
import { startProcess } from './procs.mjs';

const PROTOCOL_VERSION = '2025-11-25';

export class StdioMcpClient {
  #proc;
  #stdin;
  #pending = '';
  #waiting = new Map();
  #nextId = 1;

  static async start(command, args, options = {}) {
    const proc = await startProcess(command, args, { ...options, stdin: 'pipe', rawStdout: true });
    return new StdioMcpClient(proc);
  }

  constructor(proc) {
    this.#proc = proc;
    this.#stdin = proc.child.stdin;
    this.#stdin.on('error', () => {});
    proc.child.stdout.setEncoding('utf8').on('data', (chunk) => this.#onData(chunk));
    proc.exited.then(({ code, signal }) => {
      for (const { reject } of this.#waiting.values()) {
        reject(new Error(`the server exited (${signal ?? code}) with a request in flight\n${proc.output()}`));
      }
      this.#waiting.clear();
    });
  }

  get pid() {
    return this.#proc.pid;
  }

  get process() {
    return this.#proc;
  }

  #onData(chunk) {
    this.#pending += chunk;
    let nl = this.#pending.indexOf('\n');
    while (nl !== -1) {
      const line = this.#pending.slice(0, nl);
      this.#pending = this.#pending.slice(nl + 1);
      nl = this.#pending.indexOf('\n');
      if (line.trim().length === 0) continue;
      let message;
      try {
        message = JSON.parse(line);
      } catch {
        continue;
      }
      if (message.id === undefined || message.method !== undefined) continue; // notifications, server requests
      const waiter = this.#waiting.get(message.id);
      if (!waiter) continue;
      this.#waiting.delete(message.id);
      waiter.resolve(message);
    }
  }

  /** Sends a request and resolves with its response message. */
  request(method, params) {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  }

  notify(method, params) {
    this.#stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\n`);
  }

  async initialize() {
    const response = await this.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: 'switchboard-bench', version: '1.0.0' },
    });
    if (response.error) throw new Error(`initialize failed: ${JSON.stringify(response.error)}`);
    this.notify('notifications/initialized');
    return response.result;
  }

  /**
   * Runs `count` sequential `tools/call` requests and appends each round trip, in microseconds, to
   * `into`. Throws on the first error response.
   */
  async callLoop(count, toolName, args, into) {
    for (let i = 0; i < count; i++) {
      const t0 = process.hrtime.bigint();
      const response = await this.request('tools/call', { name: toolName, arguments: args });
      const t1 = process.hrtime.bigint();
      if (response.error || response.result?.isError) {
        throw new Error(
          `tools/call ${toolName} failed: ${JSON.stringify(response.error ?? response.result)}`,
        );
      }
      if (into) into.push(Number(t1 - t0) / 1000);
    }
  }

  /** Closes stdin (a stdio server's cue to exit) and waits; kills the group after `graceMs`. */
  async close(graceMs = 5000) {
    this.#stdin.end();
    const timer = setTimeout(() => void this.#proc.stop(1000), graceMs);
    await this.#proc.exited;
    clearTimeout(timer);
    await this.#proc.stop(500);
  }
}
