#!/usr/bin/env node
// Runs `switchboard serve` in this process, wired exactly as src/cli/commands/serve.ts wires it (same
// config resolution, trace, logger), so that its heap can be read after a forced GC. Start it with
//   node --expose-gc bench/lib/serve-host.mjs --config FILE --data-dir DIR [--no-trace]
// and an IPC channel. It sends { type: 'ready', url } once listening, and answers { type: 'measure' }
// with { type: 'memory', ...process.memoryUsage() } taken after repeated full GCs. Adds nothing to the
// gateway.
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { DIST } from './paths.mjs';

const argv = process.argv.slice(2);
const arg = (name) => {
  const i = argv.indexOf(name);
  return i === -1 ? undefined : argv[i + 1];
};
const configFile = arg('--config');
const dataDir = arg('--data-dir');
const trace = !argv.includes('--no-trace');
if (!configFile || !dataDir || typeof global.gc !== 'function' || !process.send) {
  console.error(
    'usage: node --expose-gc serve-host.mjs --config FILE --data-dir DIR [--no-trace] (with an IPC channel)',
  );
  process.exit(2);
}

const load = (rel) => import(pathToFileURL(join(DIST, rel)).href);
const { resolveServeConfig } = await load('cli/commands/serve.js');
const { ensureDataDir } = await load('config/data-dir.js');
const { ServeGateway } = await load('gateways/serve/serve-gateway.js');
const { createLogger } = await load('observe/logger.js');
const { Metrics } = await load('observe/metrics.js');
const { openTrace } = await load('cli/trace-setup.js');
const { readPackageVersion } = await load('cli/version.js');

ensureDataDir(dataDir);
const config = await resolveServeConfig({ config: configFile, port: 0, trace, logLevel: 'warn' }, dataDir);
const logger = createLogger(config.logging.level);
const metrics = new Metrics();
const traceHandle = config.trace.enabled
  ? openTrace(dataDir, logger, metrics, { maxPayloadBytes: config.trace.maxPayloadBytes })
  : undefined;
const gateway = new ServeGateway({
  config,
  version: readPackageVersion(),
  logger,
  metrics,
  taps: traceHandle ? [traceHandle.tap] : [],
  ...(traceHandle ? { onSession: (info) => traceHandle.recorder.session(info) } : {}),
});
const address = await gateway.start();

async function settledMemory() {
  // Several full collections with turns of the event loop in between, so that finalizers and
  // weak callbacks run and the heap reaches a steady state.
  for (let i = 0; i < 4; i++) {
    global.gc();
    await tick();
  }
  return process.memoryUsage();
}

process.on('message', async (message) => {
  if (message?.type === 'measure') process.send({ type: 'memory', ...(await settledMemory()) });
  else if (message?.type === 'stop') {
    await gateway.close();
    traceHandle?.recorder.close();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', url: `http://127.0.0.1:${address.port}/mcp` });
