import { describe, expect, it } from 'vitest';
import { UriIndex } from './uri-index.js';

describe('UriIndex', () => {
  it('routes listed URIs to their upstream', () => {
    const index = new UriIndex();
    index.add('test://static/resource/1', 'everything');
    index.add('memory://graph', 'memory');
    expect(index.owner('memory://graph', ['everything', 'memory'])).toBe('memory');
    expect(index.owner('test://static/resource/1', ['everything', 'memory'])).toBe('everything');
    expect(index.owner('unknown://x', ['everything', 'memory'])).toBeUndefined();
  });

  it('picks the first upstream in configuration order when several list the same URI', () => {
    const index = new UriIndex();
    index.add('file:///README.md', 'b');
    index.add('file:///README.md', 'a');
    expect(index.owner('file:///README.md', ['a', 'b'])).toBe('a');
    expect(index.owner('file:///README.md', ['b', 'a'])).toBe('b');
    expect(index.owner('file:///README.md', ['c'])).toBeUndefined();
  });

  it('matches templates, escaping everything but the expressions', () => {
    const index = new UriIndex();
    index.addTemplate('demo://resource/dynamic/text/{resourceId}', 'everything');
    index.addTemplate('file:///{+path}.md', 'docs');
    expect(index.owner('demo://resource/dynamic/text/42', ['everything'])).toBe('everything');
    expect(index.owner('demoXresource/dynamic/text/42', ['everything'])).toBeUndefined();
    expect(index.owner('file:///a/b.md', ['everything', 'docs'])).toBe('docs');
    expect(index.owner('file:///a/bxmd', ['docs'])).toBeUndefined();
  });
});
