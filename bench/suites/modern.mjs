// Suite "modern" (issue 6, "the 2026-07-28 era"): `tools/call` throughput and latency through
// `switchboard serve` for 2026-07-28 (stateless) clients next to legacy (2025-11-25, session) clients
// in the same run: same gateway process, same upstream connection, same concurrency levels, windows
// interleaved, ratios paired per repeat. Two upstreams:
//
// - the echo fixture over stdio (a legacy upstream: the gateway holds the session, a 2026-07-28
//   client's call is bridged);
// - test/fixtures/modern-server.mjs over HTTP (a 2026-07-28-only upstream found by the era probe: a
//   legacy client's call is bridged, a 2026-07-28 client's call is forwarded with its own _meta);
//   the same load client talking to the fixture directly is shown as the no-gateway reference.
//
// The legacy client is the http suite's (bench/lib/http-client.mjs): one session, then `tools/call`
// from C workers. The 2026-07-28 client (`ModernMcpClient` below) is as cheap: raw undici POSTs with
// the headers the revision requires (MCP-Protocol-Version, Mcp-Method, Mcp-Name) and the per-request
// `_meta` envelope (protocol version, client info, client capabilities), no session; the answer (JSON
// or SSE) must hold the response to the request's id with `resultType: "complete"`. Both run through
// lib/http-client.mjs's `loadWindow` (warm-up, then C workers for the window).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { switchboardConfig } from '../lib/gateways.mjs';
import { HttpMcpSession, loadWindow, makePool, parseSse } from '../lib/http-client.mjs';
import { CLI, FIXTURES, NODE, ROOT } from '../lib/paths.mjs';
import { cpuMsOf, sleep, startProcess } from '../lib/procs.mjs';
import { fmtMsFromUs, fmtNum, fmtRatio, fmtSpread, fmtUs, median, rotate, summarize } from '../lib/stats.mjs';

const MODERN = '2026-07-28';
const MODERN_SERVER = join(ROOT, 'test/fixtures/modern-server.mjs');
const CLIENT_INFO = { name: 'switchboard-bench-modern', version: '1.0.0' };

// --- the 2026-07-28 load client ------------------------------------------------------------------

/** A 2026-07-28 header value (`Mcp-Name`): itself when header-safe, else the `=?base64?...?=` form. */
function headerValue(value) {
  const safe =
    value.length > 0 &&
    !(value.startsWith('=?base64?') && value.endsWith('?=')) &&
    !value.startsWith(' ') &&
    !value.endsWith(' ') &&
    /^[\x20-\x7e]*$/.test(value);
  return safe ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

function messagesOf(headers, text) {
  const type = Array.isArray(headers['content-type']) ? headers['content-type'][0] : headers['content-type'];
  if (type?.includes('text/event-stream')) return parseSse(text);
  if (text.trim().length === 0) return [];
  const parsed = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}

/**
 * A stateless 2026-07-28 client on `url`: every request is one POST carrying the revision's headers
 * and `_meta` envelope. Same `callTool(name, args, pool)` shape as `HttpMcpSession`, so `loadWindow`
 * drives either.
 */
class ModernMcpClient {
  constructor(url, pool) {
    const u = new URL(url);
    this.origin = u.origin;
    this.path = u.pathname;
    this.pool = pool;
    this.nextId = 1;
    this.meta = {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    this.callHeaders = new Map();
  }

  headers(method, name) {
    const h = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
    };
    if (name !== undefined) h['mcp-name'] = headerValue(name);
    return h;
  }

  /** One request; resolves with { status, messages, text }. */
  async request(method, params = {}, name = undefined, pool = this.pool) {
    const id = this.nextId++;
    const { statusCode, headers, body } = await pool.request({
      origin: this.origin,
      path: this.path,
      method: 'POST',
      headers: this.headers(method, name),
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: this.meta } }),
    });
    const text = await body.text();
    const messages = statusCode < 300 ? messagesOf(headers, text) : [];
    return { status: statusCode, text, response: messages.find((m) => m.id === id && !('method' in m)) };
  }

  /** `server/discover`: throws unless the server offers 2026-07-28. */
  async discover() {
    const { status, text, response } = await this.request('server/discover');
    const versions = response?.result?.supportedVersions;
    if (status !== 200 || !Array.isArray(versions) || !versions.includes(MODERN))
      throw new Error(`server/discover on ${this.origin}${this.path}: HTTP ${status} ${text.slice(0, 300)}`);
    return response.result;
  }

  async listTools() {
    const { status, text, response } = await this.request('tools/list');
    if (status !== 200 || !Array.isArray(response?.result?.tools))
      throw new Error(`tools/list on ${this.origin}${this.path}: HTTP ${status} ${text.slice(0, 300)}`);
    return response.result.tools;
  }

  /** One tools/call; resolves true on a complete, non-error result. */
  async callTool(name, args, pool = this.pool) {
    let headers = this.callHeaders.get(name);
    if (headers === undefined) {
      headers = this.headers('tools/call', name);
      this.callHeaders.set(name, headers);
    }
    const id = this.nextId++;
    const {
      statusCode,
      headers: responseHeaders,
      body,
    } = await pool.request({
      origin: this.origin,
      path: this.path,
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name, arguments: args, _meta: this.meta },
      }),
    });
    const text = await body.text();
    if (statusCode !== 200) return false;
    const response = messagesOf(responseHeaders, text).find((m) => m.id === id && !('method' in m));
    return response?.result?.resultType === 'complete' && response.result.isError !== true;
  }

  async close() {}
}

// --- the processes -------------------------------------------------------------------------------

/** modern-server.mjs on a free port (2026-07-28 only). */
async function startModernServer() {
  const proc = await startProcess(NODE, [MODERN_SERVER, '--port', '0'], {
    readyPattern: /^listening (\S+)$/m,
    readyStream: 'stdout',
    name: 'modern-server.mjs',
  });
  return { url: proc.match[1], proc, pid: proc.pid };
}

/**
 * `switchboard serve` on `configYaml`, started exactly as lib/gateways.mjs's `startSwitchboard`
 * starts it (trace on, `--log-level warn`); copied here because that helper writes a stdio-only
 * configuration and lib/ is not this suite's to change.
 */
async function startServe({ configYaml, workDir, label, profileDir }) {
  const configFile = join(workDir, `switchboard-${label}.yaml`);
  writeFileSync(configFile, configYaml);
  const nodeFlags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const proc = await startProcess(
    NODE,
    [
      ...nodeFlags,
      CLI,
      'serve',
      '--config',
      configFile,
      '--port',
      '0',
      '--data-dir',
      join(workDir, `data-${label}`),
      '--log-level',
      'warn',
    ],
    { readyPattern: /serving MCP on (http:\/\/\S+\/mcp)/, readyStream: 'stderr', name: 'switchboard serve' },
  );
  return { url: proc.match[1], proc, pid: proc.pid };
}

const UPSTREAMS = [
  {
    key: 'echo',
    label: 'legacy upstream: echo fixture over stdio (`test/fixtures/echo-server.mjs`)',
    config: () => `${switchboardConfig('echo', NODE, [FIXTURES.echoServer])}\n`,
  },
  {
    key: 'modern',
    label: '2026-07-28 upstream: `test/fixtures/modern-server.mjs` over HTTP (era `auto`, probed modern)',
    needsModernServer: true,
    config: (serverUrl) =>
      ['upstreams:', '  modern:', `    url: ${JSON.stringify(serverUrl)}`, ''].join('\n'),
  },
];

const VARIANTS = [
  { key: 'legacy', label: '2025-11-25 client (session; `lib/http-client.mjs`)', era: 'legacy' },
  { key: 'modern', label: '2026-07-28 client (stateless; raw undici)', era: 'modern' },
];
const DIRECT = {
  key: 'direct',
  label: '2026-07-28 client → modern-server.mjs itself (no gateway)',
  era: 'modern',
};

/** Opens the variant's client on `url` and finds the echo tool's name (`echo` or `<server>__echo`). */
async function prepare(variant, url) {
  const pool = makePool(url, 2);
  let client;
  let tools;
  if (variant.era === 'legacy') {
    client = new HttpMcpSession(url, pool);
    await client.initialize('switchboard-bench-legacy');
    const listed = await client.post({
      jsonrpc: '2.0',
      id: client.nextId++,
      method: 'tools/list',
      params: {},
    });
    tools = listed.messages.find((m) => m.result)?.result?.tools ?? [];
  } else {
    client = new ModernMcpClient(url, pool);
    await client.discover();
    tools = await client.listTools();
  }
  const tool = tools.find((t) => t.name === 'echo') ?? tools.find((t) => t.name.endsWith('__echo'));
  if (!tool) throw new Error(`${url}: no echo tool in ${JSON.stringify(tools.map((t) => t.name))}`);
  if (!(await client.callTool(tool.name, { message: 'check' })))
    throw new Error(`${url}: a ${variant.era} tools/call of ${tool.name} failed`);
  return { client, setupPool: pool, tool: tool.name };
}

export default {
  name: 'modern',
  order: 25,
  title: 'Eras: `tools/call` through `switchboard serve` from 2026-07-28 clients vs legacy clients (issue 6)',
  duration: { full: '~3 min', quick: '~45 s' },
  async run(ctx) {
    const repeats = ctx.repeats ?? (ctx.quick ? 1 : 4);
    const concurrencies = [1, 8, 32];
    const warmupMs = ctx.quick ? 300 : 500;
    const durationMs = ctx.quick ? 1000 : 2000;
    const args = { message: 'hello from the switchboard bench' };
    const results = {};

    for (const upstream of UPSTREAMS) {
      const processes = [];
      const prepared = [];
      let direct;
      try {
        let serverUrl;
        if (upstream.needsModernServer) {
          const server = await startModernServer();
          processes.push(server.proc);
          serverUrl = server.url;
          direct = server;
        }
        const serve = await startServe({
          configYaml: upstream.config(serverUrl),
          workDir: ctx.workDir,
          label: upstream.key,
          profileDir: ctx.profileDir && join(ctx.profileDir, `${upstream.key}-switchboard`),
        });
        processes.unshift(serve.proc);
        const variants = upstream.needsModernServer ? [...VARIANTS, DIRECT] : VARIANTS;
        const running = {};
        for (const v of variants) {
          const target = v.key === 'direct' ? direct : serve;
          running[v.key] = { url: target.url, pid: target.pid, ...(await prepare(v, target.url)) };
          prepared.push(running[v.key]);
          ctx.log(`${upstream.key}: ${v.key} client ready on ${target.url} (tool ${running[v.key].tool})`);
        }

        const data = {};
        for (const v of variants) data[v.key] = Object.fromEntries(concurrencies.map((c) => [c, []]));
        for (let r = 0; r < repeats; r++) {
          for (const c of concurrencies) {
            const line = [];
            for (const v of rotate(variants, r + c)) {
              const t = running[v.key];
              const pool = makePool(t.url, c);
              const cpu0 = cpuMsOf(t.pid);
              const self0 = process.cpuUsage();
              const w = await loadWindow(t.client, pool, {
                concurrency: c,
                warmupMs,
                durationMs,
                tool: t.tool,
                args,
              });
              const cpu1 = cpuMsOf(t.pid);
              const self1 = process.cpuUsage(self0);
              await pool.close();
              const s = summarize(w.latencies);
              const rps = (w.completed / w.elapsedMs) * 1000;
              const share = durationMs / (durationMs + warmupMs);
              data[v.key][c].push({
                rps,
                p50: s.p50,
                p99: s.p99,
                errors: w.errors,
                completed: w.completed,
                cpuUsPerReq: ((cpu1 - cpu0) * 1000 * share) / Math.max(1, w.completed),
                clientUsPerReq: ((self1.user + self1.system) * share) / Math.max(1, w.completed),
              });
              line.push(
                `${v.key} ${fmtNum(rps)}/s p99 ${fmtMsFromUs(s.p99)}${w.errors ? ` ERR ${w.errors}` : ''}`,
              );
              await sleep(150);
            }
            ctx.log(`${upstream.key} r${r + 1}/${repeats} C=${c}: ${line.join(' · ')}`);
          }
        }
        results[upstream.key] = { variants: variants.map(({ key, label }) => ({ key, label })), data };
      } finally {
        for (const p of prepared) {
          await p.client.close();
          await p.setupPool.close();
        }
        for (const proc of processes) await proc.stop();
      }
    }

    // Render.
    const lines = [
      'Each upstream behind its own `switchboard serve` (trace on, `--log-level warn`). Both client eras talk to',
      'the same gateway process (`/mcp`) and so share its one upstream connection: a 2025-11-25 client (the http',
      "suite's undici client: one session opened once — initialize, notifications/initialized — then `tools/call`)",
      'and a 2026-07-28 client (raw undici POSTs, no session: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`',
      'headers and the `_meta` envelope on every request; the answer must carry `resultType: "complete"`).',
      `\`tools/call echo\` from C workers over a fresh keep-alive pool of C connections per window: ${warmupMs} ms warm-up`,
      `(not recorded), ${durationMs} ms measured, ${repeats} repeat(s); windows interleaved (order rotated between repeats).`,
      'Cells: median over repeats (min–max). "gateway CPU/req": CPU time of the process the client talks to',
      '(the gateway, without its upstream; for the no-gateway row the fixture) per request. Ratios are paired:',
      '2026-07-28 ÷ 2025-11-25 within each repeat (windows back to back), then the median over repeats.',
      'No target: issue 6 asks for the 2026-07-28 figures next to the legacy ones.',
      '',
      '### 2026-07-28 ÷ 2025-11-25 (through the gateway)',
      '',
      '| upstream | C | req/s ratio | p99 ratio | gateway CPU/req ratio |',
      '|---|---|---|---|---|',
    ];
    const paired = (data, c, f) => data.modern[c].map((x, i) => x[f] / data.legacy[c][i][f]);
    for (const upstream of UPSTREAMS) {
      const { data } = results[upstream.key];
      for (const c of concurrencies) {
        lines.push(
          `| ${upstream.key} | ${c} | ${fmtSpread(paired(data, c, 'rps'), fmtRatio)} | ` +
            `${fmtSpread(paired(data, c, 'p99'), fmtRatio)} | ${fmtSpread(paired(data, c, 'cpuUsPerReq'), fmtRatio)} |`,
        );
      }
    }
    lines.push('');
    for (const upstream of UPSTREAMS) {
      const { variants, data } = results[upstream.key];
      lines.push(`### ${upstream.label}`, '');
      lines.push(
        '| C | client | req/s | p50 | p99 | errors | gateway CPU/req | req/s ÷ 2025-11-25 | p99 ÷ 2025-11-25 |',
        '|---|---|---|---|---|---|---|---|---|',
      );
      for (const c of concurrencies) {
        for (const v of variants) {
          const rows = data[v.key][c];
          const ratio = (f) => rows.map((x, i) => x[f] / data.legacy[c][i][f]);
          lines.push(
            `| ${c} | ${v.label} | ${fmtSpread(
              rows.map((x) => x.rps),
              (n) => fmtNum(n),
            )} | ${fmtMsFromUs(median(rows.map((x) => x.p50)))} | ${fmtSpread(
              rows.map((x) => x.p99),
              fmtMsFromUs,
            )} | ${rows.reduce((a, x) => a + x.errors, 0)} | ${fmtUs(median(rows.map((x) => x.cpuUsPerReq)))} | ` +
              `${v.key === 'modern' ? fmtSpread(ratio('rps'), fmtRatio) : ''} | ${v.key === 'modern' ? fmtSpread(ratio('p99'), fmtRatio) : ''} |`,
          );
        }
        if (c === concurrencies.at(-1)) {
          lines.push(
            `|  | _the load client itself, per request, at C=${c}_ | | | | | ` +
              variants
                .map((v) => `${v.key} ${fmtUs(median(data[v.key][c].map((x) => x.clientUsPerReq)))}`)
                .join(', ') +
              ' | | |',
          );
        }
      }
      lines.push('');
    }
    return { markdown: lines.join('\n'), targets: [], data: results };
  },
};
