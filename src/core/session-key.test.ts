import { describe, expect, it } from 'vitest';
import { newSessionKey } from './session-key.js';

describe('newSessionKey', () => {
  it('is 22 base64url characters, never starting with "-" (which a CLI argument would read as an option)', () => {
    // With a leading "-" in 1 key of 64, 10,000 keys without one would happen with odds of 1e-69.
    const keys = Array.from({ length: 10_000 }, newSessionKey);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
