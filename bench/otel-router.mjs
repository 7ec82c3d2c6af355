// In-process cost of OpenTelemetry on the router (issue 21): the built router with in-memory ports,
// `tools/call` answered synchronously by a fake upstream, OTel off vs on (the real runtime of
// dist/observe/otel, OTLP to a sink in a child process), interleaved rounds, CPU per call.
// Variants: off, on, base (--baseline DIR: OTel on, another build), tap (OTel off, a tap that does
// nothing: what building the hops costs when a tap wants them), unsampled (OTel on, sampler
// always_off: the gateway's bookkeeping, context injection and histograms without the SDK's span
// recording and export), and, to take OpenTelemetry apart: observer (OTel off, a router observer
// that does nothing: what the observation hooks cost), metrics (OTel on, its histograms only: no
// spans tap, no trace-context writer), spans and spans-unsampled (its spans only, sampled or with
// always_off; no histograms); `base-X` is variant X on the --baseline build; chosen with --only.
// node bench/otel-router.mjs [--calls 20000] [--rounds 5] [--protocol http/protobuf|http/json] [--trace] [--dist DIR]
import { spawn } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    calls: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '5' },
    protocol: { type: 'string', default: 'http/protobuf' },
    trace: { type: 'boolean', default: false },
    dist: { type: 'string', default: 'dist' },
    only: { type: 'string' },
    baseline: { type: 'string' },
  },
});
// The SDK's default queue (2,048 spans) overflows at in-process rates and drops spans, which would
// make tracing look cheaper than it is: a queue no round fills (exported bytes per call are printed).
process.env.OTEL_BSP_MAX_QUEUE_SIZE ??= '65536';
const here = pathToFileURL(path.resolve(a.dist)).href;

const sink = spawn(
  process.execPath,
  [
    '-e',
    `
  const http = require('node:http');
  let bytes = 0;
  const s = http.createServer((q, r) => {
    if (q.url === '/stats') return r.end(String(bytes));
    q.on('data', (c) => { if (q.url.endsWith('/traces')) bytes += c.length; });
    q.on('end', () => { r.writeHead(200, {'content-type': q.headers['content-type']}); r.end(q.headers['content-type'].includes('json') ? '{}' : ''); });
  });
  s.listen(0, '127.0.0.1', () => console.log(s.address().port));`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const port = await new Promise((r) => sink.stdout.once('data', (d) => r(Number(String(d).trim()))));

let _kept;
async function variant(otelOn, dist, noopTap = false, sampler = 'parentbased_always_on', parts = 'all') {
  const { Router } = await import(`${dist}/core/router.js`);
  const { TapBus } = await import(`${dist}/core/taps.js`);
  const { MemoryLogger } = await import(`${dist}/observe/logger.js`);
  const { Metrics } = await import(`${dist}/observe/metrics.js`);
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  let otel;
  if (otelOn) {
    const { startOtel } = await import(`${dist}/observe/otel/otel-runtime.js`);
    otel = startOtel({
      settings: {
        tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
        metricsUrl: `http://127.0.0.1:${port}/v1/metrics`,
        protocol: a.protocol,
        headers: {},
        sampler,
        ratio: 1,
        serviceName: 'bench',
        resourceAttributes: {},
        forwardBaggage: false,
        metricIntervalMs: 60_000,
      },
      logger,
      version: '0',
    });
  }
  const taps = [
    ...(otel && parts !== 'metrics' ? [otel.spans] : []),
    ...(a.trace
      ? [
          {
            name: 'hops',
            observe: (e) => {
              e.envelope;
            },
          },
        ]
      : []),
    // kept, so that the optimiser cannot drop the hop as unused
    ...(noopTap
      ? [
          {
            name: 'noop',
            observe: (e) => {
              _kept = e;
            },
          },
        ]
      : []),
  ];
  const router = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'a' }),
      notificationLinks: () => ['a'],
      sessionsFor: () => ['S'],
      notificationTargets: () => ['S'],
    },
    logger,
    metrics,
    taps: new TapBus(logger, metrics, taps),
    ...(otel && parts !== 'metrics' ? { traceContext: otel.spans } : {}),
  });
  if (otel && parts !== 'spans') router.observations.add(otel.metrics);
  if (parts === 'observer') router.observations.add({ name: 'noop', callEnded() {}, upstreamEnded() {} });
  let pending;
  const upstream = {
    async start() {},
    async close() {},
    send(_json, message) {
      if ('method' in message && 'id' in message) pending = message.id;
    },
  };
  router.addLink({ id: 'a', name: 'alpha', transport: upstream, transportContext: { kind: 'stdio' } });
  let answers = 0;
  router.openSession({
    key: 'S',
    port: {
      send() {
        answers++;
      },
    },
    transport: 'stdio',
    transportContext: { kind: 'stdio' },
  });
  let n = 0;
  const call = () => {
    router.handleClientMessage(
      'S',
      {
        jsonrpc: '2.0',
        id: ++n,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'hello' } },
      },
      { kind: 'stdio' },
    );
    upstream.onmessage(
      `{"jsonrpc":"2.0","id":${JSON.stringify(pending)},"result":{"content":[{"type":"text","text":"hello"}]}}`,
      { transport: { kind: 'memory' } },
    );
  };
  return { call, otel, answers: () => answers, calls: () => (otel ? n : 0) };
}

const names = a.only ? a.only.split(',') : ['off', 'on', ...(a.baseline ? ['base'] : [])];
/** name -> [OTel on, sampler, which of OTel's parts are wired ('all', 'spans', 'metrics', 'observer')]. */
const SPECS = {
  off: [false, undefined, 'all'],
  tap: [false, undefined, 'all'],
  observer: [false, undefined, 'observer'],
  on: [true, 'parentbased_always_on', 'all'],
  base: [true, 'parentbased_always_on', 'all'],
  unsampled: [true, 'always_off', 'all'],
  metrics: [true, 'parentbased_always_on', 'metrics'],
  spans: [true, 'parentbased_always_on', 'spans'],
  'spans-unsampled': [true, 'always_off', 'spans'],
};
const vs = {};
for (const name of names) {
  // `base-X`: variant X on the --baseline build, interleaved with this build's.
  const own = name.startsWith('base-') ? name.slice(5) : name;
  const [on, sampler, parts] = SPECS[own];
  vs[name] = await variant(
    on,
    name === 'base' || own !== name ? pathToFileURL(path.resolve(a.baseline)).href : here,
    own === 'tap',
    sampler,
    parts,
  );
}
const calls = Number(a.calls);
const sinkBytes = async () => Number(await (await fetch(`http://127.0.0.1:${port}/stats`)).text());
async function round(v) {
  // batches of 1,000 calls, yielding between them so exports and timers run (as a server's loop
  // would); then, for a traced variant, until the sink has had nothing new for 300 ms (the SDK's
  // scheduled delay, 5 s by default, would leave a last partial batch: it is not waited for), so
  // that what export costs is in the round's CPU even when it lags behind the calls
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < calls; i += 1000) {
    for (let j = 0; j < 1000; j++) v.call();
    await new Promise((r) => setImmediate(r));
  }
  const wallUs = ((performance.now() - w0) * 1000) / calls;
  if (v.otel) {
    let last = await sinkBytes();
    for (;;) {
      await new Promise((r) => setTimeout(r, 300));
      const now = await sinkBytes();
      if (now === last) break;
      last = now;
    }
  }
  const c = process.cpuUsage(t0);
  return { cpuUs: (c.user + c.system) / calls, wallUs };
}
for (const v of Object.values(vs)) await round(v); // warm-up
const res = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < Number(a.rounds); r++)
  for (const n of r % 2 ? [...names].reverse() : names) {
    res[n].push(await round(vs[n]));
    await new Promise((r) => setTimeout(r, 50));
  }
const med = (xs) => xs.slice().sort((x, y) => x - y)[Math.floor(xs.length / 2)];
for (const n of names)
  console.log(
    `${n.padEnd(16)} cpu/call ${med(res[n].map((x) => x.cpuUs)).toFixed(1)} µs  (${res[n].map((x) => x.cpuUs.toFixed(0)).join(' ')})  wall ${med(res[n].map((x) => x.wallUs)).toFixed(1)} µs`,
  );
const m = (n) => med(res[n].map((x) => x.cpuUs));
if (vs.on && vs.off)
  console.log(
    `on/off cpu ratio ${(m('on') / m('off')).toFixed(2)}; otel adds ${(m('on') - m('off')).toFixed(1)} µs${vs.base ? ` (baseline build adds ${(m('base') - m('off')).toFixed(1)} µs, ratio ${(m('base') / m('off')).toFixed(2)})` : ''}  load ${(await import('node:os')).loadavg()[0].toFixed(2)}`,
  );
let total = 0;
for (const v of Object.values(vs)) {
  await v.otel?.shutdown(5000);
  total += v.calls();
}
const bytes = Number(await (await fetch(`http://127.0.0.1:${port}/stats`)).text());
if (total > 0)
  console.log(`span bytes exported per traced call: ${(bytes / total).toFixed(0)} (all traced variants)`);
sink.kill();
