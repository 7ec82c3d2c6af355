/**
 * Issue 18, item 2, against the built CLI: calls that arrive while a stdio upstream restarts. The
 * upstream (test/fixtures/misbehaving-server.mjs) crashes on `crash`; the gateway restarts it after a
 * one-second backoff. Calls sent in that window wait for the new child and get its answers; `/health`
 * answers all along; SIGTERM then stops the gateway. Before the fix the gateway spun on the first
 * start's promise: 100% CPU, `/health` silent, the calls hung and SIGTERM was ignored.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { ECHO_SERVER, ROOT } from './support/cli.js';
import { type RunningServe, startServe } from './support/serve.js';
import { initialize, messagesOf, post } from './support/sse-client.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');

// Two upstreams, so that the aggregated endpoint names tools `<server>__<name>`.
const CONFIG = `upstreams:
  echo:
    transport: stdio
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(ECHO_SERVER)}]
  mis:
    transport: stdio
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(MISBEHAVING)}]
    restart:
      initialDelay: 1s
`;

let serve: RunningServe | undefined;

afterEach(async () => {
  await serve?.stop();
  serve = undefined;
});

/** `GET /health` with a short deadline of its own: how long it took, or why it failed. */
async function health(base: string): Promise<{ ok: boolean; ms: number; why?: string }> {
  const started = performance.now();
  try {
    const response = await request(`${base}/health`, { headersTimeout: 5_000, bodyTimeout: 5_000 });
    await response.body.text();
    return { ok: response.statusCode === 200, ms: performance.now() - started };
  } catch (error) {
    return { ok: false, ms: performance.now() - started, why: String(error) };
  }
}

function call(id: number, name: string, args: Record<string, unknown> = {}) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

/** Resolves with the exit code once the process ended, or `timeout` after `ms`. */
function exited(serveProcess: RunningServe['process'], ms: number): Promise<number | null | 'timeout'> {
  const child = serveProcess.child;
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

describe('calls during an upstream restart', () => {
  for (const endpoint of ['/mcp', '/servers/mis/mcp']) {
    it(`on ${endpoint}: wait for the new child, /health answers meanwhile, SIGTERM stops the gateway`, async () => {
      serve = await startServe({ configYaml: CONFIG });
      const url = `${serve.base}${endpoint}`;
      const tool = (name: string) => (endpoint === '/mcp' ? `mis__${name}` : name);
      const session = await initialize(url);
      // The aggregated endpoint learns the tools' names from a listing.
      await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, session.headers);
      const crashed = messagesOf(await post(url, call(2, tool('crash')), session.headers));
      expect(crashed[0]).toMatchObject({
        id: 2,
        error: { code: -32000, data: { code: 'SB_UPSTREAM_EXITED' } },
      });

      // In the restart window (one second of backoff): three calls, and /health polled throughout.
      const calls = [3, 4, 5].map((id) =>
        post(url, call(id, tool('echo'), { message: `m${id}` }), session.headers),
      );
      const probes: Array<{ ok: boolean; ms: number; why?: string }> = [];
      const base = serve.base;
      let answered = false;
      const polling = (async () => {
        while (!answered) {
          probes.push(await health(base));
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      let answers: Awaited<(typeof calls)[number]>[];
      try {
        answers = await Promise.all(calls);
      } finally {
        answered = true;
        await polling;
      }

      for (const [i, response] of answers.entries()) {
        expect(response.status, response.text).toBe(200);
        expect(messagesOf(response)[0]).toMatchObject({
          id: i + 3,
          result: { content: [{ type: 'text', text: `m${i + 3}` }] },
        });
      }
      expect(probes.length).toBeGreaterThan(0);
      // Every probe answered; the bound is generous for a loaded machine, a spinning gateway never answers.
      expect(probes.filter((p) => !p.ok)).toEqual([]);
      expect(Math.max(...probes.map((p) => p.ms))).toBeLessThan(4_000);

      // SIGTERM to the gateway alone (not its process group): it stops by itself.
      serve.process.child.kill('SIGTERM');
      expect(await exited(serve.process, 15_000)).toBe(0);
    });
  }
});
