/**
 * The peers of the `UpstreamTransport` contract for HTTP upstreams: a `ScriptedServer` that speaks
 * one era well enough for the suite (`core/test-support/upstream-transport.contract.ts`) and can
 * die (the server closes, every connection cut) or hang (nothing answered any more, streams silent,
 * and no connection read: a large body stays stuck in the client's socket) or misbehave (answers
 * that break the protocol every way a broken server does, see `answerRudely`). Unlike
 * `ScriptedServer`, it reads bodies as they come, so that it can stop reading them.
 *
 * - `streamable-http` (2025-03-26..2025-11-25): `initialize` gets a session id, requests JSON,
 *   notifications 202, GET 405, DELETE 200; anything after `initialize` without that session id
 *   gets 400, as a stateful server answers it.
 * - `modern-http` (2026-07-28 only): `server/discover` and every request get a complete JSON
 *   result; `initialize` is refused (400, -32022), as a server of that era alone does.
 * - `dual-http` (both eras): a request with the 2026-07-28 envelope gets a complete result, anything
 *   else is served as `streamable-http` (`initialize` opens a session).
 * - `sse` (2024-11-05): a GET stream that names its endpoint and greets at once; POSTs get 202 and
 *   their answers go on the stream.
 * - Every peer takes `notifications/initialized` in (records it, answers 202) 30 ms late, so a
 *   request that overtakes it on another connection is seen first.
 * - `fallback`: a 2024-11-05 server behind a URL whose `initialize` POST gets 405, which sends a
 *   client that starts with Streamable HTTP to HTTP+SSE.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { json, sseEvent, startSse } from './scripted-server.js';

export type ContractEra = 'streamable-http' | 'modern-http' | 'dual-http' | 'sse' | 'fallback';

/** How long every peer takes over `notifications/initialized` before it is received and accepted. */
const LATE_INITIALIZED_MS = 30;

/** The method of the notification a 2024-11-05 peer sends right after its endpoint event. */
export const SSE_GREETING = 'contract/hello';

interface Body {
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: { readonly _meta?: Record<string, unknown> };
}

/** Whether a request carries the 2026-07-28 envelope (its protocol version in `_meta`). */
function modernRequest(body: Body): boolean {
  return body.params?._meta?.['io.modelcontextprotocol/protocolVersion'] !== undefined;
}

/** A scripted server of one era, with the controls the contract needs. */
export interface ContractServer {
  readonly url: string;
  /** JSON-RPC methods received, in order (POST bodies). */
  received(): string[];
  kill(): Promise<void>;
  hang(): void;
  misbehave(): void;
}

export async function startContractServer(era: ContractEra): Promise<ContractServer> {
  let hung = false;
  let rude = false;
  /** Which kind of nonsense the next request gets. */
  let nonsense = 0;
  let dead = false;
  /** The open 2024-11-05 stream. */
  let stream: ServerResponse | undefined;
  const received: string[] = [];

  const answerOf = (body: Body): Record<string, unknown> => {
    if (body.method === 'initialize')
      return { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'peer', version: '1' } };
    if (body.method === 'server/discover')
      return {
        resultType: 'complete',
        supportedVersions: ['2026-07-28'],
        capabilities: {},
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'peer', version: '1' } },
      };
    return era === 'modern-http' || (era === 'dual-http' && modernRequest(body))
      ? { resultType: 'complete', echo: body.method }
      : { echo: body.method };
  };

  const handler = (
    request: { method: string; url: string; body: string; session: string | undefined },
    response: ServerResponse,
  ): void => {
    let body: Body = {};
    if (request.method === 'POST') {
      try {
        body = JSON.parse(request.body) as Body;
      } catch {
        // Recorded as nothing.
      }
      // Taken in late (see below): recorded when it is.
      if (body.method !== undefined && body.method !== 'notifications/initialized')
        received.push(body.method);
    }
    // A hung peer keeps every connection open and says nothing.
    if (hung) return;
    if (body.method === 'notifications/initialized') {
      // Every peer takes a while over the end of the handshake, as a server that does work there
      // does: a request POSTed meanwhile on another connection would be received before it.
      setTimeout(() => {
        received.push('notifications/initialized');
        const sse = era === 'sse' || era === 'fallback';
        const sessions = era === 'streamable-http' || era === 'dual-http';
        if (sse && request.url !== '/messages') response.writeHead(405).end();
        else if (sessions && request.session !== 'S1') response.writeHead(400).end();
        else response.writeHead(202).end();
      }, LATE_INITIALIZED_MS);
      return;
    }
    const sse = era === 'sse' || era === 'fallback';
    if (rude && request.method === 'POST' && body.id !== undefined) {
      answerRudely(response, body, sse);
      return;
    }
    if (request.method === 'GET') {
      if (!sse) {
        response.writeHead(405).end();
        return;
      }
      startSse(response);
      stream = response;
      response.write(
        sseEvent({ event: 'endpoint', data: '/messages' }) +
          sseEvent({ data: { jsonrpc: '2.0', method: SSE_GREETING } }),
      );
      return;
    }
    if (request.method === 'DELETE') {
      response.writeHead(200).end();
      return;
    }
    if (sse) {
      if (request.url !== '/messages') {
        // The fallback's Streamable HTTP attempt.
        response.writeHead(405).end();
        return;
      }
      response.writeHead(202).end();
      if (body.id !== undefined && body.method !== undefined)
        stream?.write(sseEvent({ data: { jsonrpc: '2.0', id: body.id, result: answerOf(body) } }));
      return;
    }
    if (body.id === undefined || body.method === undefined) {
      response.writeHead(202).end();
      return;
    }
    if (era === 'modern-http' && body.method === 'initialize') {
      const error = {
        code: -32022,
        message: 'Unsupported protocol version',
        data: { supported: ['2026-07-28'] },
      };
      json(response, { jsonrpc: '2.0', id: body.id, error }, 400);
      return;
    }
    const sessions = era === 'streamable-http' || era === 'dual-http';
    if (sessions && body.method !== 'initialize' && !modernRequest(body) && request.session !== 'S1') {
      json(
        response,
        { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Server not initialized' } },
        400,
      );
      return;
    }
    const headers: Record<string, string> =
      sessions && body.method === 'initialize' ? { 'mcp-session-id': 'S1' } : {};
    json(response, { jsonrpc: '2.0', id: body.id, result: answerOf(body) }, 200, headers);
  };

  /**
   * What a misbehaving peer answers a request with, in turn: a 500 with HTML, a body that is not
   * JSON, a response to an id never asked plus a message far over the limit (on the SSE stream for
   * 2024-11-05), an SSE answer that ends before its response, and a 200 with no body at all.
   */
  const answerRudely = (response: ServerResponse, body: Body, sse: boolean): void => {
    const kind = nonsense++ % 5;
    const noise = [
      'not json at all',
      JSON.stringify({ jsonrpc: '2.0', id: 'never-asked', result: {} }),
      JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { blob: 'x'.repeat(256 * 1024) } }),
    ];
    if (sse) {
      response.writeHead(kind === 0 ? 500 : 202, { 'content-type': 'text/html' }).end('<html>no</html>');
      for (const data of noise) stream?.write(sseEvent({ data }));
      return;
    }
    switch (kind) {
      case 0:
        response.writeHead(500, { 'content-type': 'text/html' }).end('<html>no</html>');
        return;
      case 1:
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc": "2.0", "id":');
        return;
      case 2:
        startSse(response);
        response.end(noise.map((data) => sseEvent({ data })).join(''));
        return;
      case 3:
        startSse(response);
        response.end(sseEvent({ data: noise[1] }));
        return;
      default:
        response.writeHead(200).end();
    }
  };

  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () =>
      handler(
        {
          method: req.method ?? '',
          url: req.url ?? '',
          body: Buffer.concat(chunks).toString('utf8'),
          session:
            typeof req.headers['mcp-session-id'] === 'string' ? req.headers['mcp-session-id'] : undefined,
        },
        res,
      ),
    );
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    if (hung) socket.pause();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received: () => received,
    kill: async () => {
      if (dead) return;
      dead = true;
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    misbehave: () => {
      rude = true;
    },
    hang: () => {
      hung = true;
      for (const socket of sockets) socket.pause();
    },
  };
}
