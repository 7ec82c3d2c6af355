/**
 * The client side of the `DownstreamPort` contract for the HTTP sessions: a loopback server whose
 * handler gives each POST (and GET) to the session the way the endpoints do, and a real HTTP client
 * that reads every answer (JSON bodies and SSE events), can stop reading (its sockets fill up) and
 * can go away (its connections destroyed).
 */
import {
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { SseParser } from '../../sse/sse-parser.js';

/** What the server side does with one request of the client, its body already read. */
export type SessionHandler = (method: string, body: string, res: ServerResponse) => void;

export class ContractHttpClient {
  readonly received: unknown[] = [];
  readonly #server: Server;
  readonly #requests = new Set<ClientRequest>();
  readonly #responses = new Set<IncomingMessage>();
  /** Request ids whose POST answer has ended (or broken off). */
  readonly #settled = new Set<number>();
  #reading = true;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(handler: SessionHandler): Promise<ContractHttpClient> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => handler(req.method ?? '', Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new ContractHttpClient(server);
  }

  /**
   * Sends `body` (POST) or opens the GET stream, and reads the answer as it comes. Returns at once:
   * the server side knows when the request has reached the session (a held POST sends no headers
   * until its answer is decided).
   */
  send(method: 'POST' | 'GET', body: string | undefined, ids: readonly number[]): void {
    const port = (this.#server.address() as AddressInfo).port;
    {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/mcp',
          method,
          agent: false,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        },
        (res) => {
          this.#responses.add(res);
          if (!this.#reading) res.pause();
          const done = () => {
            for (const id of ids) this.#settled.add(id);
          };
          res.once('end', done);
          res.once('close', done);
          res.once('error', done);
          if (String(res.headers['content-type']).startsWith('text/event-stream')) {
            const parser = new SseParser({
              onEvent: (event) => {
                // Only messages: the 2024-11-05 stream's first event is `endpoint`, a URL.
                if (event.type === 'message' && event.data.trim() !== '')
                  this.received.push(JSON.parse(event.data));
              },
            });
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => parser.push(chunk));
          } else {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              text += chunk;
            });
            res.on('end', () => {
              if (text !== '') this.received.push(JSON.parse(text));
            });
          }
        },
      );
      this.#requests.add(req);
      // A connection the client cut, or the server ended: the wait is over either way.
      req.on('error', () => {
        for (const id of ids) this.#settled.add(id);
      });
      req.end(body);
    }
  }

  settled(id: number): boolean {
    return this.#settled.has(id);
  }

  /** Stops reading every answer, those to come included. */
  stopReading(): void {
    this.#reading = false;
    for (const res of this.#responses) res.pause();
  }

  /** Cuts every connection of the client. */
  kill(): void {
    for (const req of this.#requests) req.destroy();
    for (const res of this.#responses) res.destroy();
  }

  async close(): Promise<void> {
    this.kill();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
