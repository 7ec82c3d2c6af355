// In-process cost of the router's observers (issue 21: metrics ≤ 3% of the gateway's CPU per
// request): the built router with in-memory ports, `tools/call` answered synchronously by a fake
// upstream, CPU per call (main thread only: process.threadCpuUsage is not in Node 20, so
// process.cpuUsage, whole process, with GC helper threads) for
//
// - `off`: no observer registered (what `observe.metrics.enabled: false` leaves);
// - `null`: one observer whose every hook does nothing (the router's observation path alone);
// - `metrics`: the observers `/metrics` registers (`GatewayMetrics.observers`: call metrics, open
//   sessions, upstream states), without prom-client's process metrics;
// - `metrics+process`: the same with prom-client's process and GC metrics (`serve`'s default).
//
// Each variant runs in a process of its own (a router's inline caches and optimised code are not
// shared between variants), kept for the whole run; rounds are interleaved, the order flipping
// every round; per round each child runs `--calls` calls in batches of 1,000, yielding between
// batches. Prints the median CPU/call per variant (min–max) and each ÷ off (paired per round).
// A variant written `NAME@DIR` (with --only) runs the build in DIR (a dist/ directory under this
// checkout, so that its imports resolve): two builds' observers in the same rounds.
//
//   npx tsc -p tsconfig.build.json && node bench/observers-router.mjs [--calls 20000] [--rounds 9] [--dist dist]
//   node bench/observers-router.mjs --only off,metrics,metrics@bench/.work/ab-builds/<commit>/dist
import { fork } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const VARIANTS = ['off', 'null', 'metrics', 'metrics+process'];

const { values: a } = parseArgs({
  options: {
    calls: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '9' },
    dist: { type: 'string', default: 'dist' },
    only: { type: 'string' },
    child: { type: 'string' },
  },
});

/** A router of `dist` with the observers of `variant`; resolves with `call()`, one round trip. */
async function router(dist, variant) {
  const { Router } = await import(`${dist}/core/router.js`);
  const { TapBus } = await import(`${dist}/core/taps.js`);
  const { MemoryLogger } = await import(`${dist}/observe/logger.js`);
  const { Metrics } = await import(`${dist}/observe/metrics.js`);
  const logger = new MemoryLogger();
  const metrics = new Metrics();
  const r = new Router({
    resolver: {
      resolve: () => ({ kind: 'forward', link: 'a' }),
      notificationLinks: () => ['a'],
      sessionsFor: () => ['S'],
      notificationTargets: () => ['S'],
    },
    logger,
    metrics,
    taps: new TapBus(logger, metrics, []),
  });
  if (variant === 'null') {
    const nothing = () => {};
    r.observations.add({
      name: 'null',
      callStarted: nothing,
      callEnded: nothing,
      upstreamStarted: nothing,
      upstreamEnded: nothing,
      sessionOpened: nothing,
      sessionClosed: nothing,
      linkChanged: nothing,
    });
  } else if (variant.startsWith('metrics')) {
    const { GatewayMetrics } = await import(`${dist}/observe/prometheus/gateway-metrics.js`);
    const g = new GatewayMetrics({ metrics, version: '0', processMetrics: variant === 'metrics+process' });
    for (const o of g.observers) r.observations.add(o);
  }
  let pending;
  const upstream = {
    async start() {},
    async close() {},
    send(_json, message) {
      if ('method' in message && 'id' in message) pending = message.id;
    },
  };
  r.addLink({ id: 'a', name: 'alpha', transport: upstream, transportContext: { kind: 'stdio' } });
  r.openSession({ key: 'S', port: { send() {} }, transport: 'stdio', transportContext: { kind: 'stdio' } });
  let n = 0;
  return () => {
    r.handleClientMessage(
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
}

if (a.child) {
  if (process.send === undefined) {
    // Alone (for `node --cpu-prof`): the calls of 5 rounds, then exit.
    const [variant, dir = a.dist] = a.child.split('@');
    const call = await router(pathToFileURL(path.resolve(dir)).href, variant);
    for (let i = 0; i < 5 * Number(a.calls); i++) call();
    process.exit(0);
  }
  const [variant, dir = a.dist] = a.child.split('@');
  const call = await router(pathToFileURL(path.resolve(dir)).href, variant);
  const calls = Number(a.calls);
  process.on('message', async () => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < calls; i += 1000) {
      for (let j = 0; j < 1000; j++) call();
      await new Promise((r) => setImmediate(r));
    }
    const c = process.cpuUsage(t0);
    process.send((c.user + c.system) / calls);
  });
  process.send('ready');
} else {
  const names = a.only ? a.only.split(',') : VARIANTS;
  const self = new URL(import.meta.url).pathname;
  const children = {};
  for (const n of names) {
    const child = fork(self, ['--child', n, '--calls', a.calls, '--dist', a.dist]);
    await new Promise((r) => child.once('message', r));
    children[n] = child;
  }
  const round = (n) =>
    new Promise((r) => {
      children[n].once('message', r);
      children[n].send('go');
    });
  for (const n of names) await round(n); // warm-up
  const res = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < Number(a.rounds); i++)
    for (const n of i % 2 ? [...names].reverse() : names) res[n].push(await round(n));
  for (const c of Object.values(children)) c.kill();
  const med = (xs) => xs.slice().sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const fmt = (xs, f) => `${f(med(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
  const us = (v) => `${v.toFixed(2)} µs`;
  const x = (v) => `${v.toFixed(3)}×`;
  const { loadavg } = await import('node:os');
  console.log(
    `${a.rounds} rounds × ${a.calls} calls, ${a.dist}; load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ')}`,
  );
  for (const n of names)
    console.log(
      `${n.padEnd(16)} cpu/call ${fmt(res[n], us)}${
        n === 'off' || !res.off
          ? ''
          : `  ÷ off ${fmt(
              res[n].map((v, i) => v / res.off[i]),
              x,
            )}  + ${us(med(res[n].map((v, i) => v - res.off[i])))}`
      }`,
    );
}
