// biome-ignore-all lint/suspicious/noTemplateCurlyInString: client and gateway variable syntax, quoted.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { importMcpJson, renderUpstreamsYaml, translateReferences } from './mcp-json-import.js';

const FIXTURES = join(import.meta.dirname, '../../test/fixtures/mcp-json');
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');

/** The error `importMcpJson` throws for `text`. */
function importError(text: string): SwitchboardError {
  try {
    importMcpJson(text, 'client.json');
  } catch (error) {
    if (error instanceof SwitchboardError) return error;
    throw error;
  }
  throw new Error('expected the import to fail');
}

describe('importMcpJson, from each client’s documented shape', () => {
  it('Claude Desktop: stdio servers with command, args and env', () => {
    expect(importMcpJson(fixture('claude-desktop.json'), 'f')).toEqual({
      shape: 'mcpServers',
      upstreams: {
        filesystem: {
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-filesystem', '/Users/ada/Desktop'],
        },
        memory: {
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-memory'],
          env: { MEMORY_FILE_PATH: '/Users/ada/memory.jsonl' },
        },
      },
    });
  });

  it('Claude Code .mcp.json: type stdio, http and sse, its ${VAR} as ${env:VAR}', () => {
    expect(importMcpJson(fixture('claude-code.mcp.json'), 'f').upstreams).toEqual({
      local: { command: 'node', args: ['server.js'], env: { API_KEY: '${env:API_KEY}' } },
      'shared-server': {
        transport: 'http',
        url: 'https://example.com/mcp',
        headers: { Authorization: 'Bearer ${env:SHARED_TOKEN}' },
      },
      legacy: { transport: 'http', url: 'https://example.com/sse' },
    });
  });

  it('Cursor: a url without type is an http upstream; ${env:VAR} stays as it is', () => {
    expect(importMcpJson(fixture('cursor.mcp.json'), 'f').upstreams).toEqual({
      'server-name': { command: 'npx', args: ['-y', 'mcp-server'], env: { API_KEY: 'value' } },
      remote: {
        transport: 'http',
        url: 'https://api.example.com/mcp',
        headers: { Authorization: 'Bearer ${env:REMOTE_TOKEN}' },
      },
    });
  });

  it('VS Code: servers, each with a type', () => {
    expect(importMcpJson(fixture('vscode.mcp.json'), 'f')).toEqual({
      shape: 'servers',
      upstreams: {
        memory: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] },
        github: { transport: 'http', url: 'https://api.githubcopilot.com/mcp/' },
      },
    });
  });

  it('renders the upstreams: section as YAML', () => {
    const yaml = renderUpstreamsYaml(importMcpJson(fixture('vscode.mcp.json'), 'f'), 'vscode.mcp.json');
    expect(yaml).toMatch(
      /^# Imported by `switchboard import` from vscode\.mcp\.json \(servers\)\.\nupstreams:\n {2}memory:\n/,
    );
  });
});

describe('importMcpJson, what cannot be mapped', () => {
  it('a VS Code ${input:…} names the server and field and suggests ${env:NAME}', () => {
    const error = importError(fixture('vscode-inputs.mcp.json'));
    expect(error.code).toBe('SB_CONFIG_INVALID');
    expect(error.message).toContain('servers.perplexity.env.PERPLEXITY_API_KEY');
    expect(error.message).toContain('${input:perplexity-key}');
    expect(error.message).toContain('${env:NAME}');
  });

  it('a field it does not know, named with its server', () => {
    const error = importError(
      JSON.stringify({ mcpServers: { a: { command: 'x', oauth: { clientId: 'c' } } } }),
    );
    expect(error.message).toMatch(/^mcpServers\.a\.oauth: not a field switchboard can map/);
  });

  it('a VS Code server without type, a type it does not know, a missing command or url', () => {
    expect(importError(JSON.stringify({ servers: { a: { command: 'x' } } })).message).toMatch(
      /^servers\.a\.type: missing/,
    );
    expect(importError(JSON.stringify({ mcpServers: { a: { type: 'ws', url: 'x' } } })).message).toMatch(
      /^mcpServers\.a\.type: "ws" is not stdio, http or sse/,
    );
    expect(importError(JSON.stringify({ mcpServers: { a: { args: [] } } })).message).toMatch(
      /^mcpServers\.a\.command: /,
    );
    expect(importError(JSON.stringify({ mcpServers: { a: { type: 'http' } } })).message).toMatch(
      /^mcpServers\.a\.url: /,
    );
  });

  it('not JSON, no server list, an empty one', () => {
    expect(importError('{ // comment\n}').message).toMatch(/^client\.json: not JSON/);
    expect(importError('{"other": {}}').message).toMatch(/no mcpServers .* or servers/);
    expect(importError('{"mcpServers": {}}').message).toMatch(/lists no server/);
  });

  it('client-side variables other than plain names: defaults and editor variables', () => {
    expect(() => translateReferences('${HOME:-/tmp}', 'w')).toThrow(
      /^w: \$\{HOME:-\/tmp\} is resolved by the client/,
    );
    expect(() => translateReferences('${workspaceFolder}/x', 'w')).toThrow(/resolved by the client/);
    expect(translateReferences('a ${A} b ${env:B}', 'w')).toBe('a ${env:A} b ${env:B}');
    // In VS Code's servers a plain ${NAME} is an editor variable; its environment is ${env:NAME}.
    expect(() => translateReferences('${A}', 'w', 'servers')).toThrow(/resolved by the client/);
    expect(translateReferences('${env:A}', 'w', 'servers')).toBe('${env:A}');
  });
});
