import { describe, expect, it } from 'vitest';
import { defaultUpstreamName } from './stdio.js';

describe('defaultUpstreamName', () => {
  it.each([
    [['npx', '-y', '@modelcontextprotocol/server-everything', 'stdio'], 'server-everything'],
    [
      ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
      'server-everything',
    ],
    [['mcp-server-memory'], 'mcp-server-memory'],
    [['uvx', 'mcp-server-fetch'], 'mcp-server-fetch'],
    [['python3', '/opt/servers/weather.py'], 'weather'],
    [['npx', '-y', 'some-server@1.2.3'], 'some-server'],
    [['node', 'index.js'], 'index'],
    [['./my server!'], 'my-server'],
  ])('%j -> %s', (argv, expected) => {
    expect(defaultUpstreamName(argv[0]!, argv.slice(1))).toBe(expected);
  });
});
