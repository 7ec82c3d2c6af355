// Suite "space" (issue "MEUP space"): envelopes/s fanned out to 100 observers through the MEUP space
// of `switchboard serve` (WebSocket `/meup`), and the delivery latency from send to receipt, next to
// the same with 1 observer so that the cost of the fan-out is visible.
//
// One gateway (`switchboard serve`, trace on as a user runs it, the echo fixture as its one stdio
// upstream: a serve configuration needs one) is configured with a sender and 100 observer
// participants, each with a space-only bearer token (stored as its sha256, made with the gateway's
// own `dist/auth/token-hash.js`) and the capability `chat`. "Observer" here is a participant that
// receives the broadcasts, not `observe: true` (which adds the MCP traffic; there is none here).
//
// Each run is a fresh load process (bench/lib/space-load.mjs) holding the sender and the observers'
// WebSockets, so that send and receipt times come from one clock; it broadcasts `chat` envelopes
// with at most WINDOW in flight (an envelope leaves the window when every observer has it), i.e. as
// fast as the gateway accepts and fans them out. Runs of 1 and 100 observers alternate, in an order
// rotated between repeats; figures are medians over repeats.
//
// No target: the issue asks for the figures only, and at saturation the delivery latency is mostly
// the window itself queueing (Little's law: latency ≈ WINDOW ÷ envelopes/s), so a latency bound
// would measure the choice of WINDOW as much as the gateway.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startSwitchboard } from '../lib/gateways.mjs';
import { BENCH_DIR, DIST, FIXTURES, NODE } from '../lib/paths.mjs';
import { sleep, startProcess } from '../lib/procs.mjs';
import { fmtMsFromUs, fmtNum, fmtRatio, fmtSpread, fmtUs, median, rotate } from '../lib/stats.mjs';

const OBSERVERS = 100;
/** Envelopes in flight at most: enough to keep the gateway busy, far below `maxBufferedBytes`. */
const WINDOW = 32;
const SENDER = 'sender';
const observerId = (i) => `observer-${String(i + 1).padStart(3, '0')}`;

/** The `space` section: the sender and the observers, each with a token and `chat`. */
function spaceSection(participants) {
  const lines = ['space:', '  participants:'];
  for (const p of participants) {
    lines.push(`    ${p.id}:`, '      capabilities: [chat]', `      tokens: [{ sha256: "${p.sha256}" }]`);
  }
  return `${lines.join('\n')}\n`;
}

/** One run in a fresh load process; resolves with its result. */
async function loadRun(spec) {
  const proc = await startProcess(NODE, [join(BENCH_DIR, 'lib/space-load.mjs')], {
    ipc: true,
    name: 'space load',
    readyPattern: undefined,
  });
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('space load: no result within 180 s')), 180_000);
      proc.child.on('message', (m) => {
        if (m?.type === 'ready') proc.child.send({ type: 'run', ...spec });
        else if (m?.type === 'result') {
          clearTimeout(timer);
          resolve(m);
        } else if (m?.type === 'error') {
          clearTimeout(timer);
          reject(new Error(`space load: ${m.message}`));
        }
      });
      proc.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`space load exited (${signal ?? code}) without a result\n${proc.output()}`));
      });
    });
  } finally {
    await proc.stop();
  }
}

export default {
  name: 'space',
  order: 50,
  title: 'MEUP space: envelopes/s fanned out to 100 observers and delivery latency (issue "MEUP space")',
  duration: { full: '~30 s', quick: '~15 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 5);
    const warmup = ctx.quick ? 200 : 1000;
    // Sized for a few seconds per run at the rates of the 2-core development machine.
    const counts = { 1: ctx.quick ? 5000 : 40_000, [OBSERVERS]: ctx.quick ? 1000 : 6000 };
    const variants = [1, OBSERVERS];

    const { hashToken, newToken } = await import(pathToFileURL(join(DIST, 'auth/token-hash.js')).href);
    const make = (id) => {
      const token = newToken();
      return { id, token, sha256: hashToken(token) };
    };
    const sender = make(SENDER);
    const observers = Array.from({ length: OBSERVERS }, (_, i) => make(observerId(i)));
    const gateway = await startSwitchboard({
      upstreamName: 'echo',
      command: NODE,
      args: [FIXTURES.echoServer],
      workDir: ctx.workDir,
      label: 'space',
      extra: spaceSection([sender, ...observers]),
      profileDir: ctx.profileDir && join(ctx.profileDir, 'space-switchboard'),
    });
    const url = gateway.url.replace(/^http/, 'ws').replace(/\/mcp$/, '/meup');
    ctx.log(`switchboard serve ready, space at ${url}`);

    const data = Object.fromEntries(variants.map((k) => [k, []]));
    try {
      for (let r = 0; r < repeats; r++) {
        for (const k of rotate(variants, r)) {
          const result = await loadRun({
            url,
            gatewayPid: gateway.pid,
            sender: { id: sender.id, token: sender.token },
            observers: observers.slice(0, k).map(({ id, token }) => ({ id, token })),
            warmup,
            count: counts[k],
            window: WINDOW,
          });
          const rate = (result.envelopes / result.elapsedMs) * 1000;
          data[k].push({
            ...result,
            rate,
            deliveryRate: (result.deliveries / result.elapsedMs) * 1000,
            gatewayUsPerEnvelope: (result.gatewayCpuMs * 1000) / result.envelopes,
            gatewayUsPerDelivery: (result.gatewayCpuMs * 1000) / result.deliveries,
            selfUsPerDelivery: (result.selfCpuMs * 1000) / result.deliveries,
          });
          ctx.log(
            `r${r + 1}/${repeats} ${k} observer(s): ${fmtNum(rate)} envelopes/s, ${fmtNum(rate * k)} deliveries/s, ` +
              `p50 ${fmtMsFromUs(result.p50)}, p99 ${fmtMsFromUs(result.p99)} (connected in ${fmtNum(result.connectMs)} ms)`,
          );
          await sleep(200);
        }
      }
    } finally {
      await gateway.proc.stop();
    }

    const med = (k, f) => median(data[k].map((x) => x[f]));
    const cell = (k, f, fmt) =>
      fmtSpread(
        data[k].map((x) => x[f]),
        fmt,
      );
    const perSecond = (v) => `${fmtNum(v)}/s`;
    const lines = [
      `One \`switchboard serve\` (trace on, \`--log-level warn\`) with a sender and ${OBSERVERS} observer participants,`,
      'each joined over `ws://…/meup` with its own space-only bearer token. Per run, a fresh load process connects the',
      `observers (all of them, or 1) and the sender, then the sender broadcasts \`chat\` envelopes (\`to\` absent) with at`,
      `most ${WINDOW} in flight (one leaves the window when every observer has received it): ${fmtNum(warmup)} warm-up`,
      `envelopes, then ${fmtNum(counts[1])} (1 observer) or ${fmtNum(counts[OBSERVERS])} (${OBSERVERS} observers) measured. Latency is`,
      "from the sender's `send` to an observer's parse of the frame, per (envelope, observer), on one monotonic clock;",
      `${repeats} repeat(s), runs alternating (order rotated). Cells: median over repeats (min–max). The load process`,
      "shares the machine's two cores with the gateway; its own CPU per delivery is shown.",
      '',
      '| observers | envelopes/s | deliveries/s | p50 delivery | p99 delivery | gateway CPU/envelope | gateway CPU/delivery | load process CPU/delivery |',
      '|---|---|---|---|---|---|---|---|',
      ...variants.map(
        (k) =>
          `| ${k} | ${cell(k, 'rate', perSecond)} | ${cell(k, 'deliveryRate', perSecond)} | ${fmtMsFromUs(med(k, 'p50'))} | ` +
          `${cell(k, 'p99', fmtMsFromUs)} | ${fmtUs(med(k, 'gatewayUsPerEnvelope'))} | ${fmtUs(med(k, 'gatewayUsPerDelivery'))} | ` +
          `${fmtUs(med(k, 'selfUsPerDelivery'))} |`,
      ),
      '',
      // Paired: the two runs of a repeat ran back to back.
      `Fan-out cost, paired per repeat (${OBSERVERS} observers ÷ 1): envelopes/s ${fmtSpread(
        data[OBSERVERS].map((x, i) => x.rate / data[1][i].rate),
        fmtRatio,
      )}, deliveries/s ${fmtSpread(
        data[OBSERVERS].map((x, i) => x.deliveryRate / data[1][i].deliveryRate),
        fmtRatio,
      )}, gateway CPU per envelope ${fmtSpread(
        data[OBSERVERS].map((x, i) => x.gatewayUsPerEnvelope / data[1][i].gatewayUsPerEnvelope),
        fmtRatio,
      )}.`,
      '',
      `At saturation the latency is mostly queueing: with ${WINDOW} envelopes in flight, Little's law gives about`,
      `${WINDOW} ÷ envelopes/s (${fmtMsFromUs((WINDOW / med(OBSERVERS, 'rate')) * 1e6)} at ${OBSERVERS} observers).`,
    ];
    return { markdown: lines.join('\n'), targets: [], data };
  },
};
