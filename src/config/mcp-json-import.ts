/**
 * The MCP server lists clients already keep, read as Switchboard upstreams: the `mcpServers` JSON
 * of Claude Desktop (`claude_desktop_config.json`), Claude Code (`.mcp.json`, entries with an
 * optional `type` of `stdio`, `http` or `sse`) and Cursor (`mcp.json`), and the `servers` JSON of
 * VS Code (`.vscode/mcp.json`, every entry with a `type`).
 *
 * The contract: every entry becomes an upstream in the raw shape of `switchboard.yaml`'s
 * `upstreams:` section (stdio: `command`, `args`, `env`, `cwd`; http: `url`, `headers`; an `sse`
 * entry is an http upstream, whose era probe falls back to the 2024-11-05 HTTP+SSE transport), or
 * the import fails as a whole, naming the server and the field that cannot be mapped. Nothing is
 * dropped silently: a field this module does not know is an error too, since the upstream would
 * otherwise run without something its owner configured.
 *
 * Variable references are translated to the gateway's `${env:NAME}`: Claude Code's `${NAME}`, and
 * VS Code's and Cursor's `${env:NAME}` (already ours). What only the client can resolve (VS Code's
 * `${input:…}` prompts, `${workspaceFolder}`, Claude Code's `${NAME:-default}`) cannot be mapped.
 */
import { stringify } from 'yaml';
import { SbErrorCode, SwitchboardError } from '../errors/switchboard-error.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';

/** Which client's shape the file has: the key that holds its servers. */
export type McpJsonShape = 'mcpServers' | 'servers';

/** One upstream in the raw shape of the configuration file's `upstreams:` section. */
export type RawImportedUpstream =
  | {
      readonly command: string;
      readonly args?: readonly string[];
      readonly env?: Readonly<Record<string, string>>;
      readonly cwd?: string;
    }
  | { readonly transport: 'http'; readonly url: string; readonly headers?: Readonly<Record<string, string>> };

export interface ImportedServers {
  readonly shape: McpJsonShape;
  /** Upstreams by name, in the file's order. */
  readonly upstreams: Readonly<Record<string, RawImportedUpstream>>;
}

/** Fields each entry may carry that carry nothing for the gateway (client-side switches). */
const IGNORED_FIELDS = new Set([
  'disabled',
  'enabled',
  'autoApprove',
  'alwaysAllow',
  'description',
  'timeout',
]);
const STDIO_FIELDS = new Set(['type', 'transport', 'command', 'args', 'env', 'cwd']);
const HTTP_FIELDS = new Set(['type', 'transport', 'url', 'headers']);

function fail(message: string): never {
  throw new SwitchboardError(SbErrorCode.ConfigInvalid, message);
}

/**
 * `value` with each client variable reference rewritten as `${env:NAME}`; `where` names the server
 * and field for the error when a reference cannot be mapped.
 */
/** Variables an editor resolves itself (VS Code's and Cursor's predefined variables). */
const EDITOR_VARIABLES = new Set([
  'workspaceFolder',
  'workspaceFolderBasename',
  'userHome',
  'pathSeparator',
  '/',
  'cwd',
  'file',
  'fileDirname',
]);

/**
 * `value` with each client variable reference rewritten as `${env:NAME}`; `where` names the server
 * and field for the error when a reference cannot be mapped. A plain `${NAME}` is an environment
 * variable in the `mcpServers` files (Claude Code's syntax) but a predefined editor variable in
 * VS Code's `servers`, which writes environment variables as `${env:NAME}`.
 */
export function translateReferences(
  value: string,
  where: string,
  shape: McpJsonShape = 'mcpServers',
): string {
  return value.replace(/\$\{([^}]*)\}/g, (whole, inner: string) => {
    if (/^env:[A-Za-z_][A-Za-z0-9_]*$/.test(inner)) return whole;
    if (shape === 'mcpServers' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(inner) && !EDITOR_VARIABLES.has(inner)) {
      return `\${env:${inner}}`;
    }
    if (inner.startsWith('input:')) {
      return fail(
        `${where}: ${whole} is a VS Code input, which only VS Code can prompt for; ` +
          `write \${env:NAME} instead and set NAME in the environment of switchboard`,
      );
    }
    return fail(
      `${where}: ${whole} is resolved by the client, not by switchboard; ` +
        `write the value itself, or \${env:NAME} with NAME set in the environment of switchboard`,
    );
  });
}

function stringOf(value: unknown, where: string, shape: McpJsonShape): string {
  if (typeof value !== 'string' || value === '') fail(`${where}: expected a non-empty string`);
  return translateReferences(value, where, shape);
}

function stringMap(value: unknown, where: string, shape: McpJsonShape): Record<string, string> {
  if (!isObject(value)) fail(`${where}: expected an object of strings`);
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') fail(`${where}.${key}: expected a string`);
    out[key] = translateReferences(v, `${where}.${key}`, shape);
  }
  return out;
}

function checkFields(entry: Record<string, unknown>, allowed: Set<string>, where: string): void {
  for (const key of Object.keys(entry)) {
    if (allowed.has(key) || IGNORED_FIELDS.has(key)) continue;
    fail(`${where}.${key}: not a field switchboard can map (it knows ${[...allowed].join(', ')})`);
  }
}

function importEntry(entry: unknown, where: string, shape: McpJsonShape): RawImportedUpstream {
  if (!isObject(entry)) fail(`${where}: expected an object`);
  const type = entry.type ?? entry.transport;
  if (
    type !== undefined &&
    type !== 'stdio' &&
    type !== 'http' &&
    type !== 'sse' &&
    type !== 'streamable-http'
  ) {
    fail(`${where}.type: ${JSON.stringify(type)} is not stdio, http or sse`);
  }
  if (shape === 'servers' && type === undefined) {
    fail(`${where}.type: missing; VS Code's servers each say stdio, http or sse`);
  }
  const remote =
    type === 'http' || type === 'sse' || type === 'streamable-http' || (type === undefined && 'url' in entry);
  if (remote) {
    checkFields(entry, HTTP_FIELDS, where);
    const url = stringOf(entry.url, `${where}.url`, shape);
    const headers =
      entry.headers === undefined ? undefined : stringMap(entry.headers, `${where}.headers`, shape);
    return { transport: 'http', url, ...(headers && Object.keys(headers).length > 0 ? { headers } : {}) };
  }
  checkFields(entry, STDIO_FIELDS, where);
  const command = stringOf(entry.command, `${where}.command`, shape);
  let args: string[] | undefined;
  if (entry.args !== undefined) {
    if (!Array.isArray(entry.args)) fail(`${where}.args: expected an array of strings`);
    args = entry.args.map((arg, i) => {
      if (typeof arg !== 'string') fail(`${where}.args[${i}]: expected a string`);
      return translateReferences(arg, `${where}.args[${i}]`, shape);
    });
  }
  const env = entry.env === undefined ? undefined : stringMap(entry.env, `${where}.env`, shape);
  const cwd = entry.cwd === undefined ? undefined : stringOf(entry.cwd, `${where}.cwd`, shape);
  return {
    command,
    ...(args && args.length > 0 ? { args } : {}),
    ...(env && Object.keys(env).length > 0 ? { env } : {}),
    ...(cwd === undefined ? {} : { cwd }),
  };
}

/** The parsed file's servers, with the key they are under. */
export function serversOf(
  parsed: unknown,
  file: string,
): { shape: McpJsonShape; servers: Record<string, unknown> } {
  if (!isObject(parsed)) fail(`${file}: expected a JSON object with mcpServers or servers`);
  const shape: McpJsonShape | undefined = isObject(parsed.mcpServers)
    ? 'mcpServers'
    : isObject(parsed.servers)
      ? 'servers'
      : undefined;
  if (!shape)
    fail(`${file}: no mcpServers (Claude Desktop, Claude Code, Cursor) or servers (VS Code) object`);
  return { shape, servers: parsed[shape] as Record<string, unknown> };
}

/** Parses a client's JSON text. @throws SwitchboardError `SB_CONFIG_INVALID` naming the file. */
export function parseMcpJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return fail(
      `${file}: not JSON (${error instanceof Error ? error.message : String(error)}); ` +
        'comments and trailing commas are not read',
    );
  }
}

/**
 * The upstreams of a client's MCP JSON text.
 *
 * @throws SwitchboardError `SB_CONFIG_INVALID` naming the server and field that cannot be mapped.
 */
export function importMcpJson(text: string, file: string): ImportedServers {
  const { shape, servers } = serversOf(parseMcpJson(text, file), file);
  const upstreams: Record<string, RawImportedUpstream> = {};
  for (const [name, entry] of Object.entries(servers)) {
    upstreams[name] = importEntry(entry, `${shape}.${name}`, shape);
  }
  if (Object.keys(upstreams).length === 0) fail(`${file}: ${shape} lists no server`);
  return { shape, upstreams };
}

/** The `upstreams:` section for `switchboard.yaml`, with a comment naming where it came from. */
export function renderUpstreamsYaml(imported: ImportedServers, file: string): string {
  const body = stringify({ upstreams: imported.upstreams }, { lineWidth: 0 });
  return `# Imported by \`switchboard import\` from ${file} (${imported.shape}).\n${body}`;
}
