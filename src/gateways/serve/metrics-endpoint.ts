/**
 * `GET /metrics` of `switchboard serve` (`observe.metrics`): the Prometheus scrape, either a route
 * of the gateway's own HTTP server (behind its Host and Origin guards) or a listener of its own
 * (`observe.metrics.listen`) with the same guards for its own address.
 *
 * Who may read it: with authentication, a principal holding the configured role (default
 * `metrics`): no credentials or bad ones answer 401 (with the authenticator's `WWW-Authenticate`),
 * a principal without the role 403. Without authentication every caller may: the configuration then
 * keeps both the gateway and a separate listener on loopback, so "every caller" is this machine.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsListen } from '../../config/sections/metrics.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import type { GatewayMetrics } from '../../observe/prometheus/gateway-metrics.js';
import { HostOriginGuard } from '../../transports/http/server/http-guards.js';
import type { Authenticate, ExtraRoute } from '../../transports/http/server/mcp-http-server.js';

export const METRICS_PATH = '/metrics';

export interface MetricsEndpointOptions {
  readonly metrics: GatewayMetrics;
  /** Undefined without authentication (loopback only). */
  readonly authenticate?: Authenticate;
  /** The role a principal needs, with authentication. */
  readonly role: string;
  readonly logger: Logger;
  /** Where refusals and failed scrapes are counted. */
  readonly counters: Metrics;
}

function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(`${text}\n`);
}

/** Answers one request for `/metrics`: the access check, then the scrape. */
export async function serveMetrics(
  req: IncomingMessage,
  res: ServerResponse,
  o: MetricsEndpointOptions,
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendText(res, 405, 'Method Not Allowed: GET /metrics', { allow: 'GET, HEAD' });
    return;
  }
  if (o.authenticate) {
    const auth = await o.authenticate(req);
    if (!auth.ok) {
      o.counters.inc('metrics_scrapes_refused_total', { status: String(auth.status) });
      sendText(res, auth.status, auth.message, auth.headers ?? {});
      return;
    }
    if (!(auth.roles ?? []).includes(o.role)) {
      o.counters.inc('metrics_scrapes_refused_total', { status: '403' });
      sendText(
        res,
        403,
        `Forbidden: principal ${auth.principal} may not read /metrics (it needs the role ${o.role})`,
      );
      return;
    }
  }
  let scrape: { readonly contentType: string; readonly body: string };
  try {
    scrape = await o.metrics.render(req.headers.accept);
  } catch (error) {
    o.counters.inc('metrics_scrape_failures_total');
    o.logger.error({ err: String(error) }, 'a metrics scrape failed');
    sendText(res, 500, 'Internal Server Error: the metrics could not be collected');
    return;
  }
  res.writeHead(200, {
    'content-type': scrape.contentType,
    'content-length': String(Buffer.byteLength(scrape.body)),
    'cache-control': 'no-store',
  });
  res.end(req.method === 'HEAD' ? undefined : scrape.body);
}

/** `/metrics` as a route of the gateway's HTTP server. */
export function metricsRoute(o: MetricsEndpointOptions): ExtraRoute {
  return async (req, res, path) => {
    if (path !== METRICS_PATH) return false;
    await serveMetrics(req, res, o);
    return true;
  };
}

/**
 * `/metrics` on a listener of its own (`observe.metrics.listen`), behind Host and Origin guards for
 * that address (a loopback listener answers only requests naming a loopback host, against DNS
 * rebinding, as the gateway's own server does). Everything else is 404.
 */
export class MetricsListener {
  readonly #server: Server;
  readonly #listen: MetricsListen;

  constructor(listen: MetricsListen, o: MetricsEndpointOptions) {
    this.#listen = listen;
    const guard = new HostOriginGuard({ bindHost: listen.host, allowedHosts: [], allowedOrigins: [] });
    this.#server = createServer((req, res) => {
      const refusal = guard.check(req);
      if (refusal) {
        o.counters.inc('http_rejected_total', { reason: refusal.reason });
        sendText(res, 403, `Forbidden: ${refusal.message}`);
        return;
      }
      const url = req.url ?? '/';
      const path = url.split('?', 1)[0];
      if (path !== METRICS_PATH) {
        sendText(res, 404, `Not Found: this listener serves ${METRICS_PATH} only`);
        return;
      }
      serveMetrics(req, res, o).catch((error: unknown) => {
        o.logger.error({ err: String(error) }, 'the metrics listener failed');
        if (!res.headersSent) sendText(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    });
    this.#server.keepAliveTimeout = 10_000;
  }

  /** Listens on the configured address; resolves with the bound one. */
  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#listen.port, this.#listen.host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    return this.#server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    if (!this.#server.listening) return;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }
}
