/**
 * OpenTelemetry costs nothing when it is off: a gateway started without it (no `observe.otel`, no
 * `OTEL_*` endpoint) never loads a module of `@opentelemetry/*`, not even after serving calls;
 * the runtime is imported only when export is on (`cli/otel-setup.ts`). The module graph is read
 * from the ESM loader itself (test/support/module-log.mjs logs every module resolved), and the
 * same gateway with OpenTelemetry on is the control that the log does see those modules.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ECHO_SERVER, ROOT, tempDir } from './support/cli.js';
import { startServe, stdioUpstreamConfig } from './support/serve.js';

const MODULE_LOG = join(ROOT, 'test/support/module-log.mjs');

async function modulesOfARun(env: NodeJS.ProcessEnv): Promise<string[]> {
  const log = join(tempDir('switchboard-modules-'), 'modules.log');
  const gateway = await startServe({
    configYaml: stdioUpstreamConfig({ echo: { script: ECHO_SERVER } }),
    env: {
      ...process.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      ...env,
      MODULE_LOG: log,
      NODE_OPTIONS: `--import=${MODULE_LOG}`,
    },
  });
  try {
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const init = await fetch(gateway.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    const session = init.headers.get('mcp-session-id') ?? '';
    await init.text();
    const call = await fetch(gateway.url, {
      method: 'POST',
      headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'echo',
          arguments: { message: 'hi' },
          _meta: { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` },
        },
      }),
    });
    expect(await call.text()).toContain('hi');
  } finally {
    await gateway.stop();
  }
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '');
}

describe('OpenTelemetry off', () => {
  it('loads no @opentelemetry module in a default start, even after a call that carries a traceparent', async () => {
    const modules = await modulesOfARun({});
    // The log works: it saw the gateway's own modules.
    expect(modules.some((url) => url.endsWith('/dist/cli/main.js'))).toBe(true);
    expect(modules.filter((url) => url.includes('@opentelemetry'))).toEqual([]);
    expect(modules.filter((url) => url.includes('/observe/otel/otel-runtime'))).toEqual([]);
  }, 60_000);

  it('loads them when export is on (the control)', async () => {
    const modules = await modulesOfARun({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(modules.some((url) => url.includes('@opentelemetry/sdk-trace-base'))).toBe(true);
    expect(modules.some((url) => url.includes('/observe/otel/otel-runtime'))).toBe(true);
  }, 60_000);
});
