/**
 * A hostile client cannot grow the gateway's counters: 2,000 requests naming distinct invented
 * methods, over HTTP in a 2025-11-25 session and to the stateless 2026-07-28 endpoint, each get a
 * clear JSON-RPC error, and leave `Metrics` (the counters kept in memory, not only what `/metrics`
 * exports) with a bounded number of label sets: the call sites count a method by the bounded
 * vocabulary (`observe/label-vocabulary.ts`), so nothing is even folded by the cap of
 * `observe/metrics.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeGateway } from '../src/gateways/serve/serve-gateway.js';
import { silentLogger } from '../src/observe/logger.js';
import { LABEL_SETS_FOLDED_METRIC, Metrics } from '../src/observe/metrics.js';
import { ECHO_SERVER } from './support/cli.js';
import { parsedServeConfig, stdioUpstreamConfig } from './support/serve.js';
import { initialize, messagesOf, post, type RawResponse } from './support/sse-client.js';

const MODERN = '2026-07-28';
/** Four times the cap of `observe/metrics.ts`: enough to show growth, cheap enough for CI. */
const REQUESTS = 2_000;
/** Requests in flight at once (the answers are all checked; this only paces the client). */
const PARALLEL = 16;
/** Label sets the traffic of one era may add: a handful per counter it touches, not per method. */
const BOUND = 50;

let gateway: ServeGateway;
let url: string;
const metrics = new Metrics();

beforeAll(async () => {
  const config = parsedServeConfig(
    stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }, 'server: { port: 0 }\n'),
  );
  gateway = new ServeGateway({ config, version: 'test', logger: silentLogger, metrics });
  const address = await gateway.start();
  url = `http://127.0.0.1:${address.port}/mcp`;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
});

/** Sends `count` requests made by `make(i)`, `PARALLEL` at a time, checking each answer. */
async function flood(
  count: number,
  make: (i: number) => Promise<RawResponse>,
  check: (r: RawResponse, i: number) => void,
) {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      check(await make(i), i);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

/** A method no revision has, different for each request. */
const invented = (i: number) => `x-${i}-${Math.random().toString(36).slice(2, 10)}/do`;

/** The label values of every counter, to find a method kept as itself. */
const labelValues = () => metrics.snapshot().flatMap((s) => Object.values(s.labels));

describe('counters under a flood of invented methods', () => {
  it('in a 2025-11-25 session: each request is refused with method not found; the counters stay bounded', async () => {
    const session = await initialize(url);
    const before = metrics.snapshot().length;
    await flood(
      REQUESTS,
      (i) => post(url, { jsonrpc: '2.0', id: i, method: invented(i) }, session.headers),
      (response, i) => {
        expect(response.status, response.text).toBe(200);
        const [answer] = messagesOf(response);
        expect(answer, response.text).toMatchObject({
          jsonrpc: '2.0',
          id: i,
          error: { code: -32601, message: expect.stringMatching(/\S/) },
        });
      },
    );
    expect(metrics.snapshot().length - before).toBeLessThanOrEqual(BOUND);
    expect(labelValues().filter((v) => v.startsWith('x-'))).toEqual([]);
    expect(metrics.total(LABEL_SETS_FOLDED_METRIC)).toBe(0);
  }, 300_000);

  it('to the 2026-07-28 endpoint: each request is refused with a JSON-RPC error; the counters stay bounded', async () => {
    const before = metrics.snapshot().length;
    await flood(
      REQUESTS,
      (i) => {
        const method = invented(i);
        return post(
          url,
          {
            jsonrpc: '2.0',
            id: i,
            method,
            params: {
              _meta: {
                'io.modelcontextprotocol/protocolVersion': MODERN,
                'io.modelcontextprotocol/clientCapabilities': {},
              },
            },
          },
          { 'mcp-protocol-version': MODERN, 'mcp-method': method },
        );
      },
      (response, i) => {
        expect(response.status, response.text).toBe(404);
        const [answer] = messagesOf(response);
        expect(answer, response.text).toMatchObject({
          jsonrpc: '2.0',
          id: i,
          error: { code: -32601, message: expect.stringMatching(/^Method not found: x-/) },
        });
      },
    );
    expect(metrics.snapshot().length - before).toBeLessThanOrEqual(BOUND);
    // Refused before it is counted by method (only served methods are): counted by its code.
    expect(metrics.get('modern_rejected_total', { code: '-32601' })).toBeGreaterThanOrEqual(REQUESTS);
    expect(labelValues().filter((v) => v.startsWith('x-'))).toEqual([]);
    expect(metrics.total(LABEL_SETS_FOLDED_METRIC)).toBe(0);
  }, 300_000);
});
