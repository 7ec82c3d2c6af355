// How each HTTP gateway under test is started, so that every suite fronts the same upstream command
// the same way. Each start function resolves with { name, url, proc, pid } where `pid` is the process
// that does the gateway's work (for CPU and memory readings) and `proc.stop()` ends it and its children.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, NODE, PEERS } from './paths.mjs';
import { freePort, startProcess, waitForHttp } from './procs.mjs';

/** A YAML config for `switchboard serve` fronting one stdio upstream. */
export function switchboardConfig(upstreamName, command, args, extra = '') {
  const q = (s) => JSON.stringify(s);
  return [
    'upstreams:',
    `  ${upstreamName}:`,
    '    transport: stdio',
    `    command: ${q(command)}`,
    `    args: [${args.map(q).join(', ')}]`,
    extra,
  ].join('\n');
}

/**
 * `switchboard serve --config F --port 0 --log-level warn [--no-trace]` on the bench's Node, with an
 * optional CPU profile (written when the gateway exits on SIGTERM). `extra` is YAML appended to the
 * generated configuration (other top-level sections: `audit`, `space`...); `nodeFlags` are more
 * options for Node (`--trace-gc`, `--import` of a bench module).
 */
export async function startSwitchboard({
  upstreamName,
  command,
  args,
  workDir,
  trace = true,
  profileDir,
  label,
  cli = CLI,
  extra = '',
  nodeFlags: moreFlags = [],
}) {
  const configFile = join(workDir, `switchboard-${label ?? upstreamName}.yaml`);
  writeFileSync(configFile, switchboardConfig(upstreamName, command, args, extra));
  const nodeFlags = [...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...moreFlags];
  const proc = await startProcess(
    NODE,
    [
      ...nodeFlags,
      cli,
      'serve',
      '--config',
      configFile,
      '--port',
      '0',
      '--data-dir',
      join(workDir, `data-${label ?? upstreamName}`),
      '--log-level',
      'warn',
      ...(trace ? [] : ['--no-trace']),
    ],
    { readyPattern: /serving MCP on (http:\/\/\S+\/mcp)/, readyStream: 'stderr', name: 'switchboard serve' },
  );
  return { url: proc.match[1], proc, pid: proc.pid };
}

/** supergateway 4.0.0 `--stateful` (one child per session), logging off, on Node 22. */
export async function startSupergateway({ command, args }) {
  const port = await freePort();
  const proc = await startProcess(
    PEERS.node22,
    [
      PEERS.supergateway,
      '--stdio',
      [command, ...args].join(' '),
      '--outputTransport',
      'streamableHttp',
      '--port',
      String(port),
      '--stateful',
      '--logLevel',
      'none',
    ],
    { name: 'supergateway' },
  );
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitForHttp(url);
  return { url, proc, pid: proc.pid };
}

/** mcp-proxy 6.7.19 (one shared upstream), defaults, on Node 22. */
export async function startMcpProxy({ command, args }) {
  const port = await freePort();
  const proc = await startProcess(
    PEERS.node22,
    [PEERS.mcpProxy, '--port', String(port), '--host', '127.0.0.1', '--', command, ...args],
    { name: 'mcp-proxy' },
  );
  const url = `http://127.0.0.1:${port}/mcp`;
  await waitForHttp(url);
  return { url, proc, pid: proc.pid };
}

/** server-everything serving Streamable HTTP itself (the "no gateway" reference), on the bench's Node. */
export async function startEverythingHttp({ serverEverything }) {
  const port = await freePort();
  const proc = await startProcess(NODE, [serverEverything, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    readyPattern: /listening on port/i,
    name: 'server-everything streamableHttp',
  });
  return { url: `http://127.0.0.1:${port}/mcp`, proc, pid: proc.pid };
}
