import { describe, expect, it } from 'vitest';
import { EraCache, eraKey } from './era-cache.js';

describe('EraCache', () => {
  it('remembers eras per endpoint (origin, path, query), and forgets on demand', () => {
    const cache = new EraCache();
    const url = new URL('http://h:1/mcp?x=1#frag');
    expect(eraKey(url)).toBe('http://h:1/mcp?x=1');
    cache.set(url, 'modern');
    expect(cache.get(new URL('http://h:1/mcp?x=1'))).toBe('modern');
    expect(cache.get(new URL('http://h:1/mcp'))).toBeUndefined();
    expect(cache.get(new URL('http://h:2/mcp?x=1'))).toBeUndefined();
    cache.forget(url);
    expect(cache.get(url)).toBeUndefined();
  });
});
