import { describe, expect, it } from 'vitest';
import { DEFAULT_SPACE_URL, spaceUrl } from './space-client.js';

describe('spaceUrl', () => {
  it('turns what a person types into the /meup WebSocket URL', () => {
    expect(spaceUrl(undefined)).toBe(DEFAULT_SPACE_URL);
    expect(spaceUrl('localhost:9000')).toBe('ws://localhost:9000/meup');
    expect(spaceUrl('http://gw.example:8787')).toBe('ws://gw.example:8787/meup');
    expect(spaceUrl('https://gw.example/')).toBe('wss://gw.example/meup');
    expect(spaceUrl('ws://127.0.0.1:1/meup')).toBe('ws://127.0.0.1:1/meup');
    expect(spaceUrl('wss://gw.example/custom/path')).toBe('wss://gw.example/custom/path');
  });

  it('refuses other schemes', () => {
    expect(() => spaceUrl('ftp://x')).toThrow(/ws:\/\//);
  });
});
