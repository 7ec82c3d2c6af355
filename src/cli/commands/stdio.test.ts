import { describe, expect, it } from 'vitest';
import { defaultUpstreamName, resolveHeaders, urlUpstreamName } from './stdio.js';

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

describe('urlUpstreamName', () => {
  it.each([
    ['https://mcp.example.com/mcp', 'mcp-example-com'],
    ['http://127.0.0.1:8787/servers/x/mcp', '127-0-0-1'],
    ['http://[::1]:8787/mcp', '1'],
  ])('%s -> %s', (url, expected) => {
    expect(urlUpstreamName(new URL(url))).toBe(expected);
  });
});

describe('resolveHeaders: `--header` values from the environment', () => {
  it('reads env:NAME references from the environment and lower-cases the name', () => {
    expect(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the option's own syntax.
      resolveHeaders(['Authorization: Bearer ${env:TOKEN}', 'X-Plain:  v '], { TOKEN: 's3cret' }),
    ).toEqual({ authorization: 'Bearer s3cret', 'x-plain': 'v' });
  });

  it('names every variable that is not set, and every malformed header, at once', () => {
    let message = '';
    try {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the option's own syntax.
      resolveHeaders(['Authorization: Bearer ${env:MISSING}', 'no colon', 'Bad Name: x'], {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/MISSING/);
    expect(message).toMatch(/"no colon": expected "Name: value"/);
    expect(message).toMatch(/"Bad Name: x": expected "Name: value"/);
  });

  it('refuses a value that would split the header (a line break from the environment)', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the option's own syntax.
    expect(() => resolveHeaders(['X: ${env:V}'], { V: 'a\r\nInjected: yes' })).toThrow(/line break/);
  });

  it('refuses the shell-like TOKEN reference rather than sending it literally', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the form that must be refused.
    expect(() => resolveHeaders(['Authorization: Bearer ${TOKEN}'], { TOKEN: 'x' })).toThrow(/env:NAME/);
  });
});
