/**
 * A tiny HTTP server for the upstream transports' tests: every request is recorded (method, path,
 * headers, body) and answered by the handler the test installs, so a test can script exactly what
 * a misbehaving or spec-following MCP server would do, byte by byte.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the server received it. */
export interface RecordedRequest {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** `performance.now()` when the request arrived. */
  readonly at: number;
}

/** Answers one recorded request; may be async. */
export type ScriptedHandler = (request: RecordedRequest, response: ServerResponse) => unknown;

/** The body of one SSE event. */
export function sseEvent(fields: {
  id?: string;
  event?: string;
  retry?: number;
  data?: string | object;
}): string {
  let text = '';
  if (fields.id !== undefined) text += `id: ${fields.id}\n`;
  if (fields.event !== undefined) text += `event: ${fields.event}\n`;
  if (fields.retry !== undefined) text += `retry: ${fields.retry}\n`;
  if (fields.data !== undefined) {
    const data = typeof fields.data === 'string' ? fields.data : JSON.stringify(fields.data);
    for (const line of data.split('\n')) text += `data: ${line}\n`;
  }
  return `${text}\n`;
}

/** Starts an SSE answer. */
export function startSse(response: ServerResponse, headers: Record<string, string> = {}): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
  response.flushHeaders();
}

/** Answers with JSON. */
export function json(
  response: ServerResponse,
  value: unknown,
  status = 200,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(value));
}

/** The server: `start()` listens on a free loopback port; `handler` may be swapped mid-test. */
export class ScriptedServer {
  readonly requests: RecordedRequest[] = [];
  handler: ScriptedHandler;
  readonly #server: Server;
  readonly #open = new Set<ServerResponse>();

  private constructor(server: Server, handler: ScriptedHandler) {
    this.#server = server;
    this.handler = handler;
  }

  static async start(
    handler: ScriptedHandler = (_req, res) => res.writeHead(404).end(),
  ): Promise<ScriptedServer> {
    let self: ScriptedServer | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: performance.now(),
        };
        const s = self as ScriptedServer;
        s.requests.push(recorded);
        s.#open.add(res);
        res.on('close', () => s.#open.delete(res));
        Promise.resolve(s.handler(recorded, res)).catch((error: unknown) => {
          if (!res.headersSent) res.writeHead(500);
          res.end(String(error));
        });
      });
    });
    self = new ScriptedServer(server, handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** `http://127.0.0.1:<port><path>`. */
  url(path = '/mcp'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Requests so far with this method (and, optionally, a JSON-RPC method in the body). */
  requestsOf(method: string, rpcMethod?: string): RecordedRequest[] {
    return this.requests.filter(
      (r) => r.method === method && (rpcMethod === undefined || r.body.includes(`"method":"${rpcMethod}"`)),
    );
  }

  async close(): Promise<void> {
    for (const res of this.#open) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Polls until `check` returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => T | undefined | false,
  timeoutMs = 3000,
  what = 'condition',
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
