/**
 * The `UpstreamTransport` contract run against every HTTP upstream transport, each with a local
 * server of its era (`test-support/contract-peer.ts`): the three era transports on their own, and
 * the era-switching `HttpUpstreamTransport` speaking each era, the probe (a server of 2026-07-28
 * only, and one of both eras, which gets the dual transport) and the 2024-11-05 fallback included.
 */

import { describe, expect, it } from 'vitest';
import type { UpstreamTransport } from '../../../core/ports.js';
import { upstreamTransportContract } from '../../../core/test-support/upstream-transport.contract.js';
import { silentLogger } from '../../../observe/logger.js';
import { Metrics } from '../../../observe/metrics.js';
import { HttpUpstreamTransport, type HttpUpstreamTransportOptions } from './http-upstream.js';
import type { HttpUpstreamOptions } from './http-upstream-options.js';
import { LegacySseTransport } from './legacy-sse.js';
import { LegacyStreamableHttpTransport } from './legacy-streamable-http.js';
import { ModernHttpTransport } from './modern-http.js';
import { type ContractEra, SSE_GREETING, startContractServer } from './test-support/contract-peer.js';

function options(url: string): HttpUpstreamOptions {
  return {
    name: 'peer',
    url,
    maxMessageBytes: 64 * 1024,
    logger: silentLogger,
    metrics: new Metrics(),
    closeTimeoutMs: 500,
    endpointTimeoutMs: 2000,
    reconnectBackoff: { initialMs: 20, maxMs: 100, stableMs: 1000 },
  };
}

function against(name: string, era: ContractEra, make: (url: string) => UpstreamTransport): void {
  upstreamTransportContract(name, async () => {
    const server = await startContractServer(era);
    return {
      transport: make(server.url),
      ...(era === 'sse' || era === 'fallback' ? { greeting: SSE_GREETING } : {}),
      received: () => server.received(),
      kill: () => server.kill(),
      hang: () => server.hang(),
      misbehave: () => server.misbehave(),
      dispose: () => server.kill(),
    };
  });
}

const facade = (extra: Partial<HttpUpstreamTransportOptions>) => (url: string) =>
  new HttpUpstreamTransport({ ...options(url), ...extra });

against(
  'LegacyStreamableHttpTransport',
  'streamable-http',
  (url) => new LegacyStreamableHttpTransport(options(url)),
);
against('ModernHttpTransport', 'modern-http', (url) => new ModernHttpTransport(options(url)));
against('LegacySseTransport', 'sse', (url) => new LegacySseTransport(options(url)));
against('HttpUpstreamTransport (Streamable HTTP)', 'streamable-http', facade({ era: 'legacy' }));
against('HttpUpstreamTransport (probed 2026-07-28)', 'modern-http', facade({ era: 'auto' }));
against('HttpUpstreamTransport (probed both eras)', 'dual-http', facade({ era: 'auto' }));
against('HttpUpstreamTransport (HTTP+SSE)', 'sse', facade({ transport: 'sse' }));
against('HttpUpstreamTransport (fallback to HTTP+SSE)', 'fallback', facade({ era: 'legacy' }));

describe('the probe picks the transport the contract runs against', () => {
  it.each([
    ['modern-http', 'modern-http'],
    ['dual-http', 'dual-http'],
  ] as const)('a %s peer gets the %s transport', async (era, kind) => {
    const server = await startContractServer(era);
    const transport = new HttpUpstreamTransport({ ...options(server.url), era: 'auto' });
    try {
      await transport.start();
      expect(transport.kind).toBe(kind);
    } finally {
      await transport.close();
      await server.kill();
    }
  });
});
