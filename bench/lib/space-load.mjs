#!/usr/bin/env node
import WebSocket from 'ws';
// The load process of the `space` suite: one sender and K observers on `/meup` of a running
// `switchboard serve`, all in this process (so that a send time and a receipt time come from one
// clock). Driven over IPC, one run per process:
//   { type: 'run', url, gatewayPid, sender: {id, token}, observers: [{id, token}], warmup, count, window }
//     -> { type: 'result', ... } or { type: 'error', message }
//
// Every participant joins with `Authorization: Bearer <token>` on the upgrade (its space-only token)
// and waits for `system/welcome`. The sender then broadcasts `chat` envelopes (`to` absent: everyone
// but the sending connection) with a bounded window: at most `window` envelopes are in flight, an
// envelope leaving the window once every observer has received it. So the send rate is the rate at
// which the gateway accepts, fans out and writes the envelopes, and nothing queues without bound
// (the gateway would close an observer holding more than `space.maxBufferedBytes` unsent).
//
// Each chat payload carries its sequence number and its send time (`process.hrtime` in µs, the
// system's monotonic clock); each observer parses the frame and records receipt − send per
// (envelope, observer). The first `warmup` envelopes are not recorded. The gateway's CPU time (from
// /proc) and this process's are read at the start and the end of the measured envelopes.
import { cpuMsOf } from './procs.mjs';
import { summarize } from './stats.mjs';

const PROTOCOL = 'meup/v0.2';
/** No progress for this long: something is wrong (an envelope refused, a connection cut). */
const STALL_MS = 15_000;

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Opens a WebSocket with the participant's bearer token; resolves once `system/welcome` arrived. */
function join(url, { id, token }, onEnvelope) {
  return new Promise((resolve, reject) => {
    // perMessageDeflate off, as the gateway has it: nothing is negotiated either way.
    const ws = new WebSocket(url, {
      headers: { Authorization: `Bearer ${token}` },
      perMessageDeflate: false,
      skipUTF8Validation: true,
    });
    let welcomed = false;
    ws.on('message', (data) => {
      const envelope = JSON.parse(data.toString());
      if (!welcomed) {
        if (envelope.kind !== 'system/welcome') return;
        welcomed = true;
        if (envelope.payload?.you?.id !== id)
          reject(new Error(`${id} was welcomed as ${envelope.payload?.you?.id}`));
        else resolve(ws);
        return;
      }
      onEnvelope(envelope);
    });
    ws.once('unexpected-response', (_req, res) =>
      reject(new Error(`${id}: upgrade refused with HTTP ${res.statusCode}`)),
    );
    ws.once('error', (e) => reject(new Error(`${id}: ${e.message}`)));
    ws.once('close', (code, reason) => {
      if (!welcomed) reject(new Error(`${id}: closed before the welcome (${code} ${reason})`));
    });
  });
}

async function run({ url, gatewayPid, sender, observers, warmup, count, window }) {
  const total = warmup + count;
  const k = observers.length;
  const remaining = new Uint16Array(total).fill(k);
  const latencies = new Float64Array(count * k);
  let recorded = 0;
  let sent = 0;
  let done = 0;
  let lastProgress = Date.now();
  let failure;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const fail = (error) => {
    failure ??= error;
    finish();
  };

  let senderWs;
  let measureStart;
  const pump = () => {
    while (sent < total && sent - done < window) {
      if (sent === warmup)
        measureStart = { t: nowUs(), gateway: cpuMsOf(gatewayPid), self: process.cpuUsage() };
      const seq = sent++;
      senderWs.send(
        JSON.stringify({
          protocol: PROTOCOL,
          id: `bench-${seq}`,
          ts: new Date().toISOString(),
          from: sender.id,
          kind: 'chat',
          payload: { seq, sent_us: nowUs(), text: 'hello from the space bench' },
        }),
      );
    }
  };
  const onObserved = (envelope) => {
    if (envelope.kind !== 'chat' || envelope.from !== sender.id) return;
    const { seq, sent_us: sentUs } = envelope.payload;
    if (seq >= warmup) latencies[recorded++] = nowUs() - sentUs;
    if (--remaining[seq] === 0) {
      done++;
      lastProgress = Date.now();
      if (done === total) finish();
      else pump();
    }
  };

  const connectStart = performance.now();
  // Observers first, in parallel; each is welcomed before the sender sends anything.
  const sockets = await Promise.all(observers.map((o) => join(url, o, onObserved)));
  senderWs = await join(url, sender, (envelope) => {
    // The sender hears presence and nothing else; an error means an envelope was refused.
    if (envelope.kind === 'system/error')
      fail(new Error(`the gateway refused an envelope: ${JSON.stringify(envelope.payload)}`));
  });
  sockets.push(senderWs);
  for (const ws of sockets)
    ws.on('close', (code, reason) => fail(new Error(`a connection closed mid-run: ${code} ${reason}`)));
  const connectMs = performance.now() - connectStart;

  const watchdog = setInterval(() => {
    if (Date.now() - lastProgress > STALL_MS)
      fail(
        new Error(`no envelope completed for ${STALL_MS} ms (sent ${sent}, completed ${done} of ${total})`),
      );
  }, 1000);
  pump();
  await finished;
  clearInterval(watchdog);
  if (failure) throw failure;
  const endUs = nowUs();
  const gatewayCpuMs = cpuMsOf(gatewayPid) - measureStart.gateway;
  const self = process.cpuUsage(measureStart.self);
  for (const ws of sockets) ws.removeAllListeners('close').close(1000);
  const elapsedMs = (endUs - measureStart.t) / 1000;
  const s = summarize(latencies.subarray(0, recorded));
  return {
    observers: k,
    envelopes: count,
    deliveries: recorded,
    elapsedMs,
    connectMs,
    p50: s.p50,
    p90: s.p90,
    p99: s.p99,
    max: s.max,
    gatewayCpuMs,
    selfCpuMs: (self.user + self.system) / 1000,
  };
}

process.on('message', (message) => {
  if (message?.type !== 'run') return;
  run(message).then(
    (result) => process.send({ type: 'result', ...result }, () => process.exit(0)),
    (error) => process.send({ type: 'error', message: String(error?.stack ?? error) }, () => process.exit(1)),
  );
});
process.send({ type: 'ready' });
